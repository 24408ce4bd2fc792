"""Java servers run from their published images (audit J: Helm charts of Keycloak and
SonarQube): the pool their own configuration sources give, in the order the
application reads them, and where they connect (advisor/read/apps/images.py,
advisor/read/apps/urls.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB as DB
from tests.tree_helpers import write

KC_DB_POOL_MAX_SIZE_DEFAULT = 100  # Keycloak DatabaseOptions.java DB_POOL_MAX_SIZE


def budget_of(root: Path):
    result = run_check([str(root)], CheckOptions())
    return result, {b.server: b for b in result.budgets}


def pools_of(root: Path, name: str):
    topo = scan([str(root)], CheckOptions()).topology
    (client,) = [c for c in topo.clients if c.name == name]
    return client.pools


def keycloakx(args: str, env: str = "") -> str:
    """A StatefulSet in the shape codecentric's keycloakx chart renders: kc.sh as the
    command, the options in args, KC_DB* in the env."""
    return f"""
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: keycloak}}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: keycloak
          image: quay.io/keycloak/keycloak:26.5.6
          command: ["/opt/keycloak/bin/kc.sh"]
          args: {args}
          env:
            - {{name: KC_DB, value: postgres}}
            - {{name: KC_DB_URL_HOST, value: db}}
            - {{name: KC_DB_URL_DATABASE, value: keycloak}}
{env}"""


def test_keycloak_db_pool_max_size_on_the_command_line_wins_over_the_env(tmp_path):
    """Audit J item 4: keycloakx with args [start, --db-pool-max-size=25] was counted
    at the default 100 (10 pods x 100 = 1000, OVER); the command line is Keycloak's
    first config source (ConfigArgsConfigSource ordinal 600, the env's 500)."""
    env = "            - {name: KC_DB_POOL_MAX_SIZE, value: \"20\"}\n"
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/kc.yaml": keycloakx(
        '["start", "--db-pool-max-size=25", "--optimized"]', env)})
    result, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 2 * 25, result.notices
    (pool,) = pools_of(tmp_path, "keycloak")
    assert (pool.size.source.path, pool.size.source.line) == ("k8s/kc.yaml", 13)  # the args line
    assert pool.size.source.key == "--db-pool-max-size" and pool.bound == "fixed"
    assert not [f for f in result.findings if f.code == "PA104"]


def test_keycloak_db_pool_max_size_as_two_words_and_in_a_shell_string(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/kc.yaml": keycloakx(
        '["start", "--db-pool-max-size", "12"]')})
    _, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 2 * 12
    write(tmp_path, {"k8s/kc.yaml": keycloakx(
        '["-c", "exec /opt/keycloak/bin/kc.sh start --db-pool-max-size=8"]')})
    _, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 2 * 8
    # no option: the env, then the default
    write(tmp_path, {"k8s/kc.yaml": keycloakx('["start"]')})
    _, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 2 * KC_DB_POOL_MAX_SIZE_DEFAULT


WILDFLY_MAX_POOL_SIZE = 20  # IronJacamar Defaults.MAX_POOL_SIZE (KeycloakDS sets none)


def keycloak_legacy(image: str, vendor: str = "postgres", replicas: int = 3) -> str:
    """The shape of codecentric's legacy keycloak chart (statefulset.yaml): DB_VENDOR,
    DB_ADDR naming the bundled PostgreSQL's Service, DB_PORT, DB_DATABASE, DB_USER."""
    return f"""
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: keycloak}}
spec:
  replicas: {replicas}
  podManagementPolicy: Parallel
  template:
    spec:
      containers:
        - name: keycloak
          image: {image}
          env:
            - {{name: DB_VENDOR, value: {vendor}}}
            - {{name: DB_ADDR, value: db}}
            - {{name: DB_PORT, value: "5432"}}
            - {{name: DB_DATABASE, value: keycloak}}
            - {{name: DB_USER, value: keycloak}}
"""


