from advisor.read.apps.locate import BuildHints, image_name, match_app_dir, scan_build_hints
from advisor.read.fs import Root


def test_image_name():
    assert image_name("ghcr.io/acme/orders-api:2.3.0") == "orders-api"
    assert image_name("localhost:5000/shop@sha256:abc") == "shop"
    assert image_name("postgres") == "postgres"


def test_match_by_directory_name_build_context_and_single(tmp_path):
    for d in ("services/orders-api", "services/billing", "tools/migrate"):
        (tmp_path / d).mkdir(parents=True)
        (tmp_path / d / "Dockerfile").write_text("FROM python:3.12\n")
    (tmp_path / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / "node_modules" / "x" / "Dockerfile").write_text("FROM x\n")
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "skaffold.yaml").write_text(
        "apiVersion: skaffold/v4beta6\nkind: Config\nbuild:\n  artifacts:\n"
        "    - image: ghcr.io/acme/pay\n      context: ../tools/migrate\n")
    hints = scan_build_hints(Root.of(tmp_path))
    assert set(hints.dockerfile_dirs) == {"services/orders-api", "services/billing",
                                          "tools/migrate"}
    g = match_app_dir(hints, "orders", ["ghcr.io/acme/orders-api:2.3.0"])
    assert g.directory == "services/orders-api" and "image orders-api" in g.reason
    g = match_app_dir(hints, "billing", ["registry/whatever:1"])
    assert g.directory == "services/billing" and "workload name" in g.reason
    g = match_app_dir(hints, "payments", ["ghcr.io/acme/pay:7"])
    assert g.directory == "tools/migrate" and "deploy/skaffold.yaml" in g.reason
    assert match_app_dir(hints, "unknown", ["nginx:1.27"]) is None
    only = BuildHints(dockerfile_dirs=("",))
    assert match_app_dir(only, "x", ["y"]).reason == "the repository's only Dockerfile (Dockerfile)"


def test_compose_services(tmp_path):
    (tmp_path / "web").mkdir()
    (tmp_path / "compose.yaml").write_text(
        "services:\n  web:\n    build: ./web\n    image: acme/storefront\n"
        "  worker:\n    build:\n      context: web\n")
    hints = scan_build_hints(Root.of(tmp_path))
    assert match_app_dir(hints, "worker", ["acme/other"]).directory == "web"
    assert match_app_dir(hints, "front", ["acme/storefront:1"]).directory == "web"


def test_a_published_image_is_told_by_one_scan_as_by_each_name():
    from advisor.read.apps.locate import _PUBLISHED, maybe_built_here

    images = ["acme/checkout:1.2", "bitnami/postgresql:16", "docker.io/library/redis:7",
              "quay.io/keycloak/keycloak:24", "ghcr.io/acme/api@sha256:abc", "postgres:16",
              "registry.example.com/team/web", "edoburu/pgbouncer", "ACME/Minio/thing:1",
              "grafana/grafana", "acme/my-postgres-tools:2", "", "a/b", "nginx/x"]
    for image in images:
        ref = image.lower().split("@", 1)[0]
        last = ref.rsplit("/", 1)[-1]
        repo = ref[: len(ref) - len(last)] + last.split(":", 1)[0]
        expected = bool(repo) and "/" in repo and not any(p in repo for p in _PUBLISHED)
        assert maybe_built_here(image) is expected, image
    # Bitnami's images under their 2025 names are as published as under bitnami/
    for image in ("bitnamilegacy/pgpool:4.6.2", "docker.io/bitnamisecure/postgresql:17"):
        assert not maybe_built_here(image), image


def test_an_official_image_through_a_mirror_is_not_built_here():
    """public.ecr.aws/docker/library/python is python:3.12 from another registry: as the
    official image is never given a folder of the repository, nor is its mirror."""
    from advisor.read.apps.locate import maybe_built_here

    for image in ("public.ecr.aws/docker/library/python:3.12", "mirror.gcr.io/library/node",
                  "harbor.internal/dockerhub/library/mysql:8"):
        assert not maybe_built_here(image), image
    assert maybe_built_here("ghcr.io/library-app/web:1")  # an organisation named so


