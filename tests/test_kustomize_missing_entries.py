"""A kustomization kustomize refuses because an entry names a file the repository does not
hold (a listed manifest never committed, a secretGenerator's credentials file each user
writes: CrunchyData postgres-operator-examples kustomize/s3, gcs, azure) still deploys
what it lists that is there (audit 10a D2: a folder scan printed the PA901 alone, the
server and its clients in no budget). Resources and generator files only add objects or
keys: the rest is built without them (the kustomization's replicas and patches applied);
an entry that changes what is read (a patch) leaves the files read as written. Either
way the PA901 error stays and each peak is a floor."""

from __future__ import annotations

import shutil

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.fs import Root
from advisor.read.render.kustomize import render_kustomization
from tests.tree_helpers import POSTGRES_DB, write

needs_kustomize = pytest.mark.skipif(
    not (shutil.which("kubectl") or shutil.which("kustomize")),
    reason="needs kustomize or kubectl")

APP = """apiVersion: apps/v1
kind: Deployment
metadata: {name: orders}
spec:
  replicas: 5
  strategy: {rollingUpdate: {maxSurge: 0}}
  template:
    spec:
      containers:
        - name: orders
          image: example/orders:1
          env:
            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db:5432/orders"}
            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "20"}
"""


def _check(tmp_path, kustomization: str):
    write(tmp_path, {"k8s/kustomization.yaml": kustomization, "k8s/db.yaml": POSTGRES_DB,
                     "k8s/app.yaml": APP})
    return run_check([str(tmp_path)], CheckOptions(cache=False, root=tmp_path))


def _budget(result):
    (budget,) = result.budgets
    return budget


@needs_kustomize
def test_a_listed_file_missing_builds_the_rest_and_the_peak_is_a_floor(tmp_path):
    result = _check(tmp_path, "resources: [db.yaml, app.yaml, monitoring.yaml]\n"
                              "replicas: [{name: orders, count: 2}]\n")
    budget = _budget(result)
    # built: the kustomization's replicas (2, not the file's 5) applied
    assert (budget.peak, budget.usable) == (40, 47)
    assert budget.unread_files == ["k8s/kustomization.yaml"]
    assert not budget.fits and budget.peak_is_floor  # "cannot tell", never "fits"
    [error] = [f for f in result.findings if f.code == "PA901"]
    assert error.severity.value == "error" and error.location.line == 1
    assert error.message.startswith("'monitoring.yaml' not found (kustomize refuses")


@needs_kustomize
def test_a_secret_generator_file_never_committed_builds_the_rest(tmp_path):
    result = _check(tmp_path, "resources: [db.yaml, app.yaml]\nsecretGenerator:\n"
                              "  - name: backup-credentials\n    files: [s3.conf]\n"
                              "    envs: [backup.env]\n")
    budget = _budget(result)
    assert (budget.peak, budget.usable) == (100, 47) and budget.over
    errors = sorted(f.message.split(" ")[0] for f in result.findings if f.code == "PA901")
    assert errors == ["'backup.env'", "'s3.conf'"]
    assert any(f.code == "PA101" for f in result.findings)


def test_without_a_binary_the_missing_generator_file_is_said_once(tmp_path):
    write(tmp_path, {"k/kustomization.yaml": "resources: [app.yaml]\nsecretGenerator:\n"
                     "  - name: creds\n    files: [s3.conf]\n    literals: [a=b]\n",
                     "k/app.yaml": APP})
    out = render_kustomization(Root.of(tmp_path), "k", binary=[])
    assert [o.ref for o in out.objects] == ["Deployment/orders", "Secret/creds"]
    [problem] = out.problems
    assert problem.fatal and problem.message.startswith("'s3.conf' not found")


@needs_kustomize
def test_a_missing_patch_reads_the_listed_files_as_written(tmp_path):
    result = _check(tmp_path, "resources: [db.yaml, app.yaml]\npatches:\n"
                              "  - path: lower-replicas.yaml\n")
    budget = _budget(result)
    assert budget.peak == 100 and budget.peak_is_floor
    assert any("k8s was NOT rendered: kustomize cannot build it (PA901)" in n
               for n in result.notices), result.notices
    [error] = [f for f in result.findings if f.code == "PA901"]
    assert error.message == "'lower-replicas.yaml' not found"
