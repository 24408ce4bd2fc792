#!/usr/bin/env python3
"""Generate advisor/data/pg_settings_15.json from a REAL PostgreSQL 15.

    /work/main/.venv/bin/python scripts/gen_pg_settings.py

Starts a throwaway server (tests/realpg.py), reads pg_settings (name, vartype, unit,
boot_val, min_val, max_val, enumvals, context) and asks `postgres -C` how every enum
spelling is accepted and printed: enum lookup is case-insensitive and accepts hidden
aliases that pg_settings does not list (guc.c marks "true", "yes", "1", "debug",
"hot_standby"... as hidden), and some visible values print as another one
(wal_compression on -> pglz). The runtime reads the result with one json.load.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.realpg import postgres_C_files, running_postgres  # noqa: E402

OUT = ROOT / "advisor" / "data" / "pg_settings_15.json"

# Hidden enum spellings seen in guc.c option tables (config_enum_entry with hidden=true);
# each is tried against every enum parameter and kept only where postgres accepts it.
HIDDEN_CANDIDATES = [
    "on",
    "off",
    "true",
    "false",
    "yes",
    "no",
    "1",
    "0",
    "debug",
    "info",
    "archive",
    "hot_standby",
]

# Parameters guc.c marks GUC_NO_SHOW_ALL, so pg_settings omits them although a
# config file may name them (is_superuser is PGC_INTERNAL: "cannot be changed").
NO_SHOW_ALL = {
    "is_superuser": ("bool", "internal"),
    "default_with_oids": ("bool", "user"),
    "seed": ("real", "user"),
    "role": ("string", "user"),
    "session_authorization": ("string", "user"),
    "transaction_read_only": ("bool", "user"),
    "transaction_deferrable": ("bool", "user"),
}

_QUERY = """
select json_agg(json_build_array(name, vartype, unit, boot_val, min_val, max_val,
                                 context, enumvals) order by name)
from pg_settings
"""


def _num(vartype: str, text: str | None) -> int | float | None:
    if text is None:
        return None
    if vartype == "integer":
        return int(text)
    value = float(text)
    # pg_settings prints reals with %g: map the rounded DBL_MAX back to the real bound.
    if text == f"{sys.float_info.max:g}":
        return sys.float_info.max
    if text == f"{-sys.float_info.max:g}":
        return -sys.float_info.max
    return value


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _enum_spellings(name: str, visible: list[str]) -> dict[str, str]:
    """lower(spelling) -> what postgres -C prints, for every accepted spelling."""
    seen: dict[str, str] = {}
    for spelling in [*visible, *HIDDEN_CANDIDATES]:
        key = spelling.lower()
        if key in seen:
            continue
        res = postgres_C_files({"postgresql.conf": f"{name} = {_quote(spelling)}\n"}, [name])
        if res.ok:
            seen[key] = res.values[name]
    return seen


def main() -> None:
    with running_postgres() as pg:
        version = pg.psql("show server_version").strip()
        rows = json.loads(pg.psql(_QUERY))
    params: dict[str, dict[str, object]] = {}
    for name, vartype, unit, boot, min_val, max_val, context, enumvals in rows:
        entry: dict[str, object] = {"name": name, "type": vartype, "context": context}
        if unit:
            entry["unit"] = unit
        if vartype in ("integer", "real"):
            entry["min"] = _num(vartype, min_val)
            entry["max"] = _num(vartype, max_val)
            entry["boot"] = _num(vartype, boot)
        else:
            entry["boot"] = boot
        if vartype == "enum":
            entry["values"] = enumvals  # visible options, in guc.c order (for the HINT)
            if context == "internal":
                entry["spellings"] = {v.lower(): v for v in enumvals}
            else:
                entry["spellings"] = _enum_spellings(name, enumvals)
        params[name.lower()] = entry
    for name, (vartype, context) in NO_SHOW_ALL.items():
        res = postgres_C_files({"postgresql.conf": ""}, [name])
        if not res.ok:
            raise SystemExit(f"{name}: postgres -C refused: {res.stderr}")
        params[name] = {
            "name": name,
            "type": vartype,
            "context": context,
            "boot": res.values[name],
            "hidden": True,
        }
        if vartype == "real":
            # guc.c: seed is a real in -1 .. 1 (phony_random_seed)
            params[name].update(min=-1.0, max=1.0, boot=float(res.values[name]))
    doc = {
        "source": f"pg_settings of PostgreSQL {version}; enum spellings from postgres -C",
        "generator": "scripts/gen_pg_settings.py",
        "params": params,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(params)} parameters ({version})")


if __name__ == "__main__":
    main()
