"""Windmill from its images (audit h1 on windmill-labs/windmill-helm-charts: the app, the
worker groups, the indexer and the operator were clients of unknown size, 1 per pod, a
peak of >= 11 where the chart at its defaults holds 211 of 97): one sqlx pool per
container, sized by MODE (server 50, indexer 5, worker 5 + workers - 1, native 8
workers), DATABASE_CONNECTIONS over all, the operator 2; by the image tag where the
pool's sizing changed (v1.637.0 native mode, v1.655.0 the pool counting its workers)."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write
from tests.tree_helpers import deployment as tree_deployment

DB = POSTGRES_DB.replace("max_connections=50", "max_connections=500")
URL = "postgres://postgres:x@db:5432/windmill?sslmode=disable"
IMAGE = "ghcr.io/windmill-labs/windmill:1.794.0"


def deployment(name: str, env: dict[str, str | None], image: str = IMAGE,
               replicas: int = 2, command: str = "") -> str:
    """The chart's shape: DATABASE_URL and MODE in the env (a None value is set from a
    Secret), the image's own command unless given."""
    return tree_deployment(name, image, {"DATABASE_URL": URL, **env}, replicas=replicas,
                           command=command, secret="wm")


def pods(tmp_path, **deployments: str):
    write(tmp_path, {"k8s/db.yaml": DB, **{f"k8s/{n}.yaml": d for n, d in deployments.items()}})
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    return {c.name: c.pools for c in topo.clients}


def per_pod(tmp_path, env: dict[str, str | None], **kw) -> float:
    found = pods(tmp_path, wm=deployment("wm", env, **kw))["wm"]
    return sum(p.per_pod() for p in found)


def test_the_charts_defaults_are_over(tmp_path):
    write(tmp_path, {
        "k8s/db.yaml": DB,
        "k8s/app.yaml": deployment("windmill-app", {"MODE": "server"}),
        "k8s/workers.yaml": deployment("windmill-workers-default",
                                       {"MODE": "worker", "WORKER_GROUP": "default"},
                                       replicas=3),
        "k8s/native.yaml": deployment("windmill-workers-native",
                                      {"MODE": "worker", "WORKER_GROUP": "native",
                                       "NATIVE_MODE": "true", "SLEEP_QUEUE": "200"},
                                      replicas=1)})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    totals = {c.who: c.total for c in budget.contributions}
    assert totals == {"windmill-app": 2 * 50, "windmill-workers-default": 3 * 5,
                      "windmill-workers-native": 1 * 12}
    assert budget.unknown_clients == []


@pytest.mark.parametrize("env, expected", [
    ({}, 50),  # MODE unset: standalone, the server's pool
    ({"MODE": "Server"}, 50),  # lower-cased
    ({"MODE": "server", "DISABLE_SERVER": "true"}, 5),
    ({"MODE": "indexer"}, 5),
    ({"MODE": "worker"}, 5),
    ({"MODE": "worker", "WORKER_GROUP": "native"}, 12),  # the "native" group is native
    ({"MODE": "worker", "NATIVE_MODE": "1"}, 12),
    ({"MODE": "worker", "NUM_WORKERS": "4"}, 5),  # falls back to 1 outside native mode
    ({"MODE": "worker", "NUM_WORKERS": "4", "I_ACK_NUM_WORKERS_IS_UNSAFE": "true"}, 8),
    ({"MODE": "worker", "DATABASE_CONNECTIONS": "20"}, 20),
    ({"MODE": "server", "DATABASE_CONNECTIONS": "8"}, 8),
])
def test_pool_by_mode(tmp_path, env, expected):
    assert per_pod(tmp_path, env) == expected


@pytest.mark.parametrize("image, env, expected", [
    # v1.637.0-v1.654.x: native mode runs 8 workers, the pool reads the env's NUM_WORKERS
    ("ghcr.io/windmill-labs/windmill-ee:1.650.0", {"MODE": "worker", "NATIVE_MODE": "true"},
     5),
    ("ghcr.io/windmill-labs/windmill:1.640.2", {"MODE": "worker", "NUM_WORKERS": "3"}, 7),
    ("ghcr.io/windmill-labs/windmill-ee:1.655.0", {"MODE": "worker", "NATIVE_MODE": "true"},
     12),
    ("ghcr.io/windmill-labs/windmill:main", {"MODE": "worker", "NATIVE_MODE": "true"}, 12),
])
def test_native_pool_by_release(tmp_path, image, env, expected):
    assert per_pod(tmp_path, env, image=image) == expected


@pytest.mark.parametrize("image, env", [
    ("ghcr.io/windmill-labs/windmill:1.600.0", {"MODE": "server"}),  # not placed
    (IMAGE, {"MODE": "worker", "DATABASE_CONNECTIONS": None}),  # from a Secret
    (IMAGE, {"MODE": None}),
    (IMAGE, {"MODE": "worker", "DATABASE_CONNECTIONS": "many"}),
])
def test_unknown(tmp_path, image, env):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/wm.yaml": deployment("wm", env, image=image)})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.unknown_clients == ["wm"]


def test_operator_command(tmp_path):
    found = pods(tmp_path, op=deployment("op", {}, command="[windmill, operator]",
                                         replicas=1))
    (pool,) = found["op"]
    assert pool.size.value == 2 and "OPERATOR" in pool.size.source.label()


def test_other_images_of_the_organisation_are_not_windmill(tmp_path):
    # windmill-extra (LSP, multiplayer) and the hub are other programs
    found = pods(tmp_path, extra=deployment(
        "extra", {}, image="ghcr.io/windmill-labs/windmill-extra:1.794.0"))
    assert not any("Windmill" in p.label for p in found.get("extra", []))


def test_tags_of_the_listener_era_are_not_counted(tmp_path):
    """Before v1.637.0 (main.rs @005fbdf8) each server and worker also held a
    PgListener::connect(url) of its own, outside the pool (removed by PR #7778): such a
    tag stays unknown, never counted as the pool alone (audit3 D2)."""
    found = pods(tmp_path, wm=deployment("wm", {"MODE": "server"},
                                         image="ghcr.io/windmill-labs/windmill:1.600.0"))
    assert found["wm"] == []
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.unknown_clients == ["wm"]
