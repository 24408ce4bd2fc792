"""Scale: a reduced bench/scale.py tree is checked completely and in linear time, and the
check path imports no heavy module (the startup bench's other half)."""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _scale_module():
    spec = importlib.util.spec_from_file_location("bench_scale", REPO / "bench" / "scale.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _check_cpu(tree: Path) -> tuple[float, dict]:
    """CPU seconds (user+sys) of `pool-advisor check TREE --format json`, and its report.
    CPU rather than wall time: other test suites load the machine."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run([sys.executable, "-m", "advisor", "check", str(tree), "--format",
                           "json"], env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, json.loads(proc.stdout)


def test_reduced_scale_tree_is_checked_in_linear_time(tmp_path):
    scale = _scale_module()
    empty = tmp_path / "empty"
    empty.mkdir()
    small, large = tmp_path / "m250", tmp_path / "m1000"
    assert scale.generate_manifests(small, 250) == 250
    assert scale.generate_manifests(large, 1000) == 1000

    fixed, _ = _check_cpu(empty)
    cpu_small, _ = _check_cpu(small)
    cpu_large, report = _check_cpu(large)

    # 1,000 files = 4 full namespaces (206 files each) + a fifth with its database and
    # 45 applications (6 database files + 44 x 4 + the first file of the 45th).
    assert len(report["budgets"]) == 5
    servers = {b["server"] for b in report["budgets"]}
    assert servers == {f"team-{k:03d}/postgres" for k in range(5)}
    # every application of the first namespace reaches the server (odd ones directly,
    # even ones through PgBouncer): the scan linked them, it did not just parse
    first = next(b for b in report["budgets"] if b["server"] == "team-000/postgres")
    assert first["peak"] > first["usable"]  # 25 direct pools of 5..14 x 4..11 pods

    # Linear: 4x the files costs about 4x the variable part (quadratic would be 16x).
    ratio = (cpu_large - fixed) / max(cpu_small - fixed, 1e-3)
    assert ratio < 8, (fixed, cpu_small, cpu_large)


def test_check_imports_no_heavy_module():
    """What bench/startup.py reports: the check path of the demo leaves the kubernetes
    client, pglast, the Helm engine and friends unimported, and pydantic too (its models
    are built only where a configuration file or JSON is read back); the Flux and chart
    release readers without a Flux or Argo CD object, hashlib (OpenSSL) for its JSON."""
    # os._exit ends a check (cli.hard_exit): here it raises SystemExit so the modules
    # can be listed
    code = ("import os, sys, runpy; sys.argv=['pool-advisor','check','fixtures/acme-shop',"
            "'--format','json']; os._exit = sys.exit\n"
            "try:\n    runpy.run_module('advisor', run_name='__main__')\n"
            "except SystemExit: pass\n"
            "heavy=[m for m in ('kubernetes','pglast','helm_python','numpy','psycopg',"
            "'pydantic','advisor.read.flux','advisor.read.releases','hashlib')"
            " if m in sys.modules]\n"
            "print('HEAVY=' + ','.join(heavy))")
    env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=120, check=False).stdout
    line = next(x for x in out.splitlines() if x.startswith("HEAVY="))
    assert line == "HEAVY=", line
