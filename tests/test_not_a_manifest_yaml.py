"""A YAML file that YAML cannot read and that is no Kubernetes manifest (no top-level
apiVersion and kind: an Ansible tasks file whose kubeadm config block names them, a test
fixture) holds nothing a budget reads: PA901 stays, as a warning, and the server's
verdict is not turned into a floor by it (audit 10a, sulibot/home-ops: one Ansible file
made every budget a floor). A broken file that is a manifest keeps its error and the
floor."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

APP = """apiVersion: apps/v1
kind: Deployment
metadata: {name: orders}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: orders
          image: example/orders:1
          env:
            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db:5432/orders"}
            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "10"}
"""
# an Ansible tasks file: `apiVersion:` and `kind:` only inside a block, and a line YAML
# refuses further down
ANSIBLE = """- name: Write the kubeadm config
  copy:
    dest: /etc/kubernetes/kubeadm.yaml
    content: |
      apiVersion: kubeadm.k8s.io/v1beta4
      kind: ClusterConfiguration
- name: Join
  shell: echo
  args: { executable: /bin/bash }
   bad: indentation
"""
BROKEN_MANIFEST = """apiVersion: apps/v1
kind: Deployment
metadata: {name: reports}
spec:
  replicas: 1
   bad: indentation
"""


def _run(tmp_path, extra: dict[str, str]):
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/app.yaml": APP, **extra})
    result = run_check([str(tmp_path)], CheckOptions(cache=False, root=tmp_path))
    (budget,) = result.budgets
    return result, budget


def test_a_broken_file_that_is_no_manifest_does_not_make_the_peak_a_floor(tmp_path):
    result, budget = _run(tmp_path, {"ansible/roles/x/tasks/main.yml": ANSIBLE})
    assert budget.fits and budget.unread_files == []
    [warning] = [f for f in result.findings if f.code == "PA901"]
    assert warning.severity.value == "warning"
    assert warning.location.path == "ansible/roles/x/tasks/main.yml"
    assert "not a Kubernetes manifest" in warning.message


def test_a_broken_manifest_still_makes_the_peak_a_floor(tmp_path):
    result, budget = _run(tmp_path, {"k8s/reports.yaml": BROKEN_MANIFEST})
    assert not budget.fits and budget.unread_files == ["k8s/reports.yaml"]
    [error] = [f for f in result.findings if f.code == "PA901"]
    assert error.severity.value == "error"
