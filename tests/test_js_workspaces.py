"""A JS app whose pool is in a workspace package it depends on (pnpm `workspace:*`,
npm/yarn `workspaces`) is read with that package's source; Prisma 7's adapter reads its
options from a variable, and a CPU formula written with `cpus()` and `Math.max` stays a
formula. Fixtures are our own, in the shape of a Next.js monorepo."""

import json
from pathlib import Path

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.apps.base import StackContext
from advisor.read.apps.jssource import dependency_spec
from advisor.read.fs import Root
from tests.apphelpers import container, product

SCHEMA = 'datasource db {\n  provider = "postgresql"\n}\n'
ADAPTER = ('import { PrismaPg } from "@prisma/adapter-pg";\n'
           'import { PrismaClient } from "@prisma/client";\n\n'
           "const adapter = new PrismaPg({ connectionString: process.env.DATABASE_URL, max: 6 });\n"
           "export const db = new PrismaClient({ adapter });\n")


def _write(root: Path, files: dict[str, str | dict]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text if isinstance(text, str) else json.dumps(text))


def _found(root: Path, app: str = "apps/site", env=None):
    return pools_for_container(container(env or {}, command=("node", "server.js")),
                               scan_app_dir(Root.of(root), app))


def _monorepo(tmp_path: Path, *, dep: str = "workspace:*", key: str = "dependencies",
              pnpm: bool = True) -> None:
    files: dict[str, str | dict] = {
        "apps/site/package.json": {"name": "@shop/site", key: {"@shop/db": dep}},
        "apps/site/src/index.ts": 'import { db } from "@shop/db";\nexport const n = db;\n',
        "packages/db/package.json": {"name": "@shop/db", "dependencies": {
            "@prisma/adapter-pg": "7.8.0", "@prisma/client": "catalog:", "pg": "8.16.3"}},
        "packages/db/prisma/schema.prisma": SCHEMA,
        "packages/db/src/client.ts": ADAPTER,
        # another workspace package the app does not depend on: not its pool
        "packages/jobs/package.json": {"name": "@shop/jobs", "dependencies": {"pg": "8"}},
        "packages/jobs/src/pool.ts": "import { Pool } from 'pg';\n"
                                     "export const p = new Pool({ max: 50 });\n",
    }
    if pnpm:
        files["pnpm-workspace.yaml"] = ('packages:\n  - "apps/*"\n  - "packages/*"\n'
                                        'catalog:\n  "@prisma/client": 7.8.0\n'
                                        "catalogs:\n  legacy:\n    typeorm: 0.2.45\n")
        files["package.json"] = {"name": "shop", "private": True}
    else:
        files["package.json"] = {"name": "shop", "workspaces": ["apps/*", "packages/*"]}
    _write(tmp_path, files)


def test_pnpm_workspace_package_pool_is_the_apps(tmp_path):
    _monorepo(tmp_path)
    found = _found(tmp_path)
    assert product(found.pools) == "1 x 6 = 6"
    assert found.pools[0].size.source.label() == "packages/db/src/client.ts:4"
    assert found.unknown == []


def test_npm_workspaces_dependency_by_name(tmp_path):
    _monorepo(tmp_path, dep="*", pnpm=False)
    assert product(_found(tmp_path).pools) == "1 x 6 = 6"


def test_dev_dependency_workspace_package_not_read(tmp_path):
    # a build or test tool's package is not the running process's
    _monorepo(tmp_path, key="devDependencies")
    assert _found(tmp_path).pools == []


def test_workspace_cycle_is_followed_once(tmp_path):
    _monorepo(tmp_path)
    _write(tmp_path, {
        "packages/db/package.json": {"name": "@shop/db", "dependencies": {
            "@shop/site": "workspace:*", "@shop/util": "workspace:^",
            "@prisma/adapter-pg": "7.8.0"}},
        "packages/util/package.json": {"name": "@shop/util",
                                       "dependencies": {"@shop/db": "workspace:*"}},
        "packages/util/src/index.ts": "export const one = 1;\n"})
    app = scan_app_dir(Root.of(tmp_path), "apps/site")
    paths = [f.path for f in app.files]
    assert len(paths) == len(set(paths))
    assert "packages/util/src/index.ts" in paths
    assert not any(p.startswith("packages/jobs/") for p in paths)
    assert product(_found(tmp_path).pools) == "1 x 6 = 6"


