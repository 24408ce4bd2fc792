"""Nextcloud from its official image (nextcloud:<version>-apache, -fpm, -fpm-alpine; the
bare and latest/stable/production tags are the apache variant: nextcloud/docker
generate-stackbrew-library.sh gives the version aliases to `apache`).

One PostgreSQL connection per PHP process at most: nextcloud/server lib/private/DB/
ConnectionFactory.php (at 001260223e) sets `persistent` only when `dbpersistent` is true
(default false), so a process opens one PDO connection for the request it serves and
closes it after; a persistent one is kept per process, still one. Since 29 the connection
is Doctrine's PrimaryReadReplicaConnection; Connection::performConnect connects to the
primary alone when no `dbreplica` is configured (nextcloud/server#45013, fixing #45003:
"Two database connections", found in 29's release candidates). So a pod holds at most
its PHP processes:
- apache variants: FROM php:*-apache (nextcloud/docker 34/apache/Dockerfile at
  4de1eed65a: `FROM php:8.5-apache-trixie`; it adds a2enmod headers rewrite remoteip and
  two confs, no MPM setting), whose Dockerfile runs `a2dismod mpm_event && a2enmod
  mpm_prefork` (docker-library/php 8.5/trixie/apache/Dockerfile at 445bf414f1): Apache
  prefork with mod_php, one request per child process, at most MaxRequestWorkers
  children: Debian's apache2 mods-available/mpm_prefork.conf `MaxRequestWorkers 150`
  (salsa.debian.org apache2 packaging, mirrored as jspricke/apache2.debian at 5c4097f4aa,
  debian/config-dir/mods-available/mpm_prefork.conf), never above ServerLimit, prefork's
  DEFAULT_SERVER_LIMIT 256 (apache/httpd server/mpm/prefork/prefork.c at 615865f36a).
  apache2.conf reads mods-enabled/*.conf, ports.conf, conf-enabled/*.conf,
  sites-enabled/*.conf in that order, each folder in name order; the last value wins.
- fpm variants: FROM php:*-fpm (34/fpm/Dockerfile: php:8.5-fpm-trixie; fpm-alpine:
  php:8.5-fpm-alpine3.24), whose php-fpm.d/www.conf is php-src's www.conf.default
  (docker-library/php 8.5/trixie/fpm/Dockerfile: `cp -v php-fpm.d/www.conf.default
  php-fpm.d/www.conf`): `pm = dynamic`, `pm.max_children = 5` (php/php-src
  sapi/fpm/www.conf.in at 00443c77e4). php-fpm.conf ends `include=etc/php-fpm.d/*.conf`
  (glob, name order: docker.conf, www.conf, zz-docker.conf); a [section] of a pool that
  exists continues it, so the last pm.max_children of each pool counts; [global]
  process.max caps all.
- the nextcloud chart's cron: a sidecar running /cron.sh (`exec busybox crond -f`, whose
  crontab runs `php -f /var/www/html/cron.php` every 5 minutes: 34/apache/Dockerfile,
  cron.sh) or a CronJob running `php -f /var/www/html/cron.php` (concurrencyPolicy
  Forbid): one PHP process, one connection.
PostgreSQL when POSTGRES_HOST is set (34/apache/config/autoconfig.php, entrypoint.sh:
the install takes pgsql from POSTGRES_DB/USER/PASSWORD/HOST, unless SQLITE_DATABASE or
the MYSQL_* variables come first); the config.php an install writes is on the volume,
not in the repository.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from msgspec import Struct
from msgspec.structs import replace

from advisor.model import Pool, Source, Term
from advisor.read.apps.base import StackContext, image_path, tag_version
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.source import AppFile

LABEL = "Nextcloud PDO connection per PHP process"
APACHE_WORKERS = 150  # Debian mods-available/mpm_prefork.conf MaxRequestWorkers
APACHE_SERVER_LIMIT = 256  # prefork.c DEFAULT_SERVER_LIMIT
FPM_CHILDREN = 5  # php-src sapi/fpm/www.conf.in pm.max_children
CONNECTION = Source.default_of(
    "Nextcloud: one PDO connection per PHP process, dbpersistent false by default "
    "(lib/private/DB/ConnectionFactory.php at 001260223e; the primary alone without a "
    "replica, nextcloud/server#45013)", key="dbpersistent")
APACHE_DEFAULT = Source.default_of(
    "nextcloud apache image (php:*-apache, Apache prefork + mod_php): Debian apache2 "
    "mods-available/mpm_prefork.conf MaxRequestWorkers 150 (apache2.debian 5c4097f4aa; "
    "nextcloud/docker 4de1eed65a, docker-library/php 445bf414f1)", key="MaxRequestWorkers")
FPM_DEFAULT = Source.default_of(
    "nextcloud fpm image (php:*-fpm): php-fpm.d/www.conf pm.max_children = 5 (php-src "
    "sapi/fpm/www.conf.in at 00443c77e4; docker-library/php 445bf414f1)",
    key="pm.max_children")
CRON = Source.default_of(
    "nextcloud image: one PHP CLI process (`php -f cron.php` from cron.sh's busybox crond "
    "every 5 minutes, or run by the chart's CronJob; `php occ`), one PDO connection, "
    "nextcloud/docker 4de1eed65a", key="cron.php")

FPM_DIR = "usr/local/etc/php-fpm.d"
APACHE_DIR = "etc/apache2"
# conf-available files the php and nextcloud images enable (a2enconf), read from
# conf-enabled/ through their links; Debian's own enabled confs as well
_ENABLED_CONFS = frozenset({"docker-php.conf", "remoteip.conf", "apache-limits.conf",
                            "charset.conf", "localized-error-pages.conf",
                            "other-vhosts-access-log.conf", "security.conf",
                            "serve-cgi-bin.conf"})
_APACHE_ORDER = {"mods": 0, "ports": 1, "conf": 2, "sites": 3}
_MPM_DIRECTIVES = ("maxrequestworkers", "maxclients", "serverlimit")
# <IfModule> arguments the php:apache image satisfies (prefork, mod_php) or not
_MODULES_ON = frozenset({"mpm_prefork_module", "prefork.c", "mod_mpm_prefork.c",
                         "php_module", "php7_module", "php5_module", "mod_php.c",
                         "mod_php7.c", "mod_php5.c"})
_MODULES_OFF = frozenset({"mpm_event_module", "event.c", "mod_mpm_event.c",
                          "mpm_worker_module", "worker.c", "mod_mpm_worker.c"})


def is_nextcloud(image: str) -> bool:
    """The official image (Docker Hub's library/nextcloud), from any mirror; not
    linuxserver's or another owner's image of the same name."""
    path = image_path(image)
    return path == "nextcloud" or path.endswith(("/library/nextcloud", "docker.io/nextcloud"))


def _variant(image: str) -> str | None:
    """"fpm" or "apache" from the tag; None for a digest without a tag."""
    ref, at, _digest = image.partition("@")
    tail = ref.rsplit("/", 1)[-1]
    tag = tail.partition(":")[2]
    if not tag and at:
        return None
    return "fpm" if "fpm" in tag.lower() else "apache"


class _Value(Struct, frozen=True):
    value: str
    source: Source


def _apache_place(rel: str) -> tuple[int, str] | bool | None:
    """Where Apache reads a file mounted at `rel` (under etc/apache2/): (folder order,
    name); None when it does not read it; False when pool-advisor does not place it."""
    parts = rel.split("/")[2:]
    if parts == ["ports.conf"]:
        return (_APACHE_ORDER["ports"], "ports.conf")
    if len(parts) != 2 or not parts[1].endswith(".conf"):
        return False
    folder, name = parts
    if folder == "mods-enabled" or (folder == "mods-available" and name == "mpm_prefork.conf"):
        return (_APACHE_ORDER["mods"], name)
    if folder == "conf-enabled" or (folder == "conf-available" and name in _ENABLED_CONFS):
        return (_APACHE_ORDER["conf"], name)
    if folder == "sites-enabled" or (folder == "sites-available"
                                     and name == "000-default.conf"):
        return (_APACHE_ORDER["sites"], name)
    if folder.endswith("-available"):
        return None  # not enabled in the image: Apache does not read it
    return False


def _apache_directives(f: AppFile, unknown: list[str]) -> list[tuple[str, _Value]]:
    """MaxRequestWorkers/MaxClients/ServerLimit as prefork reads them, outside
    <IfModule> blocks of another MPM; a directive pool-advisor cannot place (inside an
    <IfModule> of an unknown module or an <IfDefine>, or next to an Include) goes to
    `unknown`."""
    out: list[tuple[str, _Value]] = []
    stack: list[bool | None] = []  # each open section: applies, does not, or unknown
    includes = False
    for n, raw in enumerate(f.text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        low = line.lower()
        m = re.match(r"<\s*(/?)\s*([\w.]+)\s*([^>]*)>", line)
        if m:
            if m.group(1):
                if stack:
                    stack.pop()
                continue
            kind, arg = m.group(2).lower(), m.group(3).strip().strip("\"'")
            if kind == "ifmodule":
                neg, name = arg.startswith("!"), arg.lstrip("!").strip()
                on = True if name in _MODULES_ON else False if name in _MODULES_OFF else None
                stack.append(None if on is None else (on != neg))
            elif kind == "ifdefine":
                stack.append(None)
            else:
                stack.append(True)  # <VirtualHost>, <Directory>: no MPM directive applies
            continue
        word, _, rest = low.partition(" ")
        if word in ("include", "includeoptional"):
            includes = True
        if word not in _MPM_DIRECTIVES:
            continue
        if any(s is False for s in stack):
            continue
        if any(s is None for s in stack):
            unknown.append(f"Apache {line.split()[0]} at {f.path}:{f.line_offset + n} is in "
                           "a section whose condition pool-advisor does not evaluate")
            continue
        out.append((word, _Value(rest.strip(), f.cite(n, line.split()[0]))))
    if includes and out:
        unknown.append(f"{f.path}: Include next to MPM settings is not followed by "
                       "pool-advisor")
    return out


def _apache_workers(ctx: StackContext) -> Term | None:
    """Apache prefork's MaxRequestWorkers after the files the pod mounts into
    /etc/apache2, capped by ServerLimit; None (said in ctx.unknown) when not read."""
    placed: list[tuple[tuple[int, str], AppFile]] = []
    unknown: list[str] = []
    for f in ctx.files("apache-conf"):
        if not f.rel.startswith(APACHE_DIR + "/"):
            continue
        if f.rel == f"{APACHE_DIR}/apache2.conf":
            unknown.append(f"{f.path}: a mounted apache2.conf replaces the image's include "
                           "order, not read by pool-advisor")
            continue
        place = _apache_place(f.rel)
        if place is None:
            continue
        mentions = any(d in f.text.lower() for d in _MPM_DIRECTIVES)
        if place is False:
            if mentions:
                unknown.append(f"{f.path}: mounted at /{f.rel}, where Apache's include "
                               "order is not read by pool-advisor")
            continue
        placed.append((place, f))
    workers: _Value | None = None
    limit: _Value | None = None
    replaced = False
    for place, f in sorted(placed, key=lambda p: p[0]):
        replaced = replaced or place == (_APACHE_ORDER["mods"], "mpm_prefork.conf")
        for word, value in _apache_directives(f, unknown):
            if word == "serverlimit":
                limit = value
            else:
                workers = value
    if replaced and workers is None:
        unknown.append("the mounted mpm_prefork.conf sets no MaxRequestWorkers: prefork's "
                       "compiled default is not read by pool-advisor")
    if unknown:
        ctx.unknown.extend(unknown)
        return None
    label = "Apache prefork MaxRequestWorkers (PHP processes)"
    n, where = (APACHE_WORKERS, APACHE_DEFAULT) if workers is None else \
        (parse_int(workers.value), workers.source)
    cap, cap_where = (APACHE_SERVER_LIMIT, None) if limit is None else \
        (parse_int(limit.value), limit.source)
    if n is None or cap is None or n < 1 or cap < 1:
        bad = workers if n is None or n < 1 else limit
        ctx.unknown.append(f"Apache {bad.source.key} at {bad.source.label()} is "
                           f"{bad.value!r}, not a count pool-advisor can read")
        return None
    if n > cap:
        # prefork: "MaxRequestWorkers of N exceeds ServerLimit value of M, decreasing"
        return Term(label="Apache prefork ServerLimit (caps MaxRequestWorkers)", value=cap,
                    source=cap_where or Source.default_of(
                        "Apache prefork DEFAULT_SERVER_LIMIT 256 (server/mpm/prefork/"
                        "prefork.c at 615865f36a)", key="ServerLimit"))
    return Term(label=label, value=n, source=where)


def _fpm_sections(f: AppFile, env: dict[str, str | None], unknown: list[str]
                  ) -> Iterable[tuple[str, str, _Value]]:
    """(section, key, value) of a php-fpm ini file; ${VAR} from the container's env."""
    section = ""
    for n, raw in enumerate(f.text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith((";", "#")):
            continue
        m = re.fullmatch(r"\[([^\]]+)\]", line)
        if m:
            section = m.group(1).strip()
            continue
        key, eq, value = line.partition("=")
        if not eq:
            continue
        key, value = key.strip().lower(), value.split(";", 1)[0].strip().strip("\"'")
        if key == "include":
            unknown.append(f"{f.path}:{f.line_offset + n}: php-fpm include= is not "
                           "followed by pool-advisor")
            continue
        var = re.fullmatch(r"\$\{(\w+)\}", value)
        if var:
            got = env.get(var.group(1))
            if got is None:
                unknown.append(f"php-fpm {key} at {f.path}:{f.line_offset + n} is "
                               f"${{{var.group(1)}}}, whose value is not held here")
                continue
            value = got
        yield section, key, _Value(value, f.cite(n, key, key))


def fpm_children(ctx: StackContext, placed: dict[str, AppFile] | None = None,
                  image_default: Source = FPM_DEFAULT) -> Term | None:
    """The PHP-FPM children of every pool after the files the pod mounts into
    /usr/local/etc/php-fpm.d (the image's www.conf unless one replaces it). `placed`:
    those files by their name there, when known otherwise (a Dockerfile's COPY,
    apps/laravel.py); `image_default` cites the image's own www.conf."""
    unknown: list[str] = []
    mounted = placed if placed is not None else {
        f.name: f for f in ctx.files("php-fpm")
        if f.rel.rsplit("/", 1)[0] == FPM_DIR and f.name.endswith(".conf")}
    if any(f.rel == "usr/local/etc/php-fpm.conf" for f in ctx.files("php-fpm")):
        ctx.unknown.append("a mounted php-fpm.conf replaces the image's include of "
                           "php-fpm.d, not read by pool-advisor")
        return None
    env = {e.name: e.value for e in ctx.container.env}
    children: dict[str, _Value] = {}
    process_max: _Value | None = None
    for name in sorted({*mounted, "www.conf"}):
        f = mounted.get(name)
        if f is None:  # the image's www.conf
            children["www"] = _Value(str(FPM_CHILDREN), image_default)
            continue
        for section, key, value in _fpm_sections(f, env, unknown):
            if key == "pm.max_children" and section.lower() != "global":
                children[section] = value
            elif key == "process.max" and section.lower() == "global":
                process_max = value
    if unknown:
        ctx.unknown.extend(unknown)
        return None
    counts = {pool: parse_int(v.value) for pool, v in children.items()}
    bad = next((p for p, c in counts.items() if c is None or c < 1), None)
    if bad is not None or not counts:
        where = children[bad].source.label() if bad is not None else "php-fpm.d"
        ctx.unknown.append(f"PHP-FPM pm.max_children of pool [{bad}] at {where} is not a "
                           "count pool-advisor can read")
        return None
    total = sum(c for c in counts.values() if c is not None)
    first = next(iter(children.values())).source
    label = "PHP-FPM pm.max_children" if len(counts) == 1 else \
        "PHP-FPM pm.max_children: " + " + ".join(f"[{p}] {c}" for p, c in counts.items())
    term = Term(label=label, value=total, source=first)
    cap = parse_int(process_max.value) if process_max is not None else None
    if cap is not None and 0 < cap < total and process_max is not None:
        return Term(label="PHP-FPM process.max (caps every pool's children)", value=cap,
                    source=process_max.source)
    return term


def _program(ctx: StackContext, variant: str) -> str | None:
    """What the container runs: "web", "crond" (cron.php from busybox crond), "cli" (one
    `php cron.php` or `php occ`) or None."""
    words = [token.rsplit("/", 1)[-1]
             for word in (*ctx.container.command, *ctx.container.args)
             for token in word.split()]
    if not words:
        return "web"  # the image's ENTRYPOINT and CMD
    if "apache2-foreground" in words or "php-fpm" in words:
        return "web" if ("php-fpm" in words) == (variant == "fpm") else None
    if "cron.sh" in words or "crond" in words:
        return "crond"
    if "cron.php" in words or "occ" in words:
        return "cli"
    return None


def nextcloud_pools(ctx: StackContext) -> list[Pool]:
    """The pod's PHP processes, one connection each, when Nextcloud uses PostgreSQL."""
    if ctx.container.role == "init":
        return []
    if ctx.env("SQLITE_DATABASE") is None and ctx.env("POSTGRES_HOST") is None and \
            (hidden := ctx.env_from_hidden("POSTGRES_HOST")) is not None:
        # an envFrom Secret not held here may set it (and the install's pgsql with it)
        ctx.env_from_unknown("Nextcloud PHP processes", "whether Nextcloud uses PostgreSQL "
                             "and where", ("POSTGRES_HOST",), hidden)
        return []
    if ctx.env("SQLITE_DATABASE") is not None or ctx.env("POSTGRES_HOST") is None:
        return []  # SQLite, MySQL or a config.php on the volume
    variant = _variant(ctx.container.image)
    if variant is None:
        ctx.unknown.append(f"{ctx.container.image}: a digest names no variant (apache or "
                           "fpm): its PHP processes are not known")
        return []
    program = _program(ctx, variant)
    if program is None:
        ctx.notices.append(f"{ctx.container.name}: the nextcloud image runs a command "
                           "pool-advisor does not read")
        return []
    version = tag_version(ctx.container.image)
    if version is not None and version[0] == 29:
        ctx.notices.append(f"{ctx.container.name}: Nextcloud 29 releases before the fix of "
                           "nextcloud/server#45003 open a replica and a primary connection "
                           "to one server: one per process counted")
    if program in ("crond", "cli"):
        return [ctx.pool("Nextcloud PHP CLI PDO connection", 1, CRON, bound="fixed",
                         per_process=False,
                         note="busybox crond: a run longer than its 5-minute schedule "
                              "overlaps the next" if program == "crond" else "")]
    processes = fpm_children(ctx) if variant == "fpm" else _apache_workers(ctx)
    if processes is None:
        return []
    pool = ctx.pool(LABEL, 1, CONNECTION, bound="default" if processes.source.default
                    else "fixed", per_process=False,
                    note=f"{variant} variant: at most one connection per PHP process")
    return [replace(pool, processes=processes)]
