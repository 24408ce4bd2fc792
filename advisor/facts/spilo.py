"""What Spilo (Zalando's PostgreSQL image: ghcr.io/zalando/spilo-<major>, and images built
FROM it) sets when it starts, with or without the Zalando operator.

Read in zalando/spilo at 7cb50bd6 (Aug 2025), postgres-appliance/:
- launch.sh runs `python3 /scripts/configure_spilo.py all` on every start (the image's
  CMD, `/bin/sh /launch.sh init`, Dockerfile:125); nothing there depends on an operator.
- scripts/configure_spilo.py get_placeholders (lines 677-697): the memory is the cgroup
  limit (memory/memory.limit_in_bytes, else memory.max; "max" means none), capped by the
  physical RAM (SC_PAGE_SIZE x SC_PHYS_PAGES); shared_buffers = int(MB / 5) MB when
  KUBERNETES_SERVICE_HOST is set (every Kubernetes pod has it), int(MB / 4) MB elsewhere;
  max_connections = min(max(100, int(MB / 30)), 1000). max_connections goes into Patroni's
  bootstrap.dcs parameters (TEMPLATE line 209) and shared_buffers into the local
  postgresql.parameters (line 291), with autovacuum_max_workers 5 (line 225).
- main (lines 1135-1142): SPILO_CONFIGURATION (else PATRONI_CONFIGURATION), YAML, is
  merged over that with deep_update(user, spilo): the user's values win.

So a Spilo container without a memory limit runs with max_connections between 100 and
1000, set by the node's RAM, which no repository holds: 100 is then the least it can be.
"""

from __future__ import annotations

from advisor.model import Setting, Source, Term

SPILO = "Spilo configure_spilo.py"
SPILO_MIN_CONNECTIONS = 100
SPILO_MAX_CONNECTIONS = 1000
MB_PER_CONNECTION = 30
KUBERNETES_BUFFER_RATIO = 5  # sb_ratio when KUBERNETES_SERVICE_HOST is set
AUTOVACUUM_MAX_WORKERS = 5


def spilo_max_connections(memory_mb: float) -> int:
    """configure_spilo.py: min(max(100, int(MB / 30)), 1000)."""
    return min(max(SPILO_MIN_CONNECTIONS, int(memory_mb / MB_PER_CONNECTION)),
               SPILO_MAX_CONNECTIONS)


def spilo_shared_buffers_mb(memory_mb: float) -> int:
    """configure_spilo.py in a Kubernetes pod: int(MB / 5)."""
    return int(memory_mb / KUBERNETES_BUFFER_RATIO)


def spilo_settings(memory: Term | None, limit_text: str) -> dict[str, Setting]:
    """The settings Spilo writes from the container's memory limit `memory` (bytes), said
    as `limit_text` ("1024 MB memory limit (file:line)"); without one, max_connections is
    the least Spilo sets (100) and shared_buffers is not known."""
    settings: dict[str, Setting] = {}
    if memory is not None:
        mb = memory.value / 1048576
        n = spilo_max_connections(mb)
        why = f"{SPILO}: min(max(100, {limit_text} / 30), 1000)"
        buffers = spilo_shared_buffers_mb(mb)
        if buffers >= 1:
            # base unit of shared_buffers: 8kB blocks
            settings["shared_buffers"] = Setting(
                name="shared_buffers", raw=f"{buffers}MB", value=buffers * 128, unit="8kB",
                source=Source.default_of(f"{SPILO}: {limit_text} / 5 (in a Kubernetes pod)",
                                         key="shared_buffers"))
    else:
        n = SPILO_MIN_CONNECTIONS
        why = (f"{SPILO}: min(max(100, node RAM in MB / 30), 1000) without a memory limit: "
               "at least 100, more on a node with over 3 GB (the node's RAM is not in the "
               "repository)")
    settings["max_connections"] = Setting(
        name="max_connections", raw=str(n), value=n, source=Source.default_of(
            why, key="max_connections"))
    settings["autovacuum_max_workers"] = Setting(
        name="autovacuum_max_workers", raw=str(AUTOVACUUM_MAX_WORKERS),
        value=AUTOVACUUM_MAX_WORKERS, source=Source.default_of(
            f"{SPILO} bootstrap parameters", key="autovacuum_max_workers"))
    return settings
