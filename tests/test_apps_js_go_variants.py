"""Smaller JS/TS and Go forms, each written here with the expected per-pod figure."""

from pathlib import Path

import pytest

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container, product


def _found(tmp_path: Path, files: dict[str, str], env=None, command=("node", "index.js"),
           **kw):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return pools_for_container(container(env or {}, command=command),
                               scan_app_dir(Root.of(tmp_path), ""), **kw)


@pytest.mark.parametrize(("code", "expected"), [
    ("import pg from 'pg';\nexport const pool = new pg.Pool({ max: 30 });", "1 x 30 = 30"),
    ("const { Pool } = require('pg');\nconst p = new Pool({ poolSize: 7 });", "1 x 7 = 7"),
    ("const { Pool } = require('pg');\nconst p = new Pool({ max: 0 });", "1 x 10 = 10"),
    ("const { Pool } = require('pg');\n/* new Pool({ max: 99 }) */\nconst p = new Pool();",
     "1 x 10 = 10"),
    ("const { Pool } = require('pg');\nconst p = new Pool({ max: process.env.PGMAX ?? 4 });",
     "1 x 4 = 4"),
    ("const { Pool } = require('mysql2');\nconst p = new Pool({ max: 50 });", " = 0"),
])
def test_node_postgres_forms(tmp_path, code, expected):
    assert product(_found(tmp_path, {"index.js": code}).pools) == expected


def test_node_postgres_max_not_read_is_unknown_and_a_parameter_default_is_named(tmp_path):
    """`max: settings.poolMax`: the code sets a size not read here, so the pod's
    connections are unknown (PA106), not pg-pool's 10; a parameter's literal default
    (`function makePool(url, max = 12)`) is used, its source saying a caller may pass
    another."""
    found = _found(tmp_path, {"index.js": (
        "const { Pool } = require('pg');\nconst p = new Pool({ max: settings.poolMax });\n")})
    assert found.pools == []
    assert found.unknown == ["node-postgres Pool max at index.js:2 is set to an expression "
                             "not read statically"]
    found = _found(tmp_path, {"index.js": (
        "import { Pool } from 'pg';\n\nexport function makePool(url: string, size = 12) {\n"
        "  return new Pool({ connectionString: url, max: size });\n}\n")})
    assert product(found.pools) == "1 x 12 = 12"
    assert found.pools[0].size.source.line == 3
    assert "a caller may pass another" in found.pools[0].size.source.default


PGJS = "import postgres from 'postgres';\n"


@pytest.mark.parametrize(("code", "env", "expected", "bound"), [
    ("const sql = postgres(process.env.DATABASE_URL, { max: 4 });", {}, "1 x 4 = 4", "fixed"),
    ("const sql = postgres({ host: 'db', max: 7 });", {}, "1 x 7 = 7", "fixed"),
    ("const sql = postgres('postgres://u@db/x?max=6');", {}, "1 x 6 = 6", "fixed"),
    ("const sql = postgres(process.env.DATABASE_URL);", {"PGMAX": "3"}, "1 x 3 = 3", "fixed"),
    ("const sql = postgres(process.env.DATABASE_URL);", {}, "1 x 10 = 10", "default"),
])
def test_postgres_js_forms(tmp_path, code, env, expected, bound):
    """postgres.js parseOptions: option max, else the URL's ?max=, else PGMAX, else 10."""
    found = _found(tmp_path, {"index.js": PGJS + code},
                   env={"DATABASE_URL": "postgres://u@db/x", **env})
    assert product(found.pools) == expected
    assert found.pools[0].bound == bound


def test_postgres_js_max_not_read_is_unknown(tmp_path):
    found = _found(tmp_path, {"index.js": PGJS + "const sql = postgres(url, { max: cfg.max });\n"})
    assert found.pools == [] and found.unknown == [
        "postgres.js max at index.js:2 is set to an expression not read statically"]


