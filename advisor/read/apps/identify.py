"""The stack of a client whose pool settings no reader found: from its connection URL's
scheme, then the driver or framework in its dependency files. When identified, the
library's default pool applies (bound="default", so PA104 names it); when not, the
client stays unknown (PA106). Pure: reads only the StackContext.

Defaults are the ones the stack readers use (each cited there and in PA104):
SQLAlchemy QueuePool 5 + 10 overflow, Django one connection per thread, HikariCP 10,
Active Record 5, node-postgres 10, Sequelize 5, Knex 10, TypeORM 10, pg-boss 10, Ecto 10,
pgx pgxpool max(4, NumCPU), Go database/sql no limit, asyncpg 10, psycopg_pool 4; Rust's
sqlx 10, r2d2 10, deadpool-postgres 4 x physical CPUs (apps/rust.py).
"""

from __future__ import annotations

import posixpath
import re

from msgspec import Struct
from msgspec.structs import replace

from advisor.lazyregex import lazy
from advisor.model import CpuFormula, Pool, Route, Source
from advisor.read import jsontext
from advisor.read.apps.base import StackContext
from advisor.read.apps.source import AppFile, auxiliary_script, go_imports


class Stack(Struct, frozen=True):
    label: str
    size: int  # per process; 0 = unbounded; -1 = pgx CPU formula
    default_text: str
    per_process: bool = True
    note: str = ""


SQLALCHEMY = Stack("SQLAlchemy QueuePool (pool_size 5 + max_overflow 10)", 15,
                   "SQLAlchemy 2.x QueuePool default pool_size 5 + max_overflow 10")
DJANGO = Stack("Django connection per thread", 1,
               "Django: one connection per thread per alias (CONN_MAX_AGE, no pool)")
HIKARI = Stack("HikariCP maximumPoolSize", 10, "HikariCP default maximumPoolSize 10",
               per_process=False)
RAILS = Stack("Rails pool", 5, "Active Record default pool 5 (HashConfig#pool)")
NODE_PG = Stack("node-postgres Pool max", 10, "pg-pool 3.14 default (max || poolSize || 10)")
POSTGRES_JS = Stack("postgres.js max", 10, "postgres.js 3.4/4.2 default max 10 (parseOptions)")
SEQUELIZE = Stack("Sequelize pool.max", 5, "Sequelize v6 default pool.max 5")
KNEX = Stack("Knex pool.max", 10, "Knex default pool { min: 2, max: 10 }")
TYPEORM = Stack("TypeORM poolSize", 10, "TypeORM passes no max: pg-pool default 10")
ECTO = Stack("Ecto pool_size", 10, "Ecto 3.x default pool_size 10", per_process=False)
PGX = Stack("pgxpool pool_max_conns", -1, "pgxpool default max(4, NumCPU)",
            per_process=False)
GO_SQL = Stack("database/sql MaxOpenConns", 0, "Go database/sql default 0 = no limit",
               per_process=False)
PG_BOSS = Stack("pg-boss pg.Pool max", 10,
                "pg-boss sets no max: pg-pool default (max || poolSize || 10)")
ASYNCPG = Stack("asyncpg create_pool max_size", 10, "asyncpg default max_size 10")
# Celery's database result backend (`db+postgresql://`) opens its own SQLAlchemy engine:
# in a prefork worker child (`forked`, set by the after-fork hook billiard runs) a cached
# create_engine(dburi), QueuePool 5 + 10; anywhere else (the web processes that send tasks
# and read results, a solo or thread-pool worker) create_engine(dburi, poolclass=NullPool),
# one connection per use (celery/backends/database/session.py SessionManager.get_engine,
# Celery 4.x-5.x). gunicorn forks with os.fork, which runs no such hook.
CELERY_DB_CHILD = Stack(
    "Celery database result backend QueuePool (pool_size 5 + max_overflow 10)", 15,
    "Celery database result backend in a prefork child: create_engine(dburi), SQLAlchemy "
    "QueuePool 5 + 10 (celery/backends/database/session.py SessionManager.get_engine)")
CELERY_DB_NULLPOOL = Stack(
    "Celery database result backend NullPool (one connection per use)", 1,
    "Celery database result backend outside a prefork child: create_engine(dburi, "
    "poolclass=NullPool) (celery/backends/database/session.py SessionManager.get_engine)")

