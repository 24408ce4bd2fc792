"""`docker build -t IMAGE FOLDER` commands in scripts, Makefiles and READMEs map an image
to its build folder when no compose or skaffold file names it (the shape of
testdrivenio/flask-vue-kubernetes: compose builds ./services/server as service `server`
with no image, the Deployment `flask` runs mjhea0/flask-kubernetes, and only the README's
build command ties the two; written here in our own words)."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.apps.locate import build_command, match_app_dir, scan_build_hints
from advisor.read.fs import Root
from tests.tree_helpers import POSTGRES_DB, write


@pytest.mark.parametrize(("line", "expected"), [
    ("$ docker build -t acme/orders-api ./apps/orders", (["acme/orders-api"], "./apps/orders")),
    ("docker build --tag=acme/orders:1 --build-arg X=1 -f apps/orders/Dockerfile apps/orders "
     "&& docker push acme/orders:1", (["acme/orders:1"], "apps/orders")),
    ("docker buildx build --platform linux/amd64 --push -t a/b -t a/b:2 .",
     (["a/b", "a/b:2"], ".")),
    ("podman build -t a/b src", (["a/b"], "src")),
    ("docker build -t $IMAGE ./apps/orders", None),  # a variable: not known here
    ("docker build -t a/b --weird x ./apps/orders", None),  # an option not known
    ("docker build ./apps/orders", None),  # no tag
    ("docker build -t a/b https://github.com/acme/orders.git", None),
    ("docker build -t a/b - < Dockerfile", None),
    ("docker build -t 'a/b ./apps", None),  # an unclosed quote
    ("docker run -t a/b ./apps", None),
])
def test_a_build_command_is_read_when_it_names_tag_and_folder_plainly(line, expected):
    assert build_command(line) == expected


def _tree(tmp_path, files: dict[str, str]):
    write(tmp_path, {"apps/orders/Dockerfile": "FROM python:3.12\n",
                     "apps/ui/Dockerfile": "FROM node:20\n", **files})
    return scan_build_hints(Root.of(tmp_path))


def test_a_readme_build_command_maps_the_image_to_its_folder(tmp_path):
    hints = _tree(tmp_path, {"README.md": "Build it:\n\n```sh\n$ docker build \\\n"
                             "    -t registry.example/acme/shop-backend \\\n"
                             "    ./apps/orders\n```\n"})
    guess = match_app_dir(hints, "backend", ["registry.example/acme/shop-backend:latest"])
    assert guess.directory == "apps/orders"
    assert guess.reason == "build context of registry.example/acme/shop-backend in README.md:4"
    # a workload of another image: not matched by it
    assert match_app_dir(hints, "frontend", ["acme/shop-frontend"]) is None


def test_a_script_s_folder_is_taken_only_when_it_names_one(tmp_path):
    # `.` in apps/ui/build.sh is apps/ui when run there, the root when run from it: both
    # hold a Dockerfile, so either could be built
    hints = _tree(tmp_path, {"Dockerfile": "FROM python:3.12\n",
                             "apps/ui/build.sh": "docker build -t acme/shop-ui .\n",
                             "scripts/build.sh": "cd \"$ROOT\"\ndocker build -t acme/shop-api "
                             "apps/orders\n"})
    assert match_app_dir(hints, "web", ["acme/shop-ui"]) is None
    assert match_app_dir(hints, "api", ["acme/shop-api"]).directory == "apps/orders"


def test_a_makefile_s_folder_is_its_own(tmp_path):
    hints = _tree(tmp_path, {"apps/ui/Makefile": "image:\n\tdocker build -t acme/shop-ui .\n"})
    guess = match_app_dir(hints, "ui", ["acme/shop-ui:3"])
    assert guess.directory == "apps/ui" and guess.reason.endswith("apps/ui/Makefile:2")


def test_compose_comes_before_a_readme(tmp_path):
    hints = _tree(tmp_path, {
        "compose.yaml": "services:\n  api:\n    image: acme/shop-api\n    build: ./apps/ui\n",
        "README.md": "docker build -t acme/shop-api apps/orders\n"})
    assert match_app_dir(hints, "api", ["acme/shop-api"]).directory == "apps/ui"


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: backend}
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: backend
          image: acme/shop-backend:latest
          env:
            - {name: DATABASE_URL, value: "postgresql://shop@db:5432/shop"}
"""
COMPOSE = "services:\n  server:\n    build:\n      context: ./apps/orders\n"


