"""A pool size or process count the code reads from a variable the container sets from a
Secret (or other reference) whose value the repository does not hold is unknown (PA106
names the variable), in every stack: never the expression's fallback (`getenv("X", 5)`,
`Number(process.env.X) || 10`, `${X:4}`) nor the library's default, which is not what runs.
Each case is read twice: with the variable set to 7 in the manifest (the code's path is
read: 7, or 7 processes) and from a Secret (unknown, naming it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine.check import CheckOptions, run_check
from advisor.model import Container, EnvVar, Source
from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.tree_helpers import POSTGRES_DB, write

PG_REQS = "sqlalchemy\npsycopg2\n"
SQLA_ENGINE = ('import os\nfrom sqlalchemy import create_engine\n'
               'engine = create_engine(os.environ["DATABASE_URL"], pool_size=4, '
               'max_overflow=0)\n')

# name: (files, the variable, command, what the variable sets: "size" or "processes")
CASES: dict[str, tuple[dict[str, str], str, tuple[str, ...], str]] = {
    "sqlalchemy int(getenv(X, default))": ({
        "app/db.py": 'import os\nfrom sqlalchemy import create_engine\n'
                     'engine = create_engine(os.environ["DATABASE_URL"], '
                     'pool_size=int(os.getenv("DB_POOL_SIZE", "5")), max_overflow=0)\n',
        "requirements.txt": PG_REQS}, "DB_POOL_SIZE", (), "size"),
    "sqlalchemy module constant from getenv(X) or N": ({
        "app/db.py": 'import os\nfrom sqlalchemy import create_engine\n'
                     'POOL = int(os.getenv("DB_POOL_SIZE") or 5)\n'
                     'engine = create_engine(os.environ["DATABASE_URL"], pool_size=POOL, '
                     'max_overflow=0)\n',
        "requirements.txt": PG_REQS}, "DB_POOL_SIZE", (), "size"),
    "psycopg_pool max_size": ({
        "svc/app.py": 'import os\nfrom psycopg_pool import ConnectionPool\n'
                      'pool = ConnectionPool(conninfo=os.environ["DATABASE_URL"], '
                      'max_size=int(os.environ.get("POOL_MAX", "20")))\n',
        "requirements.txt": "psycopg-pool\n"}, "POOL_MAX", (), "size"),
    "asyncpg max_size": ({
        "svc/app.py": 'import os, asyncpg\nasync def main():\n'
                      '    return await asyncpg.create_pool(os.environ["DATABASE_URL"], '
                      'max_size=int(os.getenv("POOL_MAX", "10")))\n',
        "requirements.txt": "asyncpg\n"}, "POOL_MAX", (), "size"),
    "node-postgres Number(X) || N": ({
        "src/db.js": 'const { Pool } = require("pg");\n'
                     'const MAX = Number(process.env.PG_POOL_MAX) || 10;\n'
                     'module.exports = new Pool({ connectionString: process.env.DATABASE_URL, '
                     'max: MAX });\n',
        "package.json": '{"dependencies": {"pg": "8"}}'}, "PG_POOL_MAX", (), "size"),
    "node-postgres Number(X ?? N)": ({
        "db.js": 'const { Pool } = require("pg");\n'
                 'const p = new Pool({ connectionString: process.env.DATABASE_URL, '
                 'max: Number(process.env.PGMAX ?? 10) });\n',
        "package.json": '{"dependencies": {"pg": "8"}}'}, "PGMAX", (), "size"),
    "node-postgres parseInt(X, 10)": ({
        "db.js": 'const { Pool } = require("pg");\n'
                 'const p = new Pool({ connectionString: process.env.DATABASE_URL, '
                 'max: parseInt(process.env.PGMAX, 10) });\n',
        "package.json": '{"dependencies": {"pg": "8"}}'}, "PGMAX", (), "size"),
    "knex pool.max": ({
        "knexfile.js": 'module.exports = { production: { client: "pg", connection: '
                       'process.env.DATABASE_URL, pool: { min: 2, max: '
                       'parseInt(process.env.KNEX_MAX || "10", 10) } } };\n',
        "package.json": '{"dependencies": {"knex": "3", "pg": "8"}}'}, "KNEX_MAX", (), "size"),
    "sequelize pool.max": ({
        "db.js": 'const { Sequelize } = require("sequelize");\n'
                 'const s = new Sequelize(process.env.DATABASE_URL, { dialect: "postgres", '
                 'pool: { max: Number(process.env.SEQ_MAX) || 5 } });\n',
        "package.json": '{"dependencies": {"sequelize": "6", "pg": "8"}}'}, "SEQ_MAX", (),
        "size"),
    "typeorm poolSize": ({
        "src/data-source.ts": 'import { DataSource } from "typeorm";\n'
                              'export const db = new DataSource({ type: "postgres", '
                              'url: process.env.DATABASE_URL, '
                              'poolSize: +(process.env.TYPEORM_POOL || 10) });\n',
        "package.json": '{"dependencies": {"typeorm": "0.3", "pg": "8"}}'}, "TYPEORM_POOL", (),
        "size"),
    "spring ${X:4} placeholder": ({
        "src/main/resources/application.yml":
            "spring:\n  datasource:\n    url: jdbc:postgresql://db:5432/shop\n"
            "    hikari:\n      maximum-pool-size: ${POOL_SIZE:4}\n",
        "pom.xml": "<project><artifactId>spring-boot-starter-data-jpa</artifactId></project>"},
        "POOL_SIZE", (), "size"),
    "database/sql SetMaxOpenConns(x) from a named variable": ({
        "main.go": 'package main\n\nimport (\n\t"database/sql"\n\t"os"\n\n'
                   '\t_ "github.com/lib/pq"\n)\n\n'
                   'func maxConns() int { return envInt("DATABASE_MAX_CONNS", 20) }\n\n'
                   'func main() {\n\tdb, _ := sql.Open("postgres", os.Getenv("DATABASE_URL"))\n'
                   '\tdb.SetMaxOpenConns(maxConns())\n}\n',
        "go.mod": "module x\n\nrequire github.com/lib/pq v1.10.9\n"},
        "DATABASE_MAX_CONNS", (), "size"),
    "gunicorn.conf.py workers": ({
        "gunicorn.conf.py": 'import os\nworkers = int(os.environ.get("GUNICORN_WORKERS", "3"))\n',
        "app/db.py": SQLA_ENGINE, "requirements.txt": "gunicorn\n" + PG_REQS},
        "GUNICORN_WORKERS", ("gunicorn", "app:app"), "processes"),
    "gunicorn WEB_CONCURRENCY": ({
        "app/db.py": SQLA_ENGINE, "requirements.txt": "gunicorn\n" + PG_REQS},
        "WEB_CONCURRENCY", ("gunicorn", "app:app"), "processes"),
    "uvicorn WEB_CONCURRENCY": ({
        "app/db.py": SQLA_ENGINE, "requirements.txt": "uvicorn\n" + PG_REQS},
        "WEB_CONCURRENCY", ("uvicorn", "app:app"), "processes"),
}


def _container(var: str, command: tuple[str, ...], hidden: bool) -> Container:
    here = Source(path="k8s/app.yaml", line=10)
    env = (EnvVar(name="DATABASE_URL", value="postgres://u@db:5432/x",
                  source=Source(path="k8s/app.yaml", line=11, key="DATABASE_URL")),
           EnvVar(name="NODE_ENV", value="production",
                  source=Source(path="k8s/app.yaml", line=12, key="NODE_ENV")),
           EnvVar(name=var, value=None if hidden else "7",
                  source=Source(path="k8s/app.yaml", line=13, key=var), secret=hidden,
                  from_ref="secret:app/pool" if hidden else None))
    return Container(name="app", image="acme/app:1", command=command, env=env, source=here)


@pytest.mark.parametrize("case", CASES)
def test_a_count_read_from_a_secret_variable_is_unknown(tmp_path, case):
    files, var, command, sets = CASES[case]
    write(tmp_path, files)
    app = scan_app_dir(Root.of(tmp_path), "")
    plain = pools_for_container(_container(var, command, hidden=False), app)
    # the code's path is read: the variable's 7 decides
    assert plain.unknown == [] and plain.pools, plain.notices
    if sets == "size":
        assert [p.size.value for p in plain.pools] == [7]
    else:
        assert [p.processes.value for p in plain.pools] == [7]
    hidden = pools_for_container(_container(var, command, hidden=True), app)
    assert hidden.unknown, (case, hidden.pools, hidden.notices)
    assert all(f"is set by {var} (k8s/app.yaml:13) from a secret or reference whose value "
               "is not in the repository" in why for why in hidden.unknown)
    if sets == "size":
        assert hidden.pools == []  # no default, no fallback
    # not also a guess said as a notice
    assert not any("statically" in n or "was not used" in n for n in hidden.notices)


def test_puma_and_sidekiq_counts_from_a_secret_variable_are_unknown(tmp_path):
    """Rails' generated puma.rb reads RAILS_MAX_THREADS and WEB_CONCURRENCY; Sidekiq
    reads RAILS_MAX_THREADS: from a Secret, those counts are unknown, not Puma's or
    Sidekiq's default 5."""
    write(tmp_path, {
        "Gemfile": "gem 'rails'\ngem 'pg'\ngem 'puma'\n",
        "config/puma.rb": 'threads_count = ENV.fetch("RAILS_MAX_THREADS") { 5 }\n'
                          "threads threads_count, threads_count\n"
                          'workers ENV.fetch("WEB_CONCURRENCY") { 2 }\n',
        "config/database.yml": "production:\n  adapter: postgresql\n  pool: 10\n"})
    app = scan_app_dir(Root.of(tmp_path), "")

    def read(var: str, hidden: bool, command: tuple[str, ...]):
        c = _container(var, command, hidden)
        env = (*c.env, EnvVar(name="RAILS_ENV", value="production",
                              source=Source(path="k8s/app.yaml", line=14, key="RAILS_ENV")))
        return pools_for_container(Container(name="app", image="acme/app:1", command=command,
                                             env=env, source=c.source), app)

    puma = ("bundle", "exec", "puma", "-C", "config/puma.rb")
    for var in ("RAILS_MAX_THREADS", "WEB_CONCURRENCY"):
        assert read(var, hidden=False, command=puma).unknown == []
        assert read(var, hidden=True, command=puma).unknown == [
            f"Puma {'max threads' if var == 'RAILS_MAX_THREADS' else 'workers'} is set by "
            f"{var} (k8s/app.yaml:13) from a secret or reference whose value is not in the "
            "repository"]
    sidekiq = ("bundle", "exec", "sidekiq")
    assert read("RAILS_MAX_THREADS", hidden=False, command=sidekiq).unknown == []
    assert read("RAILS_MAX_THREADS", hidden=True, command=sidekiq).unknown == [
        "Sidekiq concurrency is set by RAILS_MAX_THREADS (k8s/app.yaml:13) from a secret or "
        "reference whose value is not in the repository"]
    # a command-line count wins over the variable: then nothing is unknown
    assert read("RAILS_MAX_THREADS", hidden=True,
                command=(*sidekiq, "-c", "3")).unknown == []


