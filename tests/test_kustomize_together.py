"""Kustomizations deployed together versus alternatives (audit 9b D1) and host lookups
with an upper-case namespace (D3): builds that share only a configuration object
rendered alike (a generated ConfigMap of a shared base) are one deployment; a skaffold
run that deploys several kustomizations deploys them together; a client whose server is
in another alternative, or in another namespace, is said so by PA107."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from advisor.engine.check import run_check
from tests.test_kustomize_environments import _client, _server, _write

needs_kustomize = pytest.mark.skipif(
    not (shutil.which("kubectl") or shutil.which("kustomize")),
    reason="kubectl (kustomize) not installed")


def _budgets(result) -> dict[str, int]:
    return {b.server: b.peak for b in result.budgets}


def _pa107(result) -> list[str]:
    return [f.message for f in result.findings if f.code == "PA107"]


def _two_builds(root: Path, shared: str, shared_file: str) -> None:
    """db-deploy (the server) and app-deploy (its client, 4 x 10), each including
    ../shared, which holds `shared` (and app.toml for a generator)."""
    _write(root / "shared" / "kustomization.yaml", shared)
    _write(root / "shared" / "app.toml", '[production]\ndb_host = "pg"\n')
    if shared_file:
        _write(root / "shared" / "extra.yaml", shared_file)
    _write(root / "db-deploy" / "kustomization.yaml",
           "resources:\n  - ../shared\n  - pg.yaml\n")
    _write(root / "db-deploy" / "pg.yaml", _server("pg", 100))
    _write(root / "app-deploy" / "kustomization.yaml",
           "resources:\n  - ../shared\n  - api.yaml\n")
    _write(root / "app-deploy" / "api.yaml", _client("api", "pg", 10, 4))


GENERATED = "configMapGenerator:\n  - name: settings\n    files:\n      - app.toml\n"
INGRESS = """\
    apiVersion: networking.k8s.io/v1
    kind: Ingress
    metadata:
      name: gateway
    spec:
      defaultBackend:
        service: {name: api, port: {number: 80}}
    """


@needs_kustomize
def test_builds_sharing_only_a_generated_configmap_are_deployed_together(tmp_path):
    # before: two alternatives; pg [db-deploy] "fits" at peak 0, api linked to nothing
    _two_builds(tmp_path, GENERATED, "")
    r = run_check([tmp_path])
    # api 4 replicas (maxSurge 0) x HikariCP 10 = 40 on pg, one deployment
    assert _budgets(r) == {"pg": 40}, _budgets(r)
    assert not _pa107(r)
    # the ConfigMap both build from the one shared base is no "defined 2 times"
    assert not [n for n in r.notices if "is defined 2 times" in n], r.notices


@needs_kustomize
def test_builds_rendering_one_configmap_differently_stay_alternatives(tmp_path):
    _two_builds(tmp_path, "resources: []\n", "")
    for leaf, value in (("db-deploy", "a"), ("app-deploy", "b")):
        kustomization = tmp_path / leaf / "kustomization.yaml"
        kustomization.write_text(kustomization.read_text() + "configMapGenerator:\n"
                                 f"  - name: settings\n    literals: [mode={value}]\n"
                                 "generatorOptions:\n  disableNameSuffixHash: true\n")
    r = run_check([tmp_path])
    assert _budgets(r) == {"pg [db-deploy]": 0}, _budgets(r)
    # the client is not dropped silently: PA107 says where its server is, and why apart
    (message,) = _pa107(r)
    assert "Service pg (db-deploy/pg.yaml:1) is rendered only by db-deploy, an " \
        "alternative to it" in message, message
    assert "no Service, operator service" not in message


@needs_kustomize
def test_a_skaffold_run_deploys_its_kustomizations_together(tmp_path):
    # both builds render one Ingress alike: without skaffold, alternatives
    _two_builds(tmp_path, "resources:\n  - extra.yaml\n", INGRESS)
    assert _budgets(run_check([tmp_path])) == {"pg [db-deploy]": 0}
    _write(tmp_path / "skaffold.yaml", """\
        apiVersion: skaffold/v2beta28
        kind: Config
        requires:
          - path: ./db-deploy
          - path: ./app-deploy
        """)
    for leaf in ("db-deploy", "app-deploy"):
        _write(tmp_path / leaf / "skaffold.yaml", """\
            apiVersion: skaffold/v2beta28
            kind: Config
            deploy:
              kustomize:
                paths: [.]
            """)
    assert _budgets(run_check([tmp_path])) == {"pg": 40}


def test_skaffold_groups_paths_and_required_configs_but_not_profiles():
    from advisor.read.skaffold import deployed_together

    files = {
        "skaffold.yaml": [{"requires": [{"path": "./svc"}],
                           "manifests": {"kustomize": {"paths": ["k8s/db"]}},
                           "profiles": [{"name": "prod", "manifests": {
                               "kustomize": {"paths": ["k8s/prod"]}}}]}],
        "svc/skaffold.yaml": [{"deploy": {"kustomize": {}}}],
        "other/skaffold.yaml": [{"deploy": {"kustomize": {"paths": ["./only"]}}}],
    }
    assert deployed_together(files) == {"k8s/db": "skaffold skaffold.yaml",
                                        "svc": "skaffold skaffold.yaml"}


UPPER = """\
    apiVersion: v1
    kind: Service
    metadata: {name: db, namespace: "${NAMESPACE}"}
    spec:
      selector: {app: db}
      ports: [{port: 5432}]
    ---
    apiVersion: apps/v1
    kind: StatefulSet
    metadata: {name: db, namespace: "${NAMESPACE}"}
    spec:
      serviceName: db
      selector: {matchLabels: {app: db}}
      template:
        metadata: {labels: {app: db}}
        spec:
          containers: [{name: postgres, image: "postgres:16"}]
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: app, namespace: "APP_NS"}
    spec:
      replicas: 2
      strategy: {rollingUpdate: {maxSurge: 0}}
      selector: {matchLabels: {app: app}}
      template:
        metadata: {labels: {app: app}}
        spec:
          containers:
            - name: app
              image: example.com/app:1.0
              env:
                - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://db:5432/app"}
                - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "10"}
    """


def test_an_upper_case_namespace_placeholder_links_its_clients(tmp_path):
    _write(tmp_path / "k8s" / "all.yml", UPPER.replace("APP_NS", "${NAMESPACE}"))
    r = run_check([tmp_path])
    # app 2 x HikariCP 10 = 20; before: peak 0 and PA107 "no Service"
    assert _budgets(r) == {"db": 20}, _budgets(r)
    assert not _pa107(r)


def test_pa107_names_the_service_of_another_namespace(tmp_path):
    _write(tmp_path / "k8s" / "all.yml", UPPER.replace("APP_NS", "web"))
    r = run_check([tmp_path])
    assert _budgets(r) == {"db": 0}
    (message,) = _pa107(r)
    assert "which is no Service of namespace web (Service db is in namespace ${NAMESPACE} " \
        "(k8s/all.yml:1), which the host does not reach)" in message, message
