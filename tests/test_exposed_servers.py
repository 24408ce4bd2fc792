"""A server a Service exposes outside the cluster (type LoadBalancer or NodePort, or a
CloudNativePG managed service of either type) takes connections from clients no
repository holds, so its peak is a floor, never a fit (audit q: szinn/k8s-homelab's
staging postgres-18 behind a LoadBalancer Service `postgres`, and mirceanton/home-ops's
davinci-postgres with a LoadBalancer managed service for the DaVinci Resolve desktops,
both said 'fits, peak 0 (no client or pooler in the repository connects to it)')."""

from __future__ import annotations

import json

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.report import json as json_report
from advisor.report import text
from advisor.rules import load_rules
from tests.rule_pages import write_tree

CLUSTER = """\
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: pg
  namespace: dbms
spec:
  instances: 2
  imageName: ghcr.io/cloudnative-pg/postgresql:17.5
  storage:
    size: 1Gi
"""

SERVICE = """\
apiVersion: v1
kind: Service
metadata:
  name: postgres
  namespace: dbms
spec:
  type: {kind}
  ports:
    - port: 5432
  selector:
    cnpg.io/cluster: pg
    cnpg.io/instanceRole: primary
"""

MANAGED = """\
  managed:
    services:
      additional:
        - selectorType: {selector}
          serviceTemplate:
            metadata:
              name: pg-lb
            spec:
              type: LoadBalancer
"""


def _budgets(tmp_path, tree):
    write_tree(tmp_path, tree)
    result = run_check([str(tmp_path)], CheckOptions())
    return result, {b.server: b for b in result.budgets}


def test_a_loadbalancer_service_in_front_of_the_primary_makes_its_peak_a_floor(tmp_path):
    result, budgets = _budgets(tmp_path, {"k8s/cluster.yaml": CLUSTER,
                                          "k8s/service.yaml": SERVICE.format(
                                              kind="LoadBalancer")})
    primary, replicas = budgets["pg"], budgets["pg replicas"]
    assert primary.exposed == ["Service/dbms/postgres (type LoadBalancer, "
                               "k8s/service.yaml:7)"]
    assert primary.peak == 0 and primary.peak_is_floor and not primary.fits
    assert replicas.fits and not replicas.exposed  # the Service selects the primary only
    out = text.render(result, load_rules())
    assert ("server pg (PostgreSQL 17, spec.imageName, k8s/cluster.yaml:8): peak >= 0 "
            "(exposed outside the cluster by Service/dbms/postgres (type LoadBalancer, "
            "k8s/service.yaml:7): its clients there are in no repository read (declare "
            "headroom = N, the connections they take, to budget them)), cannot tell "
            "whether it fits the 97 usable") in out
    data = json.loads(json_report.render(result, load_rules()))
    (pg,) = [b for b in data["budgets"] if b["server"] == "pg"]
    assert pg["exposed"] and pg["peak_is_floor"] and not pg["fits"]


def test_a_nodeport_service_exposes_it_and_a_clusterip_one_does_not(tmp_path):
    _, budgets = _budgets(tmp_path, {"k8s/cluster.yaml": CLUSTER,
                                     "k8s/service.yaml": SERVICE.format(kind="NodePort")})
    assert not budgets["pg"].fits and "type NodePort" in budgets["pg"].exposed[0]
    _, budgets = _budgets(tmp_path, {"k8s/cluster.yaml": CLUSTER,
                                     "k8s/service.yaml": SERVICE.format(kind="ClusterIP")})
    assert budgets["pg"].fits and not budgets["pg"].exposed


def test_a_cnpg_managed_loadbalancer_service_exposes_the_instances_it_selects(tmp_path):
    _, budgets = _budgets(tmp_path, {"k8s/cluster.yaml": CLUSTER + MANAGED.format(
        selector="rw")})
    assert budgets["pg"].exposed == ["Cluster/dbms/pg managed service pg-lb (type "
                                     "LoadBalancer, k8s/cluster.yaml:19)"]
    assert not budgets["pg"].fits and budgets["pg replicas"].fits
    _, budgets = _budgets(tmp_path, {"k8s/cluster.yaml": CLUSTER + MANAGED.format(
        selector="ro")})
    assert budgets["pg"].fits and not budgets["pg replicas"].fits


ZALANDO = """\
apiVersion: acid.zalan.do/v1
kind: postgresql
metadata:
  name: acid-db
  namespace: db
spec:
  teamId: acid
  numberOfInstances: 2
  postgresql:
    version: "17"
  volume:
    size: 1Gi
{extra}"""


