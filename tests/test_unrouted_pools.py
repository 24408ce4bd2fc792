"""A pool whose reader says where it connects is not known (Pool.route_unknown: the
variable naming its database is set from a Secret the repository does not hold) is
placed on no other variable's URL: its workload is unplaced, each server's peak a floor,
a notice saying which client and why. A pool whose reader says nothing of its route
keeps the fallback, the container's only URL.

The Mattermost case in the shape of mattermost/mattermost-helm's mattermost-team-edition
chart (fa193d0): MM_CONFIG from the Secret the chart renders from externalDB
(templates/secret-mattermost-dbsecret.yaml), the chart's envFrom config Secret, and the
application's own database through extraEnvVars, MM_SQLSETTINGS_DATASOURCE from a Secret
made where it is deployed. Its 300-connection pool was put on the config store's server
(604 > 97, PA101), and the server it does use said "fits, peak 0"."""

from __future__ import annotations

import base64

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, deployment, write


def server(name: str, max_connections: int) -> str:
    return POSTGRES_DB.replace("max_connections=50", f"max_connections={max_connections}") \
        .replace("{name: db}", f"{{name: {name}}}").replace("{app: db}", f"{{app: {name}}}")


CONFIG_DSN = "postgres://mmuser:pw@mm-config-db:5432/mmconfig?sslmode=disable"
MM_IMAGE = "mattermost/mattermost-team-edition:11.6.1"


def mattermost_chart(extra_env: str, dsn: str = CONFIG_DSN) -> str:
    """The team-edition chart's Deployment and dbsecret as rendered (Recreate here, so
    that the pods at peak are the replicas)."""
    secret = base64.b64encode(dsn.encode()).decode()
    return f"""
apiVersion: v1
kind: Secret
metadata: {{name: mm-mattermost-team-edition-mattermost-dbsecret}}
type: Opaque
data:
  mattermost.dbsecret: {secret}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: mattermost}}
spec:
  replicas: 2
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
      - name: mattermost-team-edition
        image: {MM_IMAGE}
        env:
        - name: MM_CONFIG
          valueFrom:
            secretKeyRef:
              name: mm-mattermost-team-edition-mattermost-dbsecret
              key: mattermost.dbsecret
{extra_env}        envFrom:
        - secretRef:
            name: mm-mattermost-team-edition-config
"""


HIDDEN_DATASOURCE = """        - name: MM_SQLSETTINGS_DRIVERNAME
          value: postgres
        - name: MM_SQLSETTINGS_DATASOURCE
          valueFrom:
            secretKeyRef:
              name: mattermost-app-db
              key: dsn
"""
NOTICE = ("Deployment/mattermost: Mattermost SqlSettings.MaxOpenConns: "
          "MM_SQLSETTINGS_DATASOURCE (k8s/mattermost.yaml:{line}) is set from a reference "
          "whose value is not held here, so where it connects is not known "
          "(SqlSettings.DataSource{more}): it may connect to any server here, so each peak "
          "is a floor (declare [[workloads]] target)")


def _budgets(root):
    result = run_check([str(root)], CheckOptions(cache=False))
    return result, {b.server: b for b in result.budgets}


def _tree(tmp_path, extra_env: str = HIDDEN_DATASOURCE, dsn: str = CONFIG_DSN):
    return write(tmp_path, {"k8s/dbs.yaml": server("mm-config-db", 100) + "---\n"
                            + server("mm-db", 500),
                            "k8s/mattermost.yaml": mattermost_chart(extra_env, dsn)})


