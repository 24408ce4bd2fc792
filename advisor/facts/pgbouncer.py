"""PgBouncer semantics, pure: parameter tables and value types per version, defaults,
the effective pool of a (database, user) pair, and the server connections a pooler
may open.

Everything here follows PgBouncer's own source (github.com/pgbouncer/pgbouncer, tags
pgbouncer_1_18_0 ... pgbouncer_1_25_0), cited where used:
- src/main.c bouncer_params[]: keys, types, defaults (advisor/facts/pgbouncer_params.py);
- src/server.c pool_pool_size / pool_res_pool_size / database_max_connections /
  user_max_connections / pool_pool_mode: user overrides database overrides global;
- src/objects.c launch_new_connection: the reserve pool is used only when
  reserve_pool_timeout > 0; max_db_connections counts every server connection of the
  database entry (all its users' pools, reserve included); max_user_connections
  counts the user's connections across databases; a queued cancel request may open
  up to 2 x pool_size regardless of those caps;
- src/client.c set_pool / start_auth_query (prepare_auth_database from 1.19): a client
  whose user is not in auth_file, under any auth_type but any/pam/ldap, with an
  auth_user (the entry's or the global one), is looked up with auth_query on a server
  connection of the ordinary pool (auth database, auth_user): get_pool + find_server,
  so launch_new_connection's pool_size, reserve, max_db_connections and
  max_user_connections apply, and the connection stays idle in that pool until
  server_idle_timeout (tests/test_pgbouncer_auth_oracle.py).

Version history used for defaults (NEWS.md at tag pgbouncer_1_25_0): 1.21.0 adds
max_prepared_statements (default 0 = off); 1.24.0 "Enable prepared statement support by
default" (200); 1.25.0 adds transaction_timeout, globally and per user. 1.18 values are
checked against the real Debian 1.18 binary's SHOW CONFIG (tests/test_pgbouncer_oracle.py).
Newer versions reuse 1.18's ini grammar: libusual's quoted-key support (commit 6b7fc84,
2025) is in none of the lib submodules of tags 1.19.0 ... 1.25.0 that we could check.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import NamedTuple

from msgspec import field
from msgspec.structs import replace

from advisor.facts.pgbouncer_params import (
    CHANGES,
    LOOKUPS,
    LOOKUPS_1_25_EXTRA,
    PARAMS_1_18,
    ParamSpec,
)
from advisor.lazyregex import lazy
from advisor.model import (
    BouncerVersion,
    Contribution,
    Location,
    Pooler,
    PoolerDatabase,
    PoolerUser,
    Record,
    Setting,
    Source,
    Term,
)

OLDEST = (1, 18)
NEWEST = (1, 25)

# [databases] connection-string keys and [users] keys per version (src/loader.c
# parse_database / parse_user at each tag).
_DB_KEYS: list[tuple[tuple[int, int], tuple[str, ...]]] = [
    (
        (1, 18),
        (
            "dbname",
            "host",
            "port",
            "user",
            "password",
            "auth_user",
            "client_encoding",
            "datestyle",
            "timezone",
            "pool_size",
            "min_pool_size",
            "reserve_pool",
            "max_db_connections",
            "pool_mode",
            "connect_query",
            "application_name",
        ),
    ),
    ((1, 19), ("auth_dbname",)),
    ((1, 22), ("auth_query",)),
    ((1, 23), ("server_lifetime",)),
    ((1, 24), ("reserve_pool_size", "max_db_client_connections", "load_balance_hosts")),
]
_USER_KEYS: list[tuple[tuple[int, int], tuple[str, ...]]] = [
    ((1, 18), ("pool_mode", "max_user_connections")),
    ((1, 23), ("pool_size",)),
    (
        (1, 24),
        (
            "reserve_pool_size",
            "idle_transaction_timeout",
            "query_timeout",
            "client_idle_timeout",
            "max_user_client_connections",
        ),
    ),
    ((1, 25), ("transaction_timeout",)),
]


class UnknownSetting(KeyError):
    """The parameter does not exist in that PgBouncer version."""


def table_version(version: BouncerVersion) -> tuple[int, int]:
    """The parameter table used for `version`: the newest known one not after it."""
    v = (version.major, version.minor)
    return max(OLDEST, min(v, NEWEST))


@lru_cache(maxsize=16)
def _params(v: tuple[int, int]) -> dict[str, ParamSpec]:
    table = dict(PARAMS_1_18)
    for at, (changed, removed) in sorted(CHANGES.items()):
        if at > v:
            break
        table.update(changed)
        for name in removed:
            table.pop(name, None)
    return table


def params(version: BouncerVersion) -> dict[str, ParamSpec]:
    """name -> (type, default, no_reload) of the [pgbouncer] section in `version`."""
    return _params(table_version(version))


def introduced_in(key: str) -> tuple[int, int] | None:
    """The oldest version whose [pgbouncer] section has `key` (OLDEST for a key 1.18
    already has); None for a key no known version has."""
    versions = [OLDEST, *sorted(v for v in CHANGES if v <= NEWEST)]
    return next((v for v in versions if key in _params(v)), None)


def version_floor(version: BouncerVersion, keys: list[tuple[str, Source]]) -> BouncerVersion:
    """`version` raised, when no version was read (an image tagged `latest` or untagged),
    to the oldest one that has every [pgbouncer] key set: PgBouncer stops at start-up on
    an unknown parameter (lib/usual/cfparser.c cf_set: "unknown parameter", which fails
    cf_load_file; src/main.c load_config: die("cannot load config file"); the same in the
    libusual of tag pgbouncer_1_18_0), so a running one accepts them all. The version
    says it is a floor, and which setting raised it."""
    if not version.assumed:
        return version
    best: tuple[tuple[int, int], str, Source] | None = None
    for key, source in keys:
        at = introduced_in(key)
        if at is not None and at > (version.major, version.minor) \
                and (best is None or at > best[0]):
            best = (at, key, source)
    if best is None:
        return version
    (major, minor), key, source = best
    where = source.label()
    return BouncerVersion(major=major, minor=minor, floor=True, source=Source.default_of(
        f"assumed: at least {major}.{minor}, because {key} is set ({where})", key="image"))


def lookup_names(kind: str, version: BouncerVersion) -> tuple[str, ...]:
    names = LOOKUPS[kind.removeprefix("lookup:")]
    if table_version(version) >= (1, 25):
        names = names + LOOKUPS_1_25_EXTRA.get(kind.removeprefix("lookup:"), ())
    return names


def database_keys(version: BouncerVersion) -> frozenset[str]:
    v = table_version(version)
    return frozenset(k for at, keys in _DB_KEYS if at <= v for k in keys)


def user_keys(version: BouncerVersion) -> frozenset[str]:
    v = table_version(version)
    return frozenset(k for at, keys in _USER_KEYS if at <= v for k in keys)


# --- C number parsing, as PgBouncer does it --------------------------------------------

_C_SPACE = " \t\n\v\f\r"
_STRTOL = lazy(r"[ \t\n\v\f\r]*([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")
_STRTOD = lazy(
    r"[ \t\n\v\f\r]*[+-]?(?:0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
    r"(?:[pP][+-]?[0-9]+)?|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|inf(?:inity)?|nan)",
    re.IGNORECASE,
)


def _to_int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n >= 1 << 31 else n


def c_strtol_full(text: str, *, unsigned: bool = False) -> int | None:
    """libusual cf_set_int/cf_set_uint: strtol(value, &end, 0), rejecting a partial
    parse; the long is then stored into a C int (truncated)."""
    m = _STRTOL.match(text)
    if not m or m.end() != len(text):
        return None
    sign, digits = m.groups()
    if digits[:2].lower() == "0x":
        n = int(digits[2:], 16)
    elif digits.startswith("0") and len(digits) > 1:
        n = int(digits[1:], 8)
    else:
        n = int(digits)
    n = -n if sign == "-" else n
    limit = 1 << 64 if unsigned else 1 << 63
    if not unsigned:
        n = max(-limit, min(limit - 1, n))  # strtol saturates at LONG_MIN/LONG_MAX
    else:
        n %= limit
    if unsigned:
        return n & 0xFFFFFFFF
    return _to_int32(n)


def c_atoi(text: str) -> int:
    """atoi(): leading space, sign, digits; whatever follows is ignored; no digits = 0."""
    m = re.match(r"[ \t\n\v\f\r]*([+-]?)([0-9]*)", text)
    assert m is not None
    sign, digits = m.groups()
    if not digits:
        return 0
    n = int(digits)
    return _to_int32(-n if sign == "-" else n)


def c_parse_time(text: str) -> float | None:
    """libusual parse_time: strtod, whole string, not negative; seconds as a double,
    stored as integer microseconds (usec_t)."""
    m = _STRTOD.match(text)
    if not m or m.end() != len(text):
        return None
    try:
        v = float.fromhex(m.group(0).strip()) if "x" in m.group(0).lower() else float(m.group(0))
    except ValueError:
        return None
    if v < 0:
        return None
    if math.isnan(v) or math.isinf(v):
        # Accepted by PgBouncer; the cast to usec_t is undefined in C. On x86-64 the
        # real 1.18 shows nan as 9.22337e+12 s (2**63 us) and inf as 0.
        return 2**63 / 1_000_000 if math.isnan(v) else 0.0
    return int(v * 1_000_000) / 1_000_000


def parse_param_value(
    kind: str, raw: str, version: BouncerVersion
) -> tuple[bool, str | int | float, str | None]:
    """(accepted, value, unit) as PgBouncer's setter for this type would store it."""
    if kind == "int":
        n = c_strtol_full(raw)
        return (n is not None, n if n is not None else 0, None)
    if kind == "uint":
        n = c_strtol_full(raw, unsigned=True)
        return (n is not None, n if n is not None else 0, None)
    if kind == "time":
        t = c_parse_time(raw)
        return (t is not None, t if t is not None else 0.0, "s")
    if kind.startswith("lookup:"):
        for name in lookup_names(kind, version):
            if name.lower() == raw.lower():  # cf_set_lookup uses strcasecmp
                return (True, name, None)
        return (False, raw, None)
    return (True, raw, None)


