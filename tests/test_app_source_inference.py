"""Which folder holds a workload's application source when the configuration does not
say: the repository's own image found through a compose build (grafana/oncall's
docker-compose-developer.yml builds ./engine and takes cache from grafana/oncall), and
images of a fetched Helm dependency (cert-manager in a .tgz) never given the
repository's only application folder."""

from __future__ import annotations

import pytest

from advisor.engine.check import CheckOptions, run_check
from tests.tree_helpers import POSTGRES_DB, write

ENGINE_APP = {
    "engine/requirements.txt": "sqlalchemy\npsycopg2\n",
    "engine/Dockerfile": "FROM python:3.12\nCOPY . /app\nCMD [\"python\", \"app.py\"]\n",
    "engine/app.py": ('import os\nfrom sqlalchemy import create_engine\n'
                      'engine = create_engine(os.environ["DATABASE_URL"], pool_size=4, '
                      'max_overflow=0)\n'),
    # a second application folder: "the only application folder" cannot decide
    "ui/package.json": '{"name": "ui"}\n',
    "ui/Dockerfile": "FROM node:20\n",
}

# the image's organisation is one of the well-known publishers (grafana/): without a
# build that names it, no folder of the repository is taken for it
WEB = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: app
          image: grafana/widget:v1.2
          env:
            - {name: DATABASE_URL, value: "postgres://web@db:5432/shop"}
"""

COMPOSE = """x-build: &build
  context: ./engine
  cache_from:
    - grafana/widget:latest
services:
  engine:
    build: *build
    command: python app.py
"""


@pytest.mark.parametrize("compose_name", ["docker-compose-developer.yml",
                                          "docker-compose.dev.yaml", "compose.override.yml"])
def test_a_compose_build_that_takes_cache_from_the_image_names_its_folder(tmp_path,
                                                                          compose_name):
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/web.yaml": WEB, **ENGINE_APP,
                     compose_name: COMPOSE})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.unknown_clients == [] and budget.peak == 2 * 4
    assert any("web: application source inferred as engine/ (build context of "
               f"grafana/widget:latest in {compose_name})" in n for n in result.notices), \
        result.notices


def test_without_the_build_the_published_image_stays_unknown(tmp_path):
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/web.yaml": WEB, **ENGINE_APP,
                     "docker-compose.yml": COMPOSE.replace("grafana/widget:latest",
                                                           "acme/other:latest")})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.unknown_clients == ["web"]


def test_a_packaged_dependency_image_is_not_given_the_only_app_folder():
    from advisor.read.render import in_packaged_chart

    assert in_packaged_chart("helm/oncall/charts/cert-manager-v1.8.0.tgz#cert-manager/"
                             "templates/deployment.yaml")
    assert not in_packaged_chart("helm/oncall/templates/engine/deployment.yaml")
    assert not in_packaged_chart("charts/umbrella/charts/api/templates/deployment.yaml")


WORKER_SCRIPT = """#!/bin/bash
set -euo pipefail
if [ -n "${SHUTDOWN_AFTER:-}" ]; then
  sleep "$SHUTDOWN_AFTER" && celery -A shop control shutdown &
fi
stop() {
  celery -A shop control shutdown
}
ARGS=(
  "-A" "shop"  # the Django project
  "worker"
  "--concurrency=$WORKER_CONCURRENCY"
)
if [[ "${DEBUG:-}" = True ]]; then
  ARGS+=("-l" "debug")
else
  ARGS+=("-l" "info")
fi
celery "${ARGS[@]}"
"""

WORKER = """apiVersion: apps/v1
kind: Deployment
metadata: {name: worker}
spec:
  replicas: 3
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: worker
          image: acme/shop:1
          command: ["./run_worker.sh"]
          env:
            - {name: DATABASE_URL, value: "postgres://shop@db:5432/shop"}
            - {name: WORKER_CONCURRENCY, value: "6"}
