"""Managed transaction-mode poolers recognised by the host a client connects to, from the
providers' own documentation (audit 53). Pure: no I/O.

- Supabase's shared pooler (Supavisor): `aws-[region].pooler.supabase.com`, port 5432 is
  session mode, port 6543 transaction mode
  (https://supabase.com/docs/guides/database/connecting-to-postgres, "Shared pooler
  (Supavisor) - transaction mode | aws-[region].pooler.supabase.com:6543"); transaction
  mode "does not support session-level features (SET, LISTEN/NOTIFY, temporary tables
  that span transactions, or advisory locks)"
  (https://supabase.com/docs/guides/self-hosting/accessing-postgres); "although the direct
  connections and Supavisor in session mode support prepared statements, Supavisor in
  transaction mode does not"
  (https://supabase.com/docs/guides/troubleshooting/disabling-prepared-statements-qL8lEL).
  Supavisor is not PgBouncer: how it treats startup parameters is not documented there,
  so PA410 does not run against it.
- Neon's pooled endpoint: the endpoint ID with `-pooler`
  (`ep-...-pooler.<region>.aws.neon.tech`) is PgBouncer "in transaction mode", with
  max_client_conn 10,000, not user-configurable
  (https://neon.com/docs/connect/connection-pooling,
  https://neon.com/faqs/postgres-providers-remove-manual-connection-pooling); "protocol-level
  prepared statements are supported" (the same connection-pooling page), so PA405 does not
  run against it. Its PgBouncer version and ignore_startup_parameters are not documented
  there: PA410 does not run against it either.

A session-mode endpoint (Supabase's port 5432) holds no transaction-mode hazard: it is not
made a pooler.
"""

from __future__ import annotations

from typing import NamedTuple


class ManagedPooler(NamedTuple):
    provider: str  # "supabase" | "neon"
    label: str  # how the notice and the sources name it
    mode: str  # "transaction"
    mode_doc: str  # the URL its mode is read from
    # [pgbouncer] settings the provider documents, with the URL each is read from
    settings: tuple[tuple[str, str, str], ...]
    # PA4xx codes the documentation does not support running against it, and why
    not_checked: tuple[tuple[str, str], ...]
    # How the findings name it, and what says its mode (audit 55: it was "PgBouncer
    # <host>" in transaction mode "(default, default: ...)")
    title: str  # "Supabase Supavisor": the provider and what runs there
    brief: str  # "transaction mode, port 6543": the mode and what in the URL selects it
    rule: str  # the provider's host/port rule the mode is read from (cited: mode_doc)
    # How its server side could be counted, said by its notice and PA107 (audit 55: "a
    # [[servers]] entry whose hosts include <the pooler's host>" would take the pooler for
    # the server, and the client, then linked to it, would no longer be checked for PA4xx)
    counting: str = ""
    # PA405's fix in the provider's own words, or None when PA405 does not run
    prepared_fix: str | None = None


SUPABASE_CONNECT = "https://supabase.com/docs/guides/database/connecting-to-postgres"
SUPABASE_PREPARED = ("https://supabase.com/docs/guides/troubleshooting/"
                     "disabling-prepared-statements-qL8lEL")
NEON_POOLING = "https://neon.com/docs/connect/connection-pooling"
NEON_LIMITS = "https://neon.com/faqs/postgres-providers-remove-manual-connection-pooling"

_SUPAVISOR = ManagedPooler(
    provider="supabase", label="Supabase shared pooler (Supavisor), transaction mode",
    mode="transaction", mode_doc=SUPABASE_CONNECT,
    settings=(("pool_mode", "transaction", SUPABASE_CONNECT),
              # not tracked at all: as PgBouncer with its tracking off
              ("max_prepared_statements", "0", SUPABASE_PREPARED)),
    not_checked=(("PA410", "how Supavisor treats startup parameters is not documented"),),
    title="Supabase Supavisor", brief="transaction mode, port 6543",
    rule="port 6543 of aws-[region].pooler.supabase.com",
    counting=("Supavisor is not PgBouncer: no declaration of this tool counts it (a "
              "[[proxies]] kind = \"pgbouncer\" would apply PgBouncer's defaults to it, and a "
              "[[servers]] entry with this host would take the pooler for the server)"),
    # Supavisor has no max_prepared_statements to set and is not upgraded by the user:
    # the fix is the client's (SUPABASE_PREPARED lists it per library) or session mode,
    # port 5432 (SUPABASE_CONNECT), which "support[s] prepared statements" (SUPABASE_PREPARED)
    prepared_fix=(
        "turn the driver's named prepared statements off, as Supabase lists per library "
        "(Prisma: `?pgbouncer=true` at the end of the connection string; postgres.js/Drizzle: "
        "`prepare: false`; node-postgres: no `name` in the query; psycopg: prepare_threshold "
        f"None; asyncpg: statement_cache_size=0; {SUPABASE_PREPARED}), or connect through "
        "Supavisor's session mode on port 5432 or directly, which support prepared "
        f"statements ({SUPABASE_CONNECT})"))

_NEON = ManagedPooler(
    provider="neon", label="Neon pooled endpoint (PgBouncer, transaction mode)",
    mode="transaction", mode_doc=NEON_POOLING,
    settings=(("pool_mode", "transaction", NEON_POOLING),
              ("max_client_conn", "10000", NEON_LIMITS)),
    not_checked=(("PA405", f"Neon documents protocol-level prepared statements as "
                           f"supported ({NEON_POOLING})"),
                 ("PA410", "Neon does not document its PgBouncer's "
                           "ignore_startup_parameters")),
    title="Neon PgBouncer", brief="transaction mode, -pooler endpoint",
    rule="an endpoint ID ending in -pooler",
    counting=("declare the server and a [[proxies]] kind = \"pgbouncer\" with this host to "
              "count it (Neon does not document its PgBouncer's version: without `version` "
              "1.18 is assumed, which tracks no prepared statements; a [[servers]] entry "
              "with this host would take the pooler for the server)"))


def of(provider: str | None) -> ManagedPooler | None:
    """The facts of a managed pooler of `provider` (Pooler.managed)."""
    return next((known for known in (_SUPAVISOR, _NEON) if known.provider == provider), None)


def recognise(host: str | None, port: int | None) -> ManagedPooler | None:
    """The managed transaction-mode pooler `host`:`port` is, if any."""
    if not host:
        return None
    host = host.lower().rstrip(".")
    if host.endswith(".pooler.supabase.com"):
        return _SUPAVISOR if port == 6543 else None  # 5432 (the default): session mode
    first, _, rest = host.partition(".")
    if first.startswith("ep-") and first.endswith("-pooler") and rest.endswith("neon.tech"):
        return _NEON
    return None


def not_checked(provider: str, code: str) -> str | None:
    """Why `code` does not run against a managed pooler of `provider`; None when it does."""
    known = of(provider)
    return None if known is None else dict(known.not_checked).get(code)