def show_value(kind: str, value: str | int | float | bool) -> str:
    """How SHOW CONFIG prints a stored value (cf_get_int %d, cf_get_time_usec %g...)."""
    if kind == "time":
        return f"{float(value):g}"
    if kind in ("int", "uint"):
        return str(int(value))
    return str(value)


def bouncer_default(name: str, version: BouncerVersion) -> Setting:
    """PgBouncer's built-in default for `name`, with its version as the source."""
    return _bouncer_default(name, version.major, version.minor, version.cite("default"))


@lru_cache(maxsize=1024)  # a budget asks for the same few per pool: parsed once each
def _bouncer_default(name: str, major: int, minor: int, cited: str) -> Setting:
    version = BouncerVersion(major=major, minor=minor)  # all a value depends on
    spec = params(version).get(name)
    if spec is None:
        raise UnknownSetting(f"PgBouncer {version.text} has no parameter {name!r}")
    kind, default, _ = spec
    raw = default if default is not None else ""
    ok, value, unit = parse_param_value(kind, raw, version)
    if not ok:  # e.g. verbose (NULL default: the C variable starts at 0)
        value = 0 if kind in ("int", "uint") else raw
    return Setting(
        name=name,
        raw=raw,
        value=value,
        unit=unit,
        source=Source.default_of(cited, key=name),
    )