"""


def test_the_commands_a_wrapper_script_always_runs():
    from advisor.read.apps.cmdline import top_level_commands
    from advisor.read.apps.source import AppFile

    script = AppFile(path="shop/run_worker.sh", rel="run_worker.sh", kind="shell",
                     text=WORKER_SCRIPT)
    # the branch, the function and the background job are left out; the array's items
    # are written out at its use, its comment dropped, the branches' additions not
    assert top_level_commands(script) == [
        (2, "set -euo pipefail"),
        (19, 'celery "-A" "shop" "worker" "--concurrency=$WORKER_CONCURRENCY"')]


def test_celery_started_by_a_wrapper_script_counts_its_concurrency(tmp_path):
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/worker.yaml": WORKER,
                     "shop/requirements.txt": "Django==5.0\ncelery==5.3\npsycopg==3.1\n",
                     "shop/manage.py": "import django\n",
                     "shop/run_worker.sh": WORKER_SCRIPT})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.unknown_clients == [] and budget.peak == 3 * 6, result.notices
    assert "worker: server command taken from shop/run_worker.sh:19 (the command runs " \
        "shop/run_worker.sh, which starts it)" in result.notices
    # without the script the command is not a server anyone knows: one process per pod
    (tmp_path / "shop" / "run_worker.sh").unlink()
    assert run_check([str(tmp_path)], CheckOptions(cache=False)).budgets[0].peak == 3


# In the shape of DefectDojo's docker/entrypoint-celery-worker.sh: the autoscale options
# are an array set in a branch on the pool type, from the env of a ConfigMap
POOL_SCRIPT = """#!/bin/bash
set -e
if [ "${POOL_KIND}" = "prefork" ]; then
  EXTRA=("--autoscale=${SCALE_MAX},${SCALE_MIN}"
    "--prefetch-multiplier=4")
else
  EXTRA=()
fi
python3 manage.py check
exec celery --app=shop worker --pool="${POOL_KIND}" \\
  --concurrency="${WORKER_CONCURRENCY:-1}" "${EXTRA[@]}"
"""

POOL_WORKER = """apiVersion: apps/v1
kind: Deployment
metadata: {name: worker}
spec:
  replicas: 3
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: worker
          image: acme/shop:1
          command: ["./run_worker.sh"]
          env:
            - {name: DATABASE_URL, value: "postgres://shop@db:5432/shop"}
            - {name: POOL_KIND, value: "@KIND@"}
            - {name: SCALE_MAX, value: "12"}
            - {name: SCALE_MIN, value: "2"}
            - {name: WORKER_CONCURRENCY, value: "4"}
"""


@pytest.mark.parametrize(("kind", "per_pod"), [("prefork", 12), ("solo", 1)])
def test_celery_options_set_in_a_branch_the_env_decides(tmp_path, kind, per_pod):
    """`if [ "${POOL_KIND}" = "prefork" ]` with POOL_KIND in the env runs that branch:
    its array gives --autoscale=12,2, whose maximum is the pool's size (not the
    --concurrency 4); the other branch gives nothing. Audit 6a D1 (DefectDojo)."""
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB,
                     "k8s/worker.yaml": POOL_WORKER.replace("@KIND@", kind),
                     "shop/requirements.txt": "Django==5.0\ncelery==5.6\npsycopg==3.1\n",
                     "shop/manage.py": "import django\n",
                     "shop/run_worker.sh": POOL_SCRIPT})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.unknown_clients == [] and budget.peak == 3 * per_pod, result.notices


def test_celery_options_in_a_branch_not_decided_are_unknown(tmp_path):
    """POOL_KIND not in the env: the branch is not known, nor the array's options; the
    worker's count is unknown, not its --concurrency."""
    worker = POOL_WORKER.replace('            - {name: POOL_KIND, value: "@KIND@"}\n', "")
    script = POOL_SCRIPT.replace('--pool="${POOL_KIND}"', "--pool=prefork")
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/worker.yaml": worker,
                     "shop/requirements.txt": "Django==5.0\ncelery==5.6\npsycopg==3.1\n",
                     "shop/manage.py": "import django\n",
                     "shop/run_worker.sh": script})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.unknown_clients, budget.peak


