"""Audit 24 (session 28): an image `owner/NAME` built from the folder `<owner>-NAME`
(airbyte-platform's airbyte/server from airbyte-server/), and what PA106 says was looked for
(no "only Dockerfile" step: the engine's hints hold no Dockerfile folders)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.apps.locate import prefixed_folder
from tests.tree_helpers import POSTGRES_DB, deployment, write


def _node_service(max_size: int) -> dict[str, str]:
    return {
        "package.json": '{"name": "svc", "dependencies": {"pg": "8.11.0"}}\n',
        "index.js": "const { Pool } = require('pg');\n"
                    "const pool = new Pool({ connectionString: process.env.DATABASE_URL, "
                    f"max: {max_size} }});\n",
    }


# --- an image owner/NAME built from <owner>-NAME ----------------------------------------

def test_prefixed_folder_takes_owner_or_its_beginning_and_one_folder_only():
    folders = ["", "airbyte-server", "airbyte-cron", "airbyte-db/db-lib",
               "gravitee-apim-gateway", "gravitee-apim-rest-api"]
    found = prefixed_folder(folders, ["airbyte/server:1.5.0"])
    assert found is not None and found.directory == "airbyte-server"
    # gravitee-io/gravitee-api-management: graviteeio/apim-gateway from gravitee-apim-gateway/
    found = prefixed_folder(folders, ["graviteeio/apim-gateway:4.5"])
    assert found is not None and found.directory == "gravitee-apim-gateway"
    # the JVM layout: the folder above src/main/resources
    found = prefixed_folder(["airbyte-server/src/main/resources"], ["airbyte/server"])
    assert found is not None and found.directory == "airbyte-server"
    # an owner unlike the prefix: another publisher's image, not this folder
    assert prefixed_folder(folders, ["acme/server:1"]) is None
    # ... unless the prefix is the root project's
    found = prefixed_folder(folders, ["acme/server:1"], ("airbyte",))
    assert found is not None and found.directory == "airbyte-server"
    # a sample folder is not the image's source
    assert prefixed_folder(["examples/airbyte-server"], ["airbyte/server"]) is None
    # no owner, no match; two folders, no guess
    assert prefixed_folder(folders, ["server:1"]) is None
    assert prefixed_folder(["airbyte-server", "x/airbyte-server"], ["airbyte/server"]) is None


def test_an_owner_image_takes_its_owner_prefixed_folder_not_the_root(tmp_path):
    """airbytehq/airbyte-platform@310e6cb's shape: a root Gradle build, service folders
    airbyte-server/ and airbyte-cron/, the chart's Deployment release-server runs
    airbyte/server. Before: "no folder is named like the workload or its image", the root
    was read for every service (each got every module's pools)."""
    files = {"settings.gradle.kts": 'rootProject.name = "airbyte-oss"\n',
             "build.gradle.kts": "plugins { java }\n",
             "k8s/db.yaml": POSTGRES_DB,
             "k8s/server.yaml": deployment(
                 "release-server", "airbyte/server:1.5.0",
                 {"DATABASE_URL": "postgres://u:p@db:5432/airbyte"}, replicas=2)}
    files.update({f"airbyte-server/{k}": v for k, v in _node_service(7).items()})
    files.update({f"airbyte-cron/{k}": v for k, v in _node_service(3).items()})
    write(tmp_path, files)
    result = run_check([str(tmp_path / "k8s")], CheckOptions(cache=False, root=tmp_path))
    inferred = [n for n in result.notices if "application source inferred" in n]
    assert inferred == [
        "Deployment/release-server: application source inferred as airbyte-server/ (folder "
        "named like its image airbyte/server:1.5.0 with the owner's or the repository's "
        "prefix); declare [[workloads]] source = ... to choose another"]
    (budget,) = result.budgets
    assert budget.peak == 2 * 7, budget




# --- what PA106 says was looked for ------------------------------------------------------

def test_pa106_names_no_only_dockerfile_step_the_linker_does_not_take(tmp_path):
    """The engine's build hints hold no Dockerfile folders (filled, the only Dockerfile
    was taken for Elasticsearch, Grafana and Keycloak pods: audit 24), so PA106 does not
    say it looked for "the repository's only Dockerfile"; it says what the fallback takes."""
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB,
                     "k8s/app.yaml": deployment("orders", "acme/orders:1",
                                                {"DATABASE_URL": "postgres://u:p@db/app"})})
    result = run_check([str(tmp_path / "k8s")], CheckOptions(cache=False, root=tmp_path))
    (pa106,) = [f for f in result.findings if f.code == "PA106"]
    assert "no application source folder found" in pa106.message
    assert "only Dockerfile" not in pa106.message
    assert "the repository's only application folder or only one with a Dockerfile" \
        in pa106.message
