"""Connection variable names read by whole words (advisor.read.apps.var_names), and what
that changes where a value is not known here (audit 10a D1): Immich's DB_HOSTNAME fetched
by an ExternalSecret or encrypted with SOPS was taken for a credential (the NAME inside
HOSTNAME matched like DB_NAME's), the workload was dropped and its server printed "fits,
peak 0"; SPRING_R2DBC_URL and DATASOURCE_URL had no database word the old pattern knew."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.link.clients import unknown_connection_note
from advisor.model import EnvVar, Source
from advisor.read.apps.var_names import may_name_where, meaning, name_parts, names_where
from tests.tree_helpers import write

# (name, says where it connects, may say it (asked about when its value is unknown))
NAMES = [
    ("DB_HOST", True, True),
    ("DB_HOSTNAME", True, True),  # Immich
    ("POSTGRES_HOSTNAME", True, True),
    ("DB_HOST_NAME", True, True),
    ("dbHostName", True, True),
    ("PGHOST", True, True),
    ("PGHOSTADDR", True, True),
    ("DATABASE_HOST", True, True),
    ("PAPERLESS_DBHOST", True, True),
    ("KC_DB_URL_HOST", True, True),
    ("PGBOUNCER_HOST", True, True),
    ("DATABASE_URL", True, True),
    ("SPRING_DATASOURCE_URL", True, True),
    ("SPRING_R2DBC_URL", True, True),
    ("DATASOURCE_URL", True, True),
    ("QUARKUS_DATASOURCE_JDBC_URL", True, True),
    ("QUARKUS_DATASOURCE_REACTIVE_URL", True, True),
    ("MM_SQLSETTINGS_DATASOURCE", True, True),
    ("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", True, True),
    ("DB_CONNECTION_STRING", True, True),
    ("CONNECTIONSTRINGS__DEFAULTCONNECTION", True, True),
    ("DSN", True, True),
    ("POSTGRES_URL_NON_POOLING", True, True),
    # an application's own word holding what the old substrings took for a credential
    ("REPORT_DB_HOST", True, True),  # PORT
    ("USERS_DATABASE_URL", True, True),  # USER
    ("TOKENS_DB_URL", True, True),  # TOKEN
    ("KEYCLOAK_DATABASE_HOST", True, True),  # KEY
    # credentials, ports and names: nothing of where
    ("DB_USERNAME", False, False),
    ("DB_USER_NAME", False, False),
    ("DB_NAME", False, False),
    ("DB_DATABASE_NAME", False, False),  # Immich
    ("DB_PASSWORD", False, False),
    ("DB_PASSWORD_FILE", False, False),
    ("PGPASSWORD", False, False),
    ("PGUSER", False, False),
    ("DB_PORT", False, False),
    ("KC_DB_URL_PORT", False, False),
    ("SPRING_DATASOURCE_USERNAME", False, False),
    ("SPRING_R2DBC_PASSWORD", False, False),
    # a database word but no host: asked about (a default host may be read with them)
    ("POSTGRES_DB", False, True),
    ("KC_DB_URL_DATABASE", False, True),
    ("DB_SSLMODE", False, True),
    ("SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE", False, True),
    # no PostgreSQL connection
    ("REDIS_HOSTNAME", False, False),
    ("MYSQL_HOST", False, False),
    ("MONGODB_URI", False, False),
    ("REDIS_DB", False, False),
    ("SENTRY_DSN", False, False),
    ("PGADMIN_DEFAULT_EMAIL", False, False),
    ("DBUS_SESSION_BUS_ADDRESS", False, False),
    ("JWT_SECRET", False, False),
]


@pytest.mark.parametrize(("name", "where", "asked"), NAMES)
def test_connection_variable_names_by_whole_words(name, where, asked):
    assert (names_where(name), may_name_where(name)) == (where, asked)


def test_words_split_on_separators_and_humps():
    assert name_parts("DB_HOSTNAME") == ("DB", "HOSTNAME")
    assert name_parts("dbHostName") == ("DB", "HOST", "NAME")
    assert name_parts("spring.datasource.url") == ("SPRING", "DATASOURCE", "URL")
    assert meaning("DB_HOST_PORT") == "not-where"  # the port of the host


def _unknown(name: str) -> EnvVar:
    return EnvVar(name=name, value=None, source=Source(path="k8s/es.yaml", line=3),
                  from_ref=f"secret:app-secret/{name} (remote: fetched from the remote store "
                           "by ExternalSecret app-secret (k8s/es.yaml:1))", secret=True)


@pytest.mark.parametrize("name", ["DB_HOSTNAME", "POSTGRES_HOSTNAME", "SPRING_R2DBC_URL",
                                  "DATASOURCE_URL", "DB_HOST", "DATABASE_URL"])
def test_an_unknown_host_or_url_is_said(name):
    note = unknown_connection_note("Deployment/photos", _unknown(name))
    assert note is not None and note.startswith(f"Deployment/photos: {name} (")


@pytest.mark.parametrize("name", ["DB_USERNAME", "DB_NAME", "DB_PASSWORD", "DB_PORT"])
def test_an_unknown_credential_is_not(name):
    assert unknown_connection_note("Deployment/photos", _unknown(name)) is None


CLUSTER = """
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: photos-postgres}
spec:
  instances: 1
  imageName: ghcr.io/cloudnative-pg/postgresql:17.5
  postgresql:
    parameters: {max_connections: "20"}
