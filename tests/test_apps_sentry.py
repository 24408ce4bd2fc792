"""Sentry from its image, each `sentry ...` command by what it starts (audit of
sentry-kubernetes/charts at appVersion 24.9.0: every consumer was Django's one
connection per pod, 57 connections "fits"; a consumer's main process keeps the
connection its start opened, spawned processes and worker threads hold their own, and
ingest-monitors and ingest-occurrences run min(32, CPUs + 4) threads)."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.model import CpuFormula
from advisor.read.apps.sentry import THREAD_POOL, is_sentry
from tests.tree_helpers import POSTGRES_DB, write

DB = POSTGRES_DB.replace("max_connections=50", "max_connections=500")
CONF = """
apiVersion: v1
kind: ConfigMap
metadata: {name: sentry}
data:
  sentry.conf.py: |
    DATABASES = {
        "default": {
            "ENGINE": "sentry.db.postgres",
            "NAME": "sentry",
            "HOST": "db",
            "PORT": 5432,
            "CONN_MAX_AGE": 0,
        }
    }
"""
IMAGE = "getsentry/sentry:24.9.0"


def deployment(name: str, args: list[str], image: str = IMAGE) -> str:
    """The sentry-kubernetes chart's shape: `sentry` as command, the rest in args, the
    ConfigMap's sentry.conf.py at /etc/sentry."""
    items = ", ".join(f'"{a}"' for a in args)
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: 1
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: {name}
          image: {image}
          command: ["sentry"]
          args: [{items}]
          volumeMounts:
            - {{name: config, mountPath: /etc/sentry}}
      volumes:
        - name: config
          configMap: {{name: sentry}}
