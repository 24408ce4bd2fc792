"""advisor.link.custom_resources: an object of a kind no reader knows that takes a
PostgreSQL operator's connection Secret is a client of unknown size at that Secret's
cluster (PA106), never nothing. The tree is in the shape of a home-ops repository: a
CloudNativePG Cluster per app beside the app's own operator resource."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

CLUSTER = """
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: gateway, namespace: ai}
spec:
  instances: 2
  imageName: ghcr.io/cloudnative-pg/postgresql:17.4
  postgresql:
    parameters: {max_connections: "300"}
  bootstrap:
    initdb: {database: gateway, owner: gateway}
"""

# An LLM gateway operator's resource: the operator makes a Deployment of `replicas`
# pods from it, none of which is in the repository.
PROXY = """
apiVersion: llm.example.dev/v1alpha1
kind: GatewayProxy
metadata: {name: gateway, namespace: ai}
spec:
  image: ghcr.io/acme/gateway:1.9.0
  replicas: 3
  env:
    - name: LOG_LEVEL
      value: info
    - name: DATABASE_URL
      valueFrom:
        secretKeyRef: {name: gateway-app, key: %s}
"""


@pytest.mark.parametrize("key", ["uri", "password"])
def test_a_custom_resource_on_an_operator_secret_is_an_unknown_client(tmp_path, key):
    """DATABASE_URL from gateway-app's uri (or, with no host, its password): Cluster
    gateway's peak is a floor with the resource unknown there, and PA106 asks for its
    connections and replicas; it printed 'fits, peak 0' without a word (audit l:
    joryirving/home-ops's LiteLLMProxy on litellm-app)."""
    write(tmp_path, {"db/cluster.yaml": CLUSTER, "apps/gateway/proxy.yaml": PROXY % key})
    result = run_check([str(tmp_path)], CheckOptions())
    rw = next(b for b in result.budgets if b.server == "gateway")
    assert not rw.fits and rw.peak_is_floor and rw.unknown_clients == ["gateway"]
    (finding,) = [f for f in result.findings if f.code == "PA106"]
    assert "GatewayProxy gateway (llm.example.dev/v1alpha1) is a kind pool-advisor does " \
           "not read" in finding.message
    assert f"gateway-app/{key} (apps/gateway/proxy.yaml:13)" in finding.message
    assert "connections = N (per pod) replicas = N (pods at peak)" in finding.message
    assert finding.location.path == "apps/gateway/proxy.yaml"
    notes = [n for n in result.notices if n.startswith("GatewayProxy/ai/gateway:")]
    assert len(notes) == (1 if key == "password" else 0)
    ro = next(b for b in result.budgets if b.server == "gateway replicas")
    assert ro.peak == 0


def test_other_namespaces_secret_or_an_unrelated_key_is_no_client(tmp_path):
    """A Secret of the same name in another namespace is another Secret; a key that is
    neither a route nor a credential (ca.crt) says nothing: the server stays as read."""
    other = (PROXY % "uri").replace("namespace: ai", "namespace: web")
    cert = (PROXY % "ca.crt").replace("name: gateway,", "name: certs,")
    write(tmp_path, {"db/cluster.yaml": CLUSTER, "apps/other.yaml": other,
                     "apps/cert.yaml": cert})
    result = run_check([str(tmp_path)], CheckOptions())
    rw = next(b for b in result.budgets if b.server == "gateway")
    assert rw.fits and rw.peak == 0
    assert not [f for f in result.findings if f.code == "PA106"]


def test_a_declared_workload_of_that_name_is_taken_from_its_declaration(tmp_path):
    write(tmp_path, {"db/cluster.yaml": CLUSTER, "apps/gateway/proxy.yaml": PROXY % "uri",
                     ".pool-advisor.toml": '[[workloads]]\nname = "gateway"\n'
                     'target = "gateway"\nconnections = 10\nreplicas = 3\n'})
    result = run_check([str(tmp_path)], CheckOptions())
    rw = next(b for b in result.budgets if b.server == "gateway")
    assert rw.peak == 30 and rw.fits


# A home-ops component: one ExternalSecret per app templating where the app connects
# from the store's password, beside a shared CloudNativePG Cluster in namespace database.
SHARED = """
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: shared-pg, namespace: database}
spec:
  instances: 3
  imageName: ghcr.io/cloudnative-pg/postgresql:17.4
  postgresql:
    parameters: {max_connections: "150"}
"""

APP_SECRET = """
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: notes-db, namespace: tools}
spec:
  secretStoreRef: {kind: ClusterSecretStore, name: vault}
  target:
    name: notes-db
    template:
      data:
        user: notes
        password: "{{ .notes_pg_password }}"
        cache: redis://valkey.tools.svc.cluster.local:6379/0
        %s: %s
  dataFrom:
    - extract: {key: /database/users}
"""

NOTES = """
apiVersion: notes.example.dev/v1beta1
kind: NotesInstance
metadata: {name: notes, namespace: tools}
spec:
  image: ghcr.io/acme/notes:2.4.1
  database:
    urlFrom:
      secretKeyRef: {name: notes-db, key: %s}
"""


def test_a_custom_resource_on_an_external_secret_url_is_an_unknown_client(tmp_path):
    """DATABASE_URL from an ExternalSecret's templated uri naming shared-pg-rw: the
    resource is a client of unknown size there (PA106), not nothing; it printed 'fits,
    peak 0' and no findings (audit 11a: tscibilia/home-ops's LiteLLMProxy and
    PocketIDInstance on <app>-pguser-secret's uri)."""
    uri = ('"postgresql://notes:{{ .notes_pg_password }}@shared-pg-rw.database.svc'
           '.cluster.local:5432/notes"')
    write(tmp_path, {"db/cluster.yaml": SHARED,
                     "apps/notes/externalsecret.yaml": APP_SECRET % ("uri", uri),
                     "apps/notes/instance.yaml": NOTES % "uri"})
    result = run_check([str(tmp_path)], CheckOptions())
    rw = next(b for b in result.budgets if b.server == "shared-pg")
    assert not rw.fits and rw.peak_is_floor and rw.unknown_clients == ["notes"]
    (finding,) = [f for f in result.findings if f.code == "PA106"]
    assert "NotesInstance notes (notes.example.dev/v1beta1) is a kind pool-advisor does " \
           "not read" in finding.message
    assert "connection string in Secret notes-db/uri " \
           "(apps/notes/externalsecret.yaml:" in finding.message
    assert finding.location.path == "apps/notes/instance.yaml"


@pytest.mark.parametrize("key", ["password", "cache", "uri"])
def test_a_value_that_leads_to_no_server_read_here_is_no_client(tmp_path, key):
    """A password, a Redis URL, or a PostgreSQL URL to a host no server of the repository
    has: nothing says the operator's pods connect to a server read here."""
    uri = '"postgresql://notes@db.example.com:5432/notes"'
    write(tmp_path, {"db/cluster.yaml": SHARED,
                     "apps/notes/externalsecret.yaml": APP_SECRET % ("uri", uri),
                     "apps/notes/instance.yaml": NOTES % key})
    result = run_check([str(tmp_path)], CheckOptions())
    rw = next(b for b in result.budgets if b.server == "shared-pg")
    assert rw.fits and rw.peak == 0
    assert not [f for f in result.findings if f.code == "PA106"]