"""
SERVER = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: photos-server}
spec:
  replicas: 3
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: server
          image: ghcr.io/immich-app/immich-server:v1.135.3
          envFrom:
            - secretRef: {name: photos-secret}
"""


def external_secret(keys: list[str], template: str = "") -> str:
    data = "".join(f"    - {{secretKey: {k}, remoteRef: {{key: /photos/{k.lower()}}}}}\n"
                   for k in keys)
    return ("apiVersion: external-secrets.io/v1\nkind: ExternalSecret\n"
            "metadata: {name: photos-secret}\nspec:\n"
            "  secretStoreRef: {kind: ClusterSecretStore, name: vault}\n"
            f"  target:\n    name: photos-secret\n{template}  data:\n{data}")


SOPS = """
apiVersion: v1
kind: Secret
metadata: {name: photos-secret}
type: Opaque
stringData:
  HOST_KEY: ENC[AES256_GCM,data:q8d3kA0x,iv:abc=,tag:def=,type:str]
  DB_PASSWORD: ENC[AES256_GCM,data:zz==,iv:abc=,tag:def=,type:str]
sops:
  lastmodified: "2025-01-01T00:00:00Z"
  mac: ENC[AES256_GCM,data:mac=,iv:abc=,tag:def=,type:str]
  version: 3.9.0
"""


def _check(tmp_path, secret_file: str, secret: str):
    write(tmp_path, {"k8s/cluster.yaml": CLUSTER, f"k8s/{secret_file}": secret,
                     "k8s/server.yaml": SERVER})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = [b for b in result.budgets if b.server == "photos-postgres"]
    return result, budget


@pytest.mark.parametrize("key", ["DB_HOSTNAME", "POSTGRES_HOSTNAME", "SPRING_R2DBC_URL",
                                 "DATASOURCE_URL"])
def test_a_fetched_host_makes_the_client_unknown_not_gone(tmp_path, key):
    """audit 10a repro-32/36: the server is no fit drawn from a client not seen."""
    result, budget = _check(tmp_path, "es.yaml", external_secret([key, "DB_PASSWORD"]))
    assert budget.unplaced_clients == ["photos-server"] and not budget.fits
    assert [n for n in result.notices
            if n.startswith(f"Deployment/photos-server: {key} (") and "unknown here" in n]


def test_an_encrypted_host_makes_the_client_unknown_not_gone(tmp_path):
    """audit 10a repro-35: the same key in a SOPS-encrypted Secret of the repository."""
    result, budget = _check(tmp_path, "secret.sops.yaml",
                            SOPS.replace("HOST_KEY", "DB_HOSTNAME"))
    assert budget.unplaced_clients == ["photos-server"] and not budget.fits
    assert [n for n in result.notices if "DB_HOSTNAME" in n and "encrypted with SOPS" in n]


def test_fetched_credentials_alone_say_nothing_of_where(tmp_path):
    """DB_USERNAME and DB_PASSWORD from the store: no host to be unknown, the client
    connects where its program's default says (none here)."""
    _result, budget = _check(tmp_path, "es.yaml", external_secret(["DB_USERNAME",
                                                                  "DB_PASSWORD"]))
    assert budget.unplaced_clients == [] and budget.peak == 0


def test_a_host_written_in_the_template_links(tmp_path):
    """DB_HOSTNAME readable in the ExternalSecret's template: linked to its server."""
    template = ("    template:\n      data:\n        DB_HOSTNAME: photos-postgres-rw\n"
                "        DB_PASSWORD: \"{{ .db_password }}\"\n")
    _result, budget = _check(tmp_path, "es.yaml", external_secret(["DB_PASSWORD"], template))
    assert budget.unknown_clients == ["photos-server"] and budget.unplaced_clients == []
    assert budget.peak == 3  # 3 pods x at least 1 (PA106)


def test_a_host_of_no_server_here_is_not_dropped_silently(tmp_path):
    """A literal DB_HOSTNAME that names no server here: the workload is left out with a
    notice that names the variable (the old pattern took it for a credential)."""
    write(tmp_path, {"k8s/cluster.yaml": CLUSTER, "k8s/server.yaml": SERVER.replace(
        "          envFrom:\n            - secretRef: {name: photos-secret}\n",
        "          env:\n            - {name: DB_HOSTNAME, value: db.example.org}\n")})
    topo = scan([str(tmp_path)], CheckOptions()).topology
    assert [n for n in topo.notices
            if n.startswith("Deployment/photos-server: container server is given "
                            "DB_HOSTNAME='db.example.org'")]


@pytest.mark.parametrize("value", ["/data/pocket-id.db", "sqlite:///data/app.db",
                                   "mysql://db.example.org:3306/app"])
def test_a_connection_string_of_no_postgresql_server_is_no_host(tmp_path, value):
    """DB_CONNECTION_STRING is a connection string by its words, but a file (an SQLite
    database: GizmoTickler/home-ops's pocket-id) or another engine's URL names no server
    where a PostgreSQL client connects: no notice for it."""
    write(tmp_path, {"k8s/cluster.yaml": CLUSTER, "k8s/server.yaml": SERVER.replace(
        "          envFrom:\n            - secretRef: {name: photos-secret}\n",
        f"          env:\n            - {{name: DB_CONNECTION_STRING, value: \"{value}\"}}\n")})
    topo = scan([str(tmp_path)], CheckOptions()).topology
    assert not [n for n in topo.notices if "DB_CONNECTION_STRING" in n]
