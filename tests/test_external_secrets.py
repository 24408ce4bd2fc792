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
