"""The JS modules a container's Node process loads (advisor/read/apps/jsentry.py): only
their pools count. Audit 10b D2: sequelize-cli's generated models/index.js, required by
nothing the server runs, made la79y-backend's client unknown and hid an
over-subscription; D4: TypeORM options cited at the migrations CLI's data-source.ts
instead of the config the app's module builds its connection from, and pg-pool's
default cited at 3.14 where the repository's lock (a yarn.lock; a workspace root's
package-lock.json) pins another version."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.apps.npmlock import npm_pin
from advisor.read.fs import Root
from tests.apphelpers import container

ENV = {"DB_HOST": "db", "DB_NAME": "app", "DB_USER": "app", "DB_PASSWORD": "pw"}
PACKAGE = ('{"name": "svc", "main": "server.js", "dependencies": {"express": "^4.18.2", '
           '"pg": "^8.11.3", "sequelize": "^6.35.1"}, '
           '"devDependencies": {"sequelize-cli": "^6.6.2"}}\n')
SERVER = """const express = require("express");
const { sequelize } = require("./db");
const app = express();
app.listen(8080);
"""
DB = """const Sequelize = require("sequelize");
const sequelize = new Sequelize(process.env.DB_NAME, process.env.DB_USER, process.env.DB_PASSWORD, {
  host: process.env.DB_HOST,
  dialect: "postgres",
});
module.exports = { sequelize };
"""
# the shape `sequelize-cli init` writes: options from config.json by NODE_ENV
SCAFFOLD = """"use strict";
const Sequelize = require("sequelize");
const env = process.env.NODE_ENV || "development";
const config = require(__dirname + "/../config/config.json")[env];
let sequelize;
if (config.use_env_variable) {
  sequelize = new Sequelize(process.env[config.use_env_variable], config);
} else {
  sequelize = new Sequelize(config.database, config.username, config.password, config);
}
module.exports = { sequelize };
"""
FILES = {"package.json": PACKAGE, "server.js": SERVER, "db.js": DB,
         "models/index.js": SCAFFOLD,
         "config/config.json": '{"production": {"dialect": "postgres"}}\n'}


def _read(tmp_path: Path, files: dict[str, str], command: tuple[str, ...] = (),
          directory: str = ""):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return pools_for_container(container(ENV, command=command),
                               scan_app_dir(Root.of(tmp_path), directory))


@pytest.mark.parametrize("command", [
    ("node", "server.js"),
    ("npm", "start"),  # no start script: npm runs `node server.js`
    ("dotenv", "-e", ".env", "--", "nodemon", "./server.js"),
])
def test_an_unused_sequelize_cli_scaffold_is_not_the_servers(tmp_path, command):
    found = _read(tmp_path, FILES, command)
    (pool,) = found.pools
    assert (pool.size.value, pool.bound, pool.note) == (5, "default", "new Sequelize at db.js:2")
    assert found.unknown == []
    assert any("models/index.js not counted" in n and "server.js" in n for n in found.notices)


def test_the_scaffold_counts_when_the_server_requires_it(tmp_path):
    files = {**FILES, "server.js": SERVER + 'const models = require("./models");\n'}
    found = _read(tmp_path, files, ("node", "server.js"))
    # its options are read from a module not evaluated: unknown, never Sequelize's 5
    assert any("models/index.js:7" in u for u in found.unknown)


def test_without_an_entry_every_instance_is_the_process(tmp_path):
    found = _read(tmp_path, FILES)  # no command, no Dockerfile: which file runs is not known
    assert any("models/index.js:7" in u for u in found.unknown)


def test_a_module_named_at_run_time_leaves_the_rest_possible(tmp_path):
    files = {**FILES, "server.js": SERVER + 'require(process.env.PLUGIN);\n'}
    found = _read(tmp_path, files, ("node", "server.js"))
    assert any("models/index.js:7" in u for u in found.unknown)
    assert any("whether server.js" in n and "models/index.js" in n
               and "named at run time" in n for n in found.notices)
    # the instance it does load is said, with its size: the floor is not the count
    assert any("at least 5 connections per pod" in n and "db.js:2" in n
               for n in found.notices)


TS_PACKAGE = ('{"name": "api", "dependencies": {"@nestjs/core": "^10.0.0", '
              '"@nestjs/typeorm": "^10.0.0", "typeorm": "0.3.20", "pg": "8.11.5"}}\n')
MAIN = """import { NestFactory } from '@nestjs/core';
import { AppModule } from './app.module';

