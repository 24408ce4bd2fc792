"""A `<APP>_DB_HOST` whose name says only DB is a PostgreSQL host when its siblings say so
(audit 13e D2, huangyingting/bingo-microservices' deploy/bingo/deploy.yaml: bi runs with
BI_DB_DRIVER=postgres, BI_DB_HOST=postgres-postgresql-primary.postgres.svc.cluster.local,
the server a Bitnami release installed by a script). Before, the tool said the workload
'names no database host' and ended with infos only, exit 0; now PA107 says its pods are
in no budget."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.link.hosts import host_variable_route
from advisor.model import EnvVar, Source
from tests.tree_helpers import write

APP = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: shortener
spec:
  replicas: 2
  selector:
    matchLabels: {app: shortener}
  template:
    metadata:
      labels: {app: shortener}
    spec:
      containers:
        - name: api
          image: ghcr.io/example/shortener:main
          env:
            - {name: SHORT_DB_DRIVER, value: %s}
            - {name: SHORT_DB_HOST, value: pg-postgresql-primary.pg.svc.cluster.local}
            - {name: SHORT_DB_DATABASE, value: links}
"""


def _env(**values: str) -> list[EnvVar]:
    return [EnvVar(name=k, value=v, source=Source(path="k8s/a.yaml", line=1))
            for k, v in values.items()]


def test_an_engine_or_port_sibling_makes_a_db_host_postgresql():
    host = "pg-postgresql-primary.pg.svc.cluster.local"
    for engine in ("postgres", "postgresql", "pgsql", "django.db.backends.postgresql"):
        route = host_variable_route(_env(SHORT_DB_DRIVER=engine, SHORT_DB_HOST=host), {},
                                    "default")
        assert route is not None and route.host == host, engine
    route = host_variable_route(_env(SHORT_DB_DRIVER="postgres", SHORT_DB_HOST=host,
                                     SHORT_DB_PORT="5432"), {}, "default")
    assert route is not None and route.port == 5432
    # another engine, a port alone, or nothing beside it: not taken as PostgreSQL's
    for siblings in ({"SHORT_DB_DRIVER": "mysql"}, {"SHORT_DB_TYPE": "sqlserver"},
                     {"SHORT_DB_PORT": "5432"}, {}):
        assert host_variable_route(_env(SHORT_DB_HOST=host, **siblings), {}, "default") is None


def test_a_db_host_with_a_postgres_driver_and_no_server_here_is_pa107(tmp_path):
    write(tmp_path, {"deploy/app.yaml": APP % "postgres"})
    r = run_check([tmp_path])
    (pa107,) = [f for f in r.findings if f.code == "PA107"]
    assert "pg-postgresql-primary.pg.svc.cluster.local" in pa107.message
    # 2 replicas + the rolling-update surge (25% of 2, rounded up: 1)
    assert "its 3 pods are in no budget" in pa107.message
    # a MySQL driver beside the same host is no PostgreSQL client
    write(tmp_path, {"deploy/app.yaml": APP % "mysql"})
    r = run_check([tmp_path])
    assert not [f for f in r.findings if f.code == "PA107"]
