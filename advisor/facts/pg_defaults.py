"""Built-in defaults (boot values) of PostgreSQL parameters per major version, in the
base units the config reader uses.

10 to 18: the boot_val of that major's own pg_settings table (advisor/data, generated
from a real server of that major by scripts/gen_pg_settings.py; tests/test_pg_tables.py
checks them against the real servers). A major after 18 uses 18's table, and says so.

9.6 (version 9 here): no 9.6 server is packaged on the registries this project can use,
so only the slot and memory parameters pool-advisor reasons about are given, from the
PostgreSQL 9.6 documentation (runtime-config-connection.html,
runtime-config-replication.html, runtime-config-resource.html, runtime-config-autovacuum
.html of /docs/9.6/): max_connections "typically 100", superuser_reserved_connections
"three connections", max_wal_senders "The default is zero" (10 was made the default in
PostgreSQL 10: release-10 notes, "Change the default value of max_wal_senders to 10"),
autovacuum_max_workers 3, max_worker_processes 8, shared_buffers 128MB, work_mem 4MB,
maintenance_work_mem 64MB, autovacuum_work_mem -1, max_prepared_transactions 0,
max_locks_per_transaction 64.

initdb writes max_connections and shared_buffers into postgresql.conf after probing the
kernel (normally 100 and 128MB; initdb.c tries those first). Every PostgreSQL image runs
initdb, so where the boot value differs (shared_buffers is 1024 x 8kB = 8MB in the
pg_settings of 10 to 14, 128MB from 15) the value initdb writes is the default, and the
source says so.
"""

from __future__ import annotations

from advisor.facts import pg_guc as pgguc
from advisor.model import Setting, Source

MIN_VERSION, MAX_VERSION = 9, 18  # 9 is 9.6 (slot arithmetic only)

# The parameters pool-advisor reasons about (budget, memory, standby and timeout rules).
KNOWN = (
    "max_connections",
    "superuser_reserved_connections",
    "reserved_connections",
    "work_mem",
    "hash_mem_multiplier",
    "maintenance_work_mem",
    "autovacuum_work_mem",
    "autovacuum_max_workers",
    "autovacuum_worker_slots",
    "max_wal_senders",
    "max_worker_processes",
    "max_parallel_workers",
    "shared_buffers",
    "max_prepared_transactions",
    "max_locks_per_transaction",
    "idle_in_transaction_session_timeout",
    "idle_session_timeout",
    "transaction_timeout",
    "statement_timeout",
)

# PostgreSQL 9.6, from its documentation (see the module docstring): (unit, default)
_NINE_SIX: dict[str, tuple[str | None, int]] = {
    "max_connections": (None, 100),
    "superuser_reserved_connections": (None, 3),
    "max_wal_senders": (None, 0),
    "autovacuum_max_workers": (None, 3),
    "max_worker_processes": (None, 8),
    "shared_buffers": ("8kB", 16384),
    "work_mem": ("kB", 4096),
    "maintenance_work_mem": ("kB", 65536),
    "autovacuum_work_mem": ("kB", -1),
    "max_prepared_transactions": (None, 0),
    "max_locks_per_transaction": (None, 64),
    "statement_timeout": ("ms", 0),
    "idle_in_transaction_session_timeout": ("ms", 0),
}


# initdb.c: the first values it tries (and writes unless the kernel refuses them)
_INITDB: dict[str, int] = {"max_connections": 100, "shared_buffers": 16384}


def known_defaults() -> list[str]:
    return list(KNOWN)


def _label(version: int) -> str:
    if version < 10:
        return "PostgreSQL 9.6 default (9.6 documentation)"
    major = pgguc.table_major(version)
    if major != version:
        return f"PostgreSQL {version} default, taken from PostgreSQL {major}'s table"
    return f"PostgreSQL {version} default"


def pg_default(name: str, version: int) -> Setting | None:
    """The built-in default of numeric parameter `name` in PostgreSQL `version`, or None
    when that version has no such parameter (or it is not a number)."""
    key = name.lower()
    if version < 10:
        found = _NINE_SIX.get(key) if version == 9 else None
        if found is None:
            return None
        unit, value = found
        return Setting(name=key, raw=str(value), value=value, unit=unit,
                       source=Source.default_of(_label(version), key=key))
    param = pgguc.lookup(key, version)
    if param is None or param.type not in ("integer", "real"):
        return None
    if not isinstance(param.boot, int | float) or isinstance(param.boot, bool):
        return None
    typed: int | float = float(param.boot) if param.type == "real" else int(param.boot)
    label = _label(version)
    if key in _INITDB and _INITDB[key] != typed:
        label += f": what initdb writes (boot value {typed})"
        typed = _INITDB[key]
    return Setting(name=key, raw=str(typed), value=typed, unit=param.unit,
                   source=Source.default_of(label, key=key))


def setting_or_default(settings: dict[str, Setting], name: str, version: int) -> Setting | None:
    """The configured setting if present, else the version's default (or None)."""
    return settings.get(name.lower()) or pg_default(name, version)
