"""Temporal server (temporalio/server image): SQL persistence in its config file
(config_template.yaml, or config/*.yaml mounted from a ConfigMap):
`persistence.datastores.<name>.sql.{pluginName, connectAddr, maxConns}`; each SQL
datastore the server uses (defaultStore, visibilityStore) is one database/sql pool with
SetMaxOpenConns(maxConns) per service process. The docker config template writes
`maxConns: {{ default .Env.SQL_MAX_CONNS "20" }}`: the env value, else that default;
other template actions (helm-charts 1.x: `password: {{ env "X" | quote }}`) are text
made at start. A missing or 0 maxConns is database/sql's no limit.
"""

from __future__ import annotations

import re

from advisor.model import Pool, Route
from advisor.read.apps.base import StackContext
from advisor.read.apps.numbers import parse_int

_DEFAULT_TPL = re.compile(r'\{\{\s*default\s+\.Env\.(\w+)\s+"?(\d+)"?\s*\}\}')
_ENV_TPL = re.compile(r"\{\{\s*\.Env\.(\w+)\s*\}\}")
_OTHER_TPL = re.compile(r"\{\{.*?\}\}")


def _resolve(ctx: StackContext, text: str) -> str:
    def default(m: re.Match[str]) -> str:
        return ctx.env_value(m.group(1)) or m.group(2)

    text = _DEFAULT_TPL.sub(default, text)
    text = _ENV_TPL.sub(lambda m: ctx.env_value(m.group(1)) or "", text)
    # any other action (the chart's `{{ env "TEMPORAL_DEFAULT_STORE_PASSWORD" | quote }}`)
    # is text the server makes at start; as written it is no YAML (a flow mapping)
    return _OTHER_TPL.sub("TEMPLATE", text)


def temporal_pools(ctx: StackContext) -> list[Pool]:
    from advisor.read.sources.k8s import load_yaml_stream

    pools: list[Pool] = []
    for f in ctx.files("temporal-config"):
        text = _resolve(ctx, f.text)
        docs, _ = load_yaml_stream(text, f.path)
        for doc, _line in docs:
            persistence = doc.get("persistence") if isinstance(doc, dict) else None
            if not isinstance(persistence, dict):
                continue
            stores = persistence.get("datastores") or {}
            used = [persistence.get("defaultStore"), persistence.get("visibilityStore")]
            lines = text.splitlines()
            for name in [u for u in used if isinstance(u, str)]:
                sql = (stores.get(name) or {}).get("sql") if isinstance(stores, dict) else None
                if not isinstance(sql, dict) or "postgres" not in str(sql.get("pluginName", "")):
                    continue
                # absent: the store's `sql:` line, where it would be written (the first
                # maxConns below the store's name would be the next store's)
                absent = "maxConns" not in sql
                line = _key_line(lines, name, "sql" if absent else "maxConns")
                src = f.cite(line, f"persistence.datastores.{name}.sql.maxConns"
                             + (" (not set)" if absent else ""),
                             "sql" if absent else "maxConns")
                addr = str(sql.get("connectAddr", ""))
                host, _, port = addr.rpartition(":") if ":" in addr else (addr, "", "")
                at = _key_line(lines, name, "connectAddr")
                route = Route(host=host or None, port=parse_int(port),
                              dbname=str(sql.get("databaseName") or "") or None,
                              user=str(sql.get("user") or "") or None,
                              source=f.cite(at, f"{name}.sql.connectAddr"))
                n = parse_int(str(sql.get("maxConns", "")))
                label = f"Temporal {name} store maxConns"
                if n is None or n <= 0:
                    pools.append(ctx.pool(label, 0, src, route=route, bound="unbounded",
                                          per_process=False,
                                          note="maxConns unset or 0: database/sql no limit"))
                else:
                    pools.append(ctx.pool(label, n, src, route=route, per_process=False))
    return pools


def _key_line(lines: list[str], store: str, key: str) -> int | None:
    """The 1-based line of the first `key:` below the datastore `store:`."""
    start = _line_of(lines, store)
    return next((i + 1 for i, t in enumerate(lines)
                 if i > start and re.match(rf"\s*{key}\s*:", t)), None)


def _line_of(lines: list[str], name: str) -> int:
    return next((i for i, t in enumerate(lines) if re.match(rf"\s*{re.escape(name)}\s*:", t)),
                -1)