async function bootstrap() {
  const app = await NestFactory.create(AppModule);
  await app.listen(3000);
}
bootstrap();
"""
APP_MODULE = """import { Module } from '@nestjs/common';
import { DatabaseModule } from './database/database.module';

@Module({ imports: [DatabaseModule] })
export class AppModule {}
"""
DB_MODULE = """import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { databaseConfig } from '../config/database.config';

@Module({ imports: [TypeOrmModule.forRootAsync(databaseConfig)] })
export class DatabaseModule {}
"""
DB_CONFIG = """import { ConfigModule, ConfigService } from '@nestjs/config';
import { TypeOrmModuleAsyncOptions } from '@nestjs/typeorm';
import { entities } from '../entities';

export const databaseConfig: TypeOrmModuleAsyncOptions = {
  imports: [ConfigModule],
  inject: [ConfigService],
  useFactory: (configService: ConfigService) => {
    return {
      type: 'postgres',
      host: configService.get<string>('database.host', 'localhost'),
      entities,
      synchronize: false,
    };
  },
};
"""
# the TypeORM CLI's DataSource (`typeorm migration:run -d src/database/data-source.ts`)
DATA_SOURCE = """import { DataSource } from 'typeorm';

export default new DataSource({
  type: 'postgres',
  host: process.env.DB_HOST,
  poolSize: 2,
  migrations: ['src/database/migrations/*.ts'],
});
"""
TS_FILES = {"package.json": TS_PACKAGE, "src/main.ts": MAIN, "src/app.module.ts": APP_MODULE,
            "src/database/database.module.ts": DB_MODULE,
            "src/config/database.config.ts": DB_CONFIG,
            "src/database/data-source.ts": DATA_SOURCE,
            "src/entities/index.ts": "export const entities = [];\n"}


def test_typeorm_options_are_the_ones_the_app_module_uses(tmp_path):
    found = _read(tmp_path, TS_FILES, ("node", "dist/main.js"))  # built: src/main.ts
    (pool,) = found.pools
    assert (pool.size.value, pool.bound) == (10, "default")
    assert pool.note == "TypeORM at src/config/database.config.ts:9 without poolSize"
    assert any("src/database/data-source.ts not counted" in n for n in found.notices)


YARN_V1 = """# THIS IS AN AUTOGENERATED FILE. DO NOT EDIT THIS FILE DIRECTLY.
# yarn lockfile v1


pg-pool@^3.1.0:
  version "3.1.0"
  resolved "https://registry.yarnpkg.com/pg-pool/-/pg-pool-3.1.0.tgz"

pg@^8.0.2:
  version "8.0.2"
"""
YARN_BERRY = """__metadata:
  version: 8

"pg-pool@npm:^3.6.2, pg-pool@npm:^3.7.0":
  version: 3.7.0
  resolution: "pg-pool@npm:3.7.0"
