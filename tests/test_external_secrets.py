"""ExternalSecret (external-secrets.io) targets as Secrets a workload's env reads: a
literal template gives the host, a value fetched from the remote store is unknown and
said so (never empty, never 0). The tree is in the shape of a home-ops repository: a
CloudNativePG cluster in `database`, apps in their own namespaces, each with an
ExternalSecret beside its Deployment."""

from __future__ import annotations

import textwrap

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.read.sources.external_secrets import render
from tests.tree_helpers import write

CLUSTER = """
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: db, namespace: database}
spec:
  instances: 1
  imageName: ghcr.io/cloudnative-pg/postgresql:16.4
  postgresql:
    parameters: {max_connections: "150"}
"""

# The target Secret named by spec.target.name; the URL's host written in the template,
# its password fetched (v1, template data; the bjw-s/mirceanton shape)
SPRING_SECRET = """
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: shop, namespace: shop}
spec:
  secretStoreRef: {kind: ClusterSecretStore, name: onepassword}
  target:
    name: shop-secret
    template:
      engineVersion: v2
      data:
        SPRING_DATASOURCE_URL: jdbc:postgresql://db-rw.database.svc:5432/app
        SPRING_DATASOURCE_USERNAME: "{{ .username }}"
        SPRING_DATASOURCE_PASSWORD: "{{ .password }}"
        SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE: "12"
  data:
    - secretKey: username
      remoteRef: {key: shop, property: username}
    - secretKey: password
      remoteRef: {key: shop, property: password}
"""


def deployment(name: str, namespace: str, env: str, replicas: int = 2) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  replicas: {replicas}
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: app
          image: ghcr.io/acme/{name}:1.0
{textwrap.indent(textwrap.dedent(env).strip(), "          ")}
"""


def test_template_data_gives_the_host_and_the_pool_size(tmp_path):
    write(tmp_path, {
        "kubernetes/database/cluster.yaml": CLUSTER,
        "kubernetes/apps/shop/externalsecret.yaml": SPRING_SECRET,
        "kubernetes/apps/shop/deployment.yaml": deployment(
            "shop", "shop", "envFrom:\n  - secretRef: {name: shop-secret}\n"),
    })
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    # shop: 2 replicas x HikariCP 12, both written in the ExternalSecret's template
    (shop,) = budget.contributions
    assert (shop.who, shop.total) == ("shop", 2 * 12)
    size = next(f for f in shop.factors if "HikariCP" in f.label)
    assert size.source.path.endswith("externalsecret.yaml")
    assert size.source.line == 15  # the template line of the pool size
    assert not [f for f in result.findings if f.code in ("PA106", "PA107")]


def test_libpq_url_with_a_fetched_password_links_by_its_host(tmp_path):
    """`postgres://app:{{ .password }}@db-rw.database.svc:5432/app` (secretKeyRef to a
    key of the target Secret): the host is in the template; the client is linked and,
    its pool size unknown, reported unknown at that server (PA106), not left out."""
    secret = """
apiVersion: external-secrets.io/v1beta1
kind: ExternalSecret
metadata: {name: worker, namespace: jobs}
spec:
  secretStoreRef: {kind: ClusterSecretStore, name: onepassword}
  target:
    template:
      data:
        DB_URI: "postgres://app:{{ .password }}@db-rw.database.svc:5432/app"
  data:
    - {secretKey: password, remoteRef: {key: worker, property: password}}
