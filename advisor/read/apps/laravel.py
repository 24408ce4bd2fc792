"""Laravel (composer.json requires laravel/framework) on PostgreSQL: one PDO connection
per PHP process that serves it, the model apps/nextcloud.py applies to Nextcloud's image.

PDO without persistent connections opens one connection per process for the request it
serves and Laravel's DatabaseManager reuses it within the request, so a pod holds at most
one per worker:
- php-fpm (the container runs php-fpm, or the Dockerfile's final stage is FROM php:*-fpm
  with no other command): pm.max_children of each pool, from the php-fpm.d/*.conf files
  the Dockerfile COPYs into /usr/local/etc/php-fpm.d/, else the image's www.conf:
  `pm.max_children = 5` (php/php-src sapi/fpm/www.conf.in at 00443c77e4, which
  docker-library/php's fpm images install as www.conf).
- Octane (`artisan octane:start`, Swoole, RoadRunner, FrankenPHP): `--workers N`, default
  `auto` = the CPU count (laravel/octane@0141ad01 src/Commands/StartSwooleCommand.php
  workerCount(): `'auto'` -> `$extension->cpuCount()`; RoadRunner's num_workers 0), but
  under FrankenPHP `auto` passes no count (laravel/octane@a3911243
  src/Commands/StartFrankenPhpCommand.php:248) and FrankenPHP starts 2 x the CPU count
  (php/frankenphp@0f96cab7 docs/performance.md:7). The server: `--server`, else
  OCTANE_SERVER, else config/octane.php's default (the package's: roadrunner,
  laravel/octane@a3911243 config/octane.php:41).
- Horizon (`artisan horizon`): a `horizon:work` process per worker of each supervisor of
  config/horizon.php's environment (apps/laravel_horizon.py); the master and supervisor
  processes themselves run no job.
- another artisan command (queue:work, schedule:work, a migration): one process.
PostgreSQL when the default connection is pgsql: env DB_CONNECTION, else the default
config/database.php writes (`'default' => env('DB_CONNECTION', 'pgsql')`).
"""

from __future__ import annotations

import re

from msgspec.structs import replace

from advisor.model import CpuFormula, Pool, Source, Term
from advisor.read import jsontext
from advisor.read.apps.base import StackContext
from advisor.read.apps.laravel_horizon import horizon_workers
from advisor.read.apps.nextcloud import FPM_DIR, fpm_children
from advisor.read.apps.source import AppFile
from advisor.read.apps.urls import route_from_env

LABEL = "Laravel PDO connection per PHP process"
CONNECTION = Source.default_of(
    "Laravel/PDO: one connection per PHP process, opened for the request it serves and "
    "reused within it (no persistent connections by default)", key="PDO")
FPM_IMAGE_DEFAULT = Source.default_of(
    "php:*-fpm image: php-fpm.d/www.conf pm.max_children = 5 (php-src "
    "sapi/fpm/www.conf.in at 00443c77e4; docker-library/php 445bf414f1)",
    key="pm.max_children")
OCTANE_CPU = CpuFormula(per_cpu=1, applies_to="processes", text="--workers=auto: the CPU count")
OCTANE_DEFAULT = Source.default_of(
    "Laravel Octane --workers=auto: the CPU count (laravel/octane@0141ad01 "
    "src/Commands/StartSwooleCommand.php workerCount)", key="--workers")
FRANKENPHP_CPU = CpuFormula(per_cpu=2, applies_to="processes",
                           text="--workers=auto under FrankenPHP: 2 x the CPU count")
FRANKENPHP_DEFAULT = Source.default_of(
    "Laravel Octane on FrankenPHP, --workers=auto: no count passed (laravel/octane@a3911243 "
    "src/Commands/StartFrankenPhpCommand.php:248), FrankenPHP's default 2 x the CPU count "
    "(php/frankenphp@0f96cab7 docs/performance.md:7)", key="--workers")
OCTANE_SERVER_DEFAULT = Source.default_of(
    "Laravel Octane config('octane.server'): env('OCTANE_SERVER', 'roadrunner') "
    "(laravel/octane@a3911243 config/octane.php:41)", key="OCTANE_SERVER")
_OCTANE_SERVER = re.compile(
    r"""['"]server['"]\s*=>\s*env\(\s*['"]OCTANE_SERVER['"]\s*,\s*['"](\w+)['"]\s*\)""")
# Docker Hub's php image (a mirror's library/php too), not serversideup/php et al.
_PHP_FPM_IMAGE = re.compile(r"FROM\s+(?:--\S+\s+)?(?:docker\.io/|\S+/library/)?php:\S*fpm",
                            re.I)
_DEFAULT_CONNECTION = re.compile(
    r"""['"]default['"]\s*=>\s*env\(\s*['"]DB_CONNECTION['"]\s*,\s*['"](\w+)['"]\s*\)""")


