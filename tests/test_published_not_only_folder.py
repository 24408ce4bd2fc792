"""audit 14, lower: a published program's pod took the repository's only application
folder. ajaisreenilayam/pythonDjangoApp: the cluster-autoscaler Deployment (an image of the
Kubernetes project's registry) was given the Django folder and a false PA107 for its host;
jdost/homelab-manifests: tandoor (vabene1111/recipes) and every other published program
of the repository were given backup/, which the repository's CI builds as its own backup
image (`tags: ${{ env.REGISTRY }}/${{ env.IMAGE_NAME }}:latest` from the workflow's env).
Written in our own words, in the repositories' shape."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.read.apps.locate import maybe_built_here, scan_build_hints
from advisor.read.fs import Root
from tests.tree_helpers import write

DJANGO_SETTINGS = """\
DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql", "HOST": "db-svc",
                         "NAME": "app", "CONN_MAX_AGE": 60}}
"""

DB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: db}
spec:
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: "postgres:16"}]
---
apiVersion: v1
kind: Service
metadata: {name: db-svc}
spec:
  selector: {app: db}
  ports: [{port: 5432}]
"""

OTHER = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: kube-system}
spec:
  replicas: 1
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers:
        - name: main
          image: %s
          command: ["./%s", "--v=4"]
"""


def test_kubernetes_project_registries_are_published():
    assert not maybe_built_here("registry.k8s.io/autoscaling/cluster-autoscaler:v1.30.0")
    assert not maybe_built_here("k8s.gcr.io/autoscaling/cluster-autoscaler:v1.22.2")


def test_a_kubernetes_project_image_does_not_take_the_only_application_folder(tmp_path):
    write(tmp_path, {"docker/web/Dockerfile": "FROM python:3.12\nCOPY . .\n",
                     "docker/web/requirements.txt": "django==4.2\npsycopg2==2.9.9\n",
                     "docker/web/site/site/settings.py": DJANGO_SETTINGS,
                     "k8s/db.yaml": DB,
                     "k8s/autoscaler.yaml": OTHER % (
                         "cluster-autoscaler", "cluster-autoscaler", "cluster-autoscaler",
                         "registry.k8s.io/autoscaling/cluster-autoscaler:v1.30.0",
                         "cluster-autoscaler")})
    r = run_check([tmp_path])
    assert not any(f.rule == "PA107" for f in r.findings)
    assert not any("cluster-autoscaler: application source inferred" in n for n in r.notices)


WORKFLOW = """\
name: Backup image
on: {push: {paths: [backup/Dockerfile]}}
env:
  REGISTRY: ghcr.io
  IMAGE_NAME: someone/lab-backup
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - name: Build and push
        uses: docker/build-push-action@v5
        with:
          context: ./backup/
          push: true
          tags: ${{ env.REGISTRY }}/${{ env.IMAGE_NAME }}:latest
"""

BACKUP = {"backup/Dockerfile": "FROM alpine:3.20\nRUN apk add postgresql16-client\n"
                               "COPY dump.sh /usr/local/bin/\n",
          "backup/dump.sh": "#!/bin/sh\npg_dump \"$DATABASE_URL\" > /tmp/x.sql\n",
          "backup/requirements.txt": "boto3==1.34.0\n",
          ".github/workflows/backup-image.yaml": WORKFLOW}


def test_a_workflow_s_env_names_the_image_it_builds(tmp_path):
    write(tmp_path, BACKUP)
    hints = scan_build_hints(Root.of(tmp_path))
    assert [(i, d) for i, d, _ in hints.contexts] == [("ghcr.io/someone/lab-backup:latest",
                                                       "backup")]


def test_a_folder_built_as_another_image_is_not_a_published_program_s(tmp_path):
    recipes = OTHER.replace("kube-system", "default").replace(
        '          command: ["./%s", "--v=4"]\n',
        "          env: [{name: DB_HOST, value: db-svc}, {name: DB_ENGINE, value: "
        "django.db.backends.postgresql}]\n") % ("recipes", "recipes", "recipes",
                                                 "somebody/recipes:latest")
    write(tmp_path, {**BACKUP, "k8s/db.yaml": DB, "k8s/recipes.yaml": recipes})
    r = run_check([tmp_path])
    assert not any("recipes: application source inferred as backup/" in n for n in r.notices)