"""
    env = ("env:\n  - name: DATABASE_URL\n"
           "    valueFrom: {secretKeyRef: {name: worker, key: DB_URI}}\n")
    write(tmp_path, {"k8s/cluster.yaml": CLUSTER, "k8s/worker-es.yaml": secret,
                     "k8s/worker.yaml": deployment("worker", "jobs", env, replicas=3)})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert budget.unknown_clients == ["worker"]
    assert not [f for f in result.findings if f.code == "PA107"]
    topo = scan([str(tmp_path)], CheckOptions()).topology
    (worker,) = topo.clients
    assert (worker.route.host, worker.route.dbname, worker.route.user) == (
        "db-rw.database.svc", "app", "app")


@pytest.mark.parametrize("how", ["secretKeyRef", "envFrom", "dataFrom", "envFrom+dataFrom"])
def test_a_fetched_url_is_unknown_and_said_so(tmp_path, how):
    """No template: the Secret's keys are spec.data's secretKeys (or, with dataFrom,
    names not known here), each value fetched when applied. The workload's DATABASE_URL
    is unknown: a notice names it and the ExternalSecret, instead of nothing at all."""
    data = ("  dataFrom:\n    - extract: {key: api}\n" if "dataFrom" in how else
            "  data:\n    - {secretKey: DATABASE_URL, remoteRef: {key: api, property: url}}\n")
    secret = ("apiVersion: external-secrets.io/v1\nkind: ExternalSecret\n"
              "metadata: {name: api, namespace: web}\nspec:\n"
              "  secretStoreRef: {kind: ClusterSecretStore, name: vault}\n" + data)
    env = ("envFrom:\n  - secretRef: {name: api}\n" if how.startswith("envFrom") else
           "env:\n  - name: DATABASE_URL\n"
           "    valueFrom: {secretKeyRef: {name: api, key: DATABASE_URL}}\n")
    write(tmp_path, {"k8s/cluster.yaml": CLUSTER, "k8s/api-es.yaml": secret,
                     "k8s/api.yaml": deployment("api", "web", env)})
    result = run_check([str(tmp_path)], CheckOptions())
    notes = [n for n in result.notices if n.startswith("Deployment/web/api:")]
    assert len(notes) == 1, result.notices
    assert "ExternalSecret api (k8s/api-es.yaml:" in notes[0] and "unknown" in notes[0]
    if how == "envFrom+dataFrom":  # the variables' names themselves are not known
        assert "variables of names not known here" in notes[0]
    else:
        assert "DATABASE_URL" in notes[0]
    assert "(spec.dataFrom)" in notes[0] if "dataFrom" in how else "spec.dataFrom" not in notes[0]


def test_a_secret_written_in_the_repository_wins(tmp_path):
    secret = SPRING_SECRET + """---
apiVersion: v1
kind: Secret
metadata: {name: shop-secret, namespace: shop}
stringData:
  SPRING_DATASOURCE_URL: jdbc:postgresql://db-rw.database.svc:5432/app
  SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE: "5"
"""
    write(tmp_path, {"k8s/cluster.yaml": CLUSTER, "k8s/es.yaml": secret,
                     "k8s/shop.yaml": deployment(
                         "shop", "shop", "envFrom:\n  - secretRef: {name: shop-secret}\n")})
    (budget,) = run_check([str(tmp_path)], CheckOptions()).budgets
    assert budget.peak == 2 * 5


def test_template_from_a_configmap_in_the_repository(tmp_path):
    secret = """
apiVersion: v1
kind: ConfigMap
metadata: {name: shop-templates, namespace: shop}
data:
  SPRING_DATASOURCE_URL: jdbc:postgresql://db-rw.database.svc:5432/app
  SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE: "9"
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: shop-secret, namespace: shop}
spec:
  target:
    template:
      templateFrom:
        - configMap:
            name: shop-templates
            items:
              - {key: SPRING_DATASOURCE_URL}
              - {key: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, templateAs: Values}
