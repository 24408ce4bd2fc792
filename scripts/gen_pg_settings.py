#!/usr/bin/env python3
"""Generate advisor/facts/data/pg_settings_<major>.json from a REAL PostgreSQL of that major.

    .venv/bin/python scripts/gen_pg_settings.py            # 15: Debian's server
    .venv/bin/python scripts/get_pg_binaries.py 18         # other majors: install first
    .venv/bin/python scripts/gen_pg_settings.py 18 ...     # then generate

Starts a throwaway server (tests/realpg.py, 127.0.0.1, temp dir), reads pg_settings
(name, vartype, unit, boot_val, min_val, max_val, enumvals, context) and asks
`postgres -C` how every enum spelling is accepted and printed: enum lookup is
case-insensitive and accepts hidden aliases that pg_settings does not list (guc.c marks
"true", "yes", "1", "debug", "hot_standby"... as hidden), and some visible values print
as another one (wal_compression on -> pglz). The table records the server version and
the package the server came from. The runtime reads the result with msgspec.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts.get_pg_binaries import origin  # noqa: E402
from tests.realpg import (  # noqa: E402
    OTHER_MAJORS,
    PG_BIN,
    have_postgres,
    pg_bin_for,
    postgres_C_files,
    running_postgres,
)

DATA = ROOT / "advisor" / "data"

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


def _enum_spellings(name: str, visible: list[str], bin_dir: Path) -> dict[str, str]:
    """lower(spelling) -> what postgres -C prints, for every accepted spelling."""
    seen: dict[str, str] = {}
    for spelling in [*visible, *HIDDEN_CANDIDATES]:
        key = spelling.lower()
        if key in seen:
            continue
        res = postgres_C_files({"postgresql.conf": f"{name} = {_quote(spelling)}\n"}, [name],
                               bin_dir=bin_dir)
        if res.ok:
            seen[key] = res.values[name]
    return seen


def _debian_origin(package: str) -> str:
    r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", package],
                       capture_output=True, text=True)
    return f"Debian package {package} {r.stdout.strip()}" if r.returncode == 0 \
        else f"{package} (version unknown)"


def generate(major: int) -> Path:
    # the newest build scripts/get_pg_binaries.py installed, else the installed server
    bin_dir = OTHER_MAJORS / str(major) / "bin"
    if not have_postgres(bin_dir):
        bin_dir = pg_bin_for(major)
    if bin_dir is None:
        raise SystemExit(f"no PostgreSQL {major} here: run scripts/get_pg_binaries.py {major}")
    came_from = _debian_origin(f"postgresql-{major}") if bin_dir == PG_BIN \
        else origin(str(major)) or str(bin_dir)
    with running_postgres(bin_dir=bin_dir) as pg:
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
                entry["spellings"] = _enum_spellings(name, enumvals, bin_dir)
        params[name.lower()] = entry
    for name, (vartype, context) in NO_SHOW_ALL.items():
        if name in params:
            continue  # listed by this major's pg_settings (default_with_oids before 12)
        res = postgres_C_files({"postgresql.conf": ""}, [name], bin_dir=bin_dir)
        if not res.ok:
            if "unrecognized configuration parameter" in res.stderr:
                continue  # not a parameter of this major
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
        "major": major,
        "server_version": version,
        "source": f"pg_settings of PostgreSQL {version} ({came_from}); "
                  "enum spellings from postgres -C",
        "generator": f"scripts/gen_pg_settings.py {major}",
        "params": params,
    }
    out = DATA / f"pg_settings_{major}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n")
    print(f"wrote {out.relative_to(ROOT)}: {len(params)} parameters ({version}, {came_from})")
    return out


def main(argv: list[str]) -> None:
    for major in argv or ["15"]:
        generate(int(major))


if __name__ == "__main__":
    main(sys.argv[1:])
