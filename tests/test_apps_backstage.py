"""Backstage's backend (apps/backstage.py): one knex pool per backend plugin, knexConfig
pool.max (base, then per plugin) or knex's 10. The plugin list is the backend's
packages/backend/src/index.ts: counted when the repository holds it, else an explicit
unknown naming the pool size per plugin (backstage/charts: a published image)."""

from __future__ import annotations

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.apps.backstage import backend_features, plugin_id
from advisor.read.apps.source import AppFile
from advisor.read.fs import Root
from tests.apphelpers import container, product
from tests.tree_helpers import POSTGRES_DB, write

DB = POSTGRES_DB.replace("max_connections=50", "max_connections=500")
INDEX = """\
import { createBackend } from '@backstage/backend-defaults';

const backend = createBackend();

backend.add(import('@backstage/plugin-app-backend'));
backend.add(import('@backstage/plugin-proxy-backend'));
// backend.add(import('@backstage/plugin-kubernetes-backend'));
backend.add(import('@backstage/plugin-scaffolder-backend'));
backend.add(import('@backstage/plugin-scaffolder-backend-module-github'));
backend.add(import('@backstage/plugin-catalog-backend/alpha'));
backend.add(import('@backstage/plugin-search-backend-module-pg'));
backend.add(import('@backstage/plugin-search-backend'));
backend.start();
"""
CONFIG = """\
backend:
  database:
    client: pg
    connection:
      host: ${POSTGRES_HOST}
    knexConfig:
      pool:
        max: 4
    plugin:
      catalog:
        knexConfig:
          pool:
            max: 8
"""


def deployment(image: str, args: str, env: str = "", volumes: str = "") -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: backstage}}
spec:
  replicas: 2
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: backstage-backend
          image: {image}
          command: ["node", "packages/backend"]
          args: {args}
          env:
            - {{name: POSTGRES_HOST, value: db}}{env}{volumes}
"""


def test_features_plugins_and_modules():
    f = AppFile(path="packages/backend/src/index.ts", rel="packages/backend/src/index.ts",
                kind="js", text=INDEX)
    found = backend_features(f)
    assert [(n, m) for n, m, _ in found] == [
        ("@backstage/plugin-app-backend", False), ("@backstage/plugin-proxy-backend", False),
        ("@backstage/plugin-scaffolder-backend", False),
        ("@backstage/plugin-scaffolder-backend-module-github", True),
        ("@backstage/plugin-catalog-backend", False),
        ("@backstage/plugin-search-backend-module-pg", True),
        ("@backstage/plugin-search-backend", False)]  # the commented line is not one
    assert found[0][2] == 5
    assert plugin_id("@backstage/plugin-catalog-backend") == "catalog"
    assert plugin_id("@roadiehq/backstage-plugin-argo-cd-backend") == "argo-cd"


def test_source_counts_plugins_and_reads_knex_config(tmp_path):
    write(tmp_path, {
        "k8s/db.yaml": DB,
        "k8s/backstage.yaml": deployment(
            "acme/portal:1.4", '["--config", "app-config.yaml", "--config", '
            '"app-config.production.yaml"]'),
        "Dockerfile": "FROM node:20\nCOPY . .\nCMD [\"node\", \"packages/backend\"]\n",
        "package.json": '{"name": "root", "workspaces": ["packages/*"]}\n',
        "app-config.yaml": CONFIG,
        "app-config.production.yaml": "app:\n  baseUrl: https://portal\n",
        "packages/backend/package.json": '{"dependencies": {"@backstage/backend-defaults": '
                                         '"^0.5.0"}}\n',
        "packages/backend/src/index.ts": INDEX})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    # 5 plugins: catalog 8, the other four 4 each; 2 pods
    assert budget.peak == 2 * (8 + 4 * 4) and not budget.unknown_clients
    client = next(c for c in scan([str(tmp_path)], CheckOptions(cache=False)).topology.clients
                  if c.name == "backstage")
    four, eight = sorted(client.pools, key=lambda p: p.size.value)
    assert (four.processes.value, four.size.value) == (4, 4)
    assert four.size.source.label() == "app-config.yaml:8"
    assert eight.size.source.label() == "app-config.yaml:13" and "catalog" in eight.note
    assert four.processes.source.label() == "packages/backend/src/index.ts:5"


def test_chart_image_without_source_is_unknown(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/backstage.yaml": deployment(
        "ghcr.io/backstage/backstage:latest", "[]")})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.unknown_clients == ["backstage"] and budget.peak == 2
    (finding,) = [f for f in result.findings if f.code == "PA106"]
    assert "one knex pool per backend plugin, max 10 each" in finding.message
    assert "the image tag names no commit" in finding.message


def test_chart_app_config_from_a_configmap(tmp_path):
    volumes = """
          volumeMounts:
            - {name: cfg, mountPath: /app/app-config-from-configmap.yaml, subPath: app-config.yaml}
      volumes:
        - name: cfg
          configMap: {name: backstage-app-config}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: backstage-app-config}
