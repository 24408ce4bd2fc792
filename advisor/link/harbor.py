"""Harbor's jobservice opens a database pool it is never given in its own pod: it loads
every setting from core over HTTP (goharbor/harbor src/jobservice/main.go:
`cfgLib.DefaultCfgManager = common.RestCfgManager`; core's internal configurations API
returns them all, the system scope included), then `dao.InitDatabase` with core's
database settings (src/jobservice/job/impl/context.go; src/pkg/config/manager.go
GetDatabaseCfg: `MaxOpenConns: postgresql_max_open_conns`), which core reads from its
env POSTGRESQL_* (src/lib/config/metadata/metadatalist.go). So a jobservice pod
connects where core does, with core's POSTGRESQL_MAX_OPEN_CONNS pool: its container is
given core's POSTGRESQL_* variables, each at the line that sets it for core.
"""

from __future__ import annotations

from msgspec.structs import replace

from advisor.read.workloads import Workload


def _runs(w: Workload, marker: str) -> bool:
    return any(marker in c.image.lower().rsplit("/", 1)[-1] for c in w.containers)


def with_core_database(loads: list[Workload]) -> list[str]:
    """Give each Harbor jobservice container (without POSTGRESQL_* of its own) the
    POSTGRESQL_* env of the Harbor core in its namespace; notices of what was given."""
    jobservices = [w for w in loads if _runs(w, "harbor-jobservice")]
    if not jobservices:
        return []
    cores = {w.namespace: w for w in loads if _runs(w, "harbor-core")}
    notices = []
    for w in jobservices:
        core = cores.get(w.namespace)
        if core is None:
            continue
        settings = tuple(e for c in core.containers if "harbor-core" in c.image.lower()
                         for e in c.env if e.name.startswith("POSTGRESQL_"))
        if not settings:
            continue
        for i, c in enumerate(w.containers):
            if "harbor-jobservice" not in c.image.lower() or any(
                    e.name.startswith("POSTGRESQL_") for e in c.env):
                continue
            w.containers[i] = replace(c, env=c.env + settings)
            notices.append(f"{w.name}: Harbor jobservice connects with core's database "
                           f"settings ({core.name}, {settings[0].source.label()}), which "
                           "it loads from core at start: counted with core's "
                           "POSTGRESQL_MAX_OPEN_CONNS pool")
    return notices