def test_a_zalando_load_balancer_exposes_only_with_source_ranges(tmp_path):
    """Zalando v2.0.1 configureLoadBalanceService: without allowedSourceRanges the load
    balancer admits 127.0.0.1/32 only; a NodePort admits anyone."""
    _, budgets = _budgets(tmp_path, {"k8s/pg.yaml": ZALANDO.format(
        extra="  enableMasterLoadBalancer: true\n")})
    assert budgets["acid-db"].fits and not budgets["acid-db"].exposed
    _, budgets = _budgets(tmp_path, {"k8s/pg.yaml": ZALANDO.format(
        extra="  enableMasterLoadBalancer: true\n  allowedSourceRanges: [10.0.0.0/8]\n")})
    assert budgets["acid-db"].exposed == ["postgresql/db/acid-db enableMasterLoadBalancer "
                                          "(type LoadBalancer, k8s/pg.yaml:13)"]
    assert not budgets["acid-db"].fits and budgets["acid-db replicas"].fits
    _, budgets = _budgets(tmp_path, {"k8s/pg.yaml": ZALANDO.format(
        extra="  enableReplicaNodePort: true\n")})
    assert budgets["acid-db"].fits and not budgets["acid-db replicas"].fits


CRUNCHY = """\
apiVersion: postgres-operator.crunchydata.com/v1beta1
kind: PostgresCluster
metadata:
  name: hippo
  namespace: db
spec:
  postgresVersion: 16
  instances:
    - name: i1
      replicas: 2
      dataVolumeClaimSpec:
        accessModes: [ReadWriteOnce]
        resources: {{requests: {{storage: 1Gi}}}}
  backups:
    pgbackrest:
      repos:
        - name: repo1
{extra}"""


def test_a_crunchy_service_of_type_nodeport_exposes_the_primary(tmp_path):
    _, budgets = _budgets(tmp_path, {"k8s/pg.yaml": CRUNCHY.format(
        extra="  service:\n    type: NodePort\n")})
    assert budgets["hippo"].exposed == ["PostgresCluster/db/hippo service (type NodePort, "
                                        "k8s/pg.yaml:19)"]
    assert not budgets["hippo"].fits
    _, budgets = _budgets(tmp_path, {"k8s/pg.yaml": CRUNCHY.format(
        extra="  service:\n    type: ClusterIP\n")})
    assert budgets["hippo"].fits


def test_a_cnpg_pooler_with_a_loadbalancer_service_template_exposes_its_server(tmp_path):
    pooler = """\
apiVersion: postgresql.cnpg.io/v1
kind: Pooler
metadata:
  name: pg-pooler
  namespace: dbms
spec:
  cluster:
    name: pg
  instances: 1
  type: rw
  pgbouncer:
    poolMode: transaction
  serviceTemplate:
    spec:
      type: LoadBalancer
"""
    _, budgets = _budgets(tmp_path, {"k8s/cluster.yaml": CLUSTER, "k8s/pooler.yaml": pooler})
    assert budgets["pg"].exposed == ["Pooler/dbms/pg-pooler (serviceTemplate type "
                                     "LoadBalancer, k8s/pooler.yaml:15)"]
    assert not budgets["pg"].fits


def test_a_declared_headroom_budgets_the_clients_outside(tmp_path):
    """The escape: `headroom = N` keeps N connections for clients outside the
    repository, so an exposed server that fits with them is a fit, not a floor forever."""
    _, budgets = _budgets(tmp_path, {"k8s/cluster.yaml": CLUSTER,
                                     "k8s/service.yaml": SERVICE.format(kind="LoadBalancer"),
                                     ".pool-advisor.toml": "headroom = 10\n"})
    pg = budgets["pg"]
    assert pg.fits and not pg.exposed and pg.usable == 97 - 10


def test_a_service_with_external_ips_exposes_its_server(tmp_path):
    """spec.externalIPs: kube-proxy routes traffic to those addresses on the Service port
    to its endpoints, whatever the type (Kubernetes Service docs, External IPs): clients
    outside the cluster may connect, so the peak is a floor (audit 30 noticed it on
    PhucPV1/NestJS-k8s, whose postgres Service lists `$HOST`)."""
    service = SERVICE.format(kind="ClusterIP") + "  externalIPs:\n    - 10.0.0.7\n"
    _, budgets = _budgets(tmp_path, {"k8s/cluster.yaml": CLUSTER,
                                     "k8s/service.yaml": service})
    primary = budgets["pg"]
    assert primary.exposed == ["Service/dbms/postgres (spec.externalIPs, "
                               "k8s/service.yaml:13)"]
    assert primary.peak_is_floor and not primary.fits
    # a ClusterIP Service without them stays inside the cluster
    _, budgets = _budgets(tmp_path, {"k8s/cluster.yaml": CLUSTER,
                                     "k8s/service.yaml": SERVICE.format(kind="ClusterIP")})
    assert not budgets["pg"].exposed and budgets["pg"].fits
