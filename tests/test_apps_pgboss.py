"""pg-boss's own pg.Pool (advisor/read/apps/pgboss.py): `new PgBoss(url)` or
`new PgBoss({ max })` is a pool besides the app's others (it was missed, or the app was
unknown when pg-boss was its only database library); a `db` adapter opens none;
`useListenNotify: true` holds one more connection; options not read are unknown."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container, product
from tests.tree_helpers import POSTGRES_DB, deployment, write

PKG = '{"name": "jobs", "dependencies": {"pg-boss": "^12.27.0"}}\n'


def pools(tmp_path, code: str, env: dict | None = None, name: str = "src/boss.ts"):
    write(tmp_path, {"package.json": PKG, name: code})
    return pools_for_container(container(env or {"DATABASE_URL": "postgres://u@db/app"}),
                               scan_app_dir(Root.of(tmp_path), ""))


@pytest.mark.parametrize("code, expected", [
    # v12 named export, a connection string from the env
    ('import { PgBoss } from "pg-boss";\n'
     "export const boss = new PgBoss(process.env.DATABASE_URL!);\n",
     "1 x 10 = 10"),
    # default export (<= 11), options with max
    ("import PgBoss from 'pg-boss';\nconst boss = new PgBoss({ connectionString: "
     "process.env.DATABASE_URL, max: 3 });\n", "1 x 3 = 3"),
    # require, an alias, the legacy poolSize
    ("const Boss = require('pg-boss');\nmodule.exports = new Boss({ poolSize: 4 });\n",
     "1 x 4 = 4"),
    # a named argument holding a URL
    ("import { PgBoss as Q } from 'pg-boss';\nexport function make(databaseUrl: string) {\n"
     "  return new Q(databaseUrl);\n}\n", "1 x 10 = 10"),
    # LISTEN/NOTIFY (12.21+): a pg.Client outside the pool
    ("import { PgBoss } from 'pg-boss';\nnew PgBoss({ connectionString: 'postgres://u@db/a', "
     "max: 5, useListenNotify: true });\n", "1 x 5 + 1 x 1 = 6"),
    # max from the env, with a fallback
    ("import { PgBoss } from 'pg-boss';\nnew PgBoss({ connectionString: process.env.DATABASE_URL,"
     " max: Number(process.env.BOSS_MAX ?? 2) });\n", "1 x 2 = 2"),
])
def test_pool_sizes(tmp_path, code, expected):
    found = pools(tmp_path, code)
    assert product(found.pools) == expected, (found.pools, found.unknown)
    assert all(p.label.startswith("pg-boss") for p in found.pools)


def test_sizes_are_cited(tmp_path):
    found = pools(tmp_path, "import PgBoss from 'pg-boss';\n\nconst b = new PgBoss({\n"
                  "  connectionString: process.env.DATABASE_URL,\n  max: 7,\n});\n")
    (pool,) = found.pools
    assert pool.size.source.label() == "src/boss.ts:5" and pool.bound == "fixed"
    default = pools(tmp_path, "import PgBoss from 'pg-boss';\nnew PgBoss('postgres://u@h/d');\n")
    (pool,) = default.pools
    assert pool.bound == "default" and "pg-pool" in pool.size.source.default
    assert pool.route.host == "h"


def test_db_adapter_opens_no_pool(tmp_path):
    found = pools(tmp_path, "import { PgBoss } from 'pg-boss';\nimport { prisma } from './db';\n"
                  "new PgBoss({ db: fromPrisma(prisma), schema: 'jobs' });\n")
    assert found.pools == [] and not found.unknown
    assert any("`db` adapter" in n for n in found.notices)


@pytest.mark.parametrize("code, why", [
    ("import { PgBoss } from 'pg-boss';\nnew PgBoss(settings);\n", "pg-boss options"),
    ("import { PgBoss } from 'pg-boss';\nnew PgBoss({ connectionString: u, max: cfg.size });\n",
     "pg-boss max"),
    ("import { PgBoss } from 'pg-boss';\nnew PgBoss({ connectionString: u, useListenNotify: "
     "cfg.listen });\n", "useListenNotify"),
])
def test_options_not_read_are_unknown(tmp_path, code, why):
    found = pools(tmp_path, code)
    assert found.pools == [] and any(why in u for u in found.unknown)


def test_secret_max_is_unknown(tmp_path):
    write(tmp_path, {"package.json": PKG, "src/boss.ts":
                     "import { PgBoss } from 'pg-boss';\nnew PgBoss({ connectionString: "
                     "process.env.DATABASE_URL, max: Number(process.env.BOSS_MAX ?? 2) });\n"})
    c = container({"DATABASE_URL": "postgres://u@db/app"})
    from msgspec.structs import replace

    from advisor.model import EnvVar, Source
    hidden = EnvVar(name="BOSS_MAX", value=None, secret=True, from_ref="secret:s",
                    source=Source(path="k8s/app.yaml", line=20, key="BOSS_MAX"))
    c = replace(c, env=(*c.env, hidden))
    found = pools_for_container(c, scan_app_dir(Root.of(tmp_path), ""))
    assert found.pools == [] and any("BOSS_MAX" in u for u in found.unknown)


def test_besides_the_apps_own_pool(tmp_path):
    # the app's node-postgres pool and pg-boss's: both count on the server
    write(tmp_path, {
        "k8s/db.yaml": POSTGRES_DB,
        "k8s/api.yaml": deployment("api", "acme/api:1", {"DATABASE_URL": "postgres://u@db/app"},
                                   replicas=3),
        "api/package.json": PKG,
        "api/Dockerfile": "FROM node:22\nCMD [\"node\", \"dist/main.js\"]\n",
        "api/src/db.ts": "import { Pool } from 'pg';\nexport const pool = new Pool({ "
                         "connectionString: process.env.DATABASE_URL, max: 5 });\n",
        "api/src/jobs.ts": "import { PgBoss } from 'pg-boss';\nexport const boss = new PgBoss("
                           "{ connectionString: process.env.DATABASE_URL, max: 2 });\n"})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.peak == 3 * (5 + 2) and not budget.unknown_clients


def test_dependency_alone_identifies_pgboss(tmp_path):
    from advisor.read.apps.base import StackContext
    from advisor.read.apps.identify import identified_pools

    write(tmp_path, {"package.json": '{"dependencies": {"pg-boss": "^9.0.3"}}\n'})
    ctx = StackContext(container=container(), app=scan_app_dir(Root.of(tmp_path), ""),
                       profile=None)
    (pool,) = identified_pools(ctx, None)
    assert pool.size.value == 10 and pool.bound == "default"
    assert "pg-boss" in pool.note and "package.json:1" in pool.note


def test_pgboss_does_not_hide_the_apps_own_stack(tmp_path):
    # TypeORM from an ormconfig.js (no DataSource call the reader sees) and pg-boss:
    # the dependency default of TypeORM is added beside pg-boss's pool (DeltaCamp/notus-api)
    write(tmp_path, {"package.json": '{"dependencies": {"typeorm": "^0.2.15", "pg": "^7.9.0",'
                                     ' "pg-boss": "^3.1.6"}}\n',
                     "ormconfig.js": "module.exports = { type: 'postgres', url: "
                                     "process.env.DATABASE_URL };\n",
                     "src/jobs.ts": "const PgBoss = require('pg-boss');\nnew PgBoss({ "
                                    "connectionString: process.env.DATABASE_URL });\n"})
    found = pools_for_container(container({"DATABASE_URL": "postgres://u@db/app"}),
                                scan_app_dir(Root.of(tmp_path), ""))
    assert [p.label for p in found.pools] == ["pg-boss pg.Pool max", "TypeORM poolSize"]
    assert product(found.pools) == "1 x 10 + 1 x 10 = 20"
    assert "typeorm" in found.pools[1].note