"""


def consumer(name: str, *opts: str) -> list[str]:
    return ["run", "consumer", name, "--consumer-group", "g", "--", *opts]


def per_pod(tmp_path, files: dict[str, str]) -> dict[str, float]:
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/conf.yaml": CONF, **files})
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    return {c.name: sum(p.per_pod() for p in c.pools) for c in topo.clients}


def pools_of(tmp_path, name: str):
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    return next(c for c in topo.clients if c.name == name).pools


@pytest.mark.parametrize("args, expected", [
    # the main process keeps what its start opened, plus each spawned child's
    (consumer("ingest-events"), 1 + 1),
    (consumer("ingest-transactions", "--processes", "4"), 1 + 4),
    (consumer("ingest-attachments", "--processes", "3"), 1 + 2 * 3),
    (consumer("ingest-metrics"), 1 + 1),
    (consumer("generic-metrics-subscription-results", "--processes", "2"), 1 + 2),
    (consumer("billing-metrics-consumer"), 1),
    (consumer("ingest-profiles"), 1),
    (["run", "cron"], 1),
    # threads: --threads 4 by default, --processes > 1 runs processes instead
    (consumer("ingest-replay-recordings"), 1 + 4),
    (consumer("ingest-replay-recordings", "--processes", "3"), 1 + 3),
    # the forwarder's pool exists in every mode: 1 + 5 threads + 1 idle child
    (consumer("post-process-forwarder-errors"), 1 + 5 + 1),
    (consumer("post-process-forwarder-errors", "--concurrency", "8"), 1 + 8 + 1),
    (consumer("post-process-forwarder-transactions", "--mode", "multiprocess",
              "--processes", "3"), 1 + 3),
    # ThreadPoolExecutor() threads: min(32, 4 assumed CPUs + 4)
    (consumer("ingest-monitors"), 1 + 8),
    (consumer("ingest-monitors", "--max-workers", "6"), 1 + 6),
    (consumer("ingest-monitors", "--mode", "serial"), 1),
    (consumer("ingest-occurrences"), 1 + 8),
    (consumer("ingest-occurrences", "--mode", "parallel", "--processes", "2"), 1 + 2),
])
def test_connections_per_pod_by_command(tmp_path, args, expected):
    assert per_pod(tmp_path, {"k8s/s.yaml": deployment("s", args)}) == {"s": expected}


def test_cleanup_workers_and_main_process(tmp_path):
    job = deployment("cleanup", ["cleanup", "--concurrency", "3", "--days", "90"])
    assert per_pod(tmp_path, {"k8s/c.yaml": job}) == {"cleanup": 3 + 1}
    job = deployment("cleanup", ["cleanup", "--days", "90"])
    assert per_pod(tmp_path, {"k8s/c.yaml": job}) == {"cleanup": 1 + 1}


def test_web_and_worker_keep_uwsgi_and_celery_counts_and_others_one_process(tmp_path):
    found = per_pod(tmp_path, {
        "k8s/web.yaml": deployment("web", ["run", "web", "--workers", "3"]),
        "k8s/worker.yaml": deployment("worker", ["run", "worker", "-c", "6"]),
        "k8s/upgrade.yaml": deployment("upgrade", ["upgrade", "--noinput"])})
    assert found == {"web": 3 * 2, "worker": 6, "upgrade": 1}


def test_consumer_options_come_after_the_double_dash_with_their_lines(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/conf.yaml": CONF, "k8s/s.yaml": deployment(
        "s", ["run", "consumer", "ingest-events", "--consumer-group", "ingest-consumer",
              "--log-level", "info", "--", "--max-batch-size", "100", "--processes", "4"])})
    main, spawned = pools_of(tmp_path, "s")
    assert main.size.value == 1 and main.processes is None
    assert spawned.processes is not None and spawned.processes.value == 4
    assert spawned.processes.source.path == "k8s/s.yaml"
    assert main.route is not None and main.route.host == "db"


def test_thread_pool_threads_follow_the_node_cpus(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/conf.yaml": CONF,
                     "k8s/s.yaml": deployment("s", consumer("ingest-monitors"))})
    _, threads = pools_of(tmp_path, "s")
    assert threads.bound == "cpu" and threads.cpu_formula == THREAD_POOL
    assert [THREAD_POOL.at(c) for c in (2, 28, 96)] == [6, 32, 32]
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (finding,) = [f for f in result.findings if f.code == "PA103"]
    assert "min(32, os.cpu_count() + 4)" in finding.message
    assert "32 on 96 CPUs" in finding.message


def test_cpu_formula_ceiling():
    assert CpuFormula(per_cpu=1, plus=4, ceiling=32).at(64) == 32
    assert CpuFormula(per_cpu=1, floor=4).at(64) == 64


def test_multiprocessing_disabled_in_settings_runs_in_the_main_process(tmp_path):
    conf = CONF + "    KAFKA_CONSUMER_FORCE_DISABLE_MULTIPROCESSING = True\n"
    found = per_pod(tmp_path, {"k8s/conf.yaml": conf, "k8s/s.yaml": deployment(
        "s", consumer("ingest-events", "--processes", "4"))})
    assert found == {"s": 1}


@pytest.mark.parametrize("args", [consumer("uptime-results"), ["run", "taskworker"],
                                  consumer("ingest-events", "--processes", "many")])
def test_a_command_not_read_is_unknown_not_one(tmp_path, args):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/conf.yaml": CONF,
                     "k8s/s.yaml": deployment("s", args)})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.unknown_clients == ["s"]


@pytest.mark.parametrize("image, expected", [
    ("getsentry/sentry:24.9.0", True), ("ghcr.io/getsentry/sentry:24.9.0", True),
    ("registry.example.com:5000/mirror/sentry@sha256:abc", True),
    ("sentry:9.1.2", False), ("library/sentry", False), ("getsentry/snuba:24.9.0", False),
])
def test_which_images_are_sentry(image, expected):
    assert is_sentry(image) is expected


def test_another_image_is_still_read_as_django(tmp_path):
    """Docker Hub's official sentry image (Sentry 9) stays with the Django reader."""
    found = per_pod(tmp_path, {"k8s/s.yaml": deployment(
        "s", consumer("ingest-events", "--processes", "4"), image="sentry:9.1.2")})
    assert found == {"s": 1}