def test_sequelize_url_and_replication(tmp_path):
    found = _found(tmp_path, {"db.js": (
        "const { Sequelize } = require('sequelize');\n"
        "const s = new Sequelize({ dialect: 'postgres', replication: {\n"
        "  read: [{ host: 'ro-1' }, { host: 'ro-2' }], write: { host: 'rw' } },\n"
        "  pool: { max: 6 } });\n")})
    assert product(found.pools) == "1 x 6 + 1 x 6 + 1 x 6 = 18"
    found = _found(tmp_path, {"db.js": "const s = new Sequelize('postgres://u@h:5432/d');\n"})
    assert product(found.pools) == "1 x 5 = 5" and found.pools[0].route.host == "h"


def test_knex_in_code(tmp_path):
    found = _found(tmp_path, {"db.ts": (
        "import knex from 'knex';\n"
        "export const db = knex({ client: 'postgresql', connection: process.env.PG_URL,\n"
        "  pool: { min: 0, max: 12 } });\n"
        "export const other = require('knex')({ client: 'mysql2', pool: { max: 40 } });\n")},
        env={"PG_URL": "postgres://k@knex-db/k"})
    (pool,) = found.pools
    assert product(found.pools) == "1 x 12 = 12" and pool.route.host == "knex-db"


def test_typeorm_pool_size_and_replication(tmp_path):
    found = _found(tmp_path, {"ds.ts": (
        "TypeOrmModule.forRoot({ type: 'postgres', poolSize: 9,\n"
        "  replication: { master: { host: 'm' }, slaves: [{ host: 's1' }] } })\n")})
    assert product(found.pools) == "1 x 9 + 1 x 9 = 18"


def test_pm2_cluster_multiplies_node_pools(tmp_path):
    found = _found(tmp_path, {"index.js": "const { Pool } = require('pg');\n"
                              "const p = new Pool({ max: 5 });\n"},
                   command=("pm2-runtime", "index.js", "-i", "max"), node_cpus=6)
    (pool,) = found.pools
    assert product(found.pools) == "6 x 5 = 30"
    assert pool.bound == "cpu" and pool.cpu_formula.applies_to == "processes"


GO_HEADER = "package main\n\nimport (\n\t\"database/sql\"\n\t\"os\"\n)\n\n"


@pytest.mark.parametrize(("body", "expected", "bound"), [
    ('func main() {\n\tdb, _ := sql.Open("postgres", os.Getenv("DATABASE_URL"))\n'
     '\tdb.SetMaxOpenConns(20)\n}\n', "1 x 20 = 20", "fixed"),
    ('const maxConns = 15\n\nfunc main() {\n\tdb, _ := sqlx.Connect("pgx", dsn)\n'
     '\tdb.SetMaxOpenConns(maxConns)\n}\n', "1 x 15 = 15", "fixed"),
    ('func main() {\n\tdb, _ := sql.Open("pgx", dsn)\n\tdb.SetMaxOpenConns(0)\n}\n',
     "1 x 0 = 0", "unbounded"),
    ('func main() {\n\tdb, _ := gorm.Open(postgres.Open(dsn), &gorm.Config{})\n}\n',
     "1 x 0 = 0", "unbounded"),
    ('func main() {\n\tdb, _ := sql.Open("mysql", dsn)\n}\n', " = 0", None),
])
def test_go_database_sql_forms(tmp_path, body, expected, bound):
    found = _found(tmp_path, {"main.go": GO_HEADER + body},
                   env={"DATABASE_URL": "postgres://g@go-db/g"}, command=("/app",))
    assert product(found.pools) == expected
    if bound:
        assert found.pools[0].bound == bound


