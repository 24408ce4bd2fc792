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
            "k8s/service.yaml:7): its clients there are in no repository read), cannot tell "
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
