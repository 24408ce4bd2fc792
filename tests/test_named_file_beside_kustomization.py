"""A file named on the command line beside a kustomization file is read as it is (audit 8a,
the file-argument defect): naming a file means "check this file". Building the folder's
kustomization instead read nothing of a database manifest the kustomization does not
list ("no PostgreSQL server found", exit 0). A named file the kustomization lists is read
through its build, keeping only that file's objects (review s25 F11: read as it is, the
kustomization's replicas were lost and an OVER server "fit", exit 0). The whole build is
kept when a path names its folder, a folder above it or the kustomization file; a file
that build lists is then read through the build only, never twice."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.read.discover import discover_paths
from tests.tree_helpers import POSTGRES_DB

pytestmark = pytest.mark.skipif(not (shutil.which("kubectl") or shutil.which("kustomize")),
                                reason="kustomize is not installed")

# A server of 30 (27 usable) and 3 (+1 surge) pods of a 12-connection Hikari pool: 48, OVER.
DATABASE = """\
apiVersion: v1
kind: Service
metadata:
  name: pg
spec:
  selector: {app: pg}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: pg
spec:
  serviceName: pg
  replicas: 1
  selector:
    matchLabels: {app: pg}
  template:
    metadata:
      labels: {app: pg}
    spec:
      containers:
        - name: pg
          image: postgres:15.6
          args: ["-c", "max_connections=30"]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: orders
spec:
  replicas: 3
  selector:
    matchLabels: {app: orders}
  template:
    metadata:
      labels: {app: orders}
    spec:
      containers:
        - name: orders
          image: example.test/orders:2
          env:
            - name: SPRING_DATASOURCE_URL
              value: jdbc:postgresql://pg:5432/orders
            - name: SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE
              value: "12"
"""

SETTINGS = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: operator-settings
data:
  watch: all
"""


def _repo(tmp_path: Path, resources: list[str]) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "deploy").mkdir()
    (root / "deploy/settings.yaml").write_text(SETTINGS)
    (root / "deploy/database.yaml").write_text(DATABASE)
    (root / "deploy/kustomization.yaml").write_text(
        "resources:\n" + "".join(f"  - {r}\n" for r in resources))
    return root


def _check(root: Path, *paths: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, dict]:
    monkeypatch.chdir(root)
    result = CliRunner().invoke(app, ["check", "--no-cache", "-f", "json", *paths])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def _peaks(report: dict) -> list[tuple[str, str]]:
    return [(b["server"], str(b["peak"])) for b in report["budgets"]]


def test_a_named_file_the_kustomization_does_not_list_is_read(tmp_path, monkeypatch):
    root = _repo(tmp_path, ["settings.yaml"])
    code, report = _check(root, "deploy/database.yaml", monkeypatch=monkeypatch)
    assert code == 1
    assert [f["code"] for f in report["findings"] if f["code"] == "PA101"] == ["PA101"]
    assert any(n.startswith("deploy/database.yaml: read on its own, as named; "
                            "deploy/kustomization.yaml beside it is not built (it does not "
                            "list this file)") for n in report["notices"])
    assert not any("rendered manifests" in n for n in report["notices"])


def test_a_named_file_the_kustomization_lists_is_read_once_on_its_own(tmp_path, monkeypatch):
    root = _repo(tmp_path, ["settings.yaml", "database.yaml"])
    code, alone = _check(root, "deploy/database.yaml", monkeypatch=monkeypatch)
    assert code == 1
    assert any(n.startswith("deploy/database.yaml: read through deploy's kustomize build")
               for n in alone["notices"])
    # Named with its kustomization or its folder: the build holds it, read once.
    _code, folder = _check(root, "deploy", monkeypatch=monkeypatch)
    _code, both = _check(root, "deploy/kustomization.yaml", "deploy/database.yaml",
                         monkeypatch=monkeypatch)
    assert _peaks(both) == _peaks(folder) == _peaks(alone)
    assert not any("read on its own" in n for n in both["notices"] + folder["notices"])


def test_discovery_of_a_named_file_beside_a_kustomization(tmp_path):
    root = _repo(tmp_path, ["settings.yaml"]).resolve()
    found = discover_paths(root, [root / "deploy/database.yaml"])
    assert found.manifests == [root / "deploy/database.yaml"]
    assert found.kustomize_dirs == []
    assert found.named_beside == [(root / "deploy/database.yaml",
                                   root / "deploy/kustomization.yaml", False)]
    # The kustomization file named: its folder is built, and the file beside it is
    # still read (kustomize_tree.manifests_kustomize_reads decides listed or not).
    found = discover_paths(root, [root / "deploy/kustomization.yaml",
                                  root / "deploy/database.yaml"])
    assert found.kustomize_dirs == [root / "deploy"]
    assert found.manifests == [root / "deploy/database.yaml"]


# review s25 F11: the kustomization raises the client's replicas from 2 to 12; 12 x 5 = 60
# is over the 47 usable of a 50-connection server, 2 x 5 = 10 would fit.
SERVER = POSTGRES_DB  # Service and StatefulSet db, max_connections=50

CLIENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: web
          image: example.test/web:1
          env:
            - {name: DATABASE_URL, value: "postgres://app:pw@db:5432/app"}
"""


def test_named_files_the_kustomization_lists_get_its_replicas(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "k8s").mkdir()
    (root / "k8s/db.yaml").write_text(SERVER)
    (root / "k8s/web.yaml").write_text(CLIENT)
    (root / "k8s/unused.yaml").write_text(SETTINGS)
    (root / "k8s/kustomization.yaml").write_text(
        "resources: [db.yaml, web.yaml]\nreplicas:\n  - {name: web, count: 12}\n")
    (root / ".pool-advisor.toml").write_text(
        '[[workloads]]\nname = "web"\npool-size = 5\nprocesses = 1\n')
    code, folder = _check(root, "k8s", monkeypatch=monkeypatch)
    code_named, named = _check(root, "k8s/db.yaml", "k8s/web.yaml", monkeypatch=monkeypatch)
    assert (code, _peaks(folder)) == (1, [("db", "60.0")])
    assert (code_named, _peaks(named)) == (1, [("db", "60.0")])
    assert not any("read on its own" in n for n in named["notices"])
    # Only the named file's objects are kept: the server alone, no client of the build.
    _code, server = _check(root, "k8s/db.yaml", monkeypatch=monkeypatch)
    assert _peaks(server) == [("db", "0.0")]
    found = discover_paths(root.resolve(), [root.resolve() / "k8s/web.yaml"])
    assert found.kustomize_only == {root.resolve() / "k8s": [root.resolve() / "k8s/web.yaml"]}
    assert found.kustomize_dirs == [root.resolve() / "k8s"]