# (dependency name pattern, stack), most specific first: an ORM before its driver.
_PYTHON = ((r"django", DJANGO), (r"flask[-_]sqlalchemy|sqlalchemy|sqlmodel", SQLALCHEMY),
           (r"asyncpg", ASYNCPG))
_RUBY = ((r"rails|activerecord", RAILS),)
_NODE = ((r"sequelize", SEQUELIZE), (r"knex", KNEX), (r"typeorm", TYPEORM),
         (r"pg|pg-pool", NODE_PG), (r"postgres", POSTGRES_JS), (r"pg-boss", PG_BOSS))
_GO = ((r"github\.com/jackc/pgx/v\d+", PGX), (r"github\.com/lib/pq", GO_SQL))
_ELIXIR = ((r"ecto_sql|postgrex", ECTO),)
_JAVA = ((r"spring-boot-starter-(?:jdbc|data-jpa)|HikariCP", HIKARI),)


def _scheme_stack(url: str) -> Stack | None:
    lower = url.strip().lower()
    if lower.startswith("ecto://"):
        return ECTO
    # jdbc:postgresql names pgjdbc, the driver, not the pool (HikariCP, c3p0, DBCP,
    # Agroal, WildFly's IronJacamar: Metabase's c3p0 holds 15): a JDBC URL alone is
    # no pool size; dependencies or a known image name the pool
    if re.match(r"postgres(?:ql)?\+asyncpg://", lower):
        return SQLALCHEMY  # SQLAlchemy's async engine (AsyncAdaptedQueuePool, same sizes)
    if re.match(r"postgres(?:ql)?\+[\w.-]+://", lower):
        return SQLALCHEMY
    return None


# pyproject.toml tables whose keys are dependency names (Poetry: `Django = "^4"`,
# `[tool.poetry.group.<g>.dependencies]`; PDM/uv dev tables list requirement strings)
_KEYED_TABLES = lazy(r"tool\.poetry\.(?:dev-)?dependencies|tool\.poetry\.group\.[\w.-]+"
                     r"\.dependencies")


_NPM_DEP_KEYS = ("dependencies", "devDependencies", "optionalDependencies",
                 "peerDependencies")


def _npm_deps(f: AppFile) -> list[tuple[str, int]]:
    """(dependency name, line) pairs of a package.json: the keys of its dependency objects,
    not a script named like a library (`"typeorm": "ts-node ..."` in scripts was cited as
    the stack's evidence: sovannarapov/nestjs-k8s, package.json:21 for the dependency on
    line 54). Text that is no JSON object: every key, loosely, as before."""
    keys = [(q.group(1), n) for n, line in enumerate(f.text.splitlines(), 1)
            for q in re.finditer(r'"(@?[\w./-]+)"\s*:', line)]
    try:
        doc = jsontext.loads(f.text)
    except ValueError:
        return keys
    if not isinstance(doc, dict):
        return keys
    names = {k for key in _NPM_DEP_KEYS if isinstance(doc.get(key), dict) for k in doc[key]}
    out: list[tuple[str, int]] = []
    section = None  # the top-level object a pretty-printed line is in
    for n, line in enumerate(f.text.splitlines(), 1):
        if (opened := re.match(r'\s*"([\w-]+)"\s*:\s*\{\s*$', line)) is not None:
            section = opened.group(1)
            continue
        if re.match(r"\s*\}", line):
            section = None
            continue
        if section is None or section in _NPM_DEP_KEYS:
            out.extend((q.group(1), n) for q in re.finditer(r'"(@?[\w./-]+)"\s*:', line)
                       if q.group(1) in names)
    return out