"""
    write(tmp_path, {"k8s/cluster.yaml": CLUSTER, "k8s/es.yaml": secret,
                     "k8s/shop.yaml": deployment(
                         "shop", "shop", "envFrom:\n  - secretRef: {name: shop-secret}\n")})
    (budget,) = run_check([str(tmp_path)], CheckOptions()).budgets
    assert budget.peak == 2 * 9


@pytest.mark.parametrize(("text", "expected"), [
    ("plain", "plain"),
    ("{{ .password }}", None),  # all of it fetched
    ("  {{- .password -}}  ", None),
    ("postgres://app:{{ .password }}@db:5432/app", "postgres://app:{{ .password }}@db:5432/app"),
    ("postgres://app:{{.password}}@db/app", "postgres://app:{{ .password }}@db/app"),
    ("a {{- .x -}} b", "a{{ .x }}b"),  # trim markers take the spaces beside them
    ('{{ index . "uri" }}', None),  # anything but {{ .key }} is unknown
    # a pipeline on a fetched field is a fetched part; the literal host stays known
    # (damacus/home-ops: a urlquery'd password made the whole DATABASE_URL unknown)
    ("postgres://{{ .user | upper }}@db/app", "postgres://{{ .user }}@db/app"),
    ('postgres://app:{{ .pw | urlquery | replace "+" "%20" }}@med-rw.home.svc:5432/med',
     "postgres://app:{{ .pw }}@med-rw.home.svc:5432/med"),
    ("{{ if .tls }}postgres://db/app{{ end }}", None),  # control actions: not read
    ("postgres://app@db/app {{ .x", None),  # an action left open
])
def test_render_substitutes_fields_and_their_pipelines_only(text, expected):
    assert render(text) == expected


# bjw-s/home-ops: a Crunchy cluster in `database`, a ClusterSecretStore of provider
# kubernetes reading that namespace's Secrets, and each app's ExternalSecret templating
# one key of PGO's `<cluster>-pguser-<user>` Secret.
CRUNCHY = """
apiVersion: postgres-operator.crunchydata.com/v1beta1
kind: PostgresCluster
metadata: {name: pg, namespace: database}
spec:
  postgresVersion: 16
  instances:
    - name: pg
      replicas: 2
  users:
    - {name: feeds, databases: [feeds]}
    - {name: notes, databases: [notes]}
  proxy:
    pgBouncer:
      replicas: 2
"""

KUBE_STORE = """
apiVersion: external-secrets.io/v1beta1
kind: ClusterSecretStore
metadata: {name: pgo-secrets}
spec:
  provider:
    kubernetes:
      remoteNamespace: database
      server: {caProvider: {type: ConfigMap, name: kube-root-ca.crt, key: ca.crt}}
      auth: {serviceAccount: {name: eso-pg, namespace: database}}
"""


def pgo_secret(app: str, store: str, data: str, template: str = "") -> str:
    target = f"    name: {app}-db-secret\n" + textwrap.indent(
        textwrap.dedent(template).strip(), "    ")
    return f"""
apiVersion: external-secrets.io/v1beta1
kind: ExternalSecret
metadata: {{name: {app}-db, namespace: {app}}}
spec:
  secretStoreRef: {{kind: ClusterSecretStore, name: {store}}}
  target:
{target.rstrip()}
{textwrap.indent(textwrap.dedent(data).strip(), "  ")}
"""


FEEDS_TEMPLATE = """
template:
  data:
    DATABASE_URL: '{{ index . "uri" }}'
"""
FEEDS_DATA = """
dataFrom:
  - extract: {key: pg-pguser-feeds}
"""

NOTES_PROPERTY = """
data:
  - secretKey: DB_HOST
    remoteRef: {key: pg-pguser-notes, property: pgbouncer-host}
  - secretKey: DB_USER
    remoteRef: {key: pg-pguser-notes, property: user}
  - secretKey: DB_PASSWORD
    remoteRef: {key: pg-pguser-notes, property: password}