"""


@pytest.mark.parametrize(("text", "want"), [
    (YARN_V1, ("3.1.0", 6)),
    (YARN_BERRY, ("3.7.0", 5)),
    (YARN_V1 + "\npg-pool@^2.0.0:\n  version \"2.0.10\"\n", None),  # two copies: which?
])
def test_yarn_lock_pins(tmp_path, text, want):
    (tmp_path / "yarn.lock").write_text(text)
    found = npm_pin(scan_app_dir(Root.of(tmp_path), ""), "pg-pool")
    assert ((found[0], found[1].line) if found else None) == want


NODE_PG = """const { Pool } = require('pg');
module.exports = new Pool({ host: process.env.DB_HOST });
"""


def test_pg_pool_default_at_the_yarn_lock_version(tmp_path):
    found = _read(tmp_path, {"package.json": '{"dependencies": {"pg": "^8.0.2"}}\n',
                             "server.js": NODE_PG, "yarn.lock": YARN_V1},
                  ("node", "server.js"))
    (pool,) = found.pools
    assert pool.size.source.label() == (
        "default: pg-pool 3.1.0 default (max || poolSize || 10; yarn.lock:6 pins pg-pool "
        "3.1.0)")


ROOT_LOCK = """{
  "name": "mono",
  "lockfileVersion": 3,
  "packages": {
    "node_modules/pg-pool": {
      "version": "3.11.0"
    }
  }
}
"""


def test_a_workspace_member_is_cited_at_the_root_lock(tmp_path):
    files = {"package.json": '{"name": "mono", "workspaces": ["apps/*"]}\n',
             "package-lock.json": ROOT_LOCK,
             "apps/api/package.json": '{"name": "api", "dependencies": {"pg": "^8.11.5"}}\n',
             "apps/api/server.js": NODE_PG}
    found = _read(tmp_path, files, ("node", "server.js"), "apps/api")
    (pool,) = found.pools
    assert pool.size.source.label() == (
        "default: pg-pool 3.11.0 default (max || poolSize || 10; package-lock.json:6 pins "
        "pg-pool 3.11.0)")


# review s26 F1: a module named by a template literal with `${...}`, a path.join, a
# concatenation, is loaded at run time: the walk is partial, the instances it does not
# reach still count (models/index.js's options not read: unknown), never dropped
@pytest.mark.parametrize("load", [
    "const job = require(`./jobs/${process.env.JOB}`);",
    "const job = require(path.join(__dirname, 'jobs', name));",
    "import(`./jobs/${name}.js`).then((m) => m.run());",
    "const job = require('./jobs/' + name);",
])
def test_a_module_named_by_an_expression_leaves_the_walk_partial(tmp_path, load):
    files = {**FILES, "server.js": SERVER + load + "\n"}
    found = _read(tmp_path, files, ("node", "server.js"))
    assert any("models/index.js:7" in u for u in found.unknown), found.unknown
    assert any("named at run time" in n and "models/index.js" in n for n in found.notices), \
        found.notices


def test_a_template_literal_without_interpolation_is_a_plain_import(tmp_path):
    files = {**FILES, "server.js": SERVER.replace('require("./db")', "require(`./db`)")}
    found = _read(tmp_path, files, ("node", "server.js"))
    (pool,) = found.pools
    assert pool.note == "new Sequelize at db.js:2" and found.unknown == []


WORKER = """const Sequelize = require("sequelize");
const jobs = new Sequelize(process.env.DB_NAME, process.env.DB_USER, process.env.DB_PASSWORD, {
  host: process.env.DB_HOST, dialect: "postgres", pool: { max: 40 },
});
module.exports = { jobs };
"""


# review s26 F2: every program the command runs is an entry; the served set is the union
@pytest.mark.parametrize(("start", "command"), [
    ("node server.js & node worker.js", ("npm", "start")),
    ("node worker.js & node server.js", ("npm", "start")),
    ("node server.js && node worker.js", ("npm", "start")),
    ("concurrently -n web,jobs \\\"node server.js\\\" \\\"node worker.js\\\"", ("npm", "start")),
    ("run-p web jobs", ("npm", "start")),
    ("pm2-runtime ecosystem.config.js", ("npm", "start")),
    (None, ("sh", "-c", "node server.js &\nnode worker.js")),
    (None, ("sh", "-c", "node server.js\nnode worker.js")),
])
def test_every_program_of_the_command_is_an_entry(tmp_path, start, command):
    scripts = {"start": start, "web": "node server.js", "jobs": "node worker.js"} \
        if start else {}
    package = PACKAGE.replace('"main"', f'"scripts": {_json(scripts)}, "main"')
    ecosystem = ("module.exports = { apps: [{ name: 'web', script: './server.js' }, "
                 "{ name: 'jobs', script: 'worker.js', instances: 1 }] };\n")
    files = {**FILES, "package.json": package, "worker.js": WORKER,
             "ecosystem.config.js": ecosystem}
    found = _read(tmp_path, files, command)
    assert sorted((p.size.value, p.size.source.path) for p in found.pools) == [
        (5, None), (40, "worker.js")], found
    assert any("models/index.js not counted" in n and "server.js" in n and "worker.js" in n
               for n in found.notices), found.notices


def _json(scripts: dict[str, str]) -> str:
    return "{" + ", ".join(f'"{k}": "{v}"' for k, v in scripts.items()) + "}"


def test_a_program_not_read_beside_the_entry_leaves_the_walk_partial(tmp_path):
    # `node $JOB` beside the server: which file it runs is not read, so the scaffold's
    # instance may run there (counted, unknown), not dropped
    found = _read(tmp_path, FILES, ("sh", "-c", "node server.js & node \"$JOB\""))
    assert any("models/index.js:7" in u for u in found.unknown), found.unknown
