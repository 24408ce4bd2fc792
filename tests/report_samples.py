"""Realistic CheckResults built from the model, for the reporter tests: two servers, a
pooler, findings with and without a line, related locations for every number, a fix
that is one value, and the files those locations point at (so fixes get columns)."""

from __future__ import annotations

from pathlib import Path

from advisor.model import (
    Budget,
    CheckResult,
    Contribution,
    Finding,
    Fix,
    Location,
    NotSubtracted,
    RelatedLocation,
    Replacement,
    Severity,
    Source,
    Term,
)
from advisor.rules import Registry, Rule


def _oversubscribed(topology, context):
    """## What it does
    Checks that the connections every client and pooler may open at peak fit in the
    server's usable slots.

    ## Why is this bad
    When the sum exceeds `max_connections - superuser_reserved_connections`, new
    sessions fail with `FATAL: remaining connection slots are reserved`.

    ## Example
    ```yaml
    maxReplicas: 40
    ```

    ## Use instead
    Lower the pool size or put PgBouncer in front.

    ## Options
    None.

    ## References
    - PostgreSQL: max_connections
    """
    return ()


def _pool_mode(topology, context):
    """What it does:
    Flags session-level features used behind transaction pooling.

    Why is this bad:
    A `SET` leaks to whichever client gets the server connection next.

    References:
    - PgBouncer feature map
    """
    return ()


def _memory(topology, context):
    """## What it does
    Estimates worst-case memory: connections x work_mem x nodes.
    """
    return ()


def sample_registry() -> Registry:
    reg = Registry()
    reg.add(Rule("PA101", "oversubscribed-server", Severity.error,
                 "Peak connections exceed the server's usable slots", _oversubscribed))
    reg.add(Rule("PA401", "session-state-in-transaction-mode", Severity.warning,
                 "Session state used behind transaction pooling", _pool_mode))
    reg.add(Rule("PA301", "work-mem-oversubscribed", Severity.info,
                 "Worst-case memory exceeds the container limit", _memory))
    return reg


CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: checkout
data:
  application.properties: |
    spring.datasource.url=jdbc:postgresql://pg:5432/shop
    spring.datasource.hikari.maximum-pool-size=20
"""

HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: checkout
spec:
  minReplicas: 2
  maxReplicas: 40
"""

PGCONF = "# primary\nmax_connections = 100\nshared_buffers = '1GB'\n"


def write_sample_tree(root: Path) -> None:
    (root / "k8s").mkdir(parents=True, exist_ok=True)
    (root / "db").mkdir(parents=True, exist_ok=True)
    (root / "k8s/configmap.yaml").write_text(CONFIGMAP)
    (root / "k8s/hpa.yaml").write_text(HPA)
    (root / "db/postgresql.conf").write_text(PGCONF)
    (root / "app").mkdir(exist_ok=True)
    (root / "app/jobs.py").write_text("cur.execute(\"SET search_path = shop\")\n")


def _t(label: str, value: float, path: str | None = None, line: int | None = None,
       default: str | None = None, key: str | None = None) -> Term:
    return Term(label=label, value=value,
                source=Source(path=path, line=line, default=default, key=key))


def budget(peak_pods: int = 40, pool: int = 20, max_conn: int = 100) -> Budget:
    pods = _t("HPA maxReplicas", peak_pods, "k8s/hpa.yaml", 7)
    size = _t("HikariCP maximumPoolSize", pool, "k8s/configmap.yaml", 8)
    checkout = Contribution(
        who="checkout", kind="client", factors=[pods, size], total=peak_pods * pool,
        location=Location(path="k8s/deployment.yaml", line=3),
    )
    reserved = [_t("superuser_reserved_connections", 3,
                   default="PostgreSQL 15 default", key="superuser_reserved_connections")]
    return Budget(
        server_id="pg-primary", server="pg-primary",
        version=_t("PostgreSQL version", 15, default="assumed"),
        max_connections=_t("max_connections", max_conn, "db/postgresql.conf", 2),
        reserved=reserved, usable=max_conn - 3, peak=peak_pods * pool,
        contributions=[checkout],
        not_subtracted=[NotSubtracted(
            term=_t("autovacuum_max_workers", 3, default="PostgreSQL 15 default"),
            why="autovacuum workers have their own slots since 8.3")],
        location=Location(path="db/postgresql.conf", line=2),
    )


