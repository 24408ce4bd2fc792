"""Coder's server (`coder server`, image ghcr.io/coder/coder or coder-preview; the
coder/coder helm/coder chart), one Go process per container. Read in coder/coder:

- cli/server.go (@92aa1eba): the server opens one database/sql pool on the PostgreSQL URL
  (CODER_PG_CONNECTION_URL / --postgres-url; unset: a built-in PostgreSQL in the
  container) with ConnectToPostgres, migrations run on it, then
  `sqlDB.SetMaxOpenConns(10)` (and SetMaxIdleConns(3)); `pubsub.New(ctx, logger, sqlDB,
  dbURL)` publishes through that pool. The store, the HA coordinator and dbcrypt wrap the
  same sqlDB and pubsub.
- coderd/database/pubsub/pubsub.go (@3eab043e): New -> startListener holds one LISTEN
  connection of its own, `pq.NewDialListener(dialer, connectURL, ...)`, outside the pool.
- The pool's size is configurable from coder/coder#21403 (commit 49a42eff, on main
  2026-01-13; in v2.30.0 per the closed follow-up #21572, "upgrading to v2.30, which
  this change will be included in"): `--postgres-conn-max-open`, env
  CODER_PG_CONN_MAX_OPEN, YAML pgConnMaxOpen, default 10 (#21403's
  docs/reference/cli/server.md; the generated configuration reference: "Default value:
  `10`"); flags over env over YAML (cli/server.go's help text: "1. Defaults 2. YAML
  configuration 3. Environment variables 4. Flags"). Before v2.30 the variable is not
  read (a flag it does not know stops the server).
- scripts/Dockerfile: ENTRYPOINT ["/opt/coder", "server"]: a container without a command
  runs the server. Other commands of the image (provisioner, wsproxy) reach coderd over
  HTTP. Tags before v2 (v0.x) are not read: connections unknown.
"""

from __future__ import annotations

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext, option_value, tag_version
from advisor.read.apps.numbers import parse_int

LABEL = "Coder database/sql pool (max open)"
LISTENER = "Coder pubsub LISTEN connection (pq.NewDialListener, outside the pool)"
DEFAULT_MAX_OPEN = 10  # cli/server.go ConnectToPostgres SetMaxOpenConns(10); the flag's default
FLAG, ENV = "--postgres-conn-max-open", "CODER_PG_CONN_MAX_OPEN"
CONFIGURABLE_FROM = (2, 30)  # coder/coder#21403
_NOT_SERVER = ("postgres-builtin-url", "postgres-builtin-serve")
_NOT_READ = ("create-admin-user", "dbcrypt", "reset-password")


def is_coder(image: str) -> bool:
    from advisor.read.apps.locate import image_repository

    parts = image_repository(image.lower()).split("/")
    return len(parts) >= 2 and parts[-2] == "coder" and parts[-1] in ("coder",
                                                                      "coder-preview")


def _command(ctx: StackContext) -> tuple[str, str] | None:
    """(the coder command, its server subcommand or ""); None when the command line
    runs no coder binary pool-advisor can see."""
    words = [t for w in (*ctx.container.command, *ctx.container.args) for t in w.split()]
    if not ctx.container.command:
        words = ["/opt/coder", "server", *words]  # the image's ENTRYPOINT
    at = next((i for i, w in enumerate(words) if w.rsplit("/", 1)[-1] == "coder"), None)
    if at is None:
        return None
    rest = words[at + 1:]
    cmd = next((w for w in rest if not w.startswith("-")), "")
    after = rest[rest.index(cmd) + 1:] if cmd else []
    sub = after[0] if after and not after[0].startswith("-") else ""
    return cmd, sub


def coder_pools(ctx: StackContext) -> list[Pool]:
    if ctx.container.role == "init":
        return []
    found = _command(ctx)
    if found is None:
        ctx.unknown.append(f"{ctx.container.name}: its command runs no `coder` binary "
                           "pool-advisor can read")
        return []
    cmd, sub = found
    if cmd != "server" or sub in _NOT_SERVER:
        return []  # provisioner, wsproxy, ...: coderd's API, not the database
    if sub in _NOT_READ:
        ctx.unknown.append(f"`coder server {sub}` is not read by pool-advisor")
        return []
    if ctx.env_value("CODER_IN_MEMORY") == "true":
        return []
    url = ctx.env("CODER_PG_CONNECTION_URL")
    if url is None and option_value(ctx, "--postgres-url") is None and \
            ctx.env("CODER_CONFIG_PATH") is None and option_value(ctx, "--config") is None:
        names = ("CODER_PG_CONNECTION_URL", "CODER_CONFIG_PATH")
        if (hidden := ctx.env_from_hidden(*names)) is not None:
            # an envFrom Secret not held here may name an external database
            ctx.env_from_unknown("Coder database/sql pool", "whether coderd uses an "
                                 "external PostgreSQL, and where", names, hidden)
        return []  # the built-in PostgreSQL of the container
    version = tag_version(ctx.container.image)
    tag = ctx.container.image.rsplit(":", 1)[-1]
    if version is not None and version < (2, 0):
        ctx.unknown.append(f"Coder {tag}: releases before v2 are not read by pool-advisor")
        return []
    listener = ctx.pool(LISTENER, 1, Source.default_of(
        "Coder pubsub: one pq.Listener connection (coderd/database/pubsub/pubsub.go "
        "startListener)", key="pubsub"), bound="fixed", per_process=False)
    size = _max_open(ctx, version, tag, option_value(ctx, FLAG))
    return [size, listener] if size is not None else []


def _max_open(ctx: StackContext, version: tuple[int, int] | None, tag: str,
              flag: tuple[str, Source] | None) -> Pool | None:
    old = version is not None and version < CONFIGURABLE_FROM
    var = ctx.env(ENV)
    default = Source.default_of(
        "Coder default max open connections 10 (cli/server.go ConnectToPostgres "
        "SetMaxOpenConns(10); --postgres-conn-max-open default 10 from v2.30.0)", key=ENV)
    if old:
        if flag is not None:
            ctx.unknown.append(f"Coder {tag} has no {FLAG} (v2.30.0+): the server does not "
                               "start with it")
            return None
        note = f"{ENV} is not read before v2.30.0" if var is not None else ""
        return ctx.pool(LABEL, DEFAULT_MAX_OPEN, default, bound="default",
                        per_process=False, note=note)
    if flag is not None:
        value, where = flag
    elif var is not None:
        if var.value is None:
            ctx.hidden_size(LABEL, ENV, ctx.env_source(ENV))
            return None
        value, where = var.value, ctx.env_source(ENV)
    elif ctx.env("CODER_CONFIG_PATH") is not None or option_value(ctx, "--config"):
        ctx.unknown.append(f"{LABEL}: the YAML configuration it reads (--config, "
                           "CODER_CONFIG_PATH) may set pgConnMaxOpen and is not read")
        return None
    else:
        return ctx.pool(LABEL, DEFAULT_MAX_OPEN, default, bound="default",
                        per_process=False, note=f"{FLAG} / {ENV} unset")
    n = parse_int(value)
    if n is None or n < 1:
        ctx.unknown.append(f"{LABEL} at {where.label()} is {value!r}, not a pool size "
                           "pool-advisor can read")
        return None
    return ctx.pool(LABEL, n, where, per_process=False)