def has_setting(name: str, version: BouncerVersion) -> bool:
    return name in params(version)


def effective_setting(settings: dict[str, Setting], name: str, version: BouncerVersion) -> Setting:
    """The explicit [pgbouncer] value if set, else the version's default."""
    return settings.get(name) or bouncer_default(name, version)


# --- pools ----------------------------------------------------------------------------


class AuthLookup(Record, kw_only=True):
    """Where PgBouncer runs auth_query for a client of `client_db`: the pool of
    (database, user.value)."""

    client_db: str
    database: str  # auth_dbname, or the client's database
    user: Setting  # auth_user: the [databases] entry's or the global one
    dbname: Setting | None = None  # auth_dbname (1.19+) when set

    def describe(self) -> str:
        where = (f"auth_dbname {self.database} ({self.dbname.source.label()})"
                 if self.dbname is not None else "the client's database")
        return (f"auth_query lookups of {self.client_db}'s clients: auth_user "
                f"{self.user.value} ({self.user.source.label()}) in {where}")


class EffectivePool(Record, kw_only=True):
    """The limits of one PgBouncer pool: one (database entry, server user) pair."""

    database: str  # the [databases] entry (for the `*` fallback: the requested name)
    entry: str  # the entry that defined it: the name itself or "*"
    user: str  # the user PgBouncer logs in to the server as (the forced user if any)
    forced_user: bool
    pool_size: Term
    reserve_pool_size: Term
    min_pool_size: Term
    pool_mode: Setting
    max_db_connections: Term  # 0 = unlimited
    max_user_connections: Term  # 0 = unlimited
    reserve_used: bool  # False when reserve_pool_timeout = 0: PgBouncer never uses it
    location: Location
    notes: list[str] = field(default_factory=list)
    # Set on the pool auth_query lookups run in (auth_pool): the lookup that makes it.
    lookup: AuthLookup | None = None
    # pool_size 0 from PgBouncer 1.24: no limit of the pool's own (launch_new_connection
    # checks the pool's size only when it is > 0: pgbouncer commit bed917b4, #1227), only
    # max_db_connections and max_user_connections
    unlimited: bool = False
    # A pool of a forced-user entry no client uses: from 1.21 the janitor opens it and
    # keeps its min_pool_size connections with no client (pgbouncer commit dd7a06f0,
    # #947), and nothing more (no client waits): it holds `min_kept`.
    kept_only: bool = False

    @property
    def unbounded(self) -> bool:
        """No limit at all: pool_size 0 (1.24+) with neither max_db_connections nor
        max_user_connections set. Its clients' connections are then its only bound."""
        return self.unlimited and self.max_db_connections.value <= 0 \
            and self.max_user_connections.value <= 0

    @property
    def server_max(self) -> int:
        """Connections this pool alone may open: pool_size (+ reserve when usable); for
        a pool without a size of its own (`unlimited`), the smaller of max_db_connections
        and max_user_connections that is set, or 1 (the least it opens for a client) when
        neither is: a floor, said by `unbounded`."""
        if self.kept_only:
            return self.min_kept
        if self.unlimited:
            caps = [c.int_value for c in (self.max_db_connections, self.max_user_connections)
                    if c.value > 0]
            return min(caps) if caps else 1
        reserve = self.reserve_pool_size.int_value if self.reserve_used else 0
        if self.pool_size.int_value <= 0:
            # before 1.24 a pool of size 0 still opens one: launch_new_connection lets a
            # connection through while the pool's first login is not done
            # (!welcome_msg_ready), then only its reserve, up to 0 + reserve_pool_size
            return max(1, reserve)
        return self.pool_size.int_value + max(0, reserve)

    @property
    def min_kept(self) -> int:
        """Server connections the janitor keeps open with no client asking: min_pool_size,
        opened only while the pool holds fewer than pool_size (reserve not counted) and
        never with pool_size 0 (src/janitor.c check_pool_size, pgbouncer_1_18_0:494-495,
        pgbouncer_1_24_0:539-540)."""
        size = self.pool_size.int_value
        return max(0, min(self.min_pool_size.int_value, size)) if size > 0 else 0