def test_a_hidden_data_source_is_not_placed_on_the_config_store_s_server(tmp_path):
    result, budgets = _budgets(_tree(tmp_path))
    store, app = budgets["mm-config-db"], budgets["mm-db"]
    # only the config store's pool, 2 per pod, is on the store's server
    assert [(c.who, c.total) for c in store.contributions] == [("mattermost", 4)]
    assert store.peak == 4 and store.peak_is_floor
    assert store.unplaced_clients == app.unplaced_clients == ["mattermost"]
    assert app.peak == 0 and app.peak_is_floor and not app.fits
    assert not [f for f in result.findings if f.code == "PA101"]
    assert NOTICE.format(line=28, more=", which overrides the configuration store's DSN at "
                         "k8s/mattermost.yaml:7") in result.notices
    # the application's pool is a part of the client that no budget holds
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    parts = {c.id: c for c in topo.clients if c.name == "mattermost"}
    whole = parts["Deployment/mattermost"]
    assert [p.label for p in whole.pools] == [
        "Mattermost database config store (SetMaxOpenConns(2))"]
    assert whole.target_id == "StatefulSet/mm-config-db"
    lost = parts["Deployment/mattermost>unknown-database"]
    (pool,) = lost.pools
    assert (pool.label, pool.size.value, pool.route) == (
        "Mattermost SqlSettings.MaxOpenConns", 300, None)
    assert (lost.target_id, lost.route, lost.part_of) == (
        None, None, "Deployment/mattermost")


def test_a_declared_target_takes_the_hidden_pool(tmp_path):
    """The notice's advice: [[workloads]] target places it, nothing is unplaced; the
    configuration store's pool stays on the server its DSN names (audit 13d: the declared
    target took it too, and mm-config-db's peak was 0)."""
    _tree(tmp_path)
    write(tmp_path, {".pool-advisor.toml": '[[workloads]]\nname = "mattermost"\n'
                                           'target = "mm-db"\n'})
    result, budgets = _budgets(tmp_path)
    assert budgets["mm-db"].peak == 2 * 300
    assert budgets["mm-config-db"].peak == 2 * 2
    assert not budgets["mm-config-db"].peak_is_floor
    assert not budgets["mm-db"].unplaced_clients and not budgets["mm-db"].peak_is_floor
    assert not [n for n in result.notices if "may connect to any server" in n]


def test_hidden_data_source_and_size_still_floor_every_server(tmp_path):
    """MaxOpenConns from a Secret too: the reader returns no application pool (its size
    unknown), and says where it connects is not known all the same."""
    _tree(tmp_path, HIDDEN_DATASOURCE + """        - name: MM_SQLSETTINGS_MAXOPENCONNS
          valueFrom:
            secretKeyRef:
              name: mattermost-app-db
              key: max
""")
    _, budgets = _budgets(tmp_path)
    assert budgets["mm-config-db"].unknown_clients == ["mattermost"]
    assert budgets["mm-db"].unplaced_clients == ["mattermost"]
    assert budgets["mm-db"].peak_is_floor


def test_a_config_file_store_leaves_the_client_itself_unplaced(tmp_path):
    """No URL at all (MM_CONFIG a file): the client holds the pool, on no route, and the
    notice is the reader's reason, not 'names no database host'."""
    _tree(tmp_path, HIDDEN_DATASOURCE, dsn="/mattermost/config/config.json")
    result, budgets = _budgets(tmp_path)
    assert budgets["mm-db"].unplaced_clients == ["mattermost"]
    assert budgets["mm-db"].peak == budgets["mm-config-db"].peak == 0
    assert NOTICE.format(line=28, more="") in result.notices
    assert not [n for n in result.notices if "names no database host" in n]
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    (client,) = [c for c in topo.clients if c.name == "mattermost"]
    assert [p.size.value for p in client.pools] == [300] and client.target_id is None


def test_a_pool_its_reader_says_nothing_of_keeps_the_container_s_url(tmp_path):
    """postgres-meta's reader gives its pool no route and says nothing of it: it goes
    where the container's env says (PG_META_DB_HOST), as before."""
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/meta.yaml": deployment(
        "meta", "supabase/postgres-meta:v0.84.2", {"PG_META_DB_HOST": "db",
                                                   "PG_META_DB_PASSWORD": None})})
    _, budgets = _budgets(tmp_path)
    assert [(c.who, c.total) for c in budgets["db"].contributions] == [("meta", 2)]
    assert not budgets["db"].unplaced_clients


DIFY = "langgenius/dify-api:1.16.1"