@pytest.mark.parametrize("image", [
    "quay.io/keycloak/keycloak:17.0.1-legacy",
    "quay.io/keycloak/keycloak:15.0.2",
    "jboss/keycloak:16.1.1",
    "docker.io/jboss/keycloak",
])
def test_legacy_keycloak_connects_to_db_addr_with_wildflys_pool(tmp_path, image):
    """Audit J item 1: codecentric's keycloak chart (17.0.1-legacy, DB_ADDR to its
    bundled PostgreSQL) was linked nowhere: 'fits, peak 0'; and its pool is WildFly's
    KeycloakDS, default 20, not the Quarkus distribution's 100."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/kc.yaml": keycloak_legacy(image)})
    result, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 3 * WILDFLY_MAX_POOL_SIZE, result.notices
    (pool,) = pools_of(tmp_path, "keycloak")
    assert pool.label == "Keycloak (WildFly) KeycloakDS max-pool-size"
    assert pool.bound == "default" and "IronJacamar" in pool.size.source.default
    assert pool.route is not None and (pool.route.host, pool.route.source.key) == \
        ("db", "DB_ADDR")


def test_legacy_keycloak_on_another_database_is_no_postgresql_client(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/kc.yaml": keycloak_legacy(
        "quay.io/keycloak/keycloak:18.0.2-legacy", vendor="mariadb")})
    _, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 0
    assert pools_of_all(tmp_path) == []


def test_the_quarkus_distribution_keeps_its_own_default():
    from advisor.read.apps.images import _keycloak_wildfly

    for image in ("quay.io/keycloak/keycloak:17.0.1", "quay.io/keycloak/keycloak:26.5.6",
                  "bitnami/keycloak:24", "registry:5000/keycloak/keycloak", "acme/keycloak:15"):
        assert not _keycloak_wildfly(image), image


def pools_of_all(root: Path):
    topo = scan([str(root)], CheckOptions()).topology
    return [p for c in topo.clients for p in c.pools]


SONAR_MAX_ACTIVE = 60  # ProcessProperties.java JDBC_MAX_ACTIVE("sonar.jdbc.maxActive", "60")
SONAR_POOLS_PER_POD = 2  # the web server and the Compute Engine each add DefaultDatabase


def sonarqube(props: str = "", env: str = "", args: str = "[]") -> str:
    """The shape of SonarSource's sonarqube chart: the JDBC URL from an envFrom
    ConfigMap, sonar.properties in a ConfigMap that an init container copies into
    conf/ (an emptyDir), a curl test Pod of the same image; and a Data Center search
    node, which holds no database pool."""
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: sonar-jdbc}}
data:
  SONAR_JDBC_URL: "jdbc:postgresql://db:5432/sonar"
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: sonar-config}}
data:
  sonar.properties: |
    sonar.forceAuthentication=true
{props}---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: sonarqube}}
spec:
  replicas: 2
  template:
    spec:
      initContainers:
        - name: concat-properties
          image: sonarqube:25.1.0.102122-community
          command: ["sh", "-c", "cat /tmp/props/sonar.properties > /tmp/result/sonar.properties"]
          volumeMounts:
            - {{name: config, mountPath: /tmp/props/sonar.properties, subPath: sonar.properties}}
            - {{name: conf, mountPath: /tmp/result}}
      containers:
        - name: sonarqube
          image: sonarqube:25.1.0.102122-community
          args: {args}
          envFrom:
            - configMapRef: {{name: sonar-jdbc}}
          env:
            - {{name: SONAR_WEB_CONTEXT, value: /}}
{env}          volumeMounts:
            - {{name: conf, mountPath: /opt/sonarqube/conf/}}
      volumes:
        - name: config
          configMap:
            name: sonar-config
            items: [{{key: sonar.properties, path: sonar.properties}}]
        - {{name: conf, emptyDir: {{}}}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: sonarqube-search}}
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: search
          image: sonarqube:2025.1.0-datacenter-search
---
apiVersion: v1
kind: Pod
metadata:
  name: ui-test
  annotations: {{helm.sh/hook: test}}
spec:
  containers:
    - name: ui-test
      image: sonarqube:25.1.0.102122-community
      command: [curl]
      args: ["sonarqube:9000/api/system/status"]
"""


def test_sonarqube_default_is_60_in_each_of_two_processes(tmp_path):
    """Audit J item 2: any jdbc:postgresql URL was HikariCP's default 10 (2 pods x 10 =
    20, fits); SonarQube's own default is sonar.jdbc.maxActive 60, in the web server
    and in the Compute Engine: 2 pods x 2 x 60 = 240."""
    db = DB.replace("max_connections=50", "max_connections=300")
    write(tmp_path, {"k8s/db.yaml": db, "k8s/sonar.yaml": sonarqube()})
    result, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 2 * SONAR_POOLS_PER_POD * SONAR_MAX_ACTIVE, result.notices
    (pool,) = pools_of(tmp_path, "sonarqube")
    assert pool.bound == "default" and "ProcessProperties.java" in pool.size.source.default
    assert pool.processes is not None and "Compute Engine" in pool.processes.label
    assert not [n for n in result.notices if "SonarQube" in n], result.notices