def _deps(f: AppFile) -> list[tuple[str, int]]:
    """(dependency name, line) pairs of one manifest, loosely: names only, no versions."""
    if f.name == "package.json":
        return _npm_deps(f)
    out = []
    table = ""  # the pyproject.toml table a line is in
    for n, line in enumerate(f.text.splitlines(), 1):
        text = line.split("#", 1)[0].strip() if f.kind == "deps" else line.strip()
        if not text:
            continue
        if f.name == "pyproject.toml" and (header := re.fullmatch(r"\[([^\[\]]+)\]", text)):
            table = header.group(1).replace('"', "").replace(" ", "")
            continue
        if table and _KEYED_TABLES.fullmatch(table) and (
                key := re.match(r"""["']?([A-Za-z][\w.-]*)["']?\s*=""", text)) \
                and key.group(1).lower() != "python":
            out.append((key.group(1), n))
            continue
        if f.name == "package.json":
            continue  # _npm_deps: keys of its dependency objects only
        elif f.name == "go.mod":
            m = re.match(r"(?:require\s+)?([\w.-]+\.[\w./-]+)\s+v", text)
        elif f.name == "mix.exs":
            m = re.search(r"\{:(\w+)\s*,", text)
        elif f.kind == "build":
            m = re.search(r"<artifactId>([\w.-]+)</artifactId>|['\"][\w.-]+:([\w.-]+)", text)
        elif f.name.startswith("Gemfile"):
            m = re.match(r"gem\s+['\"]([\w-]+)['\"]|\s*([\w-]+) \(", line)
        elif f.name in ("pyproject.toml", "Pipfile", "setup.cfg"):
            # names in quoted requirement strings anywhere on the line ("flask-sqlalchemy>=2")
            for q in re.finditer(r"['\"]([A-Za-z][\w.-]*)(?:\[[^\]]*\])?\s*(?:[<>=~!;]|['\"])",
                                 text):
                out.append((q.group(1), n))
            m = re.match(r"([A-Za-z][\w.-]*)\s*=\s*['\"{*]", text) if f.name == "Pipfile" \
                else None
        else:  # requirements
            m = re.match(r"([A-Za-z][\w.-]*)(?:\[[^\]]*\])?\s*(?:[<>=~!;@]|$)", text)
        if m:
            name = next((g for g in m.groups() if g), "")
            if name:
                out.append((name, n))
    return out


def _go_linked(ctx: StackContext, dep: str, go_mod: AppFile) -> bool:
    """Whether a go.mod requirement is in the binary: always for a module read whole; for
    the module above a main package (read with the packages it imports: source.
    _go_imported_files), only when one of the files read imports it. DeepakGiri2/
    GoConnect's cmd/gateway imports no database package, yet the module's lib/pq made it
    an unbounded database/sql client (PA102 error) of a server it never connects to."""
    if not go_mod.rel.startswith("../"):
        return True
    return any(path == dep or path.startswith(dep + "/")
               for f in ctx.files("go") for path in go_imports(f.text))


def _dep_stack(ctx: StackContext) -> tuple[Stack, Source] | None:
    groups = (("deps", _PYTHON), ("deps", _RUBY), ("package-json", _NODE), ("go-mod", _GO),
              ("mix", _ELIXIR), ("build", _JAVA))
    for kind, table in groups:
        files = [f for f in ctx.files(kind)
                 if kind != "deps" or (table is _RUBY) == f.name.startswith("Gemfile")]
        found: list[tuple[str, int, AppFile]] = [(d, n, f) for f in files
                                                 for d, n in _deps(f)]
        if kind == "go-mod":
            found = [x for x in found if _go_linked(ctx, x[0], x[2])]
        for pattern, stack in table:
            for dep, line, f in found:
                if re.fullmatch(pattern, dep, re.I):
                    return stack, f.cite(line, dep, dep)
    return None