def test_an_image_command_is_cited_at_its_dockerfile_line(tmp_path):
    """The CMD's words are cited at the CMD's line (was the Dockerfile without one)."""
    worker = WORKER.replace('          command: ["./run_worker.sh"]\n', "")
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/worker.yaml": worker,
                     "shop/requirements.txt": "Django==5.0\ncelery==5.6\npsycopg==3.1\n",
                     "shop/manage.py": "import django\n",
                     "shop/Dockerfile": "FROM python:3.12\nWORKDIR /app\n"
                                        "CMD celery -A shop worker \\\n"
                                        "    --concurrency=5\n"})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.peak == 3 * 5
    assert "path='shop/Dockerfile', line=3" in repr(budget.contributions), \
        budget.contributions


POD_WITH_SIDECAR = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: token-syncer
          image: bitnami/kubectl:1.28
          command: ["/bin/bash", "-c", "while true; do sleep 5; done"]
        - name: web
          image: ghcr.io/acme/web:1
          env:
            - {name: DATABASE_URL, value: "postgres://web@db:5432/shop"}
        - name: worker
          image: ghcr.io/acme/web:1
          command: ["node", "worker.js"]
"""


def test_a_sidecar_does_not_open_the_applications_pools(tmp_path):
    """A pod's kubectl sidecar ran the app's `new Pool({max: 7})` too (trigger.dev's
    webapp: 2 x 7 per pod). The app's pools are the web container's and the worker's,
    which runs the same image; the sidecar reads its env alone."""
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/web.yaml": POD_WITH_SIDECAR,
                     "web/package.json": '{"name": "web", "dependencies": {"pg": "8"}}\n',
                     "web/Dockerfile": "FROM node:20\n",
                     "web/db.js": "const { Pool } = require('pg');\n"
                                  "module.exports = new Pool({ max: 7 });\n"})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.peak == 2 * (7 + 7), result.notices  # web and worker, not the syncer


def test_a_ko_image_names_its_go_package_and_vendored_folders_are_no_apps(tmp_path):
    """`ko://github.com/tektoncd/results/cmd/api` is built from cmd/api (tekton results:
    each binary read on its own, not every main package of the repository paired with
    the last SetMaxOpenConns); a vendored module's folder is never a workload's source."""
    from advisor.read.apps.locate import ko_app_dir
    from advisor.read.fs import Root

    write(tmp_path, {"go.mod": "module github.com/acme/results\n\ngo 1.22\n",
                     "cmd/api/main.go": "package main\n", "cmd/watcher/main.go": "package main\n",
                     "vendor/github.com/x/y/go.mod": "module github.com/x/y\n",
                     "vendor/github.com/x/y/Dockerfile": "FROM scratch\n"})
    root = Root.of(tmp_path)
    assert ko_app_dir(root, "ko://github.com/acme/results/cmd/api") == "cmd/api"
    assert ko_app_dir(root, "ko://github.com/acme/results") == ""
    assert ko_app_dir(root, "ko://github.com/acme/results/cmd/missing") is None
    assert ko_app_dir(root, "ghcr.io/acme/results/api:1") is None
    (tmp_path / "go.mod").unlink()  # no go.mod: the longest tail that is a folder
    assert ko_app_dir(root, "ko://github.com/acme/results/cmd/watcher") == "cmd/watcher"

    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/emulator.yaml": WEB.replace(
        "grafana/widget:v1.2", "acme/emulator:1")})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert not any("inferred as vendor/" in n for n in result.notices), result.notices


def test_checking_the_manifests_folder_reads_the_application_beside_it(tmp_path):
    """`pool-advisor check k8s/` in a repository: the application deployed lives beside
    k8s/, not below it; its folder is found in the whole repository (DefectDojo,
    OpenMeter and Wiki.js run on their chart folder made every app unknown)."""
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/web.yaml": WEB.replace(
        "grafana/widget:v1.2", "acme/web:1"), "web/package.json": '{"name": "web"}\n',
        "web/Dockerfile": "FROM node:20\n",
        "web/db.js": "const { Pool } = require('pg');\nmodule.exports = new Pool({ max: 7 });\n"})
    result = run_check([str(tmp_path / "k8s")], CheckOptions(cache=False, root=tmp_path))
    (budget,) = result.budgets
    assert budget.unknown_clients == [] and budget.peak == 2 * 7, result.notices


MOUNTED = """apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: api
          image: acme/api:1
          args: ["--config", "/etc/api/config.yaml"]
          volumeMounts:
            - {name: config, mountPath: /etc/api}
      volumes:
        - name: config
          configMap: {name: api-config}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: api-config}
