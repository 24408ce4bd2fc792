"""Concourse from its image (audit4 D1 on concourse/concourse-chart: the web node was a
client of unknown size, counted as 1 connection per pod, where `concourse web` opens an
api pool of 10 and a backend pool of 50 by default, plus gc 5, worker 1, 6 lock
connections, 4 LISTEN connections and the dex storage's 5; concourse/concourse v8.1.1
atc/atccmd/command.go)."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.read.apps import pools_for_container
from advisor.read.apps.concourse import is_concourse
from tests.apphelpers import container
from tests.tree_helpers import write

DB = """
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: postgres
          image: postgres:17
"""


def web(name: str, args: str, env: dict[str, str | None], image: str) -> str:
    """The chart's shape: replicas 1, no strategy (the 25% surge), args, env last."""
    lines = "".join(
        f"            - {{name: {k}, valueFrom: {{secretKeyRef: {{name: s, key: {k}}}}}}}\n"
        if v is None else f"            - {{name: {k}, value: \"{v}\"}}\n"
        for k, v in {"CONCOURSE_POSTGRES_HOST": "db", **env}.items())
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: {name}
          image: {image}
          args: {args}
          env:
{lines}"""


def check(tmp_path, env: dict[str, str | None] | None = None, args: str = '["web"]',
          image: str = "concourse/concourse:8.1.1"):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/web.yaml": web("web", args, env or {}, image)})
    return run_check([str(tmp_path)], CheckOptions(cache=False))


def test_the_charts_web_node_is_over_not_unknown(tmp_path):
    """2 pods (1 + the 25% surge) x (10 + 50 + 5 + 1 + 6 + 4 + 5) = 162 > 97."""
    result = check(tmp_path)
    (budget,) = result.budgets
    assert budget.unknown_clients == [] and budget.peak == 162 and not budget.fits
    codes = {f.code for f in result.findings}
    assert "PA101" in codes and "PA106" not in codes


def per_pod(env: dict[str, str] | None = None, args: tuple[str, ...] = ("web",),
            image: str = "concourse/concourse:8.1.1"):
    got = pools_for_container(replace(container(env, args=args), image=image))
    return got, sum(p.per_pod() for p in got.pools)


@pytest.mark.parametrize("env, args, want", [
    ({}, ("web",), 81),
    # the env sets both pools; the fixed 21 stay
    ({"CONCOURSE_API_MAX_CONNS": "5", "CONCOURSE_BACKEND_MAX_CONNS": "20"}, ("web",), 46),
    # the command line overrides the env (go-flags: the variable is the flag's default)
    ({"CONCOURSE_API_MAX_CONNS": "5"}, ("web", "--api-max-conns=3", "--backend-max-conns",
                                        "8"), 32),
    # quickstart is web and worker in one process: web's pools
    ({}, ("quickstart",), 81),
])
def test_pools_from_flags_env_and_defaults(env, args, want):
    got, total = per_pod(env, args)
    assert total == want and got.unknown == []


def test_every_number_names_its_source():
    got, _ = per_pod({"CONCOURSE_BACKEND_MAX_CONNS": "20"})
    by_label = {p.label: p for p in got.pools}
    api = by_label["Concourse api pool (api-max-conns)"]
    assert api.bound == "default" and "command.go:137-138" in api.size.source.default
    backend = by_label["Concourse backend pool (backend-max-conns)"]
    assert backend.size.source.key == "CONCOURSE_BACKEND_MAX_CONNS"
    assert not backend.size.source.default
    assert by_label["Concourse lock connections"].size.value == 6
    assert by_label["Concourse LISTEN connections"].size.value == 4
    assert "concourse/dex" in by_label["Concourse auth (dex) storage"].size.source.default


@pytest.mark.parametrize("image, want", [
    # v7.0.0 to v7.7.x: one lock connection
    ("concourse/concourse:7.5.0", 10 + 50 + 5 + 1 + 1 + 4 + 5),
    # v6.x: no worker pool, three LISTEN connections
    ("concourse/concourse:6.7.3", 10 + 50 + 5 + 1 + 3 + 5),
    ("concourse/concourse:8.2.5-ubuntu", 81),
])
def test_the_layout_follows_the_tag(image, want):
    assert per_pod(image=image)[1] == want


def test_a_tag_with_no_version_is_read_as_the_newest_and_said_so():
    got, total = per_pod(image="concourse/concourse:latest")
    assert total == 81
    assert all("tag latest names no version" in p.size.source.default for p in got.pools)


def test_zero_is_no_limit():
    got, _ = per_pod({"CONCOURSE_API_MAX_CONNS": "0"})
    assert [p.label for p in got.unbounded] == ["Concourse api pool (api-max-conns)"]


@pytest.mark.parametrize("env, args, image", [
    ({"CONCOURSE_API_MAX_CONNS": None}, '["web"]', "concourse/concourse:8.1.1"),  # a Secret
    ({}, '["web", "--backend-max-conns=$(CONNS)"]', "concourse/concourse:8.1.1"),
    ({}, '["web"]', "concourse/concourse:5.8.0"),  # no --api-max-conns before 6.0.0
    ({}, '["migrate", "--migrate-to-latest-version"]', "concourse/concourse:8.1.1"),
])
def test_what_is_not_read_stays_unknown(tmp_path, env, args, image):
    (budget,) = check(tmp_path, env, args, image).budgets
    assert budget.unknown_clients == ["web"]


def test_the_worker_holds_no_connection(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/worker.yaml": web(
        "worker", '["worker"]', {}, "concourse/concourse:8.1.1")})
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    assert [p for c in topo.clients if c.name == "worker" for p in c.pools] == []
    got, total = per_pod(args=("worker",))
    assert total == 0 and got.unknown == [] and "opens no PostgreSQL" in got.notices[0]


def test_concourse_images():
    assert is_concourse("concourse/concourse:8.1.1")
    assert is_concourse("docker.io/concourse/concourse@sha256:abc")
    assert not is_concourse("concourse/registry-image-resource:1.9")
