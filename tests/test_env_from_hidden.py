"""An application whose choice of database is a variable its container does not set, when
an envFrom source whose keys the repository does not hold (a Secret not in it, an
ExternalSecret that extracts a remote item whole) may set it: whether it uses PostgreSQL,
where and with how many connections is unknown (PA106; the workload unplaced, each
server's peak a floor), never read as the application's default SQLite and no pool.

The manifests are in the shape homelab repositories deploy the *arr apps and
Paperless-ngx with (bjw-s app-template as rendered: the application's own settings in
`env`, the database's in a Secret taken whole by `envFrom`, made where it is deployed).
Before, `check` printed "server postgres ...: fits ... peak: 0" for them."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.model import EnvVar, Source
from advisor.read.apps import pools_for_container
from tests.apphelpers import container
from tests.tree_helpers import write

DB = """
apiVersion: v1
kind: Service
metadata: {name: postgres-rw, namespace: media}
spec:
  selector: {app: postgres}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: postgres, namespace: media}
spec:
  template:
    metadata: {labels: {app: postgres}}
    spec:
      containers:
        - name: postgres
          image: postgres:16.2
          args: ["-c", "max_connections=150"]
"""


def sonarr(env_from: str, env: str = "") -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: sonarr, namespace: media}}
spec:
  replicas: 1
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/home-operations/sonarr:4.0.19.3001
          env:
            - {{name: SONARR__APP__INSTANCENAME, value: Sonarr}}
            - {{name: SONARR__LOG__DBENABLED, value: "False"}}
            - {{name: SONARR__SERVER__PORT, value: "80"}}
{env}          envFrom:
{env_from}"""


NOT_HELD = """            - secretRef:
                name: sonarr-secret
"""
PAPERLESS = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: paperless, namespace: media}
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/paperless-ngx/paperless-ngx:2.18.4
          env:
            - {name: PAPERLESS_PORT, value: "8000"}
            - {name: PAPERLESS_REDIS, value: "redis://redis:6379"}
          envFrom:
            - secretRef:
                name: paperless-secret
"""


def _check(tmp_path, files: dict[str, str]):
    write(tmp_path, {"k8s/db.yaml": DB, **files})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    return result, budget


def test_sonarr_with_a_secret_not_held_is_unplaced_not_sqlite(tmp_path):
    result, budget = _check(tmp_path, {"k8s/sonarr.yaml": sonarr(NOT_HELD)})
    assert budget.unplaced_clients == ["sonarr"] and budget.peak_is_floor
    assert budget.peak == 0 and budget.contributions == []
    assert ("Deployment/media/sonarr: connects to a database it names in nothing the "
            "repository holds (Sonarr Npgsql pools: whether Sonarr uses PostgreSQL and "
            "where is not known: SONARR__POSTGRES__HOST may be set by Secret sonarr-secret "
            "(envFrom, k8s/sonarr.yaml:18), not in the repository)") in " ".join(result.notices)


def test_paperless_with_a_secret_not_held_is_unplaced_not_sqlite(tmp_path):
    result, budget = _check(tmp_path, {"k8s/paperless.yaml": PAPERLESS})
    assert budget.unplaced_clients == ["paperless"] and budget.peak_is_floor
    assert any("PAPERLESS_DBHOST may be set by Secret paperless-secret (envFrom, "
               "k8s/paperless.yaml:17), not in the repository" in n for n in result.notices)


EXTRACTED = """
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: sonarr, namespace: media}
spec:
  secretStoreRef: {kind: ClusterSecretStore, name: onepassword-connect}
  target: {name: sonarr-secret}
  dataFrom:
    - extract: {key: sonarr}
"""
TEMPLATED = """
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: sonarr, namespace: media}
spec:
  secretStoreRef: {kind: ClusterSecretStore, name: onepassword-connect}
  target:
    name: sonarr-secret
    template:
      data:
        SONARR__AUTH__APIKEY: "{{ .SONARR_API_KEY }}"
  dataFrom:
    - extract: {key: sonarr}
