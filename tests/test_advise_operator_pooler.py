"""advise on a Zalando connection pooler, and the verdict of a budget whose peak is a
floor (audit of session 20 on theepicsaxguy/homelab): the operator writes the pooler's
pgbouncer.ini itself from spec.connectionPooler.maxDBConnections, so advise proposes
that value (not `add default_pool_size = 9 to the [pgbouncer] section`, which nobody can
do); and a floor within the usable slots is "cannot tell", never "does not fit: 96 > 97"."""

from __future__ import annotations

from pathlib import Path

from advisor.read.sources.operators.zalando import pool_sizes
from tests.test_advise import advise_json
from tests.tree_helpers import write

CLUSTER = """
apiVersion: acid.zalan.do/v1
kind: postgresql
metadata: {name: shop}
spec:
  numberOfInstances: 1
  postgresql:
    version: "16"
    parameters: {max_connections: "100"}
  enableConnectionPooler: true
  connectionPooler:
    numberOfInstances: 2
    maxDBConnections: 120
"""
APP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: web
          image: acme/web:1
          env:
            - {name: DATABASE_URL, value: "postgresql://shop@shop-pooler:5432/shop"}
            - {name: DB_POOL_SIZE, value: "5"}
"""


def test_zalando_pooler_is_sized_by_max_db_connections(tmp_path: Path):
    write(tmp_path, {"k8s/db.yaml": CLUSTER, "k8s/web.yaml": APP})
    servers = {s["server"]: s for s in advise_json(str(tmp_path), "--no-new-pooler")}
    advice = servers["shop"]
    assert not advice["fits_before"] and advice["fits_after"], advice
    (proposal,) = [p for p in advice["proposals"] if p["kind"] == "pooler"]
    assert proposal["key"] == "maxDBConnections"
    assert "Zalando operator" in proposal["subject"]
    assert proposal["edit"]["path"] == "k8s/db.yaml" and proposal["edit"]["line"] == 13
    assert proposal["edit"]["old"] == "120"
    new = int(proposal["new"])
    per_pod = new // 2
    pool, reserve = pool_sizes(per_pod)
    assert f"default_pool_size {pool} and reserve_pool_size {reserve}" in proposal["reason"]
    # the after-state is the operator's arithmetic on the new value
    assert advice["peak_after"] <= advice["usable_after"]
    assert f"{per_pod} (max_db_connections" in "\n".join(advice["after"])
    assert "[pgbouncer] section" not in proposal.get("manual", "")


def test_zalando_pool_sizes_follow_the_operator():
    # connection_pooler.go: maxDBConn / 2, then / 2 (integer division)
    assert pool_sizes(30) == (15, 7)
    assert pool_sizes(23) == (11, 5)


def test_a_floor_within_the_usable_slots_is_not_said_not_to_fit(tmp_path: Path):
    # a manifest that does not parse (PA901): its clients may connect here, every peak
    # is a floor; after the proposal the floor is within the usable slots
    write(tmp_path, {"k8s/db.yaml": CLUSTER, "k8s/web.yaml": APP,
                     "k8s/broken.yaml": "apiVersion: v1\nkind: ConfigMap\n  data: [\n"})
    servers = {s["server"]: s for s in advise_json(str(tmp_path), "--no-new-pooler")}
    advice = servers["shop"]
    assert advice["floor_before"]
    verdict = advice["after"][-1]
    assert verdict.startswith("cannot tell: >= "), advice["after"]
    assert advice["before"][-1].startswith("does not fit: >= ")


def test_zalando_pooler_bounded_by_its_clients_is_still_sized(tmp_path: Path):
    """Every client known (declared 20 connections a pod): the pooler counts what its
    clients ask for (2 x 20 in (shop, shop) and as many lookups, on each of 3 processes:
    240, below its pools' 270) > 95 (97 - Patroni's 2 sessions), and advise sizes
    maxDBConnections from the pools' own arithmetic inside that bound (one pool in each
    database), not from the bound's single part."""
    write(tmp_path, {"k8s/db.yaml": CLUSTER, "k8s/web.yaml": APP,
                     ".pool-advisor.toml": '[[workloads]]\nname = "web"\nconnections = 20\n'})
    advice = {s["server"]: s for s in advise_json(str(tmp_path), "--no-new-pooler")}["shop"]
    assert advice["peak_before"] == 3 * (40 + 40) and not advice["fits_before"], advice
    (proposal,) = [p for p in advice["proposals"] if p["kind"] == "pooler"]
    assert proposal["key"] == "maxDBConnections"
    per_pod = int(proposal["new"]) // 2
    pool, reserve = pool_sizes(per_pod)
    # 3 PgBouncer processes (2 + 1 surge) x (shop/shop + the auth pool), each within the
    # per-pod max_db_connections: what the proposal keeps within 95
    assert 3 * 2 * min(pool + reserve, per_pod) <= 95 < 3 * 2 * min(
        sum(pool_sizes(per_pod + 1)), per_pod + 1)
    assert advice["fits_after"] and advice["peak_after"] <= advice["usable_after"], advice