NODE_WEB = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: app
          image: acme/web:1
          env:
            - {name: DATABASE_URL, value: "postgres://web@db:5432/shop"}
            - name: PG_POOL_MAX
              valueFrom: {secretKeyRef: {name: web-secrets, key: pool}}
"""


def test_node_pool_from_a_secret_leaves_the_budget_a_floor_end_to_end(tmp_path):
    """The whole check: a node-postgres pool sized by `Number(process.env.PG_POOL_MAX) ||
    10` with PG_POOL_MAX from a Secret is not 3 x 10 "fits": web is unknown (PA106 naming
    the variable), the budget a floor."""
    files = CASES["node-postgres Number(X) || N"][0]
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/web.yaml": NODE_WEB,
                     **{f"{name}": text for name, text in files.items()}})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.unknown_clients == ["web"] and not budget.fits
    (pa106,) = [f for f in result.findings if f.code == "PA106"]
    assert "PG_POOL_MAX (k8s/web.yaml:14) from a secret" in pa106.message, pa106.message
    assert not [f for f in result.findings if f.code == "PA104"]  # no default applied
    # the same tree with the value in the manifest: 3 x 15 counted
    write(tmp_path, {"k8s/web.yaml": NODE_WEB.replace(
        "valueFrom: {secretKeyRef: {name: web-secrets, key: pool}}", 'value: "15"')})
    counted = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert counted.budgets[0].unknown_clients == [] and counted.budgets[0].peak == 45


def test_hidden_values_propagate_through_the_evaluators():
    """The evaluators' own contract: an unknown that names its variable survives casts,
    `or`/`||`/`??`, arithmetic, max/min and str(); a plain unknown (not from a Secret)
    keeps the old behaviour (`||` takes its right side)."""
    import ast

    from advisor.read.apps.jsparse import JsParser, JsScope, tokenize
    from advisor.read.apps.pyeval import PyScope, evaluate

    secret = {"X": EnvVar(name="X", source=Source(path="k.yaml", line=3), secret=True,
                          from_ref="secret:s/k")}
    py = PyScope(path="a.py", env=secret, cpus=4)
    for expr in ('int(os.getenv("X", "5"))', 'os.getenv("X") or 5',
                 'int(os.environ["X"]) * 2', 'max(int(os.getenv("X", 1)), 4)',
                 'str(os.getenv("X", 3))', '-int(os.getenv("X"))'):
        v = evaluate(ast.parse(expr, mode="eval").body, py)
        assert v is not None and v.hidden == "X", expr
    for expr in ("Number(process.env.X) || 10", "parseInt(process.env.X ?? '4', 10)",
                 "+process.env.X * 2", "(process.env.X || 3) + 1"):
        toks = tokenize(expr)
        v, _ = JsParser(toks, JsScope(path="a.js", env=secret, cpus=4, names={})).expr(0)
        assert v is not None and v.hidden == "X", expr
    unset = JsScope(path="a.js", env={}, cpus=4, names={})
    v, _ = JsParser(tokenize("Number(process.env.X) || 10"), unset).expr(0)
    assert v is not None and v.value == 10 and not v.hidden


def test_fixture_layouts_still_read_the_manifest_values():
    """The bundled app fixtures, whose variables have values: unchanged (no unknown)."""
    fix = Path(__file__).parent / "fixtures_apps"
    from tests.apphelpers import containers_of

    for stack in ("node_pg", "hikari", "ecto"):
        app = scan_app_dir(Root.of(fix / stack), "")
        (first, *_) = containers_of(fix / stack, "k8s/deployment.yaml")
        assert pools_for_container(first, app).unknown == [], stack
