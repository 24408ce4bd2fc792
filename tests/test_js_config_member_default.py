"""`max: config.DB_POOL_MAX` where the app's own config module defines the member from
the environment with a default written in code (FCFColin/backtest-platform's
packages/backend/src/config/databaseConfig.ts: `DB_POOL_MAX: parseInt(process.env.
DB_POOL_MAX || '20', 10)`, read by `max: config.DB_POOL_MAX` in db/pool.ts): the env's
value when the container sets it, the code's default (cited where written) when it does
not, unknown when a Secret sets it. It was an unknown size in every case (audit 10d N5:
13 pods counted 1 each, real 13 x 20)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, deployment, write

APP = {
    "backend/package.json": '{"name": "api", "dependencies": {"pg": "8.11.3"}}\n',
    "backend/Dockerfile": 'FROM node:20-alpine\nCOPY . .\nCMD ["node", "src/index.js"]\n',
    "backend/src/index.js": "require('./db');\n",
    "backend/src/db.js": """
        import pg from 'pg';
        import { config } from './config/index.js';
        const poolConfig = { connectionString: config.DATABASE_URL, max: config.DB_POOL_MAX };
        export const pool = new pg.Pool(poolConfig);
        """,
    "backend/src/config/database.js": """
        export const databaseConfig = {
          DATABASE_URL: process.env.DATABASE_URL || 'postgresql://a@localhost/a',
          DB_POOL_MAX: parseInt(process.env.DB_POOL_MAX || '20', 10),
        };
        """,
    "backend/src/config/index.js": """
        import { databaseConfig } from './database.js';
        export const config = Object.assign({}, databaseConfig);
        """,
    # a test's mock config: a literal, no definition of the member
    "backend/src/helpers/mock.js": "export const fake = { DB_POOL_MAX: 5 };\n",
}
URL = "postgresql://app:pw@db:5432/app"


def _budget(tmp_path, env: dict[str, str | None], extra: dict[str, str] | None = None):
    root = write(tmp_path, {**APP, **(extra or {}), "k8s/db.yaml": POSTGRES_DB,
                            "k8s/api.yaml": deployment("api", "ghcr.io/acme/api:1", env)})
    result = run_check([str(root)], CheckOptions(cache=False))
    return result, next(b for b in result.budgets if b.server == "db")


def _size(budget):
    """The pool size term of the api's one contribution (pods x size)."""
    (contribution,) = budget.contributions
    return contribution.factors[-1]


def test_unset_member_takes_the_code_default_cited_where_written(tmp_path):
    _, db = _budget(tmp_path, {"DATABASE_URL": URL})
    assert db.unknown_clients == [] and not db.peak_is_floor
    assert db.peak == 2 * 20
    size = _size(db)
    assert size.value == 20
    assert size.source.label() == "backend/src/config/database.js:4"
    assert size.source.key == "DB_POOL_MAX (default)"


def test_member_set_in_the_manifest_is_that_value(tmp_path):
    _, db = _budget(tmp_path, {"DATABASE_URL": URL, "DB_POOL_MAX": "7"})
    assert db.peak == 2 * 7
    size = _size(db)
    assert size.source.path == "k8s/api.yaml" and size.source.key == "DB_POOL_MAX"


def test_member_from_a_secret_is_unknown(tmp_path):
    _, db = _budget(tmp_path, {"DATABASE_URL": URL, "DB_POOL_MAX": None})
    assert db.unknown_clients == ["api"] and db.peak_is_floor


def test_two_definitions_that_disagree_are_not_read(tmp_path):
    other = {"backend/src/config/legacy.js":
             "export const legacy = { DB_POOL_MAX: Number(process.env.DB_POOL_MAX) || 9 };\n"}
    _, db = _budget(tmp_path, {"DATABASE_URL": URL}, other)
    assert db.unknown_clients == ["api"]


ENV_FROM = "          envFrom:\n            - configMapRef: {name: extra-tuning}\n"


def _with_env_from(text: str) -> str:
    return text.replace("          env:\n", ENV_FROM + "          env:\n")


DIRECT = {"backend/src/db.js": """
        import pg from 'pg';
        export const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL,
                                          max: parseInt(process.env.DB_POOL_MAX || '20', 10) });
        """}


def test_an_env_from_source_not_held_may_set_it_so_no_code_default(tmp_path):
    # review s26 F8: a ConfigMap not in the repository, given by envFrom, may set
    # DB_POOL_MAX: its value is unknown (naming that ConfigMap), never the code's 20
    # (`config.DB_POOL_MAX` through the config module, and `process.env.X || '20'`)
    for extra in (None, DIRECT):
        root = write(tmp_path / str(bool(extra)), {
            **APP, **(extra or {}), "k8s/db.yaml": POSTGRES_DB,
            "k8s/api.yaml": _with_env_from(deployment("api", "ghcr.io/acme/api:1",
                                                      {"DATABASE_URL": URL}))})
        result = run_check([str(root)], CheckOptions(cache=False))
        db = next(b for b in result.budgets if b.server == "db")
        assert db.unknown_clients == ["api"] and db.peak_is_floor
