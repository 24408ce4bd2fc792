"""A web pod whose application image is the repository's own, with an nginx of another
publisher beside it, is given the root's application source (audit 7b D9:
learningequality/studio's release-studio, 5 replicas, was missing from every line of the
output while its workers Deployment, same image and env, was budgeted); and a workload
left out as talking to no database while its env names one is said so."""

from __future__ import annotations

from advisor.engine.check import CheckOptions, run_check
from tests.tree_helpers import POSTGRES_DB, write

APP = {
    "package.json": '{"name": "bookshelf"}\n',
    "requirements.txt": "Django==4.2.7\ngunicorn==21.2.0\n",
    "manage.py": "import os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', "
                 "'shelf.settings')\n",
    "shelf/settings.py": ("import os\nDATABASES = {'default': {'ENGINE': "
                          "'django.db.backends.postgresql', 'HOST': os.getenv('DATA_DB_HOST'),"
                          " 'NAME': 'shelf'}}\n"),
}

WEB = """apiVersion: apps/v1
kind: Deployment
metadata: {name: shelf-web}
spec:
  replicas: 3
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: app
          image: gcr.io/acme-prod/bookshelf-app:abc
          command: ["gunicorn", "shelf.wsgi", "--workers=2"]
          env:
            - {name: DATA_DB_HOST, value: db}
        - name: nginx-proxy
          image: gcr.io/acme-prod/edge-proxy:abc
          env:
            - {name: AWS_BUCKET_NAME, value: media}
"""


def test_web_pod_with_a_sidecar_of_another_publisher_is_budgeted(tmp_path):
    write(tmp_path, {**APP, "k8s/db.yaml": POSTGRES_DB, "k8s/web.yaml": WEB})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    # 3 pods x 2 gunicorn workers x 1 Django connection; the nginx opens none
    assert budget.peak == 3 * 2 and not budget.unknown_clients, result.notices


def test_a_dropped_workload_whose_env_names_a_database_is_said(tmp_path):
    # no application source for it (its one image is another publisher's), and its host
    # a proxy to a server outside the repository: said, not dropped without a word
    write(tmp_path, {**APP, "k8s/db.yaml": POSTGRES_DB, "k8s/web.yaml": WEB.replace(
        "gcr.io/acme-prod/bookshelf-app:abc", "gcr.io/acme-prod/edge-proxy:abc").replace(
        "{name: DATA_DB_HOST, value: db}", "{name: DATA_DB_HOST, value: sql-proxy}")})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert any("container app is given DATA_DB_HOST='sql-proxy'" in n and "not counted" in n
               for n in result.notices), result.notices


def test_a_pod_with_one_image_of_the_project_is_not_another_publishers():
    from advisor.read.apps.locate import _another_publisher

    assert not _another_publisher("openmeter", ("ghcr.io/openmeterio/openmeter:v1",
                                                "docker.io/svix/svix-server:v1.3"))