data:
  config.yaml: |
    postgres:
      url: postgres://api@db:5432/api
"""


def test_a_pool_read_from_code_links_through_the_host_of_a_mounted_config(tmp_path):
    """OpenMeter's workloads read their database URL from a mounted config.yaml and their
    pool from code: they were in no budget and nothing said so (a pool with no host)."""
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/api.yaml": MOUNTED,
                     "api/package.json": '{"name": "api"}\n', "api/Dockerfile": "FROM node\n",
                     "api/db.js": "const { Pool } = require('pg');\n"
                                  "module.exports = new Pool({ max: 6 });\n"})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.peak == 2 * 6, result.notices
    # no host anywhere: said, not dropped without a word
    write(tmp_path, {"k8s/api.yaml": MOUNTED.replace("postgres://api@db:5432/api",
                                                     "file:///tmp/x")})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert any("opens node-postgres Pool max but names no database host" in n
               for n in result.notices), result.notices


def test_an_image_of_another_publisher_is_not_given_the_root_project():
    from advisor.read.apps.locate import _another_publisher

    assert _another_publisher("openmeter", ("docker.io/svix/svix-server:v1.3",))
    assert not _another_publisher("openmeter", ("ghcr.io/openmeterio/openmeter:v1",))
    assert not _another_publisher("openmeter", ("openmeter:dev",))  # no organisation
    assert not _another_publisher(None, ("svix/svix-server",))


CHART_REPO = {"charts/store/Chart.yaml": "apiVersion: v2\nname: store\nversion: 1.0.0\n",
              "test/smoke/smoke_test.go": "package smoke\n"}
TERRATEST_MOD = ("module github.com/acme/store-charts\n\ngo 1.25.0\n\nrequire (\n"
                 "\tgithub.com/gruntwork-io/terratest v0.52.0\n"
                 "\tgithub.com/stretchr/testify v1.11.1\n)\n")


@pytest.mark.parametrize(("files", "tooling"), [
    # an nx workspace: devDependencies only (aws-containers/retail-store-sample-app)
    ({"package.json": '{"name": "store", "devDependencies": {"nx": "20.8.2"}}'}, True),
    ({"package.json": '{"name": "api", "dependencies": {"pg": "^8.11.0"}}'}, False),
    # mkdocs and ansible for a home-ops repository, no Python source at the root
    ({"requirements.txt": "mkdocs-material\nansible\n"}, True),
    ({"requirements.txt": "flask\npsycopg2\n", "app.py": "import flask\n"}, False),
    # a chart repository's Go test harness (zitadel/zitadel-charts: terratest, test/)
    ({**CHART_REPO, "go.mod": TERRATEST_MOD}, True),
    ({**CHART_REPO, "go.mod": TERRATEST_MOD.replace("\tgithub.com/gruntwork-io/terratest "
                                                    "v0.52.0\n", "")}, False),
    ({**CHART_REPO, "go.mod": TERRATEST_MOD, "cmd/store/main.go": "package main\n"}, False),
    ({**CHART_REPO, "go.mod": TERRATEST_MOD, "main.go": "package main\n"}, False),
    ({"test/smoke/smoke_test.go": "package smoke\n", "go.mod": TERRATEST_MOD}, False),
    # a chart repository's lint settings (netbox-community/netbox-chart: black, isort)
    ({"pyproject.toml": '[tool.black]\nline_length = 100\n\n[tool.isort]\nprofile = "black"\n'},
     True),
    ({"pyproject.toml": '[project]\nname = "store"\ndependencies = ["psycopg[pool]"]\n'}, False),
    ({"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.12"\ndjango = "5"\n'}, False),
    ({"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.12"\n'}, True),
    ({"pyproject.toml": '[project]\nname = "store"\ndynamic = ["dependencies"]\n'}, False),
    ({"pyproject.toml": "[project\n"}, False),  # not TOML: not said to be tooling
])
def test_a_root_dependency_file_of_tooling_is_no_application(tmp_path, files, tooling):
    """The root is taken for a workload's source only when its dependency files are an
    application's: retail-store's nx package.json gave its five services one app's
    HikariCP pool (four false PA104 on services without PostgreSQL); damacus/home-ops'
    mkdocs requirements.txt made kube-vip and CronJobs Python apps."""
    from advisor.read.apps.locate import fallback_app_dir
    from advisor.read.fs import Root

    write(tmp_path, files)
    guess = fallback_app_dir(Root.of(tmp_path), [""], {"api", "store"})
    assert (guess is None) is tooling
    if not tooling:
        assert guess.directory == ""


def test_the_server_images_folder_is_no_applications_source(tmp_path):
    """twentyhq/twenty: the folder that builds the PostgreSQL image (FROM spilo-15) was
    taken for the server's and worker's source as 'the repository's only application
    folder with a Dockerfile'."""
    from advisor.read.apps.locate import fallback_app_dir
    from advisor.read.fs import Root

    write(tmp_path, {
        "packages/twenty-postgres-spilo/Dockerfile": (
            "ARG SPILO_VERSION=3.2-p1\nFROM ghcr.io/zalando/spilo-15:${SPILO_VERSION}\n"),
        "packages/twenty-postgres-spilo/package.json": '{"name": "spilo"}\n',
        "packages/twenty-server/package.json": '{"name": "server"}\n'})
    root = Root.of(tmp_path)
    guess = fallback_app_dir(root, ["packages/twenty-postgres-spilo", "packages/twenty-server"],
                             {"twenty-server"})
    assert guess is not None and guess.directory == "packages/twenty-server"
    assert fallback_app_dir(root, ["packages/twenty-postgres-spilo"], {"worker"}) is None



