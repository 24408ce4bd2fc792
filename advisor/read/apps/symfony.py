"""Symfony with Doctrine (composer.json requires doctrine/doctrine-bundle or
symfony/orm-pack) on PostgreSQL: one DBAL connection per PHP process, as apps/laravel.py
counts Laravel's.

DoctrineBundle's recipe configures the default connection as
`url: '%env(resolve:DATABASE_URL)%'` (symfony/recipes doctrine/doctrine-bundle
config/packages/doctrine.yaml); the DBAL connection is opened on the first query and
kept for the process's life (a php-fpm child serves request after request with it
closed at the request's end; a worker, Messenger's consumer, keeps it), so a process
holds at most one.

DATABASE_URL: the container's env, else the app's dotenv files as symfony/dotenv's
Dotenv::loadEnv reads them, a later one overriding an earlier one and a real env
variable never overridden: .env, .env.local (not when APP_ENV is test), .env.$APP_ENV,
.env.$APP_ENV.local, APP_ENV from the env, else the files, else `dev`
(symfony/dotenv Dotenv.php loadEnv). `composer dump-env` compiles the same files into
.env.local.php at build time.

Processes: `bin/console ...` (messenger:consume, a migration): one; FrankenPHP: not read
(said in unknown); else php-fpm children (apps/laravel.py fpm_pools).
"""

from __future__ import annotations

from msgspec.structs import replace

from advisor.model import Pool, Route, Source
from advisor.read import jsontext
from advisor.read.apps.base import StackContext
from advisor.read.apps.laravel import fpm_pools
from advisor.read.apps.source import dotenv_values
from advisor.read.apps.urls import route_from_url

LABEL = "Symfony/Doctrine DBAL connection per PHP process"
CONNECTION = Source.default_of(
    "Doctrine DBAL: one connection per PHP process, opened on its first query "
    "(no persistent connections by default)", key="DBAL")
_PACKAGES = ("doctrine/doctrine-bundle", "symfony/orm-pack")
_PG_SCHEMES = ("postgres://", "postgresql://", "pgsql://", "pdo-pgsql://")


def is_doctrine(ctx: StackContext) -> Source | None:
    """Where composer.json requires DoctrineBundle, or None."""
    for f in ctx.files("composer"):
        try:
            doc = jsontext.loads(f.text)
        except ValueError:
            continue
        require = doc.get("require") if isinstance(doc, dict) else None
        for name in _PACKAGES:
            if isinstance(require, dict) and name in require:
                line = f.text[:f.text.find(name)].count("\n") + 1
                return f.cite(line, name)
    return None


def _from_dotenv(ctx: StackContext, name: str) -> tuple[str, Source] | None:
    """NAME as symfony/dotenv's loadEnv leaves it from the app's root dotenv files."""
    files = {f.rel: f for f in ctx.files("dotenv") if "/" not in f.rel}
    var = ctx.env("APP_ENV")
    env = var.value if var is not None and var.value else None
    if env is None and ".env" in files:
        got = dotenv_values(files[".env"]).get("APP_ENV")
        env = got[0] if got else None
    env = env or "dev"
    order = [".env", *([".env.local"] if env != "test" else []), f".env.{env}",
             f".env.{env}.local"]
    value: tuple[str, Source] | None = None
    for rel in order:
        if rel in files and (got := dotenv_values(files[rel]).get(name)) is not None:
            value = (got[0], files[rel].cite(got[1], name))
    return value


def _database_url(ctx: StackContext) -> tuple[str, Source] | bool | None:
    """(DATABASE_URL, where) the app reads; True when the env sets it from a source not
    held here (the linker follows the env variable where it can), None when not set."""
    var = ctx.env("DATABASE_URL")
    if var is not None and var.value is not None:
        return var.value, var.source
    if var is not None or ctx.env_from_hidden("DATABASE_URL") is not None:
        return True
    return _from_dotenv(ctx, "DATABASE_URL")


def symfony_pools(ctx: StackContext) -> list[Pool]:
    evidence = is_doctrine(ctx)
    if evidence is None or ctx.container.role == "init":
        return []
    url = _database_url(ctx)
    if url is None or url is False:
        return []  # no DATABASE_URL: Doctrine configured otherwise, not read
    route: Route | None = None
    if isinstance(url, tuple):
        text, where = url
        if not text.strip().lower().startswith(_PG_SCHEMES):
            return []  # mysql://, sqlite:///: not PostgreSQL
        route = route_from_url(text, where)
    pool = ctx.pool(LABEL, 1, CONNECTION, route=route, per_process=False,
                    note=f"Symfony with Doctrine ({evidence.label()}): at most one DBAL "
                         "connection per PHP process")
    words = [t for w in (*ctx.container.command, *ctx.container.args) for t in w.split()]
    names = [w.rsplit("/", 1)[-1] for w in words]
    if "console" in names:
        return [pool]  # messenger:consume, a migration: one PHP process
    if any(n.startswith("frankenphp") for n in names) or any(
            "frankenphp" in f.text.lower() for f in ctx.files("dockerfile")):
        ctx.unknown.append(f"{LABEL}: FrankenPHP's PHP threads and workers (Caddyfile "
                           "`frankenphp` num_threads, worker num) are not read by "
                           "pool-advisor")
    else:
        found = fpm_pools(ctx, pool, words, LABEL)
        if found:
            return found
    # the size is not known (said in unknown); the one process it has at least is kept,
    # so that the workload is linked where its DATABASE_URL leads, a floor
    return [replace(pool, bound="default")]