def identified_pools(ctx: StackContext, route: Route | None) -> list[Pool]:
    """The library default of the stack the URL scheme or dependencies name, or []."""
    found: tuple[Stack, Source] | None = None
    if route is not None and route.source.key:
        var = ctx.env(route.source.key)
        if var is not None and var.value and var.value.strip().lower().startswith("db+"):
            return [_celery_backend_pool(ctx, route, var.value)]
        if var is not None and var.value and (stack := _scheme_stack(var.value)):
            scheme = var.value.strip().split("//", 1)[0].rstrip(":/")
            found = stack, replace(ctx.env_source(route.source.key),
                                   key=f"the URL scheme {scheme}:// of {route.source.key}")
    found = found or _dep_stack(ctx)
    if found is None:
        from advisor.read.apps.rust import cargo_stack, default_pool

        crate = cargo_stack(ctx)
        return [default_pool(ctx, *crate, route)] if crate else []
    stack, evidence = found
    why = f"stack identified by {evidence.key} ({evidence.label()}); no pool setting read"
    src = Source.default_of(stack.default_text, key=stack.label)
    if stack.size == 0:
        return [ctx.pool(stack.label, 0, src, route=route, bound="unbounded",
                         per_process=stack.per_process, note=why)]
    if stack.size == -1:
        formula = CpuFormula(per_cpu=1, floor=4, text="max(4, runtime.NumCPU())")
        return [ctx.pool(stack.label, formula.at(ctx.cpus), src, route=route,
                         per_process=False, note=why, cpu=formula)]
    size = stack.size
    threads = ctx.processes().threads
    if stack is RAILS and (from_url := _rails_url_pool(ctx)) is not None:
        # Active Record merges DATABASE_URL into the config it builds when the app has
        # no config/database.yml, and the URL's ?pool= is its pool (ConnectionUrlResolver)
        from advisor.read.apps.rails import _capped_by_threads

        pool = _capped_by_threads(ctx, stack.label, *from_url, route)
        return [replace(pool, note="; ".join(n for n in (
            f"stack identified by {evidence.key} ({evidence.label()})", pool.note) if n))]
    if stack is DJANGO and ctx.processes().asgi:
        # under an ASGI server each request in flight runs in a thread of its own with
        # its own connection (django.asgi_pool), whatever settings were not read
        from advisor.read.apps.django import asgi_pool

        pool = asgi_pool(ctx, "Django default", "default", route)
        return [replace(pool, note=f"{why}; {pool.note}" if pool.note else why)]
    if stack is DJANGO and threads is not None:
        size = int(threads.value)
        why += f"; {threads.show()}"
    elif stack is RAILS and threads is not None and threads.value < size:
        # one connection per thread that can hold one (advisor/read/apps/rails.py)
        size = int(threads.value)
        why += f"; capped by {threads.show()}"
    return [ctx.pool(stack.label, size, src, route=route, bound="default",
                     per_process=stack.per_process, note=why)]


def _celery_backend_pool(ctx: StackContext, route: Route, url: str) -> Pool:
    """The pool of a container whose only PostgreSQL URL is a Celery `db+` result
    backend: Celery's own engine, not the application's (yolossn/flask-celery-
    microservice's Flask server was given SQLAlchemy's QueuePool 15 per gunicorn worker
    from requirements.txt, while only Celery's backend, a NullPool there, connects)."""
    info = ctx.processes()
    scheme = url.strip().split("//", 1)[0].rstrip(":/")
    why = f"the URL scheme {scheme}:// of {route.source.key} is Celery's database result backend"
    if info.server == "celery" and info.threads is None and info.processes is not None:
        stack = CELERY_DB_CHILD
        size = stack.size
    else:
        stack = CELERY_DB_NULLPOOL
        size = int(info.threads.value) if info.threads is not None else 1
        if info.threads is not None:
            why += f"; {info.threads.show()}"
    src = Source.default_of(stack.default_text, key=stack.label)
    return ctx.pool(stack.label, size, src, route=route, bound="default", note=why)


def _rails_url_pool(ctx: StackContext) -> tuple[int, Source] | None:
    """DATABASE_URL's ?pool=N in the container env, with where it is set."""
    from urllib.parse import parse_qs, urlsplit

    var = ctx.env("DATABASE_URL")
    if var is None or not var.value:
        return None
    try:
        found = (parse_qs(urlsplit(var.value.strip()).query).get("pool") or [""])[-1]
    except ValueError:
        return None
    if not found.isdigit():
        return None
    return int(found), replace(ctx.env_source("DATABASE_URL"), key="DATABASE_URL ?pool=")


# A dependency that is, or may be, a database library or what builds on one (a driver, an
# ORM, a query builder, a pool, a framework's data module): loose on purpose, since an app
# taken for no client is in no budget.
_MAY_BE_DATABASE = lazy(
    r"sql|pg|postgres|psycopg|db|orm|prisma|knex|sequelize|ecto|hikari|jdbc|r2dbc|diesel|"
    r"hibernate|jpa|persist|data|slonik|kysely|drizzle|objection|peewee|tortoise|pony|"
    r"piccolo|record|rails|django|spring|quarkus|micronaut|npgsql|entity|dapper|pool|"
    r"vertx|jooq|mybatis|exposed|doobie|skunk|slick|store|repo", re.I)
_DEPENDENCY_KINDS = ("deps", "package-json", "go-mod", "mix", "build")


