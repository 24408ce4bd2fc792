"""Mattermost (mattermost/mattermost-team-edition, -enterprise-edition): which database
its pools open on, and the configuration store's own pool.

- Its configuration source is `--config` (`-c`), else MM_CONFIG, else config.json
  (mattermost/mattermost server/cmd/mattermost/commands/utils.go getConfigDSN). A
  postgres://, postgresql:// (and, in the releases that ran on MySQL, mysql://) DSN is
  a database-backed store (server/config/utils.go IsDatabaseDSN; store.go
  NewStoreFromDSN): NewDatabaseStore opens a database/sql pool of its own on it,
  `db.SetMaxIdleConns(0); db.SetMaxOpenConns(2)` (server/config/database.go), from
  Mattermost 5.32.0 (mattermost-server ab7c92a28b "Limit configuration database
  connections", #16512; first tag v5.32.0). Before, the store set no limit (database/sql
  without one). With no active configuration stored yet, it starts from SqlSettings
  DriverName and DataSource taken from that DSN (database.go DatabaseStore.Load).
- The application's pool is SqlSettings.MaxOpenConns (advisor/read/apps/images.py) on
  SqlSettings.DataSource: MM_SQLSETTINGS_DATASOURCE, else the store's DSN (a
  MM_SQLSETTINGS_DATASOURCE whose value is not held here leaves where it connects not
  known, StackContext.hidden_route: never the store's DSN, nor another URL of the
  container, so each server's peak is a floor); on MySQL when MM_SQLSETTINGS_DRIVERNAME
  (else the store's DSN) says mysql.
"""

from __future__ import annotations

from collections.abc import Callable

from msgspec.structs import replace

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext

APP_POOL = "Mattermost SqlSettings.MaxOpenConns"  # images.py's ImageStack label
CONFIG_STORE = "Mattermost database config store (SetMaxOpenConns(2))"
CONFIG_STORE_POOL = 2  # server/config/database.go NewDatabaseStore SetMaxOpenConns(2)
CONFIG_STORE_SINCE = (5, 32)  # mattermost-server #16512, first in v5.32.0


def _scheme(dsn: str) -> str | None:
    scheme, sep, _ = dsn.strip().partition("://")
    if not sep:
        return None  # a file (config.json)
    scheme = scheme.lower()
    return "postgres" if scheme in ("postgres", "postgresql") else scheme


OptionValue = Callable[[StackContext, str], "tuple[str, Source] | None"]


def _config_dsn(ctx: StackContext, option_value: OptionValue
                ) -> tuple[str | None, Source] | None:
    """The configuration source: the command line's --config, else MM_CONFIG; value
    None when set from a reference the repository does not hold; None when neither.
    `option_value`: images._option_value."""
    given = option_value(ctx, "--config")
    if given is not None:
        return given
    words = [w for word in (*ctx.container.command, *ctx.container.args)
             for w in word.split()]
    for i, w in enumerate(words[:-1]):
        if w == "-c" and "mattermost" in [x.rsplit("/", 1)[-1] for x in words[:i]]:
            return words[i + 1].strip("'\""), replace(ctx.container.source, key="-c")
    var = ctx.env("MM_CONFIG")
    if var is None:
        return None
    return var.value, ctx.env_source("MM_CONFIG")


def mattermost_pools(ctx: StackContext, main: Callable[[], list[Pool]],
                     version: tuple[int, int] | None, option_value: OptionValue
                     ) -> list[Pool]:
    """`main()`: the SqlSettings.MaxOpenConns pool (the ImageStack's reading)."""
    from advisor.read.apps.urls import route_from_url

    dsn = _config_dsn(ctx, option_value)
    if dsn is not None and dsn[0] is None:
        ctx.unknown.append(
            f"Mattermost's configuration source MM_CONFIG is set from a reference not held "
            f"here ({dsn[1].label()}): whether it is a database (a config store pool of "
            "its own, server/config/database.go) and which database it uses is not known")
        return []
    store = _scheme(dsn[0]) if dsn is not None and dsn[0] is not None else None
    driver = ctx.env("MM_SQLSETTINGS_DRIVERNAME")
    if driver is not None and driver.value is None:
        ctx.unknown.append(f"Mattermost SqlSettings.DriverName is set from a reference not "
                           f"held here ({ctx.env_source(driver.name).label()}): whether it "
                           "uses PostgreSQL is not known")
        return []
    kind = (driver.value.strip().lower() if driver is not None and driver.value
            else store if store in ("postgres", "mysql") else "postgres")
    pools: list[Pool] = []
    if kind == "postgres":
        pools = main()
        source = ctx.env("MM_SQLSETTINGS_DATASOURCE")
        if source is not None and source.value is None:
            # set from a reference not held here: where the pools connect is not known,
            # never the store's DSN (which DataSource, when set, overrides) nor any other
            # URL of the container (the linker's fallback for a pool without a route)
            pools = ctx.hidden_route(
                pools, APP_POOL, source.name, ctx.env_source(source.name),
                more="SqlSettings.DataSource, which overrides the configuration store's "
                     f"DSN at {dsn[1].label()}"
                if store == "postgres" and dsn else "SqlSettings.DataSource")
        elif (source is None or not source.value) and store == "postgres" and \
                dsn is not None:
            route = route_from_url(str(dsn[0]), dsn[1])
            pools = [replace(p, route=route) if route is not None and p.route is None
                     else p for p in pools]
    if store != "postgres" or dsn is None:
        return pools  # config.json, or a MySQL store
    route = route_from_url(str(dsn[0]), dsn[1])
    if version is not None and version < CONFIG_STORE_SINCE:
        pool = ctx.pool(CONFIG_STORE, 0, dsn[1], bound="unbounded", per_process=False,
                        note=f"Mattermost {version[0]}.{version[1]}: the database config "
                             "store sets no limit (SetMaxOpenConns(2) came in 5.32.0)")
    else:
        pool = ctx.pool(CONFIG_STORE, CONFIG_STORE_POOL, Source.default_of(
            "Mattermost database config store: NewDatabaseStore SetMaxOpenConns(2) "
            "(server/config/database.go, 5.32.0+)", key="MM_CONFIG"), bound="fixed",
            per_process=False, note=f"{dsn[1].key or 'MM_CONFIG'} is a database DSN: the "
                                    "configuration is stored there, on a pool of its own")
    return [*pools, replace(pool, route=route) if route is not None else pool]