def test_dify_s_hidden_db_host_is_not_the_vector_store_s_server(tmp_path):
    """DB_HOST from a Secret, PGVECTOR_HOST written: the api's engine (2 x 40) was put on
    the pgvector server, the host of the client's other pool."""
    write(tmp_path, {"k8s/dbs.yaml": server("pgvector", 200) + "---\n" + server("db", 500),
                     "k8s/api.yaml": deployment("api", DIFY, {
                         "MODE": "api", "DB_HOST": None, "VECTOR_STORE": "pgvector",
                         "PGVECTOR_HOST": "pgvector"})})
    result, budgets = _budgets(tmp_path)
    vector = budgets["pgvector"]
    # only the unbounded pgvector pools (at least one connection per pod)
    assert [(c.who, c.total) for c in vector.contributions] == [("api", 2)]
    assert vector.unplaced_clients == budgets["db"].unplaced_clients == ["api"]
    assert ("Deployment/api: Dify SQLAlchemy pool (pool_size + max_overflow): "
            "DB_HOST (k8s/api.yaml:15) is set from a reference whose value is not held "
            "here, so where it connects is not known: it may connect to any server here, "
            "so each peak is a floor (declare [[workloads]] target)") in result.notices


def test_dify_s_hidden_vector_host_is_unplaced_not_dropped(tmp_path):
    """PGVECTOR_HOST from a Secret: the unbounded pgvector pools were left out with a
    notice, and every server's peak read as complete."""
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/api.yaml": deployment("api", DIFY, {
        "MODE": "api", "DB_HOST": "db", "VECTOR_STORE": "pgvector", "PGVECTOR_HOST": None})})
    result, budgets = _budgets(tmp_path)
    assert [(c.who, c.total) for c in budgets["db"].contributions] == [("api", 80)]
    assert budgets["db"].unplaced_clients == ["api"] and budgets["db"].peak_is_floor
    assert any(n.startswith("Deployment/api: Dify pgvector SimpleConnectionPool per vector "
                            "object: PGVECTOR_HOST (k8s/api.yaml:17) is set from a reference")
               for n in result.notices)
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    lost = next(c for c in topo.clients if c.id.endswith(">unknown-database"))
    assert [p.label for p in lost.pools] == [
        "Dify pgvector SimpleConnectionPool per vector object"]


# Readers that read their database's host or URL variable themselves, set from a Secret
# the repository does not hold: the pools they give connect where it does not say, not
# on the URL another variable names (the linker's fallback took that before).
def _hidden(image: str, env: dict[str, str | None], args: tuple[str, ...] = ()):
    from msgspec.structs import replace

    from advisor.model import EnvVar, Source
    from advisor.read.apps import pools_for_container
    from tests.apphelpers import container

    c = container({k: v for k, v in env.items() if v is not None}, args=args)
    hidden = tuple(EnvVar(name=k, source=Source(path="k8s/app.yaml", line=30),
                          from_ref=f"secret:app/{k}", secret=True)
                   for k, v in env.items() if v is None)
    return pools_for_container(replace(c, image=image, env=c.env + hidden))


OTHER = "postgres://u@other-db:5432/other"  # another variable's URL in the same env


