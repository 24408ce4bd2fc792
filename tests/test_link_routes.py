"""Which routes a workload's pods take, and to whom they count: a database's own pods are
never its clients (bank-of-anthos ledger-db names its own Service in its env)."""

from __future__ import annotations

import textwrap

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

# A database built from the project's own image (not read as PostgreSQL) whose env,
# shared with its clients through one ConfigMap, names its own Service.
CUSTOM_DB = """
apiVersion: v1
kind: ConfigMap
metadata: {name: db-config}
data:
  POSTGRES_DB: shop
  SPRING_DATASOURCE_URL: jdbc:postgresql://db:5432/shop
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  template:
    metadata: {labels: {app: db, tier: db}}
    spec:
      containers:
        - name: db
          image: registry.example/acme/db:v1
          envFrom: [{configMapRef: {name: db-config}}]
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: app
          image: acme/web:1
          envFrom: [{configMapRef: {name: db-config}}]
          env:
            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "7"}
"""


def test_database_naming_its_own_service_is_not_its_own_client(tmp_path):
    write(tmp_path, {"k8s/all.yaml": CUSTOM_DB})
    result = run_check([str(tmp_path)], CheckOptions())
    named = {f.message.split(":", 1)[0] for f in result.findings}
    assert "db" not in named, [f.message for f in result.findings]
    assert "web" in named  # PA107: the Service leads to no image read as PostgreSQL
    (notice,) = [n for n in result.notices if n.startswith("StatefulSet/db:")]
    assert "Service db" in notice and "its own pods" in notice


def test_database_is_not_counted_against_the_server_declared_for_its_service(tmp_path):
    write(tmp_path, {
        "k8s/all.yaml": CUSTOM_DB,
        ".pool-advisor.toml": """
            [[servers]]
            name = "db"
            hosts = ["db"]
            max_connections = 100
            version = 16
            """,
    })
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    # web: 3 replicas x HikariCP 7; the StatefulSet db (1 pod x HikariCP default 10
    # before) is the server itself
    assert [c.who for c in budget.contributions] == ["web"]
    assert budget.peak == 3 * 7


def test_a_service_selecting_other_pods_still_links(tmp_path):
    """Control: a Service whose selector does not take the workload's labels is not its
    own, even when their names match."""
    other = CUSTOM_DB.replace("selector: {app: db}", "selector: {app: db, tier: primary}")
    write(tmp_path, {"k8s/all.yaml": other})
    result = run_check([str(tmp_path)], CheckOptions())
    named = {f.message.split(":", 1)[0] for f in result.findings}
    assert "db" in named


def server(name: str) -> str:
    return f"""
apiVersion: v1
kind: Service
metadata: {{name: {name}}}
spec:
  selector: {{app: {name}}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: {name}}}
spec:
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
        - name: postgres
          image: postgres:16.2
"""