class Names:
    """A pooler's [databases] and [users] entries by name, the later of a name kept (as
    the scans below find them): made once where many pools are worked out (audit 49: a
    scan per pool was N^3 with N databases x N users). A plain class, not a NamedTuple:
    this module is imported by every check, and a NamedTuple class is made by exec at
    import (start-up bench)."""

    __slots__ = ("databases", "settings", "terms", "users")

    def __init__(self, databases: dict[str, PoolerDatabase], users: dict[str, PoolerUser],
                 terms: dict[tuple[str, str], Term], settings: dict[str, Setting]) -> None:
        self.databases = databases
        self.users = users
        # the [pgbouncer] (or default) terms every pool of the pooler takes, each made
        # once (a Term is frozen: pools may share it)
        self.terms = terms
        self.settings = settings


def names_of(pooler: Pooler) -> Names:
    return Names({d.name: d for d in pooler.databases}, {u.name: u for u in pooler.users},
                 {}, {})


def _find_database(pooler: Pooler, name: str, names: Names | None = None
                   ) -> PoolerDatabase | None:
    if names is not None:
        return names.databases.get(name)
    found = None
    for db in pooler.databases:
        if db.name == name:
            found = db  # a later entry of the same name replaces the earlier one
    return found


# The admin console's database: PgBouncer serves it whatever [databases] holds (to the
# admin_users and stats_users: src/client.c admin check of "pgbouncer")
ADMIN_DATABASE = "pgbouncer"


def refuses_database(pooler: Pooler, dbname: str | None) -> bool:
    """Whether PgBouncer turns a client of database `dbname` away at login: set_pool finds
    no entry and register_auto_database none without a `*` (src/client.c,
    src/objects.c:368 @pgbouncer_1_18_0), so the client logs in to a fake database and is
    disconnected "no such database: <name>" (src/objects.c:1459 @pgbouncer_1_18_0,
    :2021 @pgbouncer_1_24_1; tests/test_pa213_oracle.py): a PgBouncer whose [databases]
    are wholly read (Pooler.databases_complete), with no entry of that name, no `*`
    fallback and no entry whose name the repository does not hold. Not known -> False."""
    if pooler.kind != "pgbouncer" or not pooler.databases_complete:
        return False
    if dbname is None or dbname in ("*", ADMIN_DATABASE):
        return False
    return not any(d.name in (dbname, "*") or d.name_from for d in pooler.databases)


def _find_user(pooler: Pooler, name: str, names: Names | None = None) -> PoolerUser | None:
    if names is not None:
        return names.users.get(name)
    found = None
    for u in pooler.users:
        if u.name == name:
            found = u
    return found


def _setting_term(setting: Setting, label: str) -> Term:
    return Term(label=label, value=float(setting.value), source=setting.source)


class _PoolEntries(NamedTuple):
    """Where a client of a database as a user lands: the [databases] entry, the user
    PgBouncer logs in to the server as, whether that user is forced by the entry, the
    [users] entry that applies to it, and what was assumed on the way."""

    entry: PoolerDatabase
    server_user: str
    forced: bool
    user_entry: PoolerUser | None
    notes: list[str]

    def database(self, asked: str) -> str:
        """The pool's database: the entry's name, or through the `*` fallback the name
        the client asked for."""
        return asked if self.entry.name == "*" else self.entry.name


def _pool_entries(pooler: Pooler, db: str, user: str, names: Names | None = None
                  ) -> _PoolEntries | None:
    """The entries a client of `db` as `user` is configured by; None when PgBouncer
    would reject the database (no [databases] entry of that name and no `*` fallback)."""
    version = pooler.version
    entry = _find_database(pooler, db, names) if db != "*" else None
    notes: list[str] = []
    if entry is None and db != "pgbouncer" and _find_database(pooler, "*", names) is None:
        # an entry whose name is not held here may be the one the client asks for
        entry = next((d for d in reversed(pooler.databases) if d.name_from), None)
        if entry is not None:
            notes.append(f"database {db!r}: taken to be entry {entry.name}, whose name "
                         f"{entry.name_from} the repository does not hold")
    if entry is None:
        entry = _find_database(pooler, "*", names)
        if entry is None or db == "pgbouncer":
            return None
        # a declared PgBouncer outside the repository (advisor.link.poolers
        # declared_bouncer) forwards every database: its `*` entry is not written anywhere
        if db != "*" and not pooler.id.startswith("declared-proxy/"):
            notes.append(f"database {db!r} has no [databases] entry: created from the * "
                         "fallback")
    forced = entry.user is not None
    server_user = entry.user if entry.user is not None else user
    # Before 1.23 a forced user is a separate object per database (src/objects.c
    # force_user): the [users] entry of that name does not apply to it. From 1.23 the
    # forced user is the global user (force_user_credentials -> global_user).
    user_entry = None
    if not forced or version.at_least(1, 23):
        user_entry = _find_user(pooler, server_user, names)
    if forced and user_entry is None and _find_user(pooler, server_user, names) is not None:
        notes.append(
            f"[users] {server_user} does not apply to the forced user of {entry.name} "
            f"in {version.cite()} (src/objects.c force_user)"
        )
    return _PoolEntries(entry, server_user, forced, user_entry, notes)


def _pool_mode(pooler: Pooler, found: _PoolEntries) -> Setting:
    """pool_mode: [users] over [databases] over [pgbouncer] over the default."""
    if found.user_entry is not None and found.user_entry.pool_mode is not None:
        return found.user_entry.pool_mode
    if found.entry.pool_mode is not None:
        return found.entry.pool_mode
    return effective_setting(pooler.settings, "pool_mode", pooler.version)


