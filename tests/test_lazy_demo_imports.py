"""The demo's check (plain manifests: no Helm chart, no operator cluster, no init
container, no hook) imports none of the readers only those need (issue 19: the demo
within 1.3x of the floor by instructions, bench/startup.py). Each of these, imported at
module level, put the demo past it (session 23: 400 M instructions, 1.43x)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

NOT_ON_THE_DEMO_PATH = (
    "advisor.read.apps.images",  # every image reader: only for a pod with an init container
    "advisor.read.sources.operators",  # every operator reader: for operator clusters
    "advisor.read.render.helm_positions",  # Helm renders
    "advisor.budget.hooks",  # Helm hook releases
    "advisor.read.helm_commands",  # helm install / helmfile commands naming postgresql
    "advisor.read.apps.dropwizard",  # JVM readers: for an application with a build file
    "advisor.read.sql.drivers",  # driver hazards: only looked for behind a pooler
    "advisor.read.sources.manifest_template",  # only for a manifest kept as a template
    "advisor.read.apps.vertx",
)


def test_the_demo_check_imports_no_reader_it_does_not_need(tmp_path):
    code = ("import sys; from advisor.cli import run; "
            "code = run(['check', 'fixtures/acme-shop', '--format', 'json', '--no-cache']); "
            f"print(code, [m for m in {NOT_ON_THE_DEMO_PATH!r} if m in sys.modules])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, cwd=REPO)
    assert proc.stdout.strip().splitlines()[-1] == "1 []", proc.stderr
