"""Issue 13 item 1: a client whose connections cannot be read is never a silent 0."""

from __future__ import annotations

import json

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.rule_pages import load_pages, write_tree

PAGE = next(p for p in load_pages() if p.code == "PA106")


def _check(root, select=None):
    return run_check([str(root)], CheckOptions(select=select or []))


def test_unknown_client_makes_the_peak_a_floor(tmp_path):
    write_tree(tmp_path, PAGE.bad)
    result = _check(tmp_path)
    (budget,) = result.budgets
    assert budget.unknown_clients == ["reports"]
    # 3 replicas + 1 surge, one connection each at least
    assert budget.peak == 4 and budget.peak_is_floor and not budget.fits
    (f,) = [f for f in result.findings if f.code == "PA106"]
    assert "4 pods are counted as 1 connection each in the budget of server db" in f.message
    assert 'connections = N' in f.message and "no application source folder" in f.message


def test_text_and_json_say_peak_at_least(tmp_path):
    from advisor.report import json as json_report
    from advisor.report import text
    from advisor.rules import load_rules

    write_tree(tmp_path, PAGE.bad)
    result = _check(tmp_path)
    out = text.render(result, load_rules())
    assert "peak >= 4 (1 client unknown: reports)" in out
    assert "cannot tell whether it fits" in out and ": fits" not in out
    data = json.loads(json_report.render(result, load_rules()))
    assert data["budgets"][0]["unknown_clients"] == ["reports"]
    assert data["budgets"][0]["fits"] is False and data["budgets"][0]["peak_is_floor"]
    back = json_report.load(json_report.render(result, load_rules()))
    assert back.budgets[0].unknown_clients == ["reports"]


def test_declared_connections_resolve_it(tmp_path):
    files = dict(PAGE.bad)
    files[".pool-advisor.toml"] = '[[workloads]]\nname = "reports"\nconnections = 7\n'
    write_tree(tmp_path, files)
    result = _check(tmp_path)
    (budget,) = result.budgets
    assert budget.unknown_clients == [] and budget.fits
    assert budget.peak == (3 + 1) * 7  # replicas + 25% surge rounded up, x 7 declared
    assert not [f for f in result.findings if f.code == "PA106"]


def test_host_linking_to_nothing_is_a_warning(tmp_path):
    page = next(p for p in load_pages() if p.code == "PA107")
    write_tree(tmp_path, page.bad)
    (f,) = [f for f in _check(tmp_path).findings if f.code == "PA107"]
    assert f.severity.value == "warning" and "'orders-db'" in f.message


def _web(tmp_path, url: str, files: dict[str, str]) -> object:
    page = dict(PAGE.bad)
    page["k8s/reports.yaml"] = page["k8s/reports.yaml"].replace(
        "postgres://reports@db:5432/shop", url).replace("acme/reports:1.0", "acme/web:1.0")
    write_tree(tmp_path, {**page, **files})
    return _check(tmp_path)


def test_url_scheme_names_the_stack_and_pa104_says_so(tmp_path):
    # postgresql+psycopg:// is SQLAlchemy's: QueuePool 5 + 10 per process, 1 process
    result = _web(tmp_path, "postgresql+psycopg://reports@db:5432/shop",
                  {"web/Dockerfile": "FROM python:3.12\n"})
    (budget,) = result.budgets
    assert budget.unknown_clients == [] and budget.peak == (3 + 1) * 15
    (f,) = [f for f in result.findings if f.code == "PA104"]
    assert "the URL scheme postgresql+psycopg:// of DATABASE_URL" in f.message


def test_dependency_file_names_the_stack(tmp_path):
    # package.json names pg (node-postgres) and no `new Pool` is read: pg-pool default 10
    result = _web(tmp_path, "postgres://reports@db:5432/shop",
                  {"web/package.json": '{"dependencies": {"pg": "^8.11.0"}}\n',
                   "web/Dockerfile": "FROM node:22\n"})
    (budget,) = result.budgets
    assert budget.unknown_clients == [] and budget.peak == (3 + 1) * 10
    (f,) = [f for f in result.findings if f.code == "PA104"]
    assert "stack identified by pg (web/package.json:1)" in f.message


def test_published_images_are_never_given_the_repository_source():
    from advisor.read.apps.locate import maybe_built_here

    assert maybe_built_here("ghcr.io/acme/stats:postgresql-latest")  # a tag is no name
    assert not maybe_built_here("postgres:16")
    assert not maybe_built_here("quay.io/keycloak/keycloak:26.0")
    assert not maybe_built_here("bitnami/pgbouncer:1.23")