def is_laravel(ctx: StackContext) -> Source | None:
    """Where composer.json requires laravel/framework, or None."""
    for f in ctx.files("composer"):
        try:
            doc = jsontext.loads(f.text)
        except ValueError:
            continue
        require = doc.get("require") if isinstance(doc, dict) else None
        # `"require": 3` or a list: no package map, not Laravel (audit 44: a TypeError)
        if isinstance(require, dict) and "laravel/framework" in require:
            line = f.text[:f.text.find("laravel/framework")].count("\n") + 1
            return f.cite(line, "laravel/framework")
    return None


def _uses_pgsql(ctx: StackContext) -> bool | None:
    """Whether the default connection is pgsql; None when not known (said in unknown)."""
    var = ctx.env("DB_CONNECTION")
    if var is not None:
        if var.value is None:
            ctx.env_from_unknown(LABEL, "whether Laravel's default connection is pgsql",
                                 ("DB_CONNECTION",), var)
            return None
        return var.value.strip() == "pgsql"
    if (hidden := ctx.env_from_hidden("DB_CONNECTION")) is not None:
        ctx.env_from_unknown(LABEL, "whether Laravel's default connection is pgsql",
                             ("DB_CONNECTION",), hidden)
        return None
    for f in ctx.files("laravel-config"):
        if f.rel.endswith("config/database.php") and (m := _DEFAULT_CONNECTION.search(f.text)):
            return m.group(1) == "pgsql"
    return False


def _stages(f: AppFile) -> list[list[tuple[int, str]]]:
    """(line, instruction) of each stage of a Dockerfile, continuation lines joined."""
    stages: list[list[tuple[int, str]]] = [[]]
    pending, start = "", 0
    for n, raw in enumerate(f.text.splitlines(), 1):
        text = raw.strip()
        if not pending:
            start = n
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        text = pending + text
        pending = ""
        if not text or text.startswith("#"):
            continue
        if re.match(r"FROM\s", text, re.I):
            stages.append([])
        stages[-1].append((start, text))
    return [s for s in stages if s]


def _runs_fpm(stage: list[tuple[int, str]]) -> bool:
    return bool(_PHP_FPM_IMAGE.match(stage[0][1])) or any(
        re.match(r"CMD\s", text, re.I) and "php-fpm" in text for _, text in stage)


def _php_stage(f: AppFile) -> list[tuple[int, str]]:
    """The stage of a Dockerfile that runs php-fpm: the last, unless the last runs
    another program and one stage alone runs php-fpm (api-platform's api/Dockerfile
    built with --target api_platform_php, its caddy stage last)."""
    stages = _stages(f)
    if not stages:
        return []
    fpm = [s for s in stages if _runs_fpm(s)]
    return fpm[0] if len(fpm) == 1 and not _runs_fpm(stages[-1]) else stages[-1]


def _fpm_files(ctx: StackContext) -> tuple[bool, dict[str, AppFile]] | None:
    """(the final stage is FROM php:*-fpm, the files it COPYs into php-fpm.d by their
    name there); None when no Dockerfile is read or a copied file is not among the app's
    (said in unknown)."""
    dockerfiles = sorted(ctx.files("dockerfile"), key=lambda f: (f.rel.count("/"), f.rel))
    if not dockerfiles:
        return None
    # the Dockerfiles that build a php-fpm image, when the app has others (nginx's)
    fpm = [g for g in dockerfiles if any(_runs_fpm(s) for s in _stages(g))]
    if len(fpm) > 1 and len({g.text for g in fpm}) > 1:
        ctx.unknown.append(f"{len(fpm)} Dockerfiles build php-fpm images "
                           f"({', '.join(g.path for g in fpm[:3])}): which one this "
                           "container runs is not known")
        return None
    f = fpm[0] if fpm else dockerfiles[0]
    stage = _php_stage(f)
    official = bool(stage) and bool(_PHP_FPM_IMAGE.match(stage[0][1]))
    by_rel = {g.rel: g for g in ctx.files("php-fpm", "conf")}
    placed: dict[str, AppFile] = {}
    for n, text in stage:
        if re.match(r"RUN\s", text, re.I) and "pm.max_children" in text:
            ctx.unknown.append(f"{f.path}:{n}: a RUN sets php-fpm pm.max_children, not read "
                               "by pool-advisor")
            return None
        m = re.match(r"(?:COPY|ADD)\s+(?:--\S+\s+)*(.+)$", text, re.I)
        if not m:
            continue
        words = m.group(1).split()
        *sources, dest = words
        if not dest.startswith(f"/{FPM_DIR}"):
            continue
        for src in sources:
            src = src.removeprefix("./")
            name = dest.rsplit("/", 1)[-1] if dest.endswith(".conf") else src.rsplit("/", 1)[-1]
            got = by_rel.get(src)
            if got is None:
                ctx.unknown.append(f"{f.path}:{n}: copies {src} into {dest}, not among the "
                                   "application files read")
                return None
            placed[name] = replace(got, rel=f"{FPM_DIR}/{name}")
    return official, placed