def reporting_budget(peak: int = 30) -> Budget:
    return Budget(
        server_id="pg-reporting", server="pg-reporting",
        version=_t("PostgreSQL version", 16, default="declared"),
        max_connections=_t("max_connections", 200, default="declared in pool-advisor.toml"),
        usable=197, peak=peak, contributions=[],
        location=Location(path="pool-advisor.toml", line=None),
    )


def oversubscribed(peak_pods: int = 40, pool: int = 20) -> Finding:
    total = peak_pods * pool
    return Finding(
        code="PA101", name="oversubscribed-server", severity=Severity.error,
        message=(
            f"pg-primary: checkout: {peak_pods} pods (HPA maxReplicas, k8s/hpa.yaml:7) x "
            f"{pool} (HikariCP maximumPoolSize, k8s/configmap.yaml:8) = {total} > 97 usable "
            "= 100 max_connections (db/postgresql.conf:2) - 3 superuser_reserved_connections "
            "(default)"
        ),
        location=Location(path="db/postgresql.conf", line=2),
        related=(
            RelatedLocation(location=Location(path="k8s/hpa.yaml", line=7),
                            message=f"{peak_pods} pods at peak (HPA maxReplicas)"),
            RelatedLocation(location=Location(path="k8s/configmap.yaml", line=8),
                            message=f"{pool} connections per pod (HikariCP maximumPoolSize)"),
            RelatedLocation(location=Location(path="db/postgresql.conf", line=2),
                            message="100 max_connections"),
        ),
        fix=Fix(
            description="Set HikariCP maximumPoolSize to 2 so 40 pods fit in 97 slots",
            replacement=Replacement(path="k8s/configmap.yaml", line=8,
                                    key="spring.datasource.hikari.maximum-pool-size",
                                    old=str(pool), new="2"),
        ),
        subject="pg-primary",
    )


def session_set() -> Finding:
    return Finding(
        code="PA401", name="session-state-in-transaction-mode", severity=Severity.warning,
        message="SET search_path = shop runs behind pool_mode=transaction (pgbouncer.ini)",
        location=Location(path="app/jobs.py", line=1, column=14),
        fix=Fix(description="Use SET LOCAL inside the transaction, or ALTER ROLE ... SET"),
        subject="app/jobs.py:SET search_path",
    )


def memory_note() -> Finding:
    # No line: the server is declared, not read from a file line.
    return Finding(
        code="PA301", name="work-mem-oversubscribed", severity=Severity.info,
        message="pg-reporting: 200 connections x 64MB work_mem x 2 nodes = 25.6 GB worst case",
        location=Location(path="pool-advisor.toml"),
        subject="pg-reporting",
    )


def engine_finding() -> Finding:
    # A code no registered rule owns (the engine's own configuration problems).
    return Finding(
        code="PA901", name="unreadable-file", severity=Severity.error,
        message="k8s/broken.yaml:3: mapping values are not allowed here",
        location=Location(path="k8s/broken.yaml", line=3),
        subject="k8s/broken.yaml",
    )


def sample_result(root: Path | str | None = None) -> CheckResult:
    """The sample findings as a check of the repository `root` (paths relative to it)."""
    return CheckResult(
        tool_version="0.1.0",
        roots=["."] if root is not None else [],
        root=str(Path(root).absolute()) if root is not None else "",
        budgets=[budget(), reporting_budget()],
        findings=[oversubscribed(), session_set(), memory_note(), engine_finding()],
        notices=["helm not installed: charts/ skipped"],
    )


def clean_result() -> CheckResult:
    return CheckResult(tool_version="0.1.0", budgets=[budget(peak_pods=4), reporting_budget()])