@pytest.mark.parametrize("image", ["valkey/valkey:8.1", "docker.io/valkey/valkey@sha256:12",
                                   "cubejs/cube:v1.6.6"])
def test_published_cache_and_analytics_images_not_built_here(image):
    # a chart beside the repository's one application folder also deploys these: that
    # folder's code (and its pool) is not theirs
    from advisor.read.apps.locate import maybe_built_here

    assert not maybe_built_here(image)
    assert maybe_built_here("ghcr.io/shopfront/shopfront:1.0")


@pytest.mark.parametrize(("image", "root"), [
    ("your-image-repository/node-app:1.0", True),  # hknisci/My-App-Node-API's chart
    ("<registry>/web:1", True),
    ("acme/node-app:1.0", False),  # an owner unlike the project's: another's image
    ("yourls/yourls:1", False),  # a real owner, not a placeholder
])
def test_an_image_of_a_placeholder_owner_is_the_root_projects(tmp_path, image, root):
    """The root holds the application (package.json 'node-postgres-api') and the chart in
    the repository names its image with a placeholder owner: the root is its source, though
    the names disagree (audit 10b N1: a floor of 125 x 1 instead of 125 x 10)."""
    from advisor.read.apps.locate import fallback_app_dir
    from advisor.read.fs import Root

    write(tmp_path, {"package.json": '{"name": "node-postgres-api", "dependencies": {"pg": "8"}}',
                     "server.js": "\n"})
    guess = fallback_app_dir(Root.of(tmp_path), [""], {"release-my-application", "node-app"},
                             (image,))
    assert (guess is not None and guess.directory == "") is root