def _workers(words: list[str]) -> int | bool | None:
    """--workers N / --workers=N of an octane:start command line: N, True for auto or
    absent, None when not a number."""
    for i, w in enumerate(words):
        value = w.split("=", 1)[1] if w.startswith("--workers=") else \
            words[i + 1] if w == "--workers" and i + 1 < len(words) else None
        if value is not None:
            return True if value == "auto" else int(value) if value.isdigit() else None
    return True


def _octane_server(ctx: StackContext, words: list[str]) -> str | None:
    """The server `octane:start` runs (--server, OCTANE_SERVER, config/octane.php); None
    when set from a source not held (said in unknown)."""
    for i, w in enumerate(words):
        if w.startswith("--server="):
            return w.split("=", 1)[1]
        if w == "--server" and i + 1 < len(words):
            return words[i + 1]
    var = ctx.env("OCTANE_SERVER")
    if var is not None and var.value is not None:
        return var.value.strip()
    if var is not None or ctx.env_from_hidden("OCTANE_SERVER") is not None:
        ctx.unknown.append(f"{LABEL}: OCTANE_SERVER, which picks Octane's server and so its "
                           "default worker count, is set from a source not held here")
        return None
    for f in ctx.files("laravel-config"):
        if f.rel.endswith("config/octane.php") and (m := _OCTANE_SERVER.search(f.text)):
            return m.group(1)
    return "roadrunner"


def laravel_pools(ctx: StackContext) -> list[Pool]:
    evidence = is_laravel(ctx)
    if evidence is None or ctx.container.role == "init":
        return []
    if not _uses_pgsql(ctx):
        return []
    route = route_from_env(ctx.container.env)
    words = [t for w in (*ctx.container.command, *ctx.container.args) for t in w.split()]
    pool = ctx.pool(LABEL, 1, CONNECTION, route=route, per_process=False,
                    note=f"Laravel ({evidence.label()}): at most one connection per PHP "
                         "process")
    if "octane:start" in words or "octane:frankenphp" in words:
        n = _workers(words)
        where = replace(ctx.container.source, key="--workers")
        if n is None:
            ctx.unknown.append(f"{LABEL}: octane:start --workers at {where.label()} is not a "
                               "number pool-advisor can read")
            return []
        if n is True:
            server = "frankenphp" if "octane:frankenphp" in words else \
                _octane_server(ctx, words)
            if server is None:
                return []
            cpu, cited = (FRANKENPHP_CPU, FRANKENPHP_DEFAULT) if server == "frankenphp" \
                else (OCTANE_CPU, OCTANE_DEFAULT)
            return [replace(pool, bound="cpu", cpu_formula=cpu, cpus=ctx.cpus_term(), node=ctx.node,
                            processes=Term(label="Octane workers", value=cpu.at(ctx.cpus),
                                           source=cited))]
        return [replace(pool, processes=Term(label="Octane --workers", value=n,
                                             source=where))]
    names = [w.rsplit("/", 1)[-1] for w in words]
    if "artisan" in names:
        command = names[names.index("artisan") + 1:][:1]
        if command == ["horizon"]:
            workers = horizon_workers(ctx, words)
            if workers is None:
                return []
            bound = "default" if workers.source.default else "fixed"
            return [replace(pool, processes=workers, bound=bound)]
        return [pool]  # queue:work, schedule:work, a migration: one PHP process
    return fpm_pools(ctx, pool, words, LABEL)


def fpm_pools(ctx: StackContext, pool: Pool, words: list[str], label: str) -> list[Pool]:
    """`pool` (one connection per PHP process) x the php-fpm children of the container
    (pm.max_children of the php-fpm.d files its Dockerfile copies, else php:*-fpm's
    www.conf); [] when not known (said in ctx.unknown)."""
    names = [w.rsplit("/", 1)[-1] for w in words]
    if words and not any(w.startswith("php-fpm") for w in names):
        ctx.unknown.append(f"{label}: the container runs {' '.join(words[:3])}, whose PHP "
                           "processes pool-advisor does not read")
        return []
    found = _fpm_files(ctx)
    if found is None:
        if not ctx.unknown:
            ctx.unknown.append(f"{label}: no Dockerfile read to tell its php-fpm pools")
        return []
    official, placed = found
    if not official and "www.conf" not in placed:
        ctx.unknown.append(f"{label}: the Dockerfile's image is not php:*-fpm, whose "
                           "www.conf pool-advisor knows, and copies no www.conf")
        return []
    children = fpm_children(ctx, placed, FPM_IMAGE_DEFAULT)
    if children is None:
        return []
    bound = "default" if children.source.default else "fixed"
    return [replace(pool, processes=children, bound=bound)]