def test_catalog_version_from_pnpm_workspace(tmp_path):
    _monorepo(tmp_path)
    _write(tmp_path, {"packages/db/package.json": {"name": "@shop/db", "dependencies": {
        "@prisma/client": "catalog:", "typeorm": "catalog:legacy"}},
        "apps/site/package.json": {"name": "@shop/site", "dependencies": {
            "@shop/db": "workspace:*", "@prisma/client": "catalog:"}}})
    ctx = StackContext(container=container({}), profile=None,
                       app=scan_app_dir(Root.of(tmp_path), "apps/site"))
    spec, source = dependency_spec(ctx, "@prisma/client")
    assert (spec, source.label()) == ("7.8.0", "pnpm-workspace.yaml:5")
    spec, source = dependency_spec(ctx, "typeorm")
    assert (spec, source.label()) == ("0.2.45", "pnpm-workspace.yaml:8")


def test_prisma_adapter_options_in_a_typed_variable(tmp_path):
    _write(tmp_path, {
        "package.json": {"name": "web", "dependencies": {"@prisma/adapter-pg": "7.8.0",
                                                          "pg": "8.16.3"}},
        "prisma/schema.prisma": SCHEMA,
        "src/db.ts": ('import { PrismaPg } from "@prisma/adapter-pg";\n'
                      'import type { PoolConfig } from "pg";\n\n'
                      "const poolConfig: PoolConfig = {\n"
                      "  connectionString: process.env.DATABASE_URL,\n"
                      "  max: 40,\n};\n"
                      "export const adapter = new PrismaPg(poolConfig);\n")})
    found = _found(tmp_path, "")
    assert product(found.pools) == "1 x 40 = 40"
    assert found.pools[0].size.source.label() == "src/db.ts:6"


def _adapter_with_limit(tmp_path, limit: str) -> None:
    _write(tmp_path, {
        "package.json": {"name": "web", "dependencies": {"@prisma/adapter-pg": "7.8.0"}},
        "schema/main.prisma": SCHEMA,  # a multi-file schema folder
        "src/adapter.ts": (
            'import { PrismaPg } from "@prisma/adapter-pg";\n'
            'import { cpus } from "node:os";\n\n'
            "const FALLBACK_LIMIT = Math.max(2 * cpus().length + 1, 2);\n\n"
            "export const makeAdapter = (url: string) => {\n"
            f"  const limit = {limit} ?? FALLBACK_LIMIT;\n"
            "  const config: Record<string, unknown> = { connectionString: url, max: limit };\n"
            "  return new PrismaPg(config, undefined);\n};\n")})


def test_prisma_adapter_cpu_formula_in_a_function(tmp_path):
    # a factory's local config whose max is a module constant from the node's CPUs,
    # after a variable the container does not set
    _adapter_with_limit(tmp_path, "Number(process.env.POOL_LIMIT)")
    found = pools_for_container(container({}, command=("node", "server.js")),
                                scan_app_dir(Root.of(tmp_path), ""), node_cpus=8)
    (pool,) = found.pools
    assert pool.size.value == 17
    assert pool.size.source.label() == "src/adapter.ts:4"
    assert pool.cpu_formula is not None and pool.cpu_formula.physical is False
    assert pool.cpu_formula.text == "Math.max(2 * os.cpus().length + 1, 2)"
    assert pool.cpu_formula.at(1) == 3 and pool.cpu_formula.at(0) == 2


def test_a_fallback_after_a_call_not_read_is_unknown(tmp_path):
    # `readLimit(url) ?? FALLBACK` (formbricks reads the URL's connection_limit so): the
    # call may return a limit, so the fallback is not what runs: unknown, not 17
    _adapter_with_limit(tmp_path, "readLimit(url)")
    found = pools_for_container(container({}, command=("node", "server.js")),
                                scan_app_dir(Root.of(tmp_path), ""), node_cpus=8)
    assert found.pools == []
    assert found.unknown == ["Prisma adapter-pg (node-postgres) max at src/adapter.ts:9 is set "
                             "to an expression not read statically"]


def test_prisma_adapter_options_not_read_are_unknown_not_10(tmp_path):
    _write(tmp_path, {
        "package.json": {"name": "web", "dependencies": {"@prisma/adapter-pg": "7.8.0",
                                                          "pg": "8.16.3"}},
        "prisma/schema.prisma": SCHEMA,
        "src/db.ts": ('import { PrismaPg } from "@prisma/adapter-pg";\n'
                      'import { poolConfig } from "./config";\n'
                      "export const adapter = new PrismaPg(poolConfig);\n")})
    found = _found(tmp_path, "")
    assert found.pools == []
    assert len(found.unknown) == 1 and "src/db.ts:3" in found.unknown[0]


def test_node_postgres_pool_options_in_a_typed_variable(tmp_path):
    _write(tmp_path, {
        "package.json": {"name": "api", "dependencies": {"pg": "8.16.3"}},
        "src/db.ts": ("import { Pool, type PoolConfig } from 'pg';\n"
                      "const config: PoolConfig = { max: 12 };\n"
                      "export const pool = new Pool(config);\n")})
    assert product(_found(tmp_path, "").pools) == "1 x 12 = 12"
