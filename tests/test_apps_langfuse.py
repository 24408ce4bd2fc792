"""Langfuse's web and worker images (advisor/read/apps/langfuse.py): one Prisma client per
process, its connection_limit from DATABASE_URL or from the DATABASE_ARGS the entrypoint
appends to the URL it builds, else Prisma's physical cores x 2 + 1."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.model import EnvVar, Source
from advisor.read.apps import pools_for_container
from tests.apphelpers import container
from tests.tree_helpers import POSTGRES_DB as DB
from tests.tree_helpers import write

WEB = "langfuse/langfuse:3.150.0"
WORKER = "langfuse/langfuse-worker:3.150.0"
PARTS = {"DATABASE_HOST": "db", "DATABASE_PORT": "5432", "DATABASE_USERNAME": "langfuse",
         "DATABASE_PASSWORD": "pw", "DATABASE_NAME": "langfuse"}


def _pools(image: str, env: dict[str, str], *, node_cpus: int | None = None,
           command: tuple[str, ...] = ()):
    return pools_for_container(replace(container(env, command=command), image=image),
                               node_cpus=node_cpus)


@pytest.mark.parametrize("image", [WEB, WORKER, "ghcr.io/langfuse/langfuse:4",
                                   "docker.io/langfuse/langfuse-worker:latest"])
def test_without_connection_limit_prisma_takes_physical_cores_x2_plus_1(image):
    """Audit D5 (langfuse-k8s f5e4abf): DATABASE_HOST/... and no DATABASE_ARGS was PA106;
    Prisma 6 (packages/shared/package.json ^6.19.3) opens 2 x cores + 1."""
    got = _pools(image, PARTS, node_cpus=8)
    (pool,) = got.pools
    # 8 node CPUs / 1 thread per core (assumed: no SMT, the larger pool) = 8 cores
    assert (pool.label, pool.size.value, pool.bound) == (
        "Langfuse Prisma connection_limit", 17, "cpu")
    assert pool.processes is None and pool.cpu_formula.physical
    assert "quaint/src/pooled.rs:194" in pool.size.source.default
    assert (pool.route.host, pool.route.dbname, pool.route.user) == ("db", "langfuse", "langfuse")


def test_database_args_connection_limit_is_read():
    got = _pools(WEB, {**PARTS, "DATABASE_ARGS": "sslmode=require&connection_limit=7"})
    (pool,) = got.pools
    assert (pool.size.value, pool.bound) == (7, "fixed")
    assert pool.size.source == Source(path="k8s/app.yaml", line=15,
                                      key="DATABASE_ARGS connection_limit")


def test_database_url_wins_and_its_args_are_not_appended():
    """The entrypoint appends DATABASE_ARGS only to the URL it builds."""
    env = {"DATABASE_URL": "postgresql://u:p@pg:5433/lf?connection_limit=4",
           "DATABASE_ARGS": "connection_limit=40"}
    (pool,) = _pools(WORKER, env).pools
    assert (pool.size.value, pool.size.source.key) == (4, "DATABASE_URL connection_limit")
    assert (pool.route.host, pool.route.port) == ("pg", 5433)
    (pool,) = _pools(WORKER, {"DATABASE_URL": "postgresql://u:p@pg/lf"}, node_cpus=4).pools
    assert (pool.size.value, pool.bound) == (9, "cpu")  # 4 CPUs = 4 cores: 4 x 2 + 1


def test_url_or_args_from_a_secret_are_unknown():
    for name in ("DATABASE_URL", "DATABASE_ARGS"):
        c = container(PARTS)
        hidden = EnvVar(name=name, value=None, source=Source(path="k8s/app.yaml", line=30),
                        secret=True)
        got = pools_for_container(replace(c, image=WEB, env=(*c.env, hidden)))
        assert got.pools == [] and name in got.unknown[0]


def test_before_3_13_database_args_is_not_read():
    got = _pools("langfuse/langfuse:3.12.0", {**PARTS, "DATABASE_ARGS": "connection_limit=3"},
                 node_cpus=2)
    assert got.pools[0].size.value == 5  # 2 CPUs = 2 cores: 2 x 2 + 1
    assert any("not read by Langfuse 3.12" in n for n in got.notices)


def test_other_programs_of_the_image_and_other_images():
    assert _pools(WEB, PARTS, command=("sh", "-c", "echo hi")).pools == []
    assert _pools("ghcr.io/acme/langfuse-exporter:1", PARTS).pools == []
    assert _pools(WEB, {"DATABASE_USERNAME": "x"}).pools == []  # no URL: it exits


def _chart(args: str = "") -> str:
    """langfuse-k8s 2.x's shape: web and worker Deployments, both with the chart's
    databaseEnv (DATABASE_HOST, _PORT, _USERNAME, the password from a Secret, _NAME,
    DATABASE_ARGS from postgresql.args), each with an HPA of 2."""
    docs = []
    for name, image in (("langfuse-web", WEB), ("langfuse-worker", WORKER)):
        docs.append(f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: {name}
          image: {image}
          env:
            - {{name: DATABASE_HOST, value: db}}
            - {{name: DATABASE_PORT, value: "5432"}}
            - {{name: DATABASE_USERNAME, value: langfuse}}
            - name: DATABASE_PASSWORD
              valueFrom: {{secretKeyRef: {{name: pg, key: password}}}}
            - {{name: DATABASE_NAME, value: langfuse}}
{args}---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: {name}}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: {name}}}
  minReplicas: 1
  maxReplicas: 2
""")
    return "---".join(docs)


def test_langfuse_chart_at_its_server(tmp_path):
    """(2 + 1 surge) pods x 9 (4 CPUs assumed, each a core) for each of web and worker:
    54 of the 47 usable (max_connections 50): over; on 4-CPU nodes with 2 threads per
    core x 5: 30; with connection_limit=3 in DATABASE_ARGS, 18."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/langfuse.yaml": _chart()})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert (budget.peak, budget.usable) == (2 * 3 * 9, 47)
    assert any(f.code == "PA101" for f in result.findings)
    write(tmp_path, {".pool-advisor.toml": "threads-per-core = 2\n"})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert (budget.peak, budget.usable) == (2 * 3 * 5, 47)
    (tmp_path / ".pool-advisor.toml").unlink()
    args = "            - {name: DATABASE_ARGS, value: \"connection_limit=3\"}\n"
    write(tmp_path, {"k8s/langfuse.yaml": _chart(args)})
    (budget,) = run_check([str(tmp_path)], CheckOptions()).budgets
    assert budget.peak == 2 * 3 * 3
