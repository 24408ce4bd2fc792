"""Dropwizard's DataSourceFactory (audit 22 D1): the `server <config.yml>` file's data
source blocks, maxSize or its default 100 (dropwizard-db DataSourceFactory.java:381 at
v2.1.12), `${VAR:-default}` only with EnvironmentVariableSubstitutor. The Marquez chart's
shape: a ConfigMap's config.yml mounted where the image's entrypoint script's `server
${APP_CONFIG}` points."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

DB = """
apiVersion: v1
kind: Service
metadata: {name: lineage-db}
spec:
  selector: {app: lineage-db}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: lineage-db}
spec:
  template:
    metadata: {labels: {app: lineage-db}}
    spec:
      containers:
        - name: postgres
          image: postgres:16
"""

APP_JAVA = """package org.acme.lineage;

import io.dropwizard.configuration.EnvironmentVariableSubstitutor;
import io.dropwizard.configuration.SubstitutingSourceProvider;

public final class LineageApp extends Application<LineageConfig> {
  @Override
  public void initialize(Bootstrap<LineageConfig> bootstrap) {
    bootstrap.setConfigurationSourceProvider(
        new SubstitutingSourceProvider(
            bootstrap.getConfigurationSourceProvider(),
            new EnvironmentVariableSubstitutor(false)));
  }
}
"""

ENTRYPOINT = """#!/bin/bash
set -e
java ${JAVA_OPTS} -jar lineage-*.jar server ${APP_CONFIG}
"""

DOCKERFILE = """FROM eclipse-temurin:17
WORKDIR /srv/app
COPY build/libs/lineage-*.jar /srv/app
COPY docker/entrypoint.sh entrypoint.sh
ENTRYPOINT ["/srv/app/entrypoint.sh"]
"""


def _config(db: str) -> str:
    body = "".join(f"    {line}\n" for line in db.splitlines())
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: lineage-config}}
data:
  config.yml: |-
    server:
      applicationConnectors:
      - type: http
        port: 8080
{body}"""


DEPLOY = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: lineage}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: lineage
          image: example/lineage:1.4.0
          volumeMounts:
            - {name: config, mountPath: /srv/app/config.yml, subPath: config.yml}
          env:
            - {name: APP_CONFIG, value: /srv/app/config.yml}
            - {name: DB_HOST, value: lineage-db}
      volumes:
        - name: config
          configMap: {name: lineage-config}