THIRD_PARTY_JDBC = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: metabase}
spec:
  replicas: 3
  selector: {matchLabels: {app: metabase}}
  template:
    metadata: {labels: {app: metabase}}
    spec:
      containers:
        - name: metabase
          image: metabase/metabase:v0.50.0
          env:
            - {name: MB_DB_CONNECTION_URI, value: "jdbc:postgresql://db:5432/metabase"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: orders}
spec:
  replicas: 2
  selector: {matchLabels: {app: orders}}
  template:
    metadata: {labels: {app: orders}}
    spec:
      containers:
        - name: orders
          image: example/orders:1.0
          env:
            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db:5432/orders"}
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - {name: postgres, image: "postgres:16"}
"""


def test_a_jdbc_url_alone_names_no_pool(tmp_path):
    """A JDBC URL names pgjdbc, not the pool: Metabase's image holds c3p0 (15), not
    HikariCP's 10, which the URL scheme alone gave (3 + 1 pods x 10 = 40, 'fits'). A
    SPRING_DATASOURCE_URL still says Spring Boot, whose pool is HikariCP. (Metabase's
    own image is now read as Metabase, tests/test_apps_images: a vendor's JVM image here.)"""
    write_tree(tmp_path, {"k8s/all.yaml": THIRD_PARTY_JDBC.replace(
        "metabase/metabase:v0.50.0", "vendor/reportserver:4.2")})
    result = _check(tmp_path)
    (budget,) = result.budgets
    assert budget.unknown_clients == ["metabase"] and budget.peak_is_floor
    assert budget.peak == (3 + 1) * 1 + (2 + 1) * 10
    (f,) = [f for f in result.findings if f.code == "PA106"]
    assert "MB_DB_CONNECTION_URI (k8s/all.yaml:14) is a JDBC URL" in f.message


def test_pooler_clients_of_unknown_size_are_said_not_passed(tmp_path):
    """Audit K: behind PgBouncer, clients of unknown size summed to a floor under
    max_client_conn and PA201 said nothing, so max_client_conn appeared nowhere (the
    Airflow chart with pgbouncer.enabled). A floor that fits is 'cannot tell' (info)."""
    page = next(p for p in load_pages() if p.code == "PA201")
    files = dict(page.bad)
    files["k8s/app.yaml"] = files["k8s/app.yaml"].replace(
        "SPRING_DATASOURCE_URL\n              value: jdbc:postgresql://pgbouncer:6432/shop",
        "DATABASE_URL\n              value: postgresql://pgbouncer:6432/shop").replace(
        "            - name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE\n"
        '              value: "20"\n', "").replace(
        "            - name: SPRING_DATASOURCE_USERNAME\n              value: shop\n", "")
    assert "DATABASE_URL" in files["k8s/app.yaml"] and "SPRING" not in files["k8s/app.yaml"]
    write_tree(tmp_path, files)
    result = _check(tmp_path)
    (f,) = [f for f in result.findings if f.code == "PA201"]
    assert f.severity.value == "info", f.message
    assert "client connections at peak >= 10 (1 client of unknown or unbounded size: " \
           "checkout) vs 100 max_client_conn x replicas: cannot tell" in f.message


def test_a_container_running_nginx_is_no_client(tmp_path):
    """Zammad's chart gives its nginx container the Rails containers' database env;
    nginx opens no PostgreSQL connection, so it is no client (it was 2 + 1 pods of
    unknown size, a floor, in the budget)."""
    nginx = THIRD_PARTY_JDBC.split("---\n")[0].replace("metabase", "web-nginx").replace(
        "          image: web-nginx/web-nginx:v0.50.0\n",
        "          image: example/app:1\n          command: [/usr/sbin/nginx, -g, 'daemon off;']\n")
    assert "/usr/sbin/nginx" in nginx
    write_tree(tmp_path, {"k8s/all.yaml": nginx + "---\n" + "---\n".join(
        THIRD_PARTY_JDBC.split("---\n")[1:])})
    result = _check(tmp_path)
    (budget,) = result.budgets
    assert [c.who for c in budget.contributions] == ["orders"]
    assert budget.peak == (2 + 1) * 10 and not budget.peak_is_floor
    assert any("container web-nginx runs /usr/sbin/nginx (k8s/all.yaml:13), which opens no "
               "PostgreSQL connection" in n for n in result.notices), result.notices
