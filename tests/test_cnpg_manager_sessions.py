"""CloudNativePG's own sessions on its instances (audit 11a N1): the instance manager as
superuser postgres, the metrics exporter as cnpg_metrics_exporter, and on the primary
each replica's slot synchronizer as streaming_replica. Each is a pool of at most 3 per
database that keeps no idle connection (cloudnative-pg@a95a534d pool.go:130-131), so
none is subtracted from the clients' slots: each is named under the budget, with why."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.report.text import budget_lines
from tests.tree_helpers import write

CLUSTER = """\
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: pg, namespace: db}
spec:
  instances: 3
  imageName: ghcr.io/cloudnative-pg/postgresql:17
"""


def _budgets(root):
    result = run_check([str(root)], CheckOptions())
    return result, {b.server: b for b in result.budgets}


def _cnpg(budget) -> dict[str, float]:
    return {ns.term.label: ns.term.value for ns in budget.not_subtracted
            if ns.term.label.startswith("CloudNativePG")}


def test_named_not_subtracted_on_the_primary_and_the_replicas(tmp_path):
    write(tmp_path, {"k8s/pg.yaml": CLUSTER})
    _, budgets = _budgets(tmp_path)
    primary, replicas = budgets["pg"], budgets["pg replicas"]
    assert primary.usable == replicas.usable == 100 - 3  # nothing subtracted
    assert _cnpg(primary) == {
        "CloudNativePG instance manager, user postgres": 3,
        "CloudNativePG metrics exporter, user cnpg_metrics_exporter": 3,
        "CloudNativePG slot synchronizers of 2 replicas x 3, user streaming_replica": 6}
    # the synchronizers connect to the primary only
    assert set(_cnpg(replicas)) == {"CloudNativePG instance manager, user postgres",
                                    "CloudNativePG metrics exporter, user cnpg_metrics_exporter"}
    why = {ns.term.label: ns.why for ns in primary.not_subtracted}
    assert "SetMaxIdleConns(0)" in why["CloudNativePG instance manager, user postgres"]
    assert "superuser" in why["CloudNativePG instance manager, user postgres"]
    text = "\n".join(budget_lines(primary, verbose=True, color=False))
    assert "not subtracted: 3 (CloudNativePG instance manager, user postgres" in text


def test_slot_synchronizers_off_and_one_instance(tmp_path):
    off = CLUSTER + ("  replicationSlots:\n    highAvailability: {enabled: false}\n"
                     "    synchronizeReplicas: {enabled: false}\n")
    write(tmp_path, {"k8s/pg.yaml": off})
    _, budgets = _budgets(tmp_path)
    assert not [k for k in _cnpg(budgets["pg"]) if "slot" in k]
    # one of them left on: they still connect
    write(tmp_path / "b", {"k8s/pg.yaml": off.replace("highAvailability: {enabled: false}",
                                                       "highAvailability: {enabled: true}")})
    _, budgets = _budgets(tmp_path / "b")
    assert [k for k in _cnpg(budgets["pg"]) if "slot" in k]
    write(tmp_path / "c", {"k8s/pg.yaml": CLUSTER.replace("instances: 3", "instances: 1")})
    _, budgets = _budgets(tmp_path / "c")
    assert len(_cnpg(budgets["pg"])) == 2