data:
  app-config.yaml: |
    backend:
      database:
        knexConfig:
          pool:
            max: 6"""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/backstage.yaml": deployment(
        "ghcr.io/backstage/backstage:1.30.0",
        '["--config", "/app/app-config-from-configmap.yaml"]', volumes=volumes)})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (finding,) = [f for f in result.findings if f.code == "PA106"]
    assert "max 6 each (k8s/backstage.yaml:" in finding.message
    assert "names no commit" not in finding.message


def test_env_override_and_sqlite(tmp_path):
    write(tmp_path, {"app-config.yaml": CONFIG, "packages/backend/src/index.ts": INDEX})
    app = scan_app_dir(Root.of(tmp_path), "")
    found = pools_for_container(container(
        {"POSTGRES_HOST": "db", "APP_CONFIG_backend_database_knexConfig_pool_max": "3"},
        command=("node", "packages/backend")), app)
    assert product(found.pools) == "4 x 3 + 1 x 8 = 20"
    assert found.pools[0].size.source.key == "APP_CONFIG_backend_database_knexConfig_pool_max"
    sqlite = pools_for_container(container(
        {"APP_CONFIG_backend_database_client": "better-sqlite3"},
        command=("node", "packages/backend")), app)
    assert sqlite.pools == [] and any("better-sqlite3" in n for n in sqlite.notices)


def test_config_not_in_the_repository_is_unknown(tmp_path):
    write(tmp_path, {"packages/backend/src/index.ts": INDEX})
    found = pools_for_container(container(
        {"POSTGRES_HOST": "db"}, command=("node", "packages/backend"),
        args=("--config", "/etc/backstage/secret-config.yaml")),
        scan_app_dir(Root.of(tmp_path), ""))
    assert found.pools == []
    assert any("/etc/backstage/secret-config.yaml" in u and "knexConfig.pool.max" in u
               for u in found.unknown)


def test_own_module_file_is_read(tmp_path):
    # backstage/demo: backend.add(import('./extensions/docsBuildStrategy')), a module
    write(tmp_path, {
        "app-config.yaml": CONFIG,
        "packages/backend/src/index.ts": INDEX.replace(
            "backend.start();", "backend.add(import('./extensions/docsBuildStrategy'));\n"
            "backend.add(import('./plugins/inventory'));\nbackend.start();"),
        "packages/backend/src/extensions/docsBuildStrategy.ts":
            "export default createBackendModule({ pluginId: 'techdocs' });\n",
        "packages/backend/src/plugins/inventory/index.ts":
            "export default createBackendPlugin({ pluginId: 'inventory' });\n"})
    found = pools_for_container(container({"POSTGRES_HOST": "db"},
                                          command=("node", "packages/backend")),
                                scan_app_dir(Root.of(tmp_path), ""))
    assert product(found.pools) == "5 x 4 + 1 x 8 = 28"  # + inventory, not the module
    assert "./plugins/inventory counted as plugins (local features)" in found.pools[0].note
