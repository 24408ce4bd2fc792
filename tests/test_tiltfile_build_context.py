"""A Tiltfile's docker_build(IMAGE, CONTEXT) says which folder builds the image a
manifest runs (advisor/read/apps/locate.tilt_builds): Tilt replaces every tag of IMAGE
in the manifests it deploys, so a chart's `upload-service:1.16.0` is that build."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

# truclk/django-k8s-poc shape: Tiltfile builds the root, whose Dockerfile copies the
# Django project; the chart runs the image under its appVersion tag
TILTFILE = """\
load("ext://helm_remote", "helm_remote")
# docker_build("old-name", "./old")
docker_build(
    "upload-service",
    ".",
    build_args={"debug": "true"},
)
k8s_yaml("k8s/app.yaml")
"""
APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: release-upload-service}
spec:
  replicas: 4
  template:
    metadata: {labels: {app.kubernetes.io/name: upload-service}}
    spec:
      containers:
        - name: upload-service
          image: "upload-service:1.16.0"
"""
SETTINGS = """\
DATABASES = {"default": {"ENGINE": "django.db.backends.postgresql", "HOST": "db",
                         "NAME": "app"}}
"""


def _tree(tmp_path, tiltfile):
    files = {"k8s/db.yaml": POSTGRES_DB, "k8s/app.yaml": APP,
             "Dockerfile": "FROM python:3.9\nWORKDIR /workspace\nCOPY site .\n"
                           "CMD gunicorn site.wsgi -w 3\n",
             "requirements.txt": "django==4.0.1\ngunicorn==20.1.0\npsycopg2==2.9.3\n",
             "site/manage.py": "import os\n"
                               "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'site.settings')\n",
             "site/site/__init__.py": "", "site/site/settings.py": SETTINGS}
    if tiltfile:
        files["Tiltfile"] = tiltfile
    write(tmp_path, files)
    return run_check([str(tmp_path)], CheckOptions())


def test_tiltfile_build_puts_the_app_in_the_budget(tmp_path):
    """Audit 34 (truclk/django-k8s-poc): upload-service:1.16.0, a bare name, was taken
    for a published program; its Django client was not read at all and the server's
    peak was 0 ('fits'). Tilt builds it from the root: 5 pods x 3 workers x 1 = 15."""
    result = _tree(tmp_path, TILTFILE)
    (budget,) = result.budgets
    assert budget.peak == 15, budget
    assert any("Tiltfile:3" in n for n in result.notices), result.notices


def test_without_the_tiltfile_the_bare_image_is_not_guessed(tmp_path):
    result = _tree(tmp_path, None)
    (budget,) = result.budgets
    assert budget.peak == 0
