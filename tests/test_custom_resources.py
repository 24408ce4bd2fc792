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