def effective_pool_mode(pooler: Pooler, db: str, user: str) -> Setting | None:
    """effective_pool(pooler, db, user).pool_mode, without working out the pool's
    sizes (asked per client by the pool-mode rules)."""
    found = _pool_entries(pooler, db, user)
    return None if found is None else _pool_mode(pooler, found)


def effective_pool(pooler: Pooler, db: str, user: str, names: Names | None = None
                   ) -> EffectivePool | None:
    """The pool a client of `db` as `user` lands in; None when PgBouncer would reject
    the database (no [databases] entry of that name and no `*` fallback). `names`:
    names_of(pooler), when the caller works out many."""
    return _effective_pool(pooler, db, user, None, names)


# auth_type values under which set_pool never runs auth_query (src/client.c: any takes
# the forced user, pam and ldap refuse an auth_user)
_NO_LOOKUP_AUTH_TYPES = frozenset({"any", "pam", "ldap"})


def _nonempty(setting: Setting | None) -> Setting | None:
    return setting if setting is not None and str(setting.value) != "" else None


def auth_lookup(pooler: Pooler, db: str, names: Names | None = None) -> AuthLookup | None:
    """Where auth_query runs for a client of `db` whose user is not in auth_file; None
    when no lookup happens (no auth_user, or an auth_type that does not look up).

    src/client.c set_pool: the database entry's auth_user, else the global auth_user
    (copied to the database on first use); start_auth_query -> prepare_auth_database
    (1.19+): the entry's auth_dbname, else the global auth_dbname, else the client's
    database; get_pool(auth_db, auth_user)."""
    found = _pool_entries(pooler, db, "", names)
    if found is None:
        return None
    version = pooler.version
    auth_type = effective_setting(pooler.settings, "auth_type", version)
    if str(auth_type.value) in _NO_LOOKUP_AUTH_TYPES:
        return None
    user = _nonempty(found.entry.auth_user) or _nonempty(pooler.settings.get("auth_user"))
    if user is None:
        return None
    dbname = None
    if version.at_least(1, 19):
        dbname = _nonempty(found.entry.auth_dbname) or _nonempty(
            pooler.settings.get("auth_dbname"))
    return AuthLookup(client_db=db, database=str(dbname.value) if dbname else db,
                      user=user, dbname=dbname)


def auth_pool(pooler: Pooler, lookup: AuthLookup, names: Names | None = None
              ) -> EffectivePool | None:
    """The pool the lookups run in: an ordinary pool of (lookup.database, auth_user),
    the auth_user being the global user (never the entry's forced user: get_pool takes
    the auth_user object itself), so its [users] entry applies. None when PgBouncer
    refuses the auth database: none at all, or the admin console ("cannot use the
    reserved ... database as an auth_dbname")."""
    if lookup.database == "pgbouncer":
        return None
    pool = _effective_pool(pooler, lookup.database, str(lookup.user.value), lookup, names)
    if pool is not None and pool.entry == "*" and lookup.dbname is not None \
            and not pooler.version.at_least(1, 21):
        pool.notes.append(
            f"auth_dbname {lookup.database} has no [databases] entry: "
            f"{pooler.version.cite()} finds it only once a client has opened it through the "
            "* fallback (src/client.c prepare_auth_database: find_database; "
            "find_or_register_database from 1.21), else such logins fail; counted")
    return pool


def _effective_pool(pooler: Pooler, db: str, user: str, lookup: AuthLookup | None,
                    names: Names | None = None) -> EffectivePool | None:
    found = _pool_entries(pooler, db, user, names)
    if found is None:
        return None
    if lookup is not None:
        found = _PoolEntries(found.entry, user, False, _find_user(pooler, user, names),
                             found.notes)
    version = pooler.version
    entry, server_user, forced, user_entry, notes = found

    def glob(name: str, label: str) -> Term:
        if names is None:
            return _setting_term(effective_setting(pooler.settings, name, version), label)
        term = names.terms.get((name, label))
        if term is None:
            term = names.terms[(name, label)] = _setting_term(
                effective_setting(pooler.settings, name, version), label)
        return term

    # pool_size: user (1.23+) > database > default_pool_size (src/server.c pool_pool_size)
    user_pool = user_entry.pool_size if user_entry is not None else None
    if user_pool is not None and user_pool.value >= 0 and version.at_least(1, 23):
        pool_size = user_pool
    elif entry.pool_size is not None and entry.pool_size.value >= 0:
        pool_size = entry.pool_size
    else:
        pool_size = glob("default_pool_size", "default_pool_size")
    if entry.reserve_pool_size is not None and entry.reserve_pool_size.value >= 0:
        reserve = entry.reserve_pool_size
    else:
        reserve = glob("reserve_pool_size", "reserve_pool_size")
    if entry.min_pool_size is not None and entry.min_pool_size.value >= 0:
        min_pool = entry.min_pool_size
    else:
        min_pool = glob("min_pool_size", "min_pool_size")
    # max_db_connections: a value <= 0 on the entry falls back to the global one.
    if entry.max_db_connections is not None and entry.max_db_connections.value > 0:
        max_db = entry.max_db_connections
    else:
        max_db = glob("max_db_connections", "max_db_connections")
    if (
        user_entry is not None
        and user_entry.max_user_connections is not None
        and user_entry.max_user_connections.value > 0
    ):
        max_user = user_entry.max_user_connections
    else:
        max_user = glob("max_user_connections", "max_user_connections")
    pool_mode = _pool_mode(pooler, found)
    timeout = names.settings.get("reserve_pool_timeout") if names is not None else None
    if timeout is None:
        timeout = effective_setting(pooler.settings, "reserve_pool_timeout", version)
        if names is not None:
            names.settings["reserve_pool_timeout"] = timeout
    reserve_used = float(timeout.value) > 0 and reserve.value > 0
    if reserve.value > 0 and not reserve_used:
        notes.append(
            f"reserve_pool_timeout = 0 ({timeout.source.label()}): PgBouncer never "
            f"opens the reserve pool (src/objects.c launch_new_connection)"
        )
    unlimited = pool_size.value <= 0 and version.at_least(1, 24)
    if unlimited:
        notes.append(f"pool_size 0: no limit of the pool's own in {version.cite()} "
                     "(1.24+: src/objects.c launch_new_connection checks it only when > 0), "
                     "only max_db_connections and max_user_connections")
    elif pool_size.value <= 0:
        notes.append(f"pool_size 0: {version.cite()} opens one server connection "
                     "for the pool's first login, then its reserve at most (src/objects.c "
                     "launch_new_connection; from 1.24 a pool_size of 0 is no limit)")
    return EffectivePool(
        database=found.database(db),
        entry=entry.name,
        user=server_user,
        forced_user=forced,
        pool_size=pool_size,
        reserve_pool_size=reserve,
        min_pool_size=min_pool,
        pool_mode=pool_mode,
        max_db_connections=max_db,
        max_user_connections=max_user,
        reserve_used=reserve_used,
        unlimited=unlimited,
        location=entry.location,
        notes=notes,
        lookup=lookup,
    )


