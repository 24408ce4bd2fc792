"""What the JS/TS and Go pool readers take from one source file before they read it
closely, kept in the run's parse cache (advisor.read.cache) by the file's path and
content: which of the identifiers they look for the file holds as code (not in a
comment or a string). A reader reads (tokenizes, evaluates) only the files holding one
of its own, so a warm run tokenizes only the few files that open pools, not every file
whose text names `client` or `Open` somewhere.

Exact: every form a reader reads needs one of its identifiers as a token (`new Pool(`,
`knex(`, `sql.Open(`, `.MaxConns =`), so a file without them gives it nothing. Nothing
here depends on the container (its env, its CPUs): that is applied after, per container.
"""

from __future__ import annotations

from collections.abc import Callable

from advisor.read.apps.jsparse import Tok
from advisor.read.apps.source import AppFile

# The identifiers the JS readers (node_pg, sequelize, knex, typeorm) and the Go readers
# (go_sql, pgx) look for; a file's entry holds those it has, sorted.
JS_KEYS = frozenset({"Pool", "Client", "Sequelize", "knex", "Knex", "require", "DataSource",
                     "forRoot", "createConnection", "createConnections", "getConnectionOptions",
                     "postgres"})
GO_KEYS = frozenset({"Open", "Connect", "MustConnect", "MustOpen", "OpenDB",
                     "SetMaxOpenConns", "ConnectionDetails", "MaxConns", "pgxpool"})


def identifiers(toks: list[Tok], keys: frozenset[str]) -> list[str]:
    return sorted({t.text for t in toks if t.kind == "id" and t.text in keys})


def file_keys(file: AppFile, cache: object | None, kind: str, keys: frozenset[str],
              toks: Callable[[], list[Tok]]) -> frozenset[str]:
    """The `keys` `file` holds as identifiers: from the cache's entry for its content
    (kind "app-js"/"app-go"), else from its tokens (`toks()`, tokenized once for the
    reader that needs them too) and put in the cache."""
    from advisor.read.cache import FileCache

    usable = isinstance(cache, FileCache) and cache.enabled
    if usable:
        found = cache.get(kind, file.path, file.text, list[str])
        if found is not None:
            return frozenset(found)
    held = identifiers(toks(), keys)
    if usable:
        cache.put(kind, file.path, file.text, held)
    return frozenset(held)


def run_cache(ctx) -> object | None:
    """The run's parse cache, through the app source's root (None without one)."""
    app = ctx.app
    once = app.root.once if app is not None else None
    return once.cache if once is not None else None
