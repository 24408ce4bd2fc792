"""Coder's server from its image (audit h1 on coder/coder's helm/coder: the server was a
client of unknown size, 1 per pod, a floor of 4 where 3 replicas + 1 surge hold 44):
a database/sql pool of 10 (--postgres-conn-max-open / CODER_PG_CONN_MAX_OPEN from
v2.30.0) plus the pubsub's LISTEN connection outside it."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

URL = "postgres://coder:coder@db:5432/coder?sslmode=disable"


def coder(env: dict[str, str | None], image: str = "ghcr.io/coder/coder:v2.31.3",
          command: str = "[/opt/coder]", args: str = "[server]", name: str = "coder") -> str:
    """The chart's shape: /opt/coder as command, `server` as args, the URL in the env
    (coder.env; a None value is set from a Secret)."""
    lines = "".join(
        f"            - {{name: {k}, valueFrom: {{secretKeyRef: {{name: c, key: {k}}}}}}}\n"
        if v is None else f"            - {{name: {k}, value: \"{v}\"}}\n"
        for k, v in {"CODER_HTTP_ADDRESS": "0.0.0.0:8080", "CODER_PG_CONNECTION_URL": URL,
                     **env}.items())
    cmd = (f"          command: {command}\n" if command else "") + \
        (f"          args: {args}\n" if args else "")
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: 3
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: coder
          image: {image}
{cmd}          env:
{lines}"""


def per_pod(tmp_path, text: str) -> float | None:
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/coder.yaml": text})
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    pools = next(c for c in topo.clients if c.name == "coder").pools
    return sum(p.per_pod() for p in pools) if pools else None


def test_pool_and_pubsub_listener(tmp_path):
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/coder.yaml": coder({})})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.peak == 3 * (10 + 1)
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    pool, listener = next(c for c in topo.clients if c.name == "coder").pools
    assert pool.bound == "default" and "SetMaxOpenConns(10)" in pool.size.source.label()
    assert listener.size.value == 1 and "startListener" in listener.size.source.label()


@pytest.mark.parametrize("image, env, args, expected", [
    ("ghcr.io/coder/coder:v2.30.1", {"CODER_PG_CONN_MAX_OPEN": "25"}, "[server]", 26),
    ("ghcr.io/coder/coder:latest", {"CODER_PG_CONN_MAX_OPEN": "25"},
     "[server, --postgres-conn-max-open=40]", 41),  # the flag wins over the env
    ("ghcr.io/coder/coder:v2.29.1", {"CODER_PG_CONN_MAX_OPEN": "25"}, "[server]", 11),
    ("ghcr.io/coder/coder-preview:main", {}, "[server]", 11),
])
def test_max_open_by_release(tmp_path, image, env, args, expected):
    assert per_pod(tmp_path, coder(env, image=image, args=args)) == expected


def test_the_images_entrypoint_runs_the_server(tmp_path):
    assert per_pod(tmp_path, coder({}, command="", args="")) == 11


@pytest.mark.parametrize("image, env, args", [
    ("ghcr.io/coder/coder:v2.31.0", {"CODER_PG_CONN_MAX_OPEN": None}, "[server]"),
    ("ghcr.io/coder/coder:v2.31.0", {"CODER_PG_CONN_MAX_OPEN": "lots"}, "[server]"),
    ("ghcr.io/coder/coder:v2.29.0", {}, "[server, --postgres-conn-max-open, '20']"),
    ("ghcr.io/coder/coder:v0.27.3", {}, "[server]"),
])
def test_unknown(tmp_path, image, env, args):
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB,
                     "k8s/coder.yaml": coder(env, image=image, args=args)})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.unknown_clients == ["coder"]


def test_a_provisioner_of_the_image_holds_no_pool(tmp_path):
    assert per_pod(tmp_path, coder({}, args="[provisioner, start]")) is None