def _pycon_app(name: str) -> dict[str, str]:
    d = f"applications/{name}_application"
    return {
        f"{d}/pyproject.toml": ('[tool.poetry]\nname = "x"\n\n[tool.poetry.dependencies]\n'
                                'django = "5.0.6"\ngunicorn = "^23.0.0"\n'),
        f"{d}/manage.py": ('import os\nos.environ.setdefault("DJANGO_SETTINGS_MODULE", '
                           f'"{name}_application.settings")\n'),
        f"{d}/{name}_application/__init__.py": "",
        f"{d}/{name}_application/settings.py": (
            'import os\nDATABASES = {"default": {"ENGINE": "django.db.backends.postgresql",'
            ' "HOST": os.environ["DB_HOST"], "CONN_MAX_AGE": 600}}\n'),
        f"{d}/Dockerfile": ('FROM python:3.12\nCOPY . /app/\nCMD ["gunicorn", "--workers",'
                            f' "2", "{name}_application.wsgi"]\n'),
        f"k8s/{name}.yaml": f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}-deployment}}
spec:
  replicas: 6
  template:
    spec:
      containers:
        - name: {name}
          image: 123456789012.dkr.ecr.us-west-2.amazonaws.com/{name}-application
          env:
            - {{name: DB_HOST, value: db}}
"""}


def test_a_package_folder_builds_the_image_named_with_hyphens(tmp_path):
    """Audit 13a D3 (osstorres/django-k8s-pycon2024 shape): the image core-application
    is built from applications/core_application; no folder was taken ('no application
    source folder found', PA106, cannot tell) where 8 pods x 2 gunicorn workers each
    (x2 applications) = 32 > 27 usable (max_connections 30)."""
    write(tmp_path, {**_pycon_app("core"), **_pycon_app("analytics"),
                     "k8s/db.yaml": POSTGRES_DB.replace("max_connections=50",
                                                        "max_connections=30")})
    result = run_check([str(tmp_path)], CheckOptions())
    assert "PA106" not in {f.code for f in result.findings}
    (budget,) = result.budgets
    assert budget.peak == 32 and "PA101" in {f.code for f in result.findings}


def test_an_image_written_as_variables_is_built_here(tmp_path):
    """Audit 13a D4 (fighthealthinsurance shape): `image: ${FHI_BASE}:${FHI_VERSION}`,
    filled in by the deploy script's envsubst, was taken for an official image of no
    organisation: no source folder (PA106) for the Django app at the root, whose
    uvicorn workers hold a connection per request in flight (PA102)."""
    write(tmp_path, {
        "setup.py": 'from setuptools import setup\nsetup(name="fighthealth")\n',
        "requirements.txt": "django==5.2.9\nuvicorn[standard]\n",
        "manage.py": 'import os\nos.environ.setdefault("DJANGO_SETTINGS_MODULE", '
                     '"fh.settings")\n',
        "fh/__init__.py": "",
        "fh/settings.py": ('import os\nDATABASES = {"default": {"ENGINE": '
                           '"django.db.backends.postgresql", "HOST": os.environ["PDBHOST"]}}\n'),
        "k8s/Dockerfile": 'FROM python:3.12\nCOPY . /srv\nCMD ["uvicorn", "fh.asgi:application"]\n',
        "k8s/db.yaml": POSTGRES_DB,
        "k8s/web.yaml": """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 6
  template:
    spec:
      containers:
        - name: web
          image: ${FHI_BASE}:${FHI_VERSION}
          command: [uvicorn, fh.asgi:application, --workers, "1"]
          env:
            - {name: PDBHOST, value: db}
"""})
    result = run_check([str(tmp_path)], CheckOptions())
    codes = {f.code for f in result.findings}
    assert "PA106" not in codes and "PA102" in codes


@pytest.mark.parametrize("image,known", [
    ("shop-api:1.0", True),  # no organisation, named as the root's package.json is
    ("shop_api", True),
    ("redis:7", False),  # an official image stays one
])
def test_a_bare_image_named_as_the_root_project_is_built_here(tmp_path, image, known):
    """Audit 30 D1 (Shubham-hub278/nestjs-k8s-example shape): `image: k8s-demo:latest`
    (pulled IfNotPresent, loaded into kind/minikube) beside the root package.json named
    k8s-demo was taken for an official library image: no source folder (PA106, cannot
    tell) where 4 pods x pg Pool max 4 = 16 <= 17 usable fits."""
    write(tmp_path, {
        "package.json": '{"name": "shop-api", "dependencies": {"pg": "^8.16.0"}}',
        "Dockerfile": 'FROM node:22-alpine\nCOPY dist ./dist\nCMD ["node", "dist/main.js"]\n',
        "src/db.ts": "import { Pool } from 'pg';\nexport const pool = new Pool({ max: 4 });\n",
        "k8s/db.yaml": POSTGRES_DB.replace("max_connections=50", "max_connections=20"),
        "k8s/app.yaml": f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: shop-api}}
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: shop-api
          image: {image}
          imagePullPolicy: IfNotPresent
          env:
            - {{name: PGHOST, value: db}}
"""})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    codes = {f.code for f in result.findings}
    if known:
        assert "PA106" not in codes and budget.peak == 16 and budget.fits
    else:
        assert "PA106" in codes


