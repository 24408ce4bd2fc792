"""One CPU model for the budget and PA103 (audit 10b D1): `node-cpus` counts the nodes'
logical CPUs; a library that counts physical cores (Prisma <= 6:
num_cpus::get_physical() * 2 + 1) gets node-cpus / threads-per-core, and PA101's budget
and PA103's message say the same figure and where each part is set. Unset,
threads-per-core is 1 (s26 review F3: an assumed 2 halved the pool and turned an
OVER into "fits" on an optimistic guess; 1 can only over-count)."""

from pathlib import Path

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions, UsageError
from advisor.model import CpuFormula, NodeCpus
from tests.rule_pages import write_tree

SCHEMA = ('datasource db {\n  provider = "postgresql"\n  url      = env("DATABASE_URL")\n}\n')
API = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: orders
spec:
  replicas: 3
  strategy:
    rollingUpdate: {maxSurge: 0, maxUnavailable: 1}
  template:
    spec:
      containers:
        - name: orders
          image: acme/orders:2
          command: ["node", "dist/main.js"]
          env:
            - name: DATABASE_URL
              value: postgresql://o:o@pg:5432/orders
"""
DB = """apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: pg
spec:
  selector:
    matchLabels: {app: pg}
  template:
    metadata:
      labels: {app: pg}
    spec:
      containers:
        - name: postgres
          image: postgres:16.4
          args: ["-c", "max_connections=40"]
---
apiVersion: v1
kind: Service
metadata:
  name: pg
spec:
  selector: {app: pg}
  ports:
    - port: 5432
"""


def _check(tmp_path: Path, config: str | None):
    files = {"orders/prisma/schema.prisma": SCHEMA,
             "orders/package.json": '{"dependencies": {"@prisma/client": "6.19.0"}}\n',
             "k8s/orders.yaml": API, "k8s/pg.yaml": DB}
    head = '[[workloads]]\nname = "orders"\nsource = "orders"\n'
    files[".pool-advisor.toml"] = (config + "\n" if config else "") + head
    write_tree(tmp_path, files)
    return run_check([str(tmp_path)], CheckOptions(select=["PA101", "PA103"]))


def _codes(result) -> dict[str, str]:
    """Each finding's message, with its arithmetic (detail) after it."""
    return {f.code: f"{f.message}\n{f.detail}" for f in result.findings}


def test_node_cpus_are_logical_cpus_for_the_budget_and_pa103(tmp_path):
    # threads-per-core = 2 set: 8 node CPUs / 2 = 4 cores -> 9 per process, 3 x 9 = 27
    # <= 37. Before 559be39 the budget used 8 cores (51), PA103 4 cores.
    result = _check(tmp_path, "node-cpus = 8\nthreads-per-core = 2")
    found = _codes(result)
    assert "PA101" not in found
    assert "on 4 physical cores = 8 node CPUs (.pool-advisor.toml:1) / 2 threads per core " \
           "(.pool-advisor.toml:2)" in found["PA103"]
    assert "9 connections per process, 9 per pod, 3 pods x 9 = 27" in found["PA103"]
    assert "set node" not in found["PA103"]  # node-cpus is set: no advice to set it


def test_unset_threads_per_core_is_one_the_larger_pool(tmp_path):
    # node-cpus = 8, threads-per-core unset: every CPU a core (no SMT), 17 per process,
    # 3 x 17 = 51 > 37. With the assumed 2 of 559be39 this printed "fits" (27).
    found = _codes(_check(tmp_path, "node-cpus = 8"))
    assert "peak 51 connections > 37 usable, over by 14" in found["PA101"]
    named = ("8 physical cores = 8 node CPUs (.pool-advisor.toml:1) / 1 thread per core "
             "(default: assumed threads-per-core 1 (no SMT: the larger pool; set "
             "threads-per-core = 2 for x86 nodes with hyperthreading))")
    assert named in found["PA101"] and named in found["PA103"]
    assert "3 pods x 17 = 51" in found["PA103"]


def test_pa103_rule_option_is_the_same_node_size(tmp_path):
    # [rules.PA103] node_cpus / threads_per_core (an older spelling) size the budget too
    found = _codes(_check(tmp_path, "[rules.PA103]\nnode_cpus = 32\nthreads_per_core = 2\n"))
    # 32 / 2 = 16 cores -> 33 per process, 3 x 33 = 99 > 37
    assert "peak 99 connections > 37 usable" in found["PA101"]
    assert "on 16 physical cores = 32 node CPUs (.pool-advisor.toml:2) / 2 threads per core " \
           "(.pool-advisor.toml:3)" in found["PA103"]


def test_threads_per_core_one_counts_every_cpu_as_a_core(tmp_path):
    found = _codes(_check(tmp_path, "node-cpus = 8\nthreads-per-core = 1"))
    assert "peak 51 connections > 37 usable" in found["PA101"]  # 3 x (8 x 2 + 1)
    assert "8 physical cores = 8 node CPUs (.pool-advisor.toml:1) / 1 thread per core " \
           "(.pool-advisor.toml:2)" in found["PA101"]
    assert "3 pods x 17 = 51" in found["PA103"]


def test_assumed_node_is_named_in_the_budget_and_pa103(tmp_path):
    # no node-cpus: 4 CPUs assumed, each a core (threads-per-core 1 assumed) -> 9 per
    # process; PA103's table uses the same conversion (8 CPUs -> 17) and names both
    # assumptions the budget used
    found = _codes(_check(tmp_path, None))
    assert "PA101" not in found  # 3 x 9 = 27 <= 37
    message = found["PA103"]
    assert "5 on 2 CPUs, 17 on 8 CPUs" in message
    assert "the budget used 9 connections per process on 4 physical cores = 4 node CPUs " \
           "(default: assumed node size" in message
    assert "(default: assumed threads-per-core 1 (no SMT" in message
    assert "set node-cpus and threads-per-core" in message and "node_cpus" not in message


def test_rule_option_contradicting_node_cpus_is_an_error(tmp_path):
    with pytest.raises(UsageError) as info:  # exit 2, one line
        _check(tmp_path, "node-cpus = 8\n[rules.PA103]\nnode_cpus = 16\n")
    assert str(info.value) == (".pool-advisor.toml:3: [rules.PA103] node_cpus = 16 "
                               "contradicts node-cpus = 8: set only node-cpus")


def test_formula_on_node_converts_physical_only():
    prisma = NodeCpus(cpus=8).formula(CpuFormula(per_cpu=2, plus=1, physical=True))
    assert (prisma.threads_per_core, prisma.on_node(8), prisma.on_node(1)) == (1, 17, 3)
    smt = NodeCpus(cpus=8, threads_per_core=2).formula(
        CpuFormula(per_cpu=2, plus=1, physical=True))
    assert (smt.threads_per_core, smt.on_node(8), smt.on_node(1)) == (2, 9, 3)
    pgx = NodeCpus(cpus=8).formula(CpuFormula(per_cpu=1, floor=4))
    assert pgx.on_node(8) == 8  # runtime.NumCPU counts logical CPUs
