"""Kong from its images (audit3 D6 on Kong/charts: the proxy was a client of unknown size
with "no application source folder found", where Kong opens a PostgreSQL connection per
query in flight in each nginx worker, with no limit unless pg_max_concurrent_queries is
set; Kong/kong connector.lua, kong_defaults.lua)."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.read.apps.kong import is_kong
from tests.tree_helpers import POSTGRES_DB, deployment, write

DB = POSTGRES_DB.replace("max_connections=50", "max_connections=500")
BASE = {"KONG_DATABASE": "postgres", "KONG_PG_HOST": "db", "KONG_PG_PORT": "5432"}


def kong(tmp_path, env: dict[str, str | None], image: str = "kong:3.9", command: str = ""):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/kong.yaml": deployment(
        "kong", image, {**BASE, **env}, replicas=2, command=command)})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    return budget


def test_kongs_default_is_unbounded_and_said_so(tmp_path):
    budget = kong(tmp_path, {})
    assert budget.unbounded_clients == ["kong"] and not budget.fits
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (finding,) = [f for f in result.findings if f.code in ("PA102", "PA106")]
    assert finding.code == "PA102" and "KONG_PG_MAX_CONCURRENT_QUERIES" in finding.message
    assert "no application source folder" not in finding.message


@pytest.mark.parametrize("env, per_pod", [
    # a cap per nginx worker, times the workers the env sets
    ({"KONG_PG_MAX_CONCURRENT_QUERIES": "5", "KONG_NGINX_WORKER_PROCESSES": "2"}, 10),
    # nginx_main_worker_processes wins over its alias (conf_loader aliased_properties)
    ({"KONG_PG_MAX_CONCURRENT_QUERIES": "5", "KONG_NGINX_WORKER_PROCESSES": "2",
      "KONG_NGINX_MAIN_WORKER_PROCESSES": "3"}, 15),
    # `auto`: one worker per node CPU (the assumed node size, 4)
    ({"KONG_PG_MAX_CONCURRENT_QUERIES": "5"}, 20),
    ({"KONG_PG_MAX_CONCURRENT_QUERIES": "5", "KONG_NGINX_WORKER_PROCESSES": "auto"}, 20),
])
def test_a_cap_per_worker_times_the_workers(tmp_path, env, per_pod):
    budget = kong(tmp_path, env)
    assert budget.unknown_clients == [] and budget.unbounded_clients == []
    assert budget.peak == 2 * per_pod


@pytest.mark.parametrize("env, image, command", [
    ({"KONG_PG_MAX_CONCURRENT_QUERIES": None}, "kong:3.9", ""),  # from a Secret
    ({"KONG_PG_MAX_CONCURRENT_QUERIES": "5", "KONG_NGINX_WORKER_PROCESSES": None},
     "kong:3.9", ""),
    ({"KONG_PG_RO_HOST": "replica"}, "kong:3.9", ""),
    ({}, "kong:1.1", ""),  # no pg_max_concurrent_queries before 1.2.0
    ({}, "kong/kong-gateway:3.9", ""),  # Enterprise: not read
    ({}, "kong:3.9", '["kong", "migrations", "up"]'),
])
def test_what_is_not_read_stays_unknown(tmp_path, env, image, command):
    budget = kong(tmp_path, env, image=image, command=command)
    assert budget.unknown_clients == ["kong"]


def test_db_less_and_data_plane_hold_no_connection(tmp_path):
    for env in ({"KONG_DATABASE": "off"}, {"KONG_ROLE": "data_plane"}):
        write(tmp_path, {"k8s/db.yaml": DB, "k8s/kong.yaml": deployment(
            "kong", "kong:3.9", {**BASE, **env})})
        topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
        assert [p for c in topo.clients if c.name == "kong" for p in c.pools] == []


def test_kong_images():
    assert is_kong("kong:3.9") and is_kong("docker.io/kong/kong:3.9")
    assert is_kong("kong/kong-gateway:3.9")
    assert not is_kong("kong/kubernetes-ingress-controller:3.4")
    assert not is_kong("example/kong-plugin-builder:1")