_R2DBC_POM = """<project>
  <parent>
    <groupId>org.springframework.boot</groupId>
    <artifactId>spring-boot-starter-parent</artifactId>
    <version>2.7.3</version>
  </parent>
  <!-- <artifactId>commented-out</artifactId> -->
  <artifactId>orders-postgres-demo</artifactId>
  <dependencies>
    <dependency>
      <groupId>org.springframework.boot</groupId>
      <artifactId>spring-boot-starter-data-r2dbc</artifactId>
    </dependency>
    <dependency>
      <groupId>org.postgresql</groupId>
      <artifactId>r2dbc-postgresql</artifactId>
    </dependency>
  </dependencies>
</project>
"""


@pytest.mark.parametrize("build", ["pom", "gradle"])
@pytest.mark.parametrize("image,read", [
    ("someuser/orders-postgres-demo:1.0", True),  # the artifact's name: built here
    ("someuser/postgres-exporter:0.15", False),  # another image: stays published
])
def test_an_image_named_as_the_root_build_is_built_here(tmp_path, build, image, read):
    """Audit 33 D1 (soumencemk/spring-postgres-k8s shape): the image
    itssoumen/spring-postgres-k8s, named as the root pom.xml's artifactId, was taken for
    a published program because its name holds `postgres`: no source folder (PA106,
    peak >= 2, cannot tell) where Spring Boot 2.7's R2DBC pool default (max-size 10)
    gives 3 pods x 10 = 30 <= 37 usable, fits."""
    files = {
        "src/main/resources/application.yaml":
            "spring:\n  r2dbc:\n    url: ${DB_URL:r2dbc:postgresql://localhost/orders}\n",
        "src/main/java/demo/App.java": "package demo;\nclass App {}\n",
        "Dockerfile": "FROM eclipse-temurin:17-jre\nCOPY target/*.jar app.jar\n",
        "k8s/db.yaml": POSTGRES_DB.replace("max_connections=50", "max_connections=40"),
        "k8s/app.yaml": f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: orders}}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: orders
          image: {image}
          env:
            - {{name: DB_URL, value: "r2dbc:postgresql://db:5432/orders"}}
"""}
    if build == "pom":
        files["pom.xml"] = _R2DBC_POM
    else:
        files["settings.gradle"] = "rootProject.name = 'orders-postgres-demo'\n"
        files["build.gradle"] = (
            "plugins { id 'org.springframework.boot' version '2.7.3' }\n"
            "dependencies {\n"
            "  implementation 'org.springframework.boot:spring-boot-starter-data-r2dbc'\n"
            "  runtimeOnly 'org.postgresql:r2dbc-postgresql'\n}\n")
    write(tmp_path, files)
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    codes = {f.code for f in result.findings}
    (budget,) = result.budgets
    if read:
        assert "PA106" not in codes
        assert budget.peak == 30 and budget.fits
    else:
        assert not any("orders: application source inferred" in n for n in result.notices)