def declared_pairs(pooler: Pooler) -> tuple[list[tuple[str, str]], list[str]]:
    """(db, user) pairs the config itself names, and what was assumed to get them."""
    pairs: list[tuple[str, str]] = []
    assumed: list[str] = []
    names = [u.name for u in pooler.users]
    seen: set[str] = set()
    auth_dbs = set()
    if pooler.version.at_least(1, 19):
        auth_dbs = {str(s.value) for s in (pooler.settings.get("auth_dbname"),
                                           *(d.auth_dbname for d in pooler.databases))
                    if _nonempty(s) is not None}
    for db in reversed(pooler.databases):
        if db.name in seen:
            continue
        seen.add(db.name)
        if db.name in auth_dbs:
            assumed.append(f"{db.name}: the auth_dbname, counted as the auth_query pool "
                           "only")
            continue
        if db.name == "*":
            assumed.append("the * fallback is left out: its databases are not known")
            continue
        if db.user is not None:
            pairs.append((db.name, db.user))
        elif names:
            pairs += [(db.name, u) for u in names]
            assumed.append(f"{db.name}: no forced user; assumed one pool per [users] entry")
        else:
            pairs.append((db.name, "*"))
            assumed.append(f"{db.name}: no forced user; assumed one client user (one pool)")
    pairs.reverse()
    if not pairs and _find_database(pooler, "*") is not None:
        # Never a silent zero: the fallback serves whatever clients ask for.
        pairs = [("*", "*")]
        assumed = [a for a in assumed if not a.startswith("the * fallback is left out")]
        assumed.append("[databases] holds only the * fallback and no client names its "
                       "(database, user): assumed one pair, one pool")
    return pairs, assumed


def _max_flow(
    pools: list[tuple[str, str, float]], db_caps: dict[str, int], user_caps: dict[str, int]
) -> float:
    """Largest total of server connections: source -> db (cap) -> pool (cap) -> user
    (cap) -> sink. Caps of 0 or less mean unlimited. Edmonds-Karp over the edges there
    are (a matrix walked whole per path was most of a budget's time with 25 databases).
    With caps on one side only (the usual case: max_user_connections unset) the flow is
    that side's capped sums, without a search (4 ms a pooler of 50 pools otherwise)."""
    if not any(user_caps.get(u, 0) > 0 for _, u, _ in pools):
        return _capped_sums([(d, c) for d, _, c in pools], db_caps)
    if not any(db_caps.get(d, 0) > 0 for d, _, _ in pools):
        return _capped_sums([(u, c) for _, u, c in pools], user_caps)
    if all(type(c) is int for _, _, c in pools):
        # whole pool maxima (server_side_max's): the same value, by Dinic's levels and
        # blocking flows instead of one shortest path per unit pushed (audit 49: a
        # pooler of 100 databases x 100 users took seconds here)
        from advisor.facts.flow import max_flow

        return max_flow(pools, db_caps, user_caps)
    big = sum(max(0, c) for _, _, c in pools) + 1  # a negative size is no capacity
    cap: dict[str, dict[str, int]] = {"s": {}, "t": {}}

    def edge(x: str, y: str) -> None:
        cap.setdefault(x, {}).setdefault(y, 0)
        cap.setdefault(y, {}).setdefault(x, 0)  # the residual edge back

    for d, u, c in pools:
        db, user = f"d:{d}", f"u:{u}"
        edge("s", db)
        edge(db, user)
        edge(user, "t")
        dcap = db_caps.get(d, 0)
        cap["s"][db] = dcap if dcap > 0 else big
        cap[db][user] += max(0, c)
        ucap = user_caps.get(u, 0)
        cap[user]["t"] = ucap if ucap > 0 else big
    flow = 0
    while True:
        parent = {"s": "s"}
        queue = ["s"]
        for x in queue:
            for y, left in cap[x].items():
                if left > 0 and y not in parent:
                    parent[y] = x
                    queue.append(y)
            if "t" in parent:
                break
        if "t" not in parent:
            return flow
        push = big
        y = "t"
        while y != "s":
            push = min(push, cap[parent[y]][y])
            y = parent[y]
        y = "t"
        while y != "s":
            cap[parent[y]][y] -= push
            cap[y][parent[y]] += push
            y = parent[y]
        flow += push


