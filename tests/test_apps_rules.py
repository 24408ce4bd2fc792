"""PA102-PA104 messages carry the numbers and where they came from."""

from pathlib import Path

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.rule_pages import load_pages, write_tree

PAGES = {p.code: p for p in load_pages()}


def _findings(tmp_path: Path, code: str, files: dict[str, str]):
    write_tree(tmp_path, files)
    result = run_check([str(tmp_path)], CheckOptions(select=[code]))
    return [f for f in result.findings if f.code == code]


def test_pa102_names_the_open_call(tmp_path):
    (f,) = _findings(tmp_path, "PA102", PAGES["PA102"].bad)
    assert f.severity == "error"
    assert f.location.path == "notify/internal/db/db.go" and f.location.line == 12
    assert "database/sql" in f.message and "unbounded" in f.message


def test_pa103_figures_for_the_node_size(tmp_path):
    (f,) = _findings(tmp_path, "PA103", PAGES["PA103"].bad)
    assert "max(4, runtime.NumCPU())" in f.message
    assert "on 32 node CPUs (.pool-advisor.toml:2): 32 connections per process" in f.message
    assert "set node" not in f.message


def test_pa103_without_node_cpus_lists_sizes(tmp_path):
    files = dict(PAGES["PA103"].bad)
    files[".pool-advisor.toml"] = '[[workloads]]\nname = "ledger"\nsource = "ledger"\n'
    (f,) = _findings(tmp_path, "PA103", files)
    assert "4 on 2 CPUs, 8 on 8 CPUs, 32 on 32 CPUs, 96 on 96 CPUs" in f.message
    assert "assumed node size" in f.message


def test_pa104_cites_the_default(tmp_path):
    (f,) = _findings(tmp_path, "PA104", PAGES["PA104"].bad)
    assert f.severity == "info"
    assert "HikariCP maximumPoolSize = 10" in f.message
    assert "HikariConfig.DEFAULT_POOL_SIZE" in f.message
    assert f.location.path == "k8s/checkout.yaml"


def test_pa103_when_only_the_process_count_is_cpu_derived(tmp_path):
    files = {
        ".pool-advisor.toml": '[[workloads]]\nname = "reports"\nsource = "app"\n',
        "app/tasks.py": "from sqlalchemy import create_engine\n"
                        "engine = create_engine('postgresql://r@db/r')\n",
        "k8s/worker.yaml": (
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: reports\nspec:\n"
            "  replicas: 2\n  template:\n    spec:\n      containers:\n"
            "        - name: worker\n          image: acme/reports:1\n"
            "          command: [celery, -A, tasks, worker]\n"),
    }
    (f,) = _findings(tmp_path, "PA103", files)
    assert "cpu_count()" in f.message and "processes per pod" in f.message
    assert "15 on" not in f.message and "2 on 2 CPUs" in f.message
    # the processes the budget counted on the assumed node, not the pool's 15 (audit 12a)
    assert "the budget used 4 processes per pod on 4 node CPUs" in f.message


def test_pa102_on_a_workload_that_names_no_database_is_info(tmp_path):
    """opentelemetry-demo: one Go service's unbounded database/sql pool was an error on
    every workload that took its code, though none of them names a database host."""
    tree = dict(PAGES["PA102"].bad)
    tree["k8s/notify.yaml"] = tree["k8s/notify.yaml"].split("          env:")[0]
    (f,) = _findings(tmp_path, "PA102", tree)
    assert f.severity == "info"
    assert f.message.endswith("; it names no database host, so no budget holds it")