def test_go_limit_not_read_is_unknown_not_unbounded(tmp_path):
    """SetMaxOpenConns(cfg.Max): a limit is set, to a value not read here. Unknown
    (PA106), not "no limit" (tekton results guards it with `if maxOpen > 0`: PA102
    said unbounded 27 times)."""
    body = ('func main() {\n\tdb, _ := sql.Open("postgres", dsn)\n'
            '\tif cfg.Max > 0 {\n\t\tdb.SetMaxOpenConns(cfg.Max)\n\t}\n}\n')
    found = _found(tmp_path, {"main.go": GO_HEADER + body},
                   env={"DATABASE_URL": "postgres://g@go-db/g"}, command=("/app",))
    assert found.pools == []
    assert found.unknown == ["database/sql SetMaxOpenConns at main.go:11 is set to an "
                             "expression not read statically"]
    # the env name the code reads, set in the container: that value
    found = _found(tmp_path, {"main.go": GO_HEADER + body.replace(
        "func main", 'var maxName = "DB_MAX_OPEN_CONNECTIONS"\n\nfunc main')},
        env={"DATABASE_URL": "postgres://g@go-db/g", "DB_MAX_OPEN_CONNECTIONS": "10"},
        command=("/app",))
    assert product(found.pools) == "1 x 10 = 10"


def test_pgx_config_max_conns(tmp_path):
    found = _found(tmp_path, {"main.go": (
        "package main\n\nfunc main() {\n"
        "\tcfg, _ := pgxpool.ParseConfig(os.Getenv(\"DATABASE_URL\"))\n"
        "\tcfg.MaxConns = 12\n"
        "\tpool, _ := pgxpool.NewWithConfig(ctx, cfg)\n}\n")},
        env={"DATABASE_URL": "postgres://p@pgx-db/p"}, command=("/app",))
    (pool,) = found.pools
    assert product(found.pools) == "1 x 12 = 12"
    assert pool.size.source.label() == "main.go:5" and pool.route.host == "pgx-db"


_POOL_SIZE_9 = "TypeOrmModule.forRoot({ type: 'postgres', poolSize: 9 })\n"


@pytest.mark.parametrize(("spec", "expected", "said"), [
    # before 0.3.10 PostgresDriver passes only `extra` to pg (PostgresDriver.ts@0.3.9)
    ("0.3.9", "1 x 10 = 10", "is ignored by typeorm 0.3.9"),
    ("^0.2.45", "1 x 10 = 10", "is ignored by typeorm ^0.2.45"),
    ("^0.3.10", "1 x 9 = 9", ""),
    ("^1.0.0", "1 x 9 = 9", ""),
    # a range across 0.3.10: the newest it allows is assumed, and said
    ("^0.3.0", "1 x 9 = 9", "assumed 0.3.10 or later"),
])
def test_typeorm_pool_size_counts_from_0_3_10(tmp_path, spec, expected, said):
    found = _found(tmp_path, {"src/ds.ts": _POOL_SIZE_9, "package.json":
                              f'{{"dependencies": {{"typeorm": "{spec}", "pg": "8"}}}}\n'})
    assert product(found.pools) == expected
    assert [n for n in found.notices if "poolSize" in n] == ([] if not said else [
        next(n for n in found.notices if said in n)])
    if expected.endswith("10"):
        (pool,) = found.pools
        assert pool.bound == "default" and "src/ds.ts:1) ignored" in pool.note
        assert "package.json:1" in found.notices[0]


def test_typeorm_version_unknown_is_said(tmp_path):
    found = _found(tmp_path, {"src/ds.ts": _POOL_SIZE_9})
    assert product(found.pools) == "1 x 9 = 9"
    assert any("no package.json here declares typeorm; assumed 0.3.10 or later" in n
               for n in found.notices)


def test_typeorm_version_of_the_nearest_package(tmp_path):
    found = _found(tmp_path, {
        "packages/api/src/ds.ts": _POOL_SIZE_9,
        "packages/api/package.json": '{"dependencies": {"typeorm": "0.2.30"}}\n',
        "package.json": '{"devDependencies": {"typeorm": "0.3.20"}}\n'})
    assert product(found.pools) == "1 x 10 = 10"


def test_typeorm_old_version_extra_max_still_counts(tmp_path):
    found = _found(tmp_path, {"src/ds.ts": "TypeOrmModule.forRoot({ type: 'postgres', "
                              "poolSize: 9, extra: { max: 4 } })\n",
                              "package.json": '{"dependencies": {"typeorm": "0.2.45"}}\n'})
    assert product(found.pools) == "1 x 4 = 4"
    assert not [n for n in found.notices if "poolSize" in n]