def _capped_sums(pools: list[tuple[str, float]], caps: dict[str, int]) -> float:
    """Sum over groups of min(cap, the group's pools); a cap of 0 or less is none."""
    totals: dict[str, float] = {}
    for group, c in pools:
        totals[group] = totals.get(group, 0) + max(0, c)
    return sum(min(t, caps[g]) if caps.get(g, 0) > 0 else t for g, t in totals.items())


def _add_auth_pools(pooler: Pooler, pools: list[EffectivePool],
                    seen: set[tuple[str, str]], names: Names | None = None) -> list[str]:
    """Append the pools auth_query lookups of the client pools' databases run in (one
    per auth database and auth_user: src/client.c start_auth_query); notes."""
    notes: list[str] = []
    asked: set[str] = set()
    for client in list(pools):
        if client.lookup is not None or client.database in asked:
            continue
        asked.add(client.database)
        lookup = auth_lookup(pooler, client.database, names)
        if lookup is None:
            continue
        pool = auth_pool(pooler, lookup, names)
        if pool is None:
            notes.append(f"{lookup.describe()}: {pooler.version.cite()} refuses "
                         f"that database (src/client.c prepare_auth_database), so such "
                         "logins fail: no pool")
            continue
        key = (pool.database, pool.user)
        if key in seen:
            continue
        seen.add(key)
        pools.append(pool)
        notes += pool.notes
        notes.append(f"{lookup.describe()}: a pool of its own, counted; a client user "
                     "listed in auth_file is not looked up")
    return notes


def pooler_pools(pooler: Pooler, pairs: list[tuple[str, str]] | None
                 ) -> tuple[list[EffectivePool], list[str]]:
    """The pools `pairs` open on the pooler (each once: several client users behind one
    forced user share one), then the auth_query pools their logins look passwords up
    in; with what was assumed or left out. `pairs` None: those the config declares."""
    notes: list[str] = []
    if pairs is None:
        pairs, assumed = declared_pairs(pooler)
        notes.append("pairs not given: used the (database, user) pairs the config declares")
        notes += assumed
    pools: list[EffectivePool] = []
    seen: set[tuple[str, str]] = set()
    names = names_of(pooler)
    for db, user in pairs:
        pool = effective_pool(pooler, db, user, names)
        if pool is None:
            notes.append(f"database {db!r} is not served by this pooler: no pool")
            continue
        key = (pool.database, pool.user)
        if key in seen:
            continue  # several client users behind one forced user share one pool
        seen.add(key)
        pools.append(pool)
        notes += pool.notes
    notes += _add_auth_pools(pooler, pools, seen, names)
    notes += _add_kept_pools(pooler, pools, seen, names)
    return pools, notes


def _add_kept_pools(pooler: Pooler, pools: list[EffectivePool],
                    seen: set[tuple[str, str]], names: Names | None = None) -> list[str]:
    """Append the pools of forced-user [databases] entries with a min_pool_size that no
    counted pair opens: from PgBouncer 1.21 the janitor creates them and keeps
    min(min_pool_size, pool_size) server connections open with no client (src/janitor.c:
    get_pool for database_min_pool_size > 0 and forced_user_credentials; check_pool_size);
    before, a pool is made by a client's login only. Notes."""
    if not pooler.version.at_least(1, 21):
        return []
    notes: list[str] = []
    for entry in pooler.databases:
        if entry.user is None or entry.name == "*":
            continue
        pool = effective_pool(pooler, entry.name, entry.user, names)
        if pool is None or (pool.database, pool.user) in seen or pool.min_kept <= 0:
            continue
        seen.add((pool.database, pool.user))
        pools.append(replace(pool, kept_only=True))
        notes.append(f"{entry.name}/{entry.user}: no client counted here opens it, but "
                     f"{pooler.version.cite()} keeps its min_pool_size "
                     f"{pool.min_kept} open with none (1.21+: src/janitor.c)")
    return notes


def pool_key(pooler: Pooler, db: str, user: str) -> tuple[str, str] | None:
    """(database, server user) of the pool a client of `db` as `user` lands in, as
    effective_pool names it, without working out its sizes; None when PgBouncer would
    reject the database."""
    found = _pool_entries(pooler, db, user)
    if found is None:
        return None
    return (found.database(db), found.server_user)


def _user_key(pooler: Pooler, p: EffectivePool) -> str:
    """The user connection counter a pool counts on (src/objects.c): per user object,
    which before 1.23 is private to the database when the user is forced."""
    if p.forced_user and not pooler.version.at_least(1, 23):
        return f"{p.database}\x00{p.user}"
    return p.user


