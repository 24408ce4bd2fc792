"""PA108 undecided-budget: a server whose verdict is "cannot tell" only because of what a
notice said (a workload whose server is not known, a Service exposing it outside the
cluster) is a warning, so the run does not pass as a fit. Audit 45: AtomiCloud's
sulfone.zinc printed "cannot tell" for a server whose hand count is 200 > 97 and exited 0."""

from __future__ import annotations

import subprocess
import sys

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.rule_pages import load_pages, write_tree

PAGE = next(p for p in load_pages() if p.code == "PA108")

NODEPORT = """\
apiVersion: v1
kind: Service
metadata:
  name: db-external
spec:
  type: NodePort
  selector:
    app: db
  ports:
    - port: 5432
"""

WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {replicas}
  strategy:
    rollingUpdate:
      maxSurge: 0
  template:
    spec:
      containers:
        - name: app
          image: acme/web:1
          env:
            - name: DATABASE_URL
              value: postgres://web@db:5432/shop
"""
DECLARED_WEB = '[[workloads]]\nname = "web"\nconnections = 10\n'


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor", "check", *args],
                          capture_output=True, text=True, check=False)


def _codes(tmp_path, files, **opts):
    write_tree(tmp_path, files)
    result = run_check([str(tmp_path)], CheckOptions(**opts))
    return result, [f.code for f in result.findings]


def test_unplaced_client_makes_the_run_fail(tmp_path):
    write_tree(tmp_path, PAGE.bad)
    run = _cli(str(tmp_path))
    assert run.returncode == 1, run.stderr
    out = run.stdout
    assert "PA108 [warning] db: cannot tell whether it fits: peak >= 0 of 97 usable; " \
        "1 client whose server is not known, which may connect here: api" in out
    assert "declare where each of api connects" not in out  # -v only
    assert "fix: declare where each of api connects" in _cli("-v", str(tmp_path)).stdout


def test_declared_target_decides_and_drops_the_notice(tmp_path):
    write_tree(tmp_path, PAGE.good)
    run = _cli(str(tmp_path))
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "peak: 50 <= 97 usable" in out
    # the notice asked for the declaration that is there: not printed
    assert "so it is in no budget" not in out


def test_exposed_server_until_headroom_is_declared(tmp_path):
    files = {**PAGE.good, "k8s/external.yaml": NODEPORT}
    result, codes = _codes(tmp_path / "open", files)
    assert codes.count("PA108") == 1
    (f,) = [f for f in result.findings if f.code == "PA108"]
    assert "exposed outside the cluster by Service/db-external (type NodePort" in f.message
    assert "headroom = N" in f.fix.description
    files[".pool-advisor.toml"] = "headroom = 20\n" + files[".pool-advisor.toml"]
    _result, codes = _codes(tmp_path / "kept", files)
    assert "PA108" not in codes


def test_a_floor_already_over_is_pa101_not_pa108(tmp_path):
    files = {**PAGE.bad, "k8s/web.yaml": WEB.format(replicas=12),
             ".pool-advisor.toml": DECLARED_WEB}
    result, codes = _codes(tmp_path, files)
    assert "PA101" in codes and "PA108" not in codes
    (budget,) = result.budgets
    assert budget.peak == 120 and budget.unplaced_clients == ["api"]


def test_a_floor_that_fits_so_far_is_pa108(tmp_path):
    files = {**PAGE.bad, "k8s/web.yaml": WEB.format(replicas=2),
             ".pool-advisor.toml": DECLARED_WEB}
    result, codes = _codes(tmp_path, files)
    assert codes == ["PA108"]
    (f,) = result.findings
    assert "peak >= 20 of 97 usable" in f.message
    assert "web: 2 (Deployment replicas" in f.detail


def test_unknown_clients_alone_are_pa106s(tmp_path):
    """A floor made by a client whose pools are not read is PA106's warning already."""
    files = {"k8s/db.yaml": PAGE.bad["k8s/db.yaml"],
             "k8s/web.yaml": WEB.format(replicas=2)}
    result, codes = _codes(tmp_path, files)
    (budget,) = result.budgets
    assert budget.peak_is_floor and not budget.unplaced_clients
    assert "PA108" not in codes