@pytest.mark.parametrize(("image", "env", "args", "unrouted", "routed"), [
    ("grafana/grafana:11.3.0", {"GF_DATABASE_TYPE": "postgres", "GF_DATABASE_HOST": None},
     (), ["Grafana [database] max_open_conn"], []),
    ("gitea/gitea:1.22.3", {"GITEA__database__DB_TYPE": "postgres",
                            "GITEA__database__HOST": None},
     (), ["Gitea [database] MAX_OPEN_CONNS"], []),
    ("metabase/metabase:v0.50.0", {"MB_DB_TYPE": "postgres", "MB_DB_HOST": None},
     (), ["Metabase application DB c3p0 maxPoolSize"], []),
    ("hasura/graphql-engine:v2.40.0", {"HASURA_GRAPHQL_DATABASE_URL": OTHER,
                                       "HASURA_GRAPHQL_METADATA_DATABASE_URL": None},
     (), ["Hasura metadata pool (HASURA_GRAPHQL_PG_CONNECTIONS per stripe)"],
     ["Hasura default source pool (max_connections)"]),
    ("ghcr.io/atuinsh/atuin:18.12.0", {"ATUIN_DB_URI": OTHER, "ATUIN_READ_DB_URI": None},
     ("server", "start"), ["Atuin server sqlx pool (read replica)"],
     ["Atuin server sqlx pool"]),
    ("ghcr.io/onedr0p/sonarr:4.0.9", {"SONARR__POSTGRES__HOST": None},
     (), ["Sonarr Npgsql pool (main database)", "Sonarr Npgsql pool (log database)"], []),
    ("ghcr.io/paperless-ngx/paperless-ngx:2.15.3", {"PAPERLESS_DBHOST": None},
     (), ["Paperless-ngx webserver (granian ASGI) Django connections",
          "Paperless-ngx Celery worker child", "Paperless-ngx document_consumer"], []),
    ("ghcr.io/mastodon/mastodon:v4.3.2", {
        "DB_HOST": "db", "REPLICA_DB_NAME": "mastodon", "REPLICA_DATABASE_URL": None},
     ("bundle", "exec", "puma"), ["(read replica)"], ["Mastodon"]),
])
def test_a_reader_s_own_database_variable_from_a_secret_leaves_it_unrouted(
        image, env, args, unrouted, routed):
    found = _hidden(image, env, args)
    lost = [p.label for p in found.pools if p.route_unknown]
    kept = [p.label for p in found.pools if not p.route_unknown]
    assert all(p.route is None for p in found.pools if p.route_unknown)
    assert [any(want in label for label in lost) for want in unrouted] == \
        [True] * len(unrouted)
    assert len(lost) == len(unrouted) or image.startswith("ghcr.io/mastodon")
    assert [any(want in label for label in kept) for want in routed] == [True] * len(routed)
    hidden = next(k for k, v in env.items() if v is None)
    assert found.unrouted and all(f"{hidden} (k8s/app.yaml:30) is set from a reference "
                                  "whose value is not held here" in why
                                  for why in found.unrouted)


ATUIN = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: atuin}
spec:
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/atuinsh/atuin:18.12.0
          args: [server, start]
          env:
            - {name: ATUIN_DB_URI, value: "postgres://atuin@db:5432/atuin"}
            - name: ATUIN_READ_DB_URI
              valueFrom: {secretKeyRef: {name: atuin-replica, key: uri}}
"""


def test_atuin_s_replica_from_a_secret_is_not_counted_on_the_primary(tmp_path):
    """ATUIN_READ_DB_URI from a Secret: the replica's 100 went on ATUIN_DB_URI's server
    (200 > 147, PA101); it is unplaced, the primary's pool alone there, a floor."""
    write(tmp_path, {"k8s/db.yaml": server("db", 150), "k8s/atuin.yaml": ATUIN})
    result, budgets = _budgets(tmp_path)
    db = budgets["db"]
    assert [(c.who, c.total) for c in db.contributions] == [("atuin", 100)]
    assert db.unplaced_clients == ["atuin"] and db.peak_is_floor
    assert not [f for f in result.findings if f.code == "PA101"]


def test_a_declared_target_without_pools_read_is_unknown_not_zero(tmp_path):
    """A Deployment declared `[[workloads]] target` whose database host is a Secret's and
    whose application source is not found (laa-apply-for-legal-aid's web, an RDS made by
    the platform): it connects to the declared server, how much is unknown (PA106, a
    floor of 1 a pod), not "fits, peak 0" (it was dropped as talking to no database)."""
    web = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 5
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: web
          image: r:t
          env:
            - name: POSTGRES_HOST
              valueFrom: {secretKeyRef: {name: rds-instance-output, key: address}}
"""
    write(tmp_path, {"k8s/web.yaml": web, ".pool-advisor.toml":
                     '[[servers]]\nname = "rds"\nhosts = ["rds.example.invalid"]\n'
                     'max_connections = 20\n\n[[workloads]]\nname = "web"\ntarget = "rds"\n'})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert budget.fits is not True and budget.peak == 5
    assert any(f.code == "PA106" for f in result.findings)