def app(env: str, replicas: int = 3) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web}}
spec:
  replicas: {replicas}
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: app
          image: acme/web:1
          env:
{textwrap.indent(textwrap.dedent(env).strip(), "            ")}
"""


def test_celery_db_prefix_is_an_sqlalchemy_url():
    from advisor.model import Source
    from advisor.read.apps.urls import route_from_url

    src = Source(path="x.yaml", line=1)
    for url in ("db+postgresql://airflow@pg:5432/results",
                "db+postgresql+psycopg2://airflow@pg:5432/results"):
        route = route_from_url(url, src)
        assert (route.host, route.port, route.dbname, route.user) == (
            "pg", 5432, "results", "airflow"), url
    assert route_from_url("db+mysql://u@pg/results", src) is None


def test_every_url_of_the_env_is_a_route_each_once():
    from advisor.model import EnvVar, Source
    from advisor.read.apps.urls import route_from_env, routes_after

    def var(name: str, value: str, line: int) -> EnvVar:
        return EnvVar(name=name, value=value, source=Source(path="a.yaml", line=line))

    env = (var("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "postgresql://u@pg/meta", 1),
           var("AIRFLOW__CELERY__RESULT_BACKEND", "db+postgresql://u@pg/results", 2),
           var("AIRFLOW__CORE__OTHER", "postgresql://u@pg/meta", 3),  # the first again
           var("REDIS_URL", "redis://cache:6379/0", 4))
    routes = routes_after(route_from_env(env), env)
    assert [(r.dbname, r.source.key) for r in routes] == [
        ("meta", "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"),
        ("results", "AIRFLOW__CELERY__RESULT_BACKEND")]


def test_a_workload_reaching_two_servers_counts_at_both(tmp_path):
    """HikariCP's pool goes to db-a, where SPRING_DATASOURCE_URL leads; the second URL
    leads to db-b, where no pool is known: web is unknown there (PA106), never 0, and
    its HikariCP pool is counted once, at db-a."""
    write(tmp_path, {"k8s/a.yaml": server("db-a"), "k8s/b.yaml": server("db-b"),
                     "k8s/web.yaml": app("""
        - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db-a:5432/shop"}
        - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "7"}
        - {name: REPORTS_URL, value: "postgresql://reader@db-b:5432/reports"}
        """)})
    result = run_check([str(tmp_path)], CheckOptions())
    by = {b.server: b for b in result.budgets}
    assert [c.who for c in by["db-a"].contributions] == ["web"]
    assert by["db-a"].peak == 3 * 7 and by["db-a"].unknown_clients == []
    assert by["db-b"].unknown_clients == ["web"]
    unknown = [f.message for f in result.findings if f.code == "PA106"]
    assert len(unknown) == 1 and "db-b" in unknown[0] and "REPORTS_URL" in unknown[0], unknown


def test_two_databases_through_one_pgbouncer_are_two_pairs(tmp_path):
    bouncer = """
apiVersion: v1
kind: ConfigMap
metadata: {name: bouncer}
data:
  pgbouncer.ini: |
    [databases]
    * = host=db-a port=5432
    [pgbouncer]
    pool_mode = transaction
    default_pool_size = 4
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: pgbouncer}
spec:
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app: pgbouncer}}
    spec:
      containers:
        - name: pgbouncer
          image: bitnami/pgbouncer:1.22.1
          volumeMounts: [{name: cfg, mountPath: /etc/pgbouncer}]
      volumes:
        - {name: cfg, configMap: {name: bouncer}}
---
apiVersion: v1
kind: Service
metadata: {name: pgbouncer}
spec:
  selector: {app: pgbouncer}
"""
    write(tmp_path, {"k8s/a.yaml": server("db-a"), "k8s/bouncer.yaml": bouncer,
                     "k8s/web.yaml": app("""
        - {name: AIRFLOW__DATABASE__SQL_ALCHEMY_CONN, value: "postgresql://af@pgbouncer/meta"}
        - {name: AIRFLOW__CELERY__RESULT_BACKEND, value: "db+postgresql://af@pgbouncer/results"}
        """)})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    # one pool of default_pool_size 4 per (database, user) pair the client uses: (meta,
    # af) and (results, af); with the first URL alone it was one pool, 4
    assert budget.peak == 2 * 4, budget


def test_own_service_is_asked_once_per_host():
    """_without_own_routes asks own() of each host once, though a pool's route and the
    container's name it at two places; each route to the own Service is still dropped."""
    from advisor.link.clients import _without_own_routes
    from advisor.model import Pool, Route, Source, Term

    asked: list[str | None] = []
    svc = {"name": "db"}

    def own(host, w):
        asked.append(host)
        return svc if host == "db" else None

    at_env = Route(host="db", source=Source(path="a.yaml", line=3))
    at_pool = Route(host="db", source=Source(path="application.yml", line=7))
    other = Route(host="other", source=Source(path="a.yaml", line=4))
    pool = Pool(label="HikariCP", size=Term(label="size", value=5, source=Source(path="x")),
                route=at_pool)
    dropped: list = []
    kept, route, extra = _without_own_routes(object(), [pool], at_env, [other], own, dropped)
    assert asked == ["db", "other"]
    assert kept == [] and route == other and extra == []
    assert dropped == [(at_env, svc), (at_pool, svc)]