def pools_flow(pooler: Pooler, pools: list[EffectivePool], maxima: list[float]) -> float:
    """Server connections one process of `pooler` opens at most when pool i opens at most
    maxima[i], the pools sharing their database's max_db_connections and their user's
    max_user_connections (launch_new_connection checks both for every connection, the
    janitor's min_pool_size ones too)."""
    db_caps: dict[str, int] = {}
    user_caps: dict[str, int] = {}
    for p in pools:
        db_caps.setdefault(p.database, p.max_db_connections.int_value)
        user_caps[_user_key(pooler, p)] = p.max_user_connections.int_value
    return _max_flow([(p.database, _user_key(pooler, p), m) for p, m in zip(pools, maxima,
                                                                            strict=True)],
                     db_caps, user_caps)


def server_side_max(pooler: Pooler, pairs: list[tuple[str, str]] | None,
                    found: tuple[list[EffectivePool], list[str]] | None = None
                    ) -> Contribution:
    """Server connections `pooler` may open at most: replicas x (sum over its pools of
    pool_size + usable reserve, capped per database entry by max_db_connections and per
    user by max_user_connections)."""
    pools, notes = found if found is not None else pooler_pools(pooler, pairs)
    notes = list(notes)
    by_db: dict[str, list[EffectivePool]] = {}
    for p in pools:
        by_db.setdefault(p.database, []).append(p)
    user_terms: dict[str, Term] = {}
    for p in pools:
        user_terms[_user_key(pooler, p)] = p.max_user_connections
    per_replica = int(pools_flow(pooler, pools, [p.server_max for p in pools]))

    parts: list[Contribution] = []
    for d, ps in by_db.items():
        pool_parts = []
        for p in ps:
            factors = [p.pool_size]
            if p.reserve_used and not p.unlimited:
                factors.append(p.reserve_pool_size)
            note = "pool_size + reserve_pool_size" if p.reserve_used else "pool_size"
            if p.unlimited:
                # no size of its own: its database's or user's cap, else a floor of 1
                factors = [Term(label=("pool_size 0, no limit of its own: capped by "
                                       "max_db_connections / max_user_connections")
                                if not p.unbounded else
                                "pool_size 0, no limit at all: counted as at least 1",
                                value=float(p.server_max), source=p.pool_size.source)]
                # the words advisor.budget.demand.has_unbounded_pool looks for
                note = "unbounded pool: counted as 1, the real peak is higher" \
                    if p.unbounded else "pool_size 0: capped by max_db_connections / " \
                    "max_user_connections"
            if not p.unlimited and p.pool_size.value <= 0:
                # before 1.24: one for the first login, then the reserve only
                factors = [Term(label="pool_size 0 before PgBouncer 1.24: one connection "
                                "for the first login, else the reserve",
                                value=float(p.server_max), source=p.pool_size.source)]
            if p.kept_only:
                # no client opens it: the janitor keeps min_pool_size (1.21+)
                factors = [Term(label="min_pool_size kept with no client (below pool_size)",
                                value=float(p.min_kept), source=p.min_pool_size.source)]
                note = "min_pool_size"
            if p.lookup is not None:
                note = f"{p.lookup.describe()}: {note}"
            pool_parts.append(
                Contribution(
                    who=f"{d}/{p.user}",
                    kind="pooler",
                    op="+",
                    factors=factors,
                    total=float(p.server_max),
                    location=p.location,
                    note=note,
                )
            )
        raw = sum(p.server_max for p in ps)
        cap = ps[0].max_db_connections
        factors = []
        note = f"sum of {len(ps)} pool(s)"
        total = float(raw)
        if cap.value > 0:
            factors.append(cap)
            if cap.value < raw:
                note += f", capped by max_db_connections {cap.int_value}"
            total = float(min(raw, cap.int_value))
        parts.append(
            Contribution(
                who=d,
                kind="pooler",
                op="min" if factors else "+",
                factors=factors,
                parts=pool_parts,
                total=total,
                location=ps[0].location,
                note=note,
            )
        )
    if sum(part.total for part in parts) > per_replica:
        capped = [
            f"{k.split(chr(0))[-1]} max_user_connections {t.int_value}"
            for k, t in user_terms.items()
            if t.int_value > 0
        ]
        notes.append("capped per user: " + ", ".join(capped))
    so_reuseport = effective_setting(pooler.settings, "so_reuseport", pooler.version)
    if int(so_reuseport.value):
        notes.append(
            f"so_reuseport = 1 ({so_reuseport.source.label()}): every PgBouncer process "
            f"sharing the port has these limits; replicas must count processes"
        )
    notes.append(
        "a queued cancel request may briefly open up to 2 x pool_size per pool, past "
        "max_db_connections/max_user_connections (src/objects.c launch_new_connection)"
    )
    per = Term(
        label="server connections per PgBouncer process (sum of capped pools)",
        value=float(per_replica),
        source=Source.default_of("computed: the database entries below"),
    )
    return Contribution(
        who=pooler.name,
        kind="pooler",
        factors=[pooler.replicas, per],
        parts=parts,
        total=pooler.replicas.value * per_replica,
        location=pooler.location,
        note="; ".join(dict.fromkeys(notes)),  # a note each pool repeats, once
    )
