"""Built-in defaults (boot values) of the parameters pool-advisor reasons about, per
PostgreSQL major version 12..18, in the base units the config reader uses.

PostgreSQL 15 values are checked against a real server's pg_settings.boot_val by
tests/test_pgdefaults.py. The others come from the upstream documentation
(runtime-config-*.html of each version; summarised per parameter with "Since" at
https://postgresqlco.nf/doc/en/param/<name>/) and the commits that changed them:
- hash_mem_multiplier: added in 13 with default 1.0 (commit "Add hash_mem_multiplier
  GUC", Peter Geoghegan, July 2020: "The default value ... is 1.0"); 2.0 from 15
  (release-15 notes; PG15 boot_val 2 observed here).
- reserved_connections: added in 16, default 0 (commit "Introduce
  reserved_connections and pg_use_reserved_connections", Nathan Bossart, 2023).
- idle_session_timeout: added in 14, default 0.
- transaction_timeout: added in 17, default 0 (commit "Introduce
  transaction_timeout", Andrey Borodin).
- autovacuum_worker_slots: added in 18, default 16 (postgresqlco.nf: "Default 16,
  Min 1, Max 262143, Since 18"; initdb may lower it like max_connections).
Everything else here has kept its default since before 12: max_connections 100,
superuser_reserved_connections 3, work_mem 4MB, maintenance_work_mem 64MB,
autovacuum_work_mem -1, autovacuum_max_workers 3, max_wal_senders 10 (since 10),
max_worker_processes 8, max_parallel_workers 8 (since 10), shared_buffers 128MB,
max_prepared_transactions 0, max_locks_per_transaction 64, timeouts 0 (off).

Note initdb writes max_connections and shared_buffers into postgresql.conf after
probing the kernel (normally 100 and 128MB): those are file settings, not defaults.
"""

from __future__ import annotations

from advisor.model import Setting, Source
from advisor.pgguc import Param

MIN_VERSION, MAX_VERSION = 12, 18


# name -> (type, base unit, min, max, first version, {first version: default})
_DEFAULTS: dict[str, tuple[str, str | None, float, float, int, dict[int, float]]] = {
    "max_connections": ("integer", None, 1, 262143, 12, {12: 100}),
    "superuser_reserved_connections": ("integer", None, 0, 262143, 12, {12: 3}),
    "reserved_connections": ("integer", None, 0, 262143, 16, {16: 0}),
    "work_mem": ("integer", "kB", 64, 2147483647, 12, {12: 4096}),
    "hash_mem_multiplier": ("real", None, 1, 1000, 13, {13: 1.0, 15: 2.0}),
    "maintenance_work_mem": ("integer", "kB", 1024, 2147483647, 12, {12: 65536}),
    "autovacuum_work_mem": ("integer", "kB", -1, 2147483647, 12, {12: -1}),
    "autovacuum_max_workers": ("integer", None, 1, 262143, 12, {12: 3}),
    "autovacuum_worker_slots": ("integer", None, 1, 262143, 18, {18: 16}),
    "max_wal_senders": ("integer", None, 0, 262143, 12, {12: 10}),
    "max_worker_processes": ("integer", None, 0, 262143, 12, {12: 8}),
    "max_parallel_workers": ("integer", None, 0, 1024, 12, {12: 8}),
    "shared_buffers": ("integer", "8kB", 16, 1073741823, 12, {12: 16384}),
    "max_prepared_transactions": ("integer", None, 0, 262143, 12, {12: 0}),
    "max_locks_per_transaction": ("integer", None, 10, 2147483647, 12, {12: 64}),
    "idle_in_transaction_session_timeout": ("integer", "ms", 0, 2147483647, 12, {12: 0}),
    "idle_session_timeout": ("integer", "ms", 0, 2147483647, 14, {14: 0}),
    "transaction_timeout": ("integer", "ms", 0, 2147483647, 17, {17: 0}),
    "statement_timeout": ("integer", "ms", 0, 2147483647, 12, {12: 0}),
}

# In 18 autovacuum_max_workers became sighup and is capped by autovacuum_worker_slots;
# the default stays 3.


def known_defaults() -> list[str]:
    return list(_DEFAULTS)


def _value_at(name: str, version: int) -> float | None:
    entry = _DEFAULTS.get(name)
    if entry is None:
        return None
    _type, _unit, _lo, _hi, since, changes = entry
    if version < since:
        return None
    value = None
    for first, v in sorted(changes.items()):
        if version >= first:
            value = v
    return value


def pg_default(name: str, version: int) -> Setting | None:
    """The built-in default of `name` in PostgreSQL `version`, or None when the
    parameter does not exist in that version (or is not in this table)."""
    key = name.lower()
    value = _value_at(key, version)
    if value is None:
        return None
    vartype, unit = _DEFAULTS[key][0], _DEFAULTS[key][1]
    typed: int | float = float(value) if vartype == "real" else int(value)
    return Setting(
        name=key,
        raw=str(typed),
        value=typed,
        unit=unit,
        source=Source.default_of(f"PostgreSQL {version} default", key=key),
    )


def setting_or_default(settings: dict[str, Setting], name: str, version: int) -> Setting | None:
    """The configured setting if present, else the version's default (or None)."""
    return settings.get(name.lower()) or pg_default(name, version)


def version_only_params(version: int) -> dict[str, Param]:
    """Parameters of `version` that PostgreSQL 15's table (the one generated) lacks,
    typed so the reader can check their values."""
    out: dict[str, Param] = {}
    for name, (vartype, unit, lo, hi, since, _changes) in _DEFAULTS.items():
        if since > 15 and version >= since:
            out[name] = Param(
                name=name,
                type=vartype,
                context="postmaster",
                unit=unit,
                min=lo,
                max=hi,
                boot=_value_at(name, version),
            )
    return out
