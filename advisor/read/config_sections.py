"""The database host of a mounted JSON or YAML configuration file, in a section named
for the database: `"Postgres": {"Host": "my-pg-postgresql", "User": ..., "Database":
...}` (mattfenwick/scaling's config.json, a ConfigMap its webserver mounts), `db: {host:
...}`. A host there is where the application connects; the caller links it to a server
or says the host is no server here (PA107).

Pure: text in, hosts with their lines out.
"""

from __future__ import annotations

import re
from typing import Any

from msgspec import Struct

from advisor.lazyregex import lazy

# a section's name as words (camelCase, snake_case, kebab-case split)
_WORDS = lazy(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_POSTGRES_WORDS = frozenset({"postgres", "postgresql", "pg", "psql"})
_DATABASE_WORDS = frozenset({"database", "db"})
_HOST_KEYS = ("host", "hostname", "server", "address", "addr")  # the first present
_ENGINE_KEYS = frozenset({"driver", "type", "engine", "dialect", "adapter", "vendor",
                          "kind", "provider"})
_POSTGRES_ENGINE = lazy(r"postgres|^pg$|^pgx$|psycopg|npgsql", re.I)
# a literal host name or address, not a template left unrendered or a variable
_LITERAL = lazy(r"[A-Za-z0-9][A-Za-z0-9.-]*")
_MAX_DEPTH = 6


class SectionHost(Struct, frozen=True, kw_only=True):
    host: str
    line: int  # 1-based, in the text
    section: str  # the section's key path, dotted
    postgres: bool  # the section's name or an engine key beside the host says PostgreSQL
    port: int | None = None
    dbname: str | None = None
    user: str | None = None


def section_hosts(text: str) -> list[SectionHost]:
    """The hosts of the text's database sections (a mapping whose key names postgres,
    pg, database or db, holding host/hostname/server/address), in document order. A
    section naming only a database (database, db) whose engine key names another engine
    (MySQL, SQLite) is not taken; one naming none is taken with `postgres` False (the
    caller links it only to a known server). Not a mapping, or not YAML/JSON: none."""
    if not any(word in text.lower() for word in ("postgres", "pg", "database", "db")):
        return []
    from advisor.read.sources.k8s import load_yaml_stream

    docs, problems = load_yaml_stream(text, "config")
    if problems:
        return []
    out: list[SectionHost] = []
    for doc, _start in docs:
        _walk(doc, (), out, 0)
    return out


def _walk(node: Any, path: tuple[str, ...], out: list[SectionHost], depth: int) -> None:
    if not isinstance(node, dict) or depth > _MAX_DEPTH:
        return
    for key, value in node.items():
        if not isinstance(value, dict):
            continue
        words = {w.lower() for w in _WORDS.findall(str(key))}
        named_pg = bool(words & _POSTGRES_WORDS)
        if named_pg or words & _DATABASE_WORDS:
            found = _host_of(value, (*path, str(key)), named_pg)
            if found is not None:
                out.append(found)
                continue
        _walk(value, (*path, str(key)), out, depth + 1)


def _host_of(section: dict, path: tuple[str, ...], named_pg: bool) -> SectionHost | None:
    by_key = {str(k).lower(): k for k in section}
    engine = next((str(section[by_key[k]]) for k in _ENGINE_KEYS
                   if k in by_key and isinstance(section[by_key[k]], str)), None)
    if engine is not None and not _POSTGRES_ENGINE.search(engine) and not named_pg:
        return None  # another engine's database (MySQL, SQLite)
    key = next((by_key[k] for k in _HOST_KEYS if k in by_key), None)
    host = section.get(key) if key is not None else None
    if not isinstance(host, str) or not _LITERAL.fullmatch(host.strip()):
        return None
    line = section.lc.value(key)[0] + 1 if hasattr(section, "lc") else 0
    port = _field(section, by_key, ("port",))
    return SectionHost(
        host=host.strip(), line=line, section=".".join(path),
        postgres=named_pg or (engine is not None and bool(_POSTGRES_ENGINE.search(engine))),
        port=port if isinstance(port, int) else None,
        dbname=_text(_field(section, by_key, ("database", "dbname", "db", "name"))),
        user=_text(_field(section, by_key, ("user", "username"))))


def _field(section: dict, by_key: dict[str, Any], names: tuple[str, ...]) -> Any:
    return next((section[by_key[n]] for n in names if n in by_key), None)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