def names_no_database_library(ctx: StackContext) -> str | None:
    """The dependency files read, when there are some, every dependency they name is
    read, and none is or may be a database library (bitcoin-trader's requirements.txt:
    requests, pyupbit, schedule); else None. Cargo crates count as names too."""
    files = [f for kind in _DEPENDENCY_KINDS for f in ctx.files(kind)]
    names = [d for f in files for d, _ in _deps(f)]
    cargo = ctx.files("cargo")
    if cargo:
        from advisor.read.apps.rust import cargo_crates

        names += [name for f in cargo for name in cargo_crates(f)]
    if not names or any(_MAY_BE_DATABASE.search(n) for n in names):
        # a Go module's go.mod names the drivers of all its commands: what one main
        # package imports says whether its binary can open a connection
        return go_imports_no_database(ctx.files("go", "go-mod"))
    shown = ", ".join(f.path for f in [*files, *cargo][:3])
    return f"{shown} name{'s' if len(files) + len(cargo) == 1 else ''} no database " \
        f"library ({', '.join(dict.fromkeys(names[:6]))})"


def go_imports_no_database(files: list[AppFile]) -> str | None:
    """Pure: why a Go binary opens no database connection, when its Go files read (the
    main package and, transitively, the packages of its module it imports:
    source._go_imported_files) import no package that is or may be a database library
    (database/sql, lib/pq, pgx, GORM, sqlx all match _MAY_BE_DATABASE) and every package
    of the module they import was read. A gateway given the database Secret by envFrom
    (Chandu00756/Taskflow's gateway/, DeepakGiri2/GoConnect's cmd/gateway: gRPC, Redis,
    JWT) was counted as a floor of 1 connection a pod, though Go's database/sql is the
    only way to one and it never imports it. None when anything is unread (a module
    package, a second go.mod) or an import may be a database library."""
    go = [f for f in files if f.kind == "go" and not f.name.endswith("_test.go")
          and not auxiliary_script(f.rel)]
    mods = [f for f in files if f.kind == "go-mod"]
    if not go or len(mods) != 1 or (m := _GO_MODULE_LINE.search(mods[0].text)) is None:
        return None
    module = m.group(1)
    module_dir = posixpath.dirname(mods[0].path)
    read = {posixpath.dirname(f.path) for f in go}
    for f in go:
        for path in go_imports(f.text):
            if path == module or path.startswith(module + "/"):
                package = posixpath.join(module_dir, path[len(module) + 1:]) \
                    if path != module else module_dir
                if package not in read:
                    return None  # a package of its module not read: it may open one
            elif any(_GO_DB_PART.match(part) for part in path.lower().split("/")):
                return None
            elif _same_owner(path, module):
                return None  # the owner's other module (a platform kit) may wrap a driver
    packages = len(read)
    return (f"its Go code ({len(go)} files in {packages} package{'s' if packages != 1 else ''}"
            f" of module {module}: the main package and those it imports) imports no "
            "database driver or pool (no database/sql, pgx, lib/pq, GORM or sqlx), so it "
            "opens no connection")


def _same_owner(path: str, module: str) -> bool:
    """Pure: whether import `path` is a module of the same host and owner as `module`
    (github.com/acme/platform/kit beside module github.com/acme/tasks): a wrapper its
    owner wrote, whose name says nothing of the driver it may open."""
    mine = module.lower().split("/")
    theirs = path.lower().split("/")
    return len(mine) >= 3 and "." in mine[0] and theirs[:2] == mine[:2]


_GO_MODULE_LINE = lazy(r"^module\s+\"?([^\s\"]+)", re.M)
# A part of a Go import path that is or may be a database library's: database/sql,
# lib/pq, jackc/pgx/v5/pgxpool, gorm.io/driver/postgres, jmoiron/sqlx, entgo.io/ent,
# uptrace/bun, go-pg/pg, gobuffalo/pop, xorm.io/xorm, a module's own store/repository;
# word parts (not _MAY_BE_DATABASE's substrings, which grpc/metadata's "data" matched)
_GO_DB_PART = lazy(r"^(?:.*(?:sql|postgres|gorm|database|persist|entgo|mongo|redshift|"
                   r"cockroach|spanner|dynamo|bigquery|clickhouse).*|pg.*|.*db|db.*|pq|ent|bun|"
                   r"xorm(?:\..*)?|pop|orm|dal|goqu|squirrel|store|storage|repo|repository|"
                   r"reform|rel|upper|dbr)$")