"""


def test_a_kubernetes_store_reads_the_operators_secret(tmp_path):
    """The store reads the cluster's own Secrets: PGO's pg-pguser-feeds gives feeds'
    DATABASE_URL (`{{ index . "uri" }}`), to the primary; pg-pguser-notes's
    pgbouncer-host and user (remoteRef property) take notes through PgBouncer, whose
    (database, user) pair is then known. Before, both were 'fetched from the remote
    store': two clients whose server is not known, PgBouncer's pair assumed (audit l:
    bjw-s/home-ops, '>= 80, 6 clients whose server is not known' -> OVER)."""
    write(tmp_path, {
        "kubernetes/database/cluster.yaml": CRUNCHY,
        "kubernetes/database/store.yaml": KUBE_STORE,
        "kubernetes/feeds/es.yaml": pgo_secret("feeds", "pgo-secrets", FEEDS_DATA, FEEDS_TEMPLATE),
        "kubernetes/feeds/app.yaml": deployment(
            "feeds", "feeds", "envFrom:\n  - secretRef: {name: feeds-db-secret}\n"),
        "kubernetes/notes/es.yaml": pgo_secret("notes", "pgo-secrets", NOTES_PROPERTY),
        "kubernetes/notes/app.yaml": deployment(
            "notes", "notes", "envFrom:\n  - secretRef: {name: notes-db-secret}\n"
            "env:\n  - {name: PGHOST, value: $(DB_HOST)}\n"),
    })
    topo = scan([str(tmp_path)], CheckOptions()).topology
    clients = {c.name: c for c in topo.clients}
    feeds = clients["feeds"]
    assert (feeds.route.host, feeds.route.dbname, feeds.route.user) == (
        "pg-primary.database.svc", "feeds", "feeds")
    assert feeds.target_kind == "server"
    notes = clients["notes"]
    assert notes.target_kind == "pooler"
    result = run_check([str(tmp_path)], CheckOptions())
    assert not [n for n in result.notices if "remote store" in n and "feeds" in n]
    assert not [f for f in result.findings if f.code == "PA107"]


def test_a_store_of_another_provider_stays_unknown(tmp_path):
    """The same ExternalSecret on a 1Password store: nothing fetched is known here."""
    onepassword = KUBE_STORE.replace("name: pgo-secrets", "name: onepassword").replace(
        "kubernetes:", "onepassword:")
    write(tmp_path, {
        "kubernetes/database/cluster.yaml": CRUNCHY,
        "kubernetes/database/store.yaml": onepassword,
        "kubernetes/feeds/es.yaml": pgo_secret("feeds", "onepassword", FEEDS_DATA, FEEDS_TEMPLATE),
        "kubernetes/feeds/app.yaml": deployment(
            "feeds", "feeds", "envFrom:\n  - secretRef: {name: feeds-db-secret}\n"),
    })
    result = run_check([str(tmp_path)], CheckOptions())
    (note,) = [n for n in result.notices if n.startswith("Deployment/feeds/feeds:")]
    assert note.startswith("Deployment/feeds/feeds: DATABASE_URL (secret:feeds-db-secret/")
    assert "is unknown here" in note and "ExternalSecret feeds-db" in note
    topo = scan([str(tmp_path)], CheckOptions()).topology
    assert "feeds" in topo.unplaced_clients


@pytest.mark.parametrize(("text", "known", "expected"), [
    ('{{ index . "pgbouncer-host" }}', {"pgbouncer-host": "pg-pgbouncer.db.svc"},
     "pg-pgbouncer.db.svc"),
    ('postgres://{{ .user }}:{{ .password }}@h/db', {"user": "u"},
     "postgres://u:{{ .password }}@h/db"),
    ('{{ index . "host" | upper }}', {"host": "h"}, None),  # piped: not the value
    ('{{ index . "host" }}', {}, None),
])
def test_render_with_known_values(text, known, expected):
    assert render(text, known) == expected


def test_a_whole_copy_of_the_operators_secret_stands_for_it(tmp_path):
    """No template, one extract: the target Secret is PGO's keys, whose uri and
    pgbouncer-uri are alternatives (envFrom takes both), so the app connects once, to
    the primary by `uri`, not to both the server and PgBouncer."""
    write(tmp_path, {
        "kubernetes/database/cluster.yaml": CRUNCHY,
        "kubernetes/database/store.yaml": KUBE_STORE,
        "kubernetes/feeds/es.yaml": pgo_secret("feeds", "pgo-secrets", FEEDS_DATA),
        "kubernetes/feeds/app.yaml": deployment(
            "feeds", "feeds", "envFrom:\n  - secretRef: {name: feeds-db-secret}\n"),
    })
    topo = scan([str(tmp_path)], CheckOptions()).topology
    (feeds,) = [c for c in topo.clients if c.name == "feeds"]
    assert feeds.route.host == "pg-primary.database.svc" and feeds.target_kind == "server"
