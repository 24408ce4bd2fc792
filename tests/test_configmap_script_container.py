"""A stock OS image's container that runs a script mounted from a ConfigMap runs that
script, not the repository's application (audit 18 L2, singla-shivam/AirRun-server: Job
kaniko's alpine:3.13 running `/bin/sh /scripts/kaniko-poll.sh`, beside kaniko's
executor, was given the root's Elixir app and its Ecto pool: a client of no known host
that made the server's peak a floor)."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

APP = {
    "requirements.txt": "sqlalchemy==2.0.36\npsycopg2-binary==2.9.9\n",
    "app.py": ('import os\nfrom sqlalchemy import create_engine\n'
               'engine = create_engine(os.environ.get("DATABASE_URL"), pool_size=4, '
               'max_overflow=0)\n'),
}
WEB = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: web
          image: acme/web:1
          command: ["python", "app.py"]
          env:
            - {name: DATABASE_URL, value: "postgresql://app@db:5432/app"}
"""
JOB = """apiVersion: batch/v1
kind: Job
metadata: {name: build}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
%s
        - name: poll
          image: alpine:3.13
          command: ["/bin/sh"]
          args: [%s]
          env:
            - {name: JOB_NAME, value: build}
          volumeMounts:
            - {name: scripts, mountPath: /scripts}
      volumes:
        - name: scripts
          configMap: {name: build-scripts}
"""
EXECUTOR = """        - name: executor
          image: gcr.io/kaniko-project/executor:v1.5.2
          args: ["--dockerfile=/workspace/Dockerfile", "--context=dir://ctx"]
"""


@pytest.mark.parametrize("executor", ["", EXECUTOR])
def test_a_configmap_script_in_alpine_is_not_the_application(tmp_path, executor):
    write(tmp_path, {**APP, "k8s/db.yaml": POSTGRES_DB, "k8s/web.yaml": WEB,
                     "k8s/job.yaml": JOB % (executor.rstrip("\n"), '"/scripts/poll.sh"')})
    result = run_check([str(tmp_path / "k8s")], CheckOptions(cache=False, root=tmp_path))
    (budget,) = result.budgets
    assert budget.peak == 8 and not budget.unplaced_clients  # web's 2 x 4 only
    assert any("Job/build: container poll runs /scripts/poll.sh, a script of ConfigMap "
               "build-scripts mounted at /scripts, in alpine:3.13" in n for n in result.notices)
    assert not any("Job/build: application source inferred" in n for n in result.notices)


def test_an_inline_shell_command_is_not_taken_for_a_mounted_script(tmp_path):
    from advisor.link.clients import _configmap_script
    from advisor.model import Container, Source, Term
    from advisor.read.sources.k8s import K8sObject
    from advisor.read.workloads import Workload

    def job(*words: str) -> tuple[Workload, Container]:
        c = Container(name="poll", image="alpine:3.13", command=words, source=Source(path="j"))
        obj = K8sObject(kind="Job", api_version="batch/v1", name="build", namespace=None,
                        body={}, path="j", line=1)
        return Workload(obj=obj, containers=[c], pod_labels={},
                        replicas=Term(label="r", value=1, source=Source(path="j")),
                        volumes={"s": ("configMap", "cm")},
                        mounts={"poll": [("s", "/scripts")]}), c

    assert _configmap_script(*job("/bin/sh", "-c", "/scripts/poll.sh")) is None
    assert _configmap_script(*job("sh", "-ec", "/scripts/poll.sh")) is None
    assert _configmap_script(*job("/app/poll.sh")) is None  # not under the mount
    assert _configmap_script(*job("/scripts/poll.sh")) is not None
    assert _configmap_script(*job("/bin/bash", "-e", "/scripts/poll.sh")) is not None


# pasiol/django-k8s-demo shape: a debug Pod of an OS image from another registry that
# only sleeps, kept for `kubectl exec`
TOOLBOX = """apiVersion: v1
kind: Pod
metadata: {name: debug-pod}
spec:
  containers:
    - name: toolbox
      image: quay.io/almalinuxorg/9-base:latest
      command: %s
"""


@pytest.mark.parametrize("command", ['["sleep", "43200"]', '["sleep", "infinity"]',
                                     '["tail", "-f", "/dev/null"]',
                                     '["/bin/sh", "-c", "sleep 3600"]'])
def test_a_container_that_only_sleeps_is_not_the_application(tmp_path, command):
    """Audit 34: the debug Pod was given the root's app and its pool, a client of no
    known host that made the server's peak a floor ('may connect here: debug-pod')."""
    write(tmp_path, {**APP, "k8s/db.yaml": POSTGRES_DB, "k8s/web.yaml": WEB,
                     "k8s/debug.yaml": TOOLBOX % command})
    result = run_check([str(tmp_path / "k8s")], CheckOptions(cache=False, root=tmp_path))
    (budget,) = result.budgets
    assert budget.peak == 8 and not budget.unplaced_clients, budget.unplaced_clients
    assert any("Pod/debug-pod: container toolbox runs" in n and "which only waits" in n
               for n in result.notices), result.notices