def test_the_check_finds_the_source_a_readme_builds(tmp_path):
    write(tmp_path, {"k8s/backend.yaml": DEPLOYMENT, "docker-compose.yml": COMPOSE,
                     "apps/orders/Dockerfile": 'FROM python:3.12\nCMD ["gunicorn", "shop:app"]\n',
                     "apps/orders/requirements.txt": "SQLAlchemy\ngunicorn\n",
                     "apps/orders/shop.py": "from sqlalchemy import create_engine\n"
                     "import os\nengine = create_engine(os.environ['DATABASE_URL'], "
                     "pool_size=3, max_overflow=0)\n",
                     "apps/ui/Dockerfile": "FROM node:20\n",
                     "docs/README.md": "no build here\n"})
    result = run_check([str(tmp_path)], CheckOptions())
    assert not any("application source inferred as apps/orders/" in n for n in result.notices)
    write(tmp_path, {"README.md": "```\ndocker build -t acme/shop-backend ./apps/orders\n```\n"})
    result = run_check([str(tmp_path)], CheckOptions())
    assert any("application source inferred as apps/orders/ (build context of "
               "acme/shop-backend in README.md:2)" in n for n in result.notices), result.notices
    # checking the manifests' folder only: the README is still found
    result = run_check([str(tmp_path / "k8s")], CheckOptions(root=tmp_path))
    assert any("application source inferred as apps/orders/" in n for n in result.notices)


def test_of_the_two_folders_a_script_s_dot_names_the_one_with_the_dockerfile_is_built(
        tmp_path):
    # observability-copilot's shape: backend/build_backend.sh builds `.` with no -f, and
    # only backend/ holds a Dockerfile (docker reads <context>/Dockerfile); its tag is a
    # variable the script assigns once
    write(tmp_path, {"backend/Dockerfile": "FROM golang:1.23\n", "backend/go.mod": "module x\n",
                     "backend/build_backend.sh": 'set -e\nIMAGE_NAME="my-api-image:latest"\n'
                     'NS="shop"\nkubectl -n "$NS" get pods\n'
                     'docker build -t "$IMAGE_NAME" .\n'})
    guess = match_app_dir(scan_build_hints(Root.of(tmp_path)), "backend",
                          ["my-api-image:latest"])
    assert guess.directory == "backend"
    assert guess.reason == "build context of my-api-image:latest in backend/build_backend.sh:5"


def test_a_readme_in_a_subfolder_builds_the_root_when_only_the_root_has_a_dockerfile(
        tmp_path):
    # Catalog-Service's shape: k8s/README.md says `docker build -t acme/search-api .`;
    # k8s/ has no Dockerfile, the root has
    write(tmp_path, {"Dockerfile": "FROM node:20\n", "package.json": "{}\n",
                     "k8s/README.md": "```\ndocker build -t acme/search-api:latest .\n```\n"})
    guess = match_app_dir(scan_build_hints(Root.of(tmp_path)), "search-api",
                          ["acme/search-api:latest"])
    assert guess.directory == ""
    assert guess.reason == "build context of acme/search-api:latest in k8s/README.md:2"


def test_a_variable_assigned_twice_or_from_the_environment_is_not_read(tmp_path):
    write(tmp_path, {"backend/Dockerfile": "FROM golang:1.23\n",
                     "backend/a.sh": "IMAGE=one\nIMAGE=two\ndocker build -t $IMAGE .\n",
                     "backend/b.sh": "IMG=${IMG:-acme/b:1}\ndocker build -t $IMG .\n",
                     # -f is read from where docker runs: only the root holds
                     # backend/Dockerfile, so `.` is the root (audit 14 D4)
                     "backend/c.sh": "docker build -t acme/c -f backend/Dockerfile .\n"})
    hints = scan_build_hints(Root.of(tmp_path))
    assert [(i, d) for i, d, _ in hints.contexts] == [("acme/c", "")]