"""

_DB_BLOCK = ("db:\n  driverClass: org.postgresql.Driver\n"
             "  url: jdbc:postgresql://${DB_HOST:-localhost}:5432/lineage\n  user: lineage\n")


def check(tmp_path, db: str = _DB_BLOCK, java: str = APP_JAVA, deploy: str = DEPLOY,
          extra: dict[str, str] | None = None):
    write(tmp_path, {
        "build.gradle": "dependencies {\n"
                        "  implementation 'io.dropwizard:dropwizard-core:2.1.12'\n"
                        "  implementation 'io.dropwizard:dropwizard-jdbi3:2.1.12'\n}\n",
        "Dockerfile": DOCKERFILE, "docker/entrypoint.sh": ENTRYPOINT,
        "src/main/java/org/acme/lineage/LineageApp.java": java,
        "k8s/db.yaml": DB, "k8s/config.yaml": _config(db), "k8s/app.yaml": deploy,
        **(extra or {})})
    return run_check([str(tmp_path / "k8s")], CheckOptions(cache=False, root=tmp_path))


def test_mounted_config_without_max_size_is_the_default_100_over(tmp_path):
    """2 pods (Recreate) x 100 (DataSourceFactory maxSize default) = 200 > 97 usable
    (postgres:16 max_connections 100 - 3 reserved): over by 103, not 'cannot tell'."""
    result = check(tmp_path)
    (budget,) = result.budgets
    assert budget.unknown_clients == [] and budget.peak == 200 and not budget.fits
    codes = {f.code for f in result.findings}
    assert "PA101" in codes and "PA106" not in codes


def test_max_size_from_an_env_default_when_substituted(tmp_path):
    """maxSize: ${DB_POOL_MAX:-20}, DB_POOL_MAX unset: 20 per pod, 2 x 20 = 40 fits."""
    result = check(tmp_path, db=_DB_BLOCK + "  maxSize: ${DB_POOL_MAX:-20}\n")
    (budget,) = result.budgets
    assert budget.peak == 40 and budget.fits and budget.unknown_clients == []


def test_two_datasource_blocks_are_two_pools(tmp_path):
    """db (maxSize 30) and audit (default 100) to the same server: 2 x 130 = 260."""
    audit = ("audit:\n  driverClass: org.postgresql.Driver\n"
             "  url: jdbc:postgresql://${DB_HOST}:5432/audit\n")
    result = check(tmp_path, db=_DB_BLOCK + "  maxSize: 30\n" + audit)
    (budget,) = result.budgets
    assert budget.peak == 260


def test_without_the_substitutor_a_placeholder_size_is_not_a_default(tmp_path):
    """No EnvironmentVariableSubstitutor: `${DB_POOL_MAX:-20}` is the literal text, no int
    (the application does not start): unknown, never 20 or 100."""
    java = APP_JAVA.replace("SubstitutingSourceProvider", "Other").replace(
        "EnvironmentVariableSubstitutor", "Other")
    result = check(tmp_path, db=_DB_BLOCK + "  maxSize: ${DB_POOL_MAX:-20}\n", java=java)
    (unknown,) = [f for f in result.findings if f.code == "PA106"]
    assert "Dropwizard DataSourceFactory maxSize (db)" in unknown.message


def test_entrypoint_is_the_file_the_dockerfile_copies_not_any_of_its_name(tmp_path):
    """Marquez's root also holds web/ (the UI, its own docker/entrypoint.sh): the image's
    /srv/app/entrypoint.sh is the docker/entrypoint.sh its Dockerfile copies there
    (`COPY docker/entrypoint.sh entrypoint.sh` under WORKDIR /srv/app), not unknown
    because two scripts have that name (audit 27 D1: PA106 on the real repository)."""
    write(tmp_path, {"web/package.json": '{"name": "lineage-web"}\n',
                     "web/docker/entrypoint.sh": "#!/bin/bash\nnode server.js\n"})
    result = check(tmp_path)
    (budget,) = result.budgets
    assert budget.unknown_clients == [] and budget.peak == 200


WEB_DEPLOY = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: lineage-web}
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: lineage-web
          image: lineageproject/lineage-web:1.4.0
          env:
            - {name: API_HOST, value: lineage}
"""


def test_the_projects_web_image_is_its_web_folder_not_the_root_app(tmp_path):
    """lineageproject/lineage-web is the project's web/ (a Node UI, its own Dockerfile),
    as marquezproject/marquez-web is Marquez's web/: not the root's Dropwizard app, whose
    `server ${APP_CONFIG}` (unset here) made the UI 'may connect here' (audit 22 D2)."""
    write(tmp_path, {"web/package.json": '{"name": "lineage-web"}\n',
                     "web/Dockerfile": "FROM node:18-alpine\nWORKDIR /srv/app\nCOPY . .\n"
                                       'ENTRYPOINT ["/srv/app/entrypoint.sh"]\n',
                     "web/entrypoint.sh": "#!/bin/bash\nnode server.js\n",
                     "k8s/web.yaml": WEB_DEPLOY})
    result = check(tmp_path)
    (budget,) = result.budgets
    assert budget.unplaced_clients == [] and budget.peak == 200
    assert any("lineage-web: application source inferred as web/" in n
               for n in result.notices)


