"""A JS pool whose options object is not read statically (imported from another module,
a call's result, a spread of one) may set its size: unknown (PA106), never the library's
default, which holds only for options known not to set it (pg-pool's `max || poolSize ||
10`, Sequelize's pool.max 5, Knex's pool.max 10, TypeORM's poolSize / extra.max). A
`const` of the function that makes the pool is read where it is used."""

from pathlib import Path

import pytest

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container, product

PG = "const { Pool } = require('pg');\n"


def _found(tmp_path: Path, files: dict[str, str], env=None):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return pools_for_container(container(env or {}, command=("node", "index.js")),
                               scan_app_dir(Root.of(tmp_path), ""))


def _unread(label: str, where: str, key: str) -> str:
    return (f"{label}: the options at {where} are not read statically (an object from "
            f"another module or a call, or a spread of one), so whether they set {key} is "
            "not known (the library's default applies only without it)")


@pytest.mark.parametrize("code", [
    # the shape of an app's db.js: its config from a module of its own
    "const config = require('./config');\nconst pool = new Pool(config.db);\n",
    "import { dbConfig } from './config';\nexport const pool = new Pool(dbConfig);\n",
    "const pool = new Pool(getConfig());\n",
    "const pool = new Pool({ ...dbConfig, ssl: true });\n",
    "const pool = new Pool({ [key]: 20, connectionString: url });\n",
])
def test_node_postgres_options_not_read_are_unknown_not_10(tmp_path, code):
    found = _found(tmp_path, {"db.js": PG + code})
    assert found.pools == []
    assert found.unknown == [_unread("node-postgres Pool max", f"db.js:{_line(PG + code)}",
                                     "max")]


def _line(text: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if "new " in line)


@pytest.mark.parametrize(("code", "expected"), [
    ("const pool = new Pool();\n", "1 x 10 = 10"),  # PG* env and pg-pool's 10
    ("const pool = new Pool(undefined);\n", "1 x 10 = 10"),
    ("const pool = new Pool({ connectionString: process.env.DATABASE_URL });\n",
     "1 x 10 = 10"),
    # a spread, then max: the later key wins
    ("const pool = new Pool({ ...dbConfig, max: 25 });\n", "1 x 25 = 25"),
    # a spread of a literal object read here: closed
    ("const base = { connectionString: 'postgres://a@db/a' };\n"
     "const pool = new Pool({ ...base, ssl: false });\n", "1 x 10 = 10"),
    # a const of the function that makes the pool
    ("export function makePool(url) {\n  const options = { connectionString: url, max: 8 };\n"
     "  return new Pool(options);\n}\n", "1 x 8 = 8"),
])
def test_node_postgres_options_read_keep_their_size_or_the_default(tmp_path, code, expected):
    found = _found(tmp_path, {"db.js": PG + code})
    assert product(found.pools) == expected and found.unknown == []


def test_a_const_of_another_function_is_not_this_one_s(tmp_path):
    code = ("function a() {\n  const options = { max: 8 };\n  return options;\n}\n"
            "function b(options) {\n  return new Pool(options);\n}\n")
    found = _found(tmp_path, {"db.js": PG + code})
    assert found.pools == []
    assert found.unknown == [_unread("node-postgres Pool max", "db.js:7", "max")]


SEQ = "const { Sequelize } = require('sequelize');\n"


@pytest.mark.parametrize("code", [
    "const s = new Sequelize(config.database, config.username, config.password, config);\n",
    "const s = new Sequelize(process.env.DATABASE_URL, options);\n",
    "const s = new Sequelize({ ...config, dialect: 'postgres' });\n",
    "const s = new Sequelize(config);\n",
])
def test_sequelize_options_not_read_are_unknown_not_5(tmp_path, code):
    found = _found(tmp_path, {"db.js": SEQ + code})
    assert found.pools == []
    assert found.unknown == [_unread("Sequelize pool.max", "db.js:2", "pool.max")]


