from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.shared_data import shared_file

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
PA301 = re.compile(r": PA301 \[(error|warning|info)\] ")


def cli(*args: str, cwd: Path | None = None, stdin: str | None = None):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args],
        capture_output=True, text=True, env=env, cwd=cwd, input=stdin, timeout=120,
    )


def copy_fixture(name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(FIXTURES / name, target)
    return target


def replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def advise_json(*args: str) -> list[dict]:
    r = cli("advise", *args, "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)["servers"]


def test_acme_shop_pool_size_fits_and_write_makes_check_pass(tmp_path: Path):
    repo = copy_fixture("acme-shop", tmp_path)
    before = cli("check", str(repo))
    assert before.returncode == 1 and "PA101" in before.stdout

    (server,) = advise_json(str(repo), "--no-new-pooler")
    assert server["server"] == "postgres" and not server["fits_before"]
    assert server["peak_before"] == 800 and server["usable_before"] == 97
    (p,) = server["proposals"]
    assert p["kind"] == "client-pool" and p["new"] == "2"
    assert p["edit"] == {
        "path": "k8s/configmap.yaml", "line": 13,
        "key": "SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE", "old": "20", "new": "2",
        "insert": False, "indent_from": None,
    }
    assert server["fits_after"] and server["peak_after"] == 80
    assert any("40 (HPA maxReplicas, k8s/hpa.yaml:12) x 2" in line for line in server["after"])
    assert any("PgBouncer in transaction mode" in n for n in server["notes"])  # alternative

    text_before = (repo / "k8s/configmap.yaml").read_text()
    r = cli("advise", str(repo), "--diff", "--no-new-pooler")
    assert r.returncode == 0, r.stderr
    assert '-  SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE: "20"' in r.stdout
    assert '+  SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE: "2"' in r.stdout
    assert (repo / "k8s/configmap.yaml").read_text() == text_before  # --diff writes nothing

    r = cli("advise", str(repo), "--write", "--no-new-pooler", stdin="")
    assert r.returncode == 2 and "--yes" in r.stderr
    assert (repo / "k8s/configmap.yaml").read_text() == text_before

    r = cli("advise", str(repo), "--write", "--yes", "--no-new-pooler")
    assert r.returncode == 0, r.stderr
    after = (repo / "k8s/configmap.yaml").read_text()
    assert after == text_before.replace(
        'MAXIMUMPOOLSIZE: "20"', 'MAXIMUMPOOLSIZE: "2"'
    )  # the one value, comments and the rest untouched
    # The oracle is the linter itself: the budget now fits.
    again = cli("check", str(repo))
    assert again.returncode == 0, again.stdout
    assert "PA101" not in again.stdout


def _overloaded_pooler(tmp_path: Path) -> Path:
    repo = copy_fixture("acme-shop-pgbouncer", tmp_path)
    replace(repo / "k8s/postgres-config.yaml", "max_connections = 100", "max_connections = 300")
    ini = repo / "k8s/pgbouncer.yaml"
    replace(ini, "default_pool_size = 20", "default_pool_size = 150")
    replace(ini, "max_db_connections = 40", "max_db_connections = 0")
    return repo


def test_pooler_shrinks_to_the_budget(tmp_path: Path):
    repo = _overloaded_pooler(tmp_path)
    (server,) = advise_json(str(repo))
    assert server["peak_before"] == 310 and server["usable_before"] == 297
    keys = {p["key"]: p for p in server["proposals"]}
    # The reserve (opened only after a client waited reserve_pool_timeout) is given up
    # before the steady pool: 2 x (148 + 0) = 296 <= 297, not 2 x (143 + 5 reserve).
    assert keys["reserve_pool_size"]["new"] == "0"
    assert keys["default_pool_size"]["new"] == "148"
    assert keys["default_pool_size"]["edit"]["path"] == "k8s/pgbouncer.yaml"
    assert server["fits_after"] and server["peak_after"] == 296
    # the reason's count is the After block's
    assert keys["default_pool_size"]["reason"].startswith(
        "2 replicas x 148 = 296 server connections (was 310)")


def test_sweep_caps_the_pooler_at_the_measured_optimum(tmp_path: Path):
    repo = _overloaded_pooler(tmp_path)
    sweep = shared_file("pool-sweep-1-256.tsv")
    (server,) = advise_json(str(repo), "--sweep", str(sweep))
    assert server["fits_after"]
    # Never more than 128 active server connections for this workload.
    assert server["peak_after"] <= 128
    assert any("N* = sqrt((1 - sigma) / kappa)" in s for s in server["sizing"])
    (p,) = [p for p in server["proposals"] if p["key"] == "default_pool_size"]
    assert "measured optimum" in p["reason"]


def test_memory_max_connections_and_work_mem(tmp_path: Path):
    repo = copy_fixture("acme-shop-pgbouncer", tmp_path)
    conf = repo / "k8s/postgres-config.yaml"
    replace(conf, "max_connections = 100", "max_connections = 400")
    replace(conf, "work_mem = 8MB", "work_mem = 64MB")
    assert PA301.search(cli("check", str(repo)).stdout)
    (server,) = advise_json(str(repo))
    keys = {p["key"]: p for p in server["proposals"]}
    # 50 from PgBouncer + 3 reserved + 5 headroom (10%, at least 5) = 58, up to 5s
    assert keys["max_connections"]["new"] == "60"
    assert keys["work_mem"]["new"].endswith("MB")
    assert server["memory_after"].endswith("fits")
    r = cli("advise", str(repo), "--write", "--yes")
    assert r.returncode == 0, r.stderr
    text = conf.read_text()
    assert "max_connections = 60" in text and f"work_mem = {keys['work_mem']['new']}" in text
    assert not PA301.search(cli("check", str(repo)).stdout)


def test_session_mode_and_max_client_conn(tmp_path: Path):
    repo = copy_fixture("acme-shop-pgbouncer", tmp_path)
    ini = repo / "k8s/pgbouncer.yaml"
    replace(ini, "pool_mode = transaction", "pool_mode = session")
    replace(ini, "max_client_conn = 1000", "max_client_conn = 100")
    # A plain JDBC URL: the driver uses protocol-level prepared statements, which
    # PgBouncer 1.18 cannot keep in transaction mode: advise must not propose it.
    checkout = repo / "k8s/checkout.yaml"
    checkout.write_text(
        re.sub(r"(jdbc:postgresql://[^\s?]*6432/shop)\S*", r"\1", checkout.read_text())
    )
    (server,) = advise_json(str(repo), "--all")
    assert "pool_mode" not in {p["key"] for p in server["proposals"]}
    assert any("stays in session mode" in n and "protocol-prepare" in n for n in server["notes"])
    # With prepareThreshold=0 the hazard is gone and transaction mode is proposed.
    replace(repo / "k8s/checkout.yaml", "6432/shop\n", "6432/shop?prepareThreshold=0\n")
    (server,) = advise_json(str(repo), "--all")
    keys = {p["key"]: p for p in server["proposals"]}
    assert keys["pool_mode"]["new"] == "transaction"
    # 40 pods x 20 = 800 clients over 2 replicas = 400 each, + 10%.
    assert keys["max_client_conn"]["new"] == "440"
    assert "evenly" in keys["max_client_conn"]["assumption"]


def test_weights_and_minimums(tmp_path: Path):
    repo = copy_fixture("acme-shop", tmp_path)
    (server,) = advise_json(str(repo), "--min", "checkout=3")
    (p,) = server["proposals"]
    assert p["new"] == "3" and not server["fits_after"]  # 40 x 3 = 120 > 97
    assert any("minimums" in n for n in server["notes"])
    r = cli("advise", str(repo), "--min", "checkout=x")
    assert r.returncode == 2 and "NAME=NUMBER" in r.stderr


def test_fitting_repo_has_nothing_to_propose():
    r = cli("advise", str(FIXTURES / "acme-shop-pgbouncer"))
    assert r.returncode == 0, r.stderr
    assert "nothing to propose" in r.stdout


def test_bad_sweep_file_is_a_clear_error(tmp_path: Path):
    bad = tmp_path / "s.csv"
    bad.write_text("clients,tps\n1,x\n")
    r = cli("advise", str(FIXTURES / "acme-shop"), "--sweep", str(bad))
    assert r.returncode == 2 and "s.csv:2" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("missing", ["nope"])
def test_missing_path(missing: str, tmp_path: Path):
    r = cli("advise", str(tmp_path / missing))
    assert r.returncode == 2 and "no such file" in r.stderr


BILLING = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: billing
  namespace: shop
spec:
  replicas: 10
  selector:
    matchLabels:
      app: billing
  template:
    metadata:
      labels:
        app: billing
    spec:
      containers:
        - name: billing
          image: registry.acme.example/billing:1.0.0
          env:
            - name: SPRING_DATASOURCE_URL
              value: jdbc:postgresql://postgres.shop.svc.cluster.local:5432/shop
            - name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE
              value: "10"
"""


def test_declared_weights_and_minimum_from_configuration(tmp_path: Path):
    repo = copy_fixture("acme-shop", tmp_path)
    (repo / "k8s/billing.yaml").write_text(BILLING)
    (repo / ".pool-advisor.toml").write_text(
        '[[workloads]]\nname = "billing"\nweight = 1\nmin-pool-size = 4\n\n'
        '[[workloads]]\nname = "checkout"\nweight = 3\n'
    )
    (server,) = advise_json(str(repo))
    assert server["peak_before"] == 930  # 13 billing pods (10 + 25% surge) x 10 + 40 x 20
    new = {p["subject"].split()[0]: p["new"] for p in server["proposals"]}
    # billing's weighted share (97 / 4 = 24) is below its minimum of 13 pods x 4 = 52,
    # so it keeps 52 and checkout gets the other 45: 40 pods x 1.
    assert new == {"billing": "4", "checkout": "1"}
    assert server["fits_after"] and server["peak_after"] == 92
    assert all("declared weights" in p["assumption"] for p in server["proposals"])
    # The command line overrides the configuration.
    (server,) = advise_json(str(repo), "--weight", "billing=1,checkout=1", "--min", "billing=1")
    new = {p["subject"].split()[0]: p["new"] for p in server["proposals"]}
    assert new == {"billing": "3", "checkout": "1"}


def test_pooler_cap_that_binds_is_the_value_lowered(tmp_path: Path):
    repo = copy_fixture("acme-shop-pgbouncer", tmp_path)
    ini = repo / "k8s/pgbouncer.yaml"
    replace(ini, "default_pool_size = 20", "default_pool_size = 60")
    replace(ini, "max_db_connections = 40", "max_db_connections = 50")
    (server,) = advise_json(str(repo))
    assert server["peak_before"] == 100  # 2 replicas x min(65, max_db_connections 50)
    (p,) = server["proposals"]
    assert p["key"] == "max_db_connections" and p["new"] == "48"  # 2 x 48 = 96 <= 97
    assert p["edit"]["path"] == "k8s/pgbouncer.yaml"
    assert server["fits_after"] and server["peak_after"] == 96


def test_driver_default_pool_is_a_manual_change(tmp_path: Path):
    repo = copy_fixture("acme-shop", tmp_path)
    cm = repo / "k8s/configmap.yaml"
    replace(cm, '  SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE: "20"\n', "")
    (server,) = advise_json(str(repo), "--no-new-pooler")
    assert server["peak_before"] == 400  # 40 pods x HikariCP's default of 10
    (p,) = server["proposals"]
    assert p["edit"] is None and p["new"] == "2"
    assert "explicitly" in p["manual"]
    r = cli("advise", str(repo), "--diff", "--no-new-pooler")
    assert "no file edits to make" in r.stderr


def test_sizing_floor_from_the_server_cpu_limit(tmp_path: Path):
    repo = copy_fixture("acme-shop", tmp_path)
    replace(repo / "k8s/postgres.yaml", "            limits:\n              memory: 8Gi",
            '            limits:\n              cpu: "4"\n              memory: 8Gi')
    (server,) = advise_json(str(repo))
    floor = next(s for s in server["sizing"] if "(cores x 2) + spindles" in s)
    assert "= 9" in floor and "k8s/postgres.yaml" in floor
    assert "Measurement decides" in floor


def test_standby_settings_follow_the_primary():
    (primary, standby) = advise_json(str(FIXTURES / "cnpg"))
    assert standby["server"].endswith("replicas")
    assert not [p for p in standby["proposals"] if p["kind"] == "server"]
    assert any("standby" in n and ">= the primary's" in n for n in standby["notes"])
    (mc,) = [p for p in primary["proposals"] if p["key"] == "max_connections"]
    # Sized for the busier of primary (50) and standby (14) plus 3 reserved.
    assert int(mc["new"]) >= max(primary["peak_before"], standby["peak_before"]) + 3
    r = cli("advise", str(FIXTURES / "cnpg"), "--diff")
    assert "disagree" not in r.stderr and "not edited" not in r.stderr