def test_compose_variables_from_dotenv_and_a_dockerfile_per_service(tmp_path):
    """opentelemetry-demo: every service builds with context ./ and a Dockerfile of its
    own named in .env, and its images are one repository told apart by tag; each
    workload took the first service's folder (17 PA102 errors from one Go service's
    code). Its `image: ${POSTGRES_IMAGE}` was no PostgreSQL to the compose notice."""
    (tmp_path / ".env").write_text(
        "# versions\nIMAGE_NAME=ghcr.io/example/demo\nDEMO_VERSION=latest\n"
        "ACCOUNTING_DOCKERFILE=./src/accounting/Dockerfile\n"
        "export POSTGRES_IMAGE='postgres:18.4'\n")
    (tmp_path / "compose.yaml").write_text(
        "services:\n"
        "  frontend-tests:\n    image: ${IMAGE_NAME}:${DEMO_VERSION}-frontend-tests\n"
        "    build:\n      context: ./\n      dockerfile: ./src/frontend/Dockerfile.cypress\n"
        "  accounting:\n    image: ${IMAGE_NAME}:${DEMO_VERSION}-accounting\n"
        "    build:\n      context: ./\n      dockerfile: ${ACCOUNTING_DOCKERFILE}\n"
        "  ad:\n    image: ${IMAGE_NAME}:${DEMO_VERSION}-ad\n"
        "    build:\n      context: ./\n      dockerfile: ${AD_DOCKERFILE:-src/ad/Dockerfile}\n"
        "  db:\n    image: ${POSTGRES_IMAGE}\n")
    from advisor.read.apps.locate import _contexts

    databases: list = []
    contexts = _contexts(Root.of(tmp_path), str(tmp_path / "compose.yaml"), "", databases)
    hints = BuildHints(contexts=tuple(contexts))
    found = match_app_dir(hints, "accounting", ["ghcr.io/example/demo:2.1.3-accounting"])
    assert found.directory == "src/accounting"
    assert match_app_dir(hints, "ad", ["ghcr.io/example/demo:2.1.3-ad"]).directory == "src/ad"
    # the repository name alone is every service's: it decides nothing
    assert match_app_dir(hints, "cart", ["ghcr.io/example/demo:2.1.3-cart"]) is None
    assert databases == [("compose.yaml", "db", "postgres:18.4", 17)]  # the service's line


def test_a_chart_workload_is_matched_by_its_app_name_label():
    hints = BuildHints(contexts=(("orders", "src/orders", "compose.yaml"),))
    assert match_app_dir(hints, "release-orders", ["example/store-orders:1"]) is None
    assert match_app_dir(hints, "release-orders", ["example/store-orders:1"],
                         ("orders",)).directory == "src/orders"


def test_a_proxy_sidecar_image_is_not_built_here():
    """bank-of-anthos' populate Jobs (bash, postgres and the Cloud SQL proxy) took the
    repository root's pom.xml for their source: 12 HikariCP/SQLAlchemy pools that psql
    never opens."""
    from advisor.read.apps.locate import maybe_built_here

    for image in ("gcr.io/cloudsql-docker/gce-proxy:1.37.10",
                  "gcr.io/cloud-sql-connectors/cloud-sql-proxy:2.14.1",
                  "docker.io/istio/proxyv2:1.24.0", "envoyproxy/envoy:v1.32.1"):
        assert not maybe_built_here(image), image
    assert maybe_built_here("us-docker.pkg.dev/bank-of-anthos/ledgerwriter:v0.6.10")


def test_a_shared_context_with_dockerfiles_in_a_folder_of_their_own(tmp_path):
    """Chandu00756/Taskflow's shape: every service builds with context . and a Dockerfile
    in deployments/docker/ that copies the whole context and runs `go build ./services/
    user`. The Dockerfiles' folder holds no application: user-service took it and read no
    pool (PA106, a floor of 1 per pod, where the service opens 100). The package `go
    build` names is the source; without one, the context is."""
    (tmp_path / "go.mod").write_text("module example.com/tasks\n")
    (tmp_path / "services" / "orders").mkdir(parents=True)
    (tmp_path / "services" / "orders" / "main.go").write_text("package main\n")
    docker = tmp_path / "build" / "docker"
    docker.mkdir(parents=True)
    (docker / "Dockerfile.orders").write_text(
        "FROM golang:1.24-alpine AS builder\nWORKDIR /src\nCOPY . .\n"
        "RUN CGO_ENABLED=0 go build -a -installsuffix cgo -o orders \\\n    ./services/orders\n"
        "FROM alpine:3.20\nCOPY --from=builder /src/orders .\nCMD [\"./orders\"]\n")
    (docker / "Dockerfile.web").write_text(
        "FROM python:3.12\nCOPY . .\nCMD [\"python\", \"app.py\"]\n")
    (tmp_path / "docker-compose.yml").write_text(
        "services:\n"
        "  orders:\n    build:\n      context: .\n"
        "      dockerfile: build/docker/Dockerfile.orders\n"
        "  web:\n    build:\n      context: .\n      dockerfile: build/docker/Dockerfile.web\n")
    from advisor.read.apps.locate import _contexts

    contexts = _contexts(Root.of(tmp_path), str(tmp_path / "docker-compose.yml"), "", [])
    hints = BuildHints(contexts=tuple(contexts))
    assert match_app_dir(hints, "orders", ["example/orders:latest"]).directory == \
        "services/orders"
    assert match_app_dir(hints, "web", ["example/web:latest"]).directory == ""