def test_sonarqube_max_active_from_its_properties_env_and_arguments(tmp_path):
    """sonar.properties, then SONAR_JDBC_MAXACTIVE, then -Dsonar.jdbc.maxActive, each
    over the one before (sonar-main AppSettingsLoaderImpl)."""
    props = "    sonar.jdbc.maxActive=30\n"
    write(tmp_path, {"k8s/db.yaml": DB.replace("=50", "=300"),
                     "k8s/sonar.yaml": sonarqube(props)})
    (pool,) = pools_of(tmp_path, "sonarqube")
    assert pool.size.value == 30 and pool.per_pod() == SONAR_POOLS_PER_POD * 30
    assert (pool.size.source.path, pool.size.source.line) == ("k8s/sonar.yaml", 14)
    env = "            - {name: SONAR_JDBC_MAXACTIVE, value: \"25\"}\n"
    write(tmp_path, {"k8s/sonar.yaml": sonarqube(props, env)})
    (pool,) = pools_of(tmp_path, "sonarqube")
    assert pool.size.value == 25 and pool.size.source.key == "SONAR_JDBC_MAXACTIVE"
    write(tmp_path, {"k8s/sonar.yaml": sonarqube(props, env, '["-Dsonar.jdbc.maxActive=20"]')})
    _, budgets = budget_of(tmp_path)
    assert budgets["db"].peak == 2 * SONAR_POOLS_PER_POD * 20


KC_NO_DB = """
apiVersion: v1
kind: Secret
metadata: {name: kc-admin}
stringData: {KC_BOOTSTRAP_ADMIN_USERNAME: admin}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: keycloak}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: keycloak
          image: IMAGE
          args: ARGS
          env:
            - {name: KC_HEALTH_ENABLED, value: "true"}
          envFrom: [{secretRef: {name: kc-admin}}]
"""


@pytest.mark.parametrize("image,args,client", [
    # the published image, no KC_DB and no --db: Keycloak's default db, dev-file (H2)
    ("quay.io/keycloak/keycloak:25.0.6", '["start-dev", "--import-realm"]', False),
    ("keycloak/keycloak:26.2", '["start"]', False),
    # --db chooses PostgreSQL; a custom image may build it in (kc.sh build --db=postgres)
    ("quay.io/keycloak/keycloak:25.0.6", '["start", "--db=postgres"]', True),
    ("acme/keycloak:25.0.6", '["start", "--optimized"]', True),
])
def test_keycloak_with_no_db_chosen_uses_dev_file(tmp_path, image, args, client):
    """Audit 42 D7 (HuzeyfeUlutas/dotnet-microservices-saga's keycloak 25.0.6, `start-dev
    --import-realm`, env KC_HEALTH_ENABLED and an admin Secret): `db` defaults to
    dev-file (DatabaseOptions.DB defaultValue("dev-file")); it was a Keycloak pool of 100
    that 'may connect to any server here', every peak 'at least'."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/kc.yaml": KC_NO_DB.replace(
        "IMAGE", image).replace("ARGS", args)})
    result, budgets = budget_of(tmp_path)
    assert bool(budgets["db"].unplaced_clients) is client, result.notices
    said = [n for n in result.notices if "uses its default database dev-file" in n]
    assert bool(said) is not client


@pytest.mark.parametrize("vendor", ["dev-mem", "dev-file", "mariadb"])
def test_keycloak_on_an_embedded_or_other_database_is_no_postgresql_client(tmp_path, vendor):
    """Audit 13e (gwarrior01/kubernetes-for-developers' Bonus/microservices/keycloak.yaml:
    start-dev with KC_DB=dev-mem, an in-memory H2): it was a Keycloak pool of 100 that
    'may connect to any server here' (PA104, and each peak a floor)."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/kc.yaml": f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: keycloak}}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: keycloak
          image: quay.io/keycloak/keycloak:26.2.4
          args: ["start-dev", "--import-realm"]
          env:
            - {{name: KC_DB, value: "{vendor}"}}
"""})
    result, budgets = budget_of(tmp_path)
    assert pools_of_all(tmp_path) == []
    assert budgets["db"].peak == 0 and not budgets["db"].unknown_clients
    assert not [f for f in result.findings if f.code == "PA104"]