@pytest.mark.parametrize("code", [
    "const s = new Sequelize(process.env.DATABASE_URL);\n",  # a URL: no options
    "const s = new Sequelize('db', 'user', config.password);\n",  # no options argument
    "const s = new Sequelize(process.env.DATABASE_URL, { logging: false });\n",
])
def test_sequelize_without_options_or_with_literal_ones_is_5(tmp_path, code):
    found = _found(tmp_path, {"db.js": SEQ + code})
    assert product(found.pools) == "1 x 5 = 5" and found.unknown == []


def test_outline_s_options_built_in_the_function_are_read(tmp_path):
    """The shape of outline's server/storage/database.ts: the options a const of the
    function, its pool.max a top-level `env.X ?? 5`."""
    code = ("const poolMax = env.DATABASE_CONNECTION_POOL_MAX ?? 7;\n"
            "export function createDatabaseInstance() {\n"
            "  const commonOptions = { pool: { max: poolMax, min: 0 } };\n"
            "  return new Sequelize(databaseConfig, commonOptions);\n}\n")
    found = _found(tmp_path, {"db.ts": SEQ + code})
    assert product(found.pools) == "1 x 7 = 7"


def test_knex_pool_options_not_read_are_unknown_not_10(tmp_path):
    found = _found(tmp_path, {"db.js": (
        "const knex = require('knex');\n"
        "const db = knex({ client: 'pg', connection: process.env.DATABASE_URL, "
        "pool: poolConfig });\n")})
    assert found.pools == []
    # the literal's member not read is said where it is (audit 8b D7)
    assert found.unknown == [
        "Knex pool.max: pool = poolConfig at db.js:2 is not read, so whether it sets "
        "pool.max is not known (the library's default applies only without it)"]
    found = _found(tmp_path, {"db.js": (
        "const knex = require('knex');\n"
        "const db = knex({ client: 'pg', connection: process.env.DATABASE_URL });\n")})
    assert product(found.pools) == "1 x 10 = 10"


def test_typeorm_options_spread_are_unknown_not_10(tmp_path):
    found = _found(tmp_path, {"app.module.ts": (
        "TypeOrmModule.forRoot({ type: 'postgres', ...databaseConfig })\n")})
    assert found.pools == []
    assert found.unknown == [_unread("TypeORM poolSize / extra.max", "app.module.ts:1",
                                     "poolSize or extra.max")]
    found = _found(tmp_path, {"app.module.ts": (
        "TypeOrmModule.forRoot({ type: 'postgres', url: process.env.DATABASE_URL })\n")})
    assert product(found.pools) == "1 x 10 = 10"


@pytest.mark.parametrize(("code", "expected"), [
    # a call not read may return a size: the fallback is not what runs
    ("const pool = new Pool({ max: readMax() || 7 });\n", None),
    ("const pool = new Pool({ max: settings.pool.max ?? 7 });\n", None),
    # an env module's NAME the container does not set is unset, as process.env.NAME
    ("const pool = new Pool({ max: env.PG_POOL_MAX ?? 7 });\n", "1 x 7 = 7"),
    ("const pool = new Pool({ max: process.env.PG_POOL_MAX || 7 });\n", "1 x 7 = 7"),
])
def test_a_fallback_runs_only_after_a_left_side_known_unset(tmp_path, code, expected):
    found = _found(tmp_path, {"db.js": PG + code})
    if expected is None:
        assert found.pools == [] and len(found.unknown) == 1
    else:
        assert product(found.pools) == expected


def test_an_env_module_member_is_the_container_s_variable(tmp_path):
    code = "import { env } from './env';\nconst pool = new Pool({ max: env.PG_POOL_MAX ?? 7 });\n"
    found = _found(tmp_path, {"db.js": PG + code}, env={"PG_POOL_MAX": "12"})
    assert product(found.pools) == "1 x 12 = 12"