WORKFLOW = """name: image
on: {push: {branches: [main]}}
jobs:
  push:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - name: Build and push
        uses: docker/build-push-action@v6
        with:
          context: .
          file: ./Dockerfile
          push: true
          tags: |
            acme/orange-backend:latest
            acme/orange-backend:${{ github.sha }}
"""
GO_DEPLOYMENT = DEPLOYMENT.replace("name: backend}", "name: shop-api-server}").replace(
    "acme/shop-backend:latest", "acme/orange-backend:latest")


def test_the_image_a_github_workflow_publishes_is_built_from_its_context(tmp_path):
    # OJ-API's shape: the root's Go module is `shop-api`, the Deployment runs
    # acme/orange-backend (a name unlike the module's: read as another publisher's image),
    # and only the CI workflow's docker/build-push-action ties that image to the root
    write(tmp_path, {"k8s/api.yaml": GO_DEPLOYMENT, "k8s/db.yaml": POSTGRES_DB,
                     "go.mod": "module shop-api\n\ngo 1.23\n",
                     "Dockerfile": "FROM golang:1.23\nCOPY . .\nRUN go build -o api .\n",
                     "main.go": 'package main\n\nimport (\n\t"database/sql"\n\t"os"\n)\n\n'
                     'func main() {\n\tdb, _ := sql.Open("postgres", os.Getenv('
                     '"DATABASE_URL"))\n\tdb.SetMaxOpenConns(7)\n}\n'})
    result = run_check([str(tmp_path)], CheckOptions())
    assert not any("application source inferred" in n for n in result.notices)
    assert [f.code for f in result.findings if f.code == "PA106"] == ["PA106"]
    write(tmp_path, {".github/workflows/image.yml": WORKFLOW})
    hints = scan_build_hints(Root.of(tmp_path))
    assert hints.contexts == (("acme/orange-backend:latest", "",
                               ".github/workflows/image.yml:15"),)
    result = run_check([str(tmp_path)], CheckOptions())
    assert any("application source inferred as ./ (build context of acme/orange-backend:latest"
               " in .github/workflows/image.yml:15)" in n for n in result.notices), \
        result.notices
    assert not [f for f in result.findings if f.code == "PA106"]
    (budget,) = result.budgets
    assert budget.unknown_clients == [] and budget.peak == 7, result.notices


def test_a_workflow_step_of_an_expression_context_names_no_folder(tmp_path):
    write(tmp_path, {".github/workflows/image.yml": WORKFLOW.replace(
        "context: .", "context: ${{ matrix.dir }}")})
    assert scan_build_hints(Root.of(tmp_path)).contexts == ()


def _ko_skaffold(context: str, extra: str = "") -> str:
    return ("apiVersion: skaffold/v2beta29\nkind: Config\nbuild:\n  artifacts:\n"
            f"    - image: web\n      context: {context}\n      ko:\n"
            f"        fromImage: gcr.io/distroless/base\n        dir: cmd\n{extra}")


GO_TREE = {"go.mod": "module github.com/acme/scale\n\ngo 1.21\n",
           "cmd/main.go": 'package main\n\nimport "github.com/acme/scale/pkg/store"\n\n'
           "func main() { store.Open() }\n",
           "pkg/store/store.go": "package store\n\nfunc Open() {}\n",
           "deploy/values.yaml": "x: 1\n"}


def test_a_skaffold_ko_artifact_is_built_from_its_main_package(tmp_path):
    # skaffold KoArtifact: `dir` relative to the context, `main` relative to dir
    write(tmp_path, {**GO_TREE, "skaffold.yaml": _ko_skaffold(".")})
    assert scan_build_hints(Root.of(tmp_path)).contexts == (("web", "cmd", "skaffold.yaml"),)


def test_a_moved_skaffold_file_s_ko_package_is_its_go_module_s(tmp_path):
    # mattfenwick/scaling's shape: the skaffold file now lies in dev/skaffold/web, so its
    # `context: ../../` (written from dev/web) is dev/, which holds no cmd/: the package
    # ko builds is cmd/ of the Go module the file is in (the root's go.mod), not dev/
    write(tmp_path, {**GO_TREE, "dev/skaffold/web/skaffold.yaml": _ko_skaffold("../../"),
                     "dev/deploy.sh": "helm upgrade --install web ../charts/web\n"})
    (hint,) = scan_build_hints(Root.of(tmp_path)).contexts
    assert hint == ("web", "cmd", "dev/skaffold/web/skaffold.yaml: ko builds cmd/ of the Go "
                    "module ./ the file is in, as its context dev/ holds no cmd/")
    # no Go module holds it: no folder is said (an unknown, not dev/)
    (tmp_path / "go.mod").unlink()
    assert scan_build_hints(Root.of(tmp_path)).contexts == ()