"""


def test_an_external_secret_extracted_whole_may_set_it(tmp_path):
    """dataFrom extract without a template: its keys are the remote item's, not known."""
    result, budget = _check(tmp_path, {"k8s/sonarr.yaml": sonarr(NOT_HELD),
                                       "k8s/es.yaml": EXTRACTED})
    assert budget.unplaced_clients == ["sonarr"] and budget.peak_is_floor
    assert any("SONARR__POSTGRES__HOST may be set by Secret sonarr-secret (envFrom, "
               "k8s/sonarr.yaml:18), whose keys are fetched where it is applied" in n
               for n in result.notices)


def test_a_templated_external_secret_says_its_keys_so_sonarr_is_on_sqlite(tmp_path):
    """onedr0p/home-ops's shape: the template names the Secret's only key (mergePolicy
    Replace), SONARR__POSTGRES__HOST is not among them: SQLite, no client, and the
    server's peak 0 is complete."""
    result, budget = _check(tmp_path, {"k8s/sonarr.yaml": sonarr(NOT_HELD),
                                       "k8s/es.yaml": TEMPLATED})
    assert budget.unplaced_clients == [] and not budget.peak_is_floor
    assert budget.peak == 0
    assert not [n for n in result.notices if "sonarr" in n.lower() and "may be set" in n]


def test_the_container_s_own_env_wins_over_the_secret(tmp_path):
    """An `env` entry wins over every envFrom source: the host is known, the pool read."""
    host = "            - {name: SONARR__POSTGRES__HOST, value: postgres-rw.media.svc}\n"
    _, budget = _check(tmp_path, {"k8s/sonarr.yaml": sonarr(NOT_HELD, host)})
    assert [(c.who, c.total) for c in budget.contributions] == [("sonarr", 100)]
    assert budget.unplaced_clients == []


def test_a_prefix_that_cannot_make_the_name_is_not_it(tmp_path):
    prefixed = NOT_HELD.replace("- secretRef:", "- prefix: RESTIC_\n              secretRef:")
    _, budget = _check(tmp_path, {"k8s/sonarr.yaml": sonarr(prefixed)})
    assert budget.unplaced_clients == [] and not budget.peak_is_floor


def test_a_prefix_in_another_case_still_makes_the_dotnet_key(tmp_path):
    """.NET configuration keys are case-insensitive: `sonarr__` + `postgres__host` is
    Sonarr:Postgres:Host."""
    prefixed = NOT_HELD.replace("- secretRef:", "- prefix: sonarr__\n              secretRef:")
    _, budget = _check(tmp_path, {"k8s/sonarr.yaml": sonarr(prefixed)})
    assert budget.unplaced_clients == ["sonarr"] and budget.peak_is_floor


# What workloads._env makes of `envFrom: [{secretRef: {name: app-secret}}]` when that
# Secret is not in the repository
MARKER = EnvVar(name="*", source=Source(path="k8s/app.yaml", line=40),
                from_ref="secret:app-secret (not in repository)", secret=True)
HIDDEN = "may be set by Secret app-secret (envFrom, k8s/app.yaml:40), not in the repository"


def _read(image: str, env: dict[str, str], *, hidden: bool, command: tuple[str, ...] = (),
          args: tuple[str, ...] = ()):
    c = container(env, args=args, command=command)
    return pools_for_container(replace(c, image=image, env=c.env + ((MARKER,) if hidden
                                                                      else ())))


