"""`pool-advisor check CHART --values FILE` as users type it (issue 4)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.deploy_helpers import FIXTURES, REPO, line_no

pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")


def test_check_chart_with_values_file_on_the_command_line():
    chart = FIXTURES / "bitnami-values" / "charts" / "shop"
    proc = subprocess.run(
        # --values is read from the working directory, as `helm -f` reads it
        [sys.executable, "-m", "advisor", "check", ".", "--values", "values-prod.yaml",
         "--release", "shop", "--namespace", "shop", "--format", "json"],
        capture_output=True, text=True, cwd=chart, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 1, proc.stderr  # PA110 is an error
    out = json.loads(proc.stdout)
    [pa110] = [f for f in out["findings"] if f["code"] == "PA110"]
    assert pa110["location"]["path"].endswith("values-prod.yaml")
    assert pa110["location"]["line"] == line_no(chart / "values-prod.yaml",
                                                "max_connections = 200")
    # primary: 500 (values-prod.yaml) - 3 = 497 usable;
    # shop: (6 replicas + 2 surge) x HikariCP 25 = 200
    assert any(b["usable"] == 497 and b["peak"] == 200 for b in out["budgets"])