def test_a_build_of_another_version_of_the_image_is_not_its_folder(tmp_path):
    # gwarrior01/kubernetes-for-developers' shape: a chapter's build.sh builds
    # timeserver:5 from its folder; the Deployment of timeserver:1 is not built there
    write(tmp_path, {"ch7/timeserver5/Dockerfile": "FROM python:3.12\n",
                     "ch2/server/Dockerfile": "FROM python:3.12\n",
                     "ch7/timeserver5/build.sh": "docker build -t acme/timeserver:5 .\n"})
    hints = scan_build_hints(Root.of(tmp_path))
    assert match_app_dir(hints, "web", ["acme/timeserver:1"]) is None
    assert match_app_dir(hints, "web", ["acme/timeserver:5"]).directory == "ch7/timeserver5"
    assert match_app_dir(hints, "web", ["acme/timeserver"]).directory == "ch7/timeserver5"


NPGSQL_APP = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-deployment-2}
spec:
  replicas: 3
  selector: {matchLabels: {app: web-app-2}}
  template:
    metadata: {labels: {app: web-app-2}}
    spec:
      containers:
        - name: web-app-2
          image: acme/web-app-2:latest
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: pg}
spec:
  replicas: 1
  selector: {matchLabels: {app: pg}}
  template:
    metadata: {labels: {app: pg}}
    spec:
      containers:
        - {name: pg, image: "postgres:12.1-alpine"}
---
apiVersion: v1
kind: Service
metadata: {name: pg-service}
spec:
  selector: {app: pg}
  ports: [{port: 5432}]
"""


def test_a_lone_build_folder_without_a_dockerfile_is_not_the_build(tmp_path):
    # audit 17 D1 (yao780913/dotnet-kubernetes' shape): the root README's bulleted
    # "`cd school`" is not read as a cd, so its `docker build -t IMAGE .` named the root,
    # which holds no Dockerfile (docker reads <context>/Dockerfile); beside school/README's
    # own command that made the image's folder ambiguous: the app's appsettings.json was
    # never read and the server printed "fits, peak 0", exit 0
    write(tmp_path, {
        "README.md": "- Push\n  - `cd school`\n  - `docker build -t acme/web-app-2 .`\n",
        "school/README.md": "- `docker build -t acme/web-app-2 .`\n",
        "school/Dockerfile": 'FROM mcr.microsoft.com/dotnet/aspnet:6.0\n'
                             'ENTRYPOINT ["dotnet", "School.dll"]\n',
        "school/School.csproj": '<Project Sdk="Microsoft.NET.Sdk.Web"><ItemGroup>'
        '<PackageReference Include="Npgsql.EntityFrameworkCore.PostgreSQL" Version="7.0.4" />'
        '</ItemGroup></Project>\n',
        "school/appsettings.json": '{"ConnectionStrings": {"School": '
        '"Host=pg-service;Port=5432;Database=school;Username=postgres"}}\n',
        "school/k8s/app.yml": NPGSQL_APP,
        # a second application folder: the source is not "the only one" either
        "other/Dockerfile": 'FROM mcr.microsoft.com/dotnet/aspnet:6.0\n',
        "other/Other.csproj": '<Project Sdk="Microsoft.NET.Sdk.Web"></Project>\n'})
    hints = scan_build_hints(Root.of(tmp_path))
    assert [(i, d) for i, d, _ in hints.contexts] == [("acme/web-app-2", "school")]
    (b,) = run_check([str(tmp_path)], CheckOptions()).budgets
    assert b.peak == 400 and not b.fits  # (3 + 1 surge) x Npgsql's default 100


def test_a_lone_folder_with_a_containerfile_is_built(tmp_path):
    write(tmp_path, {"api/Containerfile": "FROM python:3.12\n",
                     "api/README.md": "podman build -t acme/api .\n"})
    hints = scan_build_hints(Root.of(tmp_path))
    assert [(i, d) for i, d, _ in hints.contexts] == [("acme/api", "api")]