@pytest.mark.parametrize(("image", "env", "command", "args", "why"), [
    ("grafana/grafana:11.3.0", {}, (), (),
     "Grafana [database] max_open_conn: whether Grafana's database is PostgreSQL, and where "
     "is not known: GF_DATABASE_URL or GF_DATABASE_TYPE " + HIDDEN),
    # a grafana.ini or env type that is not PostgreSQL: the unset URL still may be
    ("grafana/grafana:11.3.0", {"GF_DATABASE_TYPE": "sqlite3"}, (), (),
     "GF_DATABASE_URL or GF_DATABASE_TYPE " + HIDDEN),
    ("gitea/gitea:1.22.3", {}, (), (),
     "Gitea [database] MAX_OPEN_CONNS: whether Gitea's database is PostgreSQL, and where is "
     "not known: GITEA__database__DB_TYPE or DB_TYPE " + HIDDEN),
    ("codeberg.org/forgejo/forgejo:11", {}, (), (),
     "FORGEJO__database__DB_TYPE or GITEA__database__DB_TYPE or DB_TYPE " + HIDDEN),
    ("metabase/metabase:v0.50.0", {}, (), (),
     "Metabase application DB c3p0 maxPoolSize: whether Metabase's application database is "
     "PostgreSQL, and where is not known: MB_DB_CONNECTION_URI or MB_DB_TYPE " + HIDDEN),
    ("vaultwarden/server:1.32.0", {}, (), (),
     "Vaultwarden DATABASE_MAX_CONNS: whether Vaultwarden uses PostgreSQL and where is not "
     "known: DATABASE_URL or DATABASE_URL_FILE " + HIDDEN),
    ("n8nio/n8n:1.60.0", {}, (), (),
     "n8n DB_POSTGRESDB_POOL_SIZE: whether it uses PostgreSQL and where is not known: "
     "DB_TYPE " + HIDDEN),
    ("lscr.io/linuxserver/radarr:5.9.1", {}, (), (),
     "Radarr Npgsql pools: whether Radarr uses PostgreSQL and where is not known: "
     "RADARR__POSTGRES__HOST " + HIDDEN),
    ("ghcr.io/paperless-ngx/paperless-ngx:2.18.4", {}, (), (),
     "Paperless-ngx Django connections: whether Paperless-ngx uses PostgreSQL and where is "
     "not known: PAPERLESS_DBHOST " + HIDDEN),
    ("ghcr.io/paperless-ngx/paperless-ngx:3.0.5", {}, (), (),
     "PAPERLESS_DBHOST or PAPERLESS_DBENGINE " + HIDDEN),
    # 2.x reads PAPERLESS_DBENGINE only for "mariadb": with PAPERLESS_DBHOST, "sqlite"
    # is PostgreSQL (settings.py at v2.18.4)
    ("ghcr.io/paperless-ngx/paperless-ngx:2.18.4", {"PAPERLESS_DBENGINE": "sqlite"}, (), (),
     "PAPERLESS_DBHOST " + HIDDEN),
    ("jboss/keycloak:16.1.1", {}, (), (),
     "Keycloak (WildFly) KeycloakDS max-pool-size: whether Keycloak uses PostgreSQL and "
     "where is not known: DB_VENDOR " + HIDDEN),
    ("nextcloud:29-apache", {}, (), (),
     "Nextcloud PHP processes: whether Nextcloud uses PostgreSQL and where is not known: "
     "POSTGRES_HOST " + HIDDEN),
    ("ghcr.io/coder/coder:v2.31.3", {}, ("/opt/coder",), ("server",),
     "Coder database/sql pool: whether coderd uses an external PostgreSQL, and where is not "
     "known: CODER_PG_CONNECTION_URL or CODER_CONFIG_PATH " + HIDDEN),
    ("langfuse/langfuse:3.150.0", {}, (), (),
     "DATABASE_URL or DATABASE_HOST " + HIDDEN),
])
def test_a_secret_not_held_leaves_the_choice_of_database_unknown(image, env, command, args,
                                                                 why):
    found = _read(image, env, hidden=True, command=command, args=args)
    assert found.pools == []
    assert [u for u in found.unknown if why in u] == [u for u in found.unknown
                                                      if "may be set" in u]
    assert any(why in u for u in found.unknown), found.unknown
    # without that source the same env is the application's default database: no pool,
    # nothing unknown (Langfuse's entrypoint exits without a database URL)
    alone = _read(image, env, hidden=False, command=command, args=args)
    assert alone.pools == [] and alone.unknown == []


@pytest.mark.parametrize(("image", "env"), [
    ("grafana/grafana:11.3.0", {"GF_DATABASE_URL": "mysql://grafana@mysql:3306/grafana"}),
    ("gitea/gitea:1.22.3", {"GITEA__database__DB_TYPE": "sqlite3"}),
    ("metabase/metabase:v0.50.0", {"MB_DB_CONNECTION_URI": "jdbc:mysql://mysql/metabase"}),
    ("vaultwarden/server:1.32.0", {"DATABASE_URL": "mysql://vw@mysql/vw"}),
    ("n8nio/n8n:1.60.0", {"DB_TYPE": "sqlite"}),
    ("lscr.io/linuxserver/radarr:5.9.1", {"RADARR__POSTGRES__HOST": ""}),
    ("ghcr.io/paperless-ngx/paperless-ngx:2.18.4", {"PAPERLESS_DBENGINE": "mariadb"}),
    ("ghcr.io/paperless-ngx/paperless-ngx:3.0.5", {"PAPERLESS_DBENGINE": "sqlite"}),
    ("jboss/keycloak:16.1.1", {"DB_VENDOR": "h2"}),
    ("nextcloud:29-apache", {"SQLITE_DATABASE": "nextcloud"}),
    ("radarr:4.1.0.6175", {}),  # before Radarr__Postgres__*: no env decides
])
def test_what_the_container_sets_itself_is_not_hidden(image, env):
    """The container's own env wins over every envFrom source: its choice stands."""
    found = _read(image, env, hidden=True)
    assert found.pools == [] and not [u for u in found.unknown if "may be set" in u]