def test_config_the_image_copies_from_the_source_root_is_read(tmp_path):
    """`COPY lineage.yml config.yml` + `server config.yml` (commafeed's Dropwizard-era
    shape, config copied into the image): the root-level YAML is no kind the folder scan
    keeps, so it was 'not read' (unknown); it is the file the command names: maxSize 30,
    2 pods x 30 = 60 fits."""
    write(tmp_path, {
        "build.gradle": "dependencies {\n"
                        "  implementation 'io.dropwizard:dropwizard-jdbi3:2.1.12'\n}\n",
        "Dockerfile": "FROM eclipse-temurin:17\nWORKDIR /srv/app\n"
                      "COPY build/libs/lineage.jar lineage.jar\nCOPY lineage.yml config.yml\n"
                      'CMD ["java", "-jar", "lineage.jar", "server", "config.yml"]\n',
        "lineage.yml": "db:\n  driverClass: org.postgresql.Driver\n"
                       "  url: jdbc:postgresql://lineage-db:5432/lineage\n  maxSize: 30\n",
        "src/main/java/org/acme/lineage/LineageApp.java": "package org.acme.lineage;\n",
        "k8s/db.yaml": DB,
        "k8s/app.yaml": DEPLOY.replace("          volumeMounts:\n            - {name: config, "
                                       "mountPath: /srv/app/config.yml, subPath: config.yml}\n",
                                       "")})
    result = run_check([str(tmp_path / "k8s")], CheckOptions(cache=False, root=tmp_path))
    (budget,) = result.budgets
    assert budget.peak == 60 and budget.fits


BOUNCER = """
apiVersion: v1
kind: Service
metadata: {name: bouncer}
spec:
  selector: {app: bouncer}
  ports: [{port: 5432, targetPort: 6432}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: bouncer-ini}
data:
  pgbouncer.ini: |
    [databases]
    * = host=lineage-db port=5432

    [pgbouncer]
    listen_port = 6432
    pool_mode = transaction
    default_pool_size = 5
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: bouncer}
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    metadata: {labels: {app: bouncer}}
    spec:
      containers:
        - name: pgbouncer
          image: edoburu/pgbouncer:v1.24.1-p1
          volumeMounts: [{name: ini, mountPath: /etc/pgbouncer}]
      volumes: [{name: ini, configMap: {name: bouncer-ini}}]
"""


def test_the_blocks_user_is_its_routes_user_behind_a_pgbouncer(tmp_path):
    """Marquez's chart behind the PgBouncer advise proposes (audit 29 D3): `user:
    ${POSTGRES_USER}` is the block's connection user (DataSourceFactory.build():
    poolConfig.setUsername(user)), so its route names (lineage, lineage). Without it the
    pool's route had no user, and on Marquez the `*` entry counted a (marquez, *) pool
    beside the (marquez, buendia) of the env's route: 12 where advise promised 6."""
    from advisor.engine.check import scan

    db = ("db:\n  driverClass: org.postgresql.Driver\n"
          "  url: jdbc:postgresql://${POSTGRES_HOST}:5432/${POSTGRES_DB}\n"
          "  user: ${POSTGRES_USER}\n  maxSize: 20\n")
    deploy = DEPLOY.replace("{name: DB_HOST, value: lineage-db}",
                            "{name: POSTGRES_HOST, value: bouncer}\n"
                            "            - {name: POSTGRES_DB, value: lineage}\n"
                            "            - {name: POSTGRES_USER, value: lineage}")
    result = check(tmp_path, db=db, deploy=deploy, extra={"k8s/bouncer.yaml": BOUNCER})
    (budget,) = result.budgets
    assert budget.peak == 5 and budget.fits  # 1 PgBouncer x default_pool_size 5
    topo = scan([str(tmp_path / "k8s")], CheckOptions(cache=False, root=tmp_path)).topology
    (client,) = topo.clients
    (pool,) = client.pools
    assert pool.route is not None and (pool.route.dbname, pool.route.user) == \
        ("lineage", "lineage")
    (pooler,) = topo.poolers
    assert pooler.pairs == [("lineage", "lineage")]  # was [("lineage", "*")]
    # a user in the URL wins (pgjdbc Driver.parseURL: URL parameters over properties)
    db_url_user = db.replace("/${POSTGRES_DB}", "/${POSTGRES_DB}?user=audit")
    check(tmp_path, db=db_url_user, deploy=deploy, extra={"k8s/bouncer.yaml": BOUNCER})
    topo = scan([str(tmp_path / "k8s")], CheckOptions(cache=False, root=tmp_path)).topology
    assert topo.clients[0].pools[0].route.user == "audit"