def test_paperless_3_postgresql_engine_without_a_host_is_postgresql():
    """3.0 settings/custom.py parse_db_settings: PAPERLESS_DBENGINE=postgresql decides,
    HOST None (libpq's default host); before, no pool was read."""
    found = _read("ghcr.io/paperless-ngx/paperless-ngx:3.0.5",
                  {"PAPERLESS_DBENGINE": "postgresql"}, hidden=False)
    assert [p.label for p in found.pools] == [
        "Paperless-ngx webserver (granian ASGI) Django connections",
        "Paperless-ngx Celery worker child", "Paperless-ngx document_consumer"]
    assert all(p.route is None for p in found.pools)
    # 2.x reads the engine only for mariadb: PostgreSQL needs PAPERLESS_DBHOST
    assert _read("ghcr.io/paperless-ngx/paperless-ngx:2.18.4",
                 {"PAPERLESS_DBENGINE": "postgresql"}, hidden=False).pools == []


@pytest.mark.parametrize(("image", "name"), [
    ("grafana/grafana:11.3.0", "GF_DATABASE_TYPE"),
    ("gitea/gitea:1.22.3", "GITEA__database__DB_TYPE"),
    ("metabase/metabase:v0.50.0", "MB_DB_TYPE"),
    ("vaultwarden/server:1.32.0", "DATABASE_URL"),
])
def test_a_deciding_variable_from_a_secret_is_unknown_not_a_notice(image, name):
    """Set from a secretKeyRef not held: the choice is unknown (PA106, the workload a
    floor wherever it is placed), as Mattermost's DriverName already was; it was a notice
    only, and a client placed by another URL counted nothing for it."""
    c = container({})
    var = EnvVar(name=name, source=Source(path="k8s/app.yaml", line=30, key=name),
                 from_ref=f"secret:app/{name}", secret=True)
    found = pools_for_container(replace(c, image=image, env=(var,)))
    assert found.pools == []
    assert any("(k8s/app.yaml:30)" in u and "PostgreSQL is not known" in u
               for u in found.unknown), found.unknown


def test_the_linker_keeps_the_unknown_on_a_route_another_variable_names(tmp_path):
    """A hidden choice with a URL beside it (Vaultwarden with an unrelated PGHOST): the
    client is on that server with connections unknown, not counted as 0 there."""
    vw = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: vaultwarden, namespace: media}
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: app
          image: vaultwarden/server:1.32.0
          env:
            - {name: PGHOST, value: postgres-rw}
          envFrom:
            - secretRef: {name: vaultwarden-secret}
"""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/vw.yaml": vw})
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    (client,) = [c for c in topo.clients if c.name == "vaultwarden"]
    assert client.pools == [] and "DATABASE_URL or DATABASE_URL_FILE may be set by Secret " \
        "vaultwarden-secret (envFrom, k8s/vw.yaml:16), not in the repository" in client.unknown


def test_paperless_3_exits_on_an_engine_it_does_not_know():
    """3.0 get_choice_from_env raises ValueError for a value not among its choices, as
    written ("MariaDB" is not "mariadb"): it does not start, and says so."""
    found = _read("ghcr.io/paperless-ngx/paperless-ngx:3.0.5",
                  {"PAPERLESS_DBENGINE": "MariaDB", "PAPERLESS_DBHOST": "db"}, hidden=True)
    assert found.pools == [] and found.unknown == []
    assert any("'MariaDB' is not sqlite, postgresql or mariadb" in n for n in found.notices)
