"""What Patroni does with the PostgreSQL parameters of its dynamic (DCS) configuration,
where the Zalando operator (Spilo) and Crunchy PGO put a cluster's parameters.

Patroni passes a few parameters on the postmaster's command line (patroni/postgresql/
config.py ConfigHandler.CMDLINE_OPTIONS, patroni/patroni de6b22c8) and validates their
values from the dynamic configuration (patroni/config.py _process_postgresql_parameters):
a value its validator refuses is dropped with the warning "postgresql parameter
max_connections=10 failed validation, defaulting to 100", and Patroni's own default
(__DEFAULT_CONFIG, the CMDLINE_OPTIONS default) is what PostgreSQL runs with. The floors
below are CMDLINE_OPTIONS' IntValidator minimums; max_connections' floor is 25 from
Patroni 1.6.1 (commit 53d32f14, "Allow lower values for postgresql configuration"; it was
100 before).

Patroni also holds up to two connections of its own to its PostgreSQL, as the superuser
(patroni/postgresql/config.py:1172-1181 at de6b22c8, the local connection's kwargs are
the superuser's), each kept open by its NamedConnection (patroni/postgresql/connection.py)
until it fails: `heartbeat` (patroni/postgresql/__init__.py:94-95), the HA loop's, and
`restapi` (patroni/api.py:1583-1587), opened by the first REST call that queries (GET
/patroni, which the Zalando operator polls; GET /readiness on a replica, the pods'
readiness probe). So a PGO or Percona primary, whose leader's /readiness answers without
a query and which nothing polls on /patroni, may hold only `heartbeat`: 2 is an upper
bound, subtracted whole (a verdict never rests on the REST traffic).
A superuser session takes an ordinary slot: PostgreSQL refuses a non-superuser once
only superuser_reserved_connections (+ reserved_connections, 16+) slots are free
(postinit.c InitPostgres), so they come out of what the applications get.
"""

from __future__ import annotations

from advisor.model import Setting, Source, Term

# name -> (Patroni's default, the least value its validator accepts)
CMDLINE_FLOORS: dict[str, tuple[int, int]] = {
    "max_connections": (100, 25),
    "max_wal_senders": (10, 3),
    "max_replication_slots": (10, 4),
    "max_worker_processes": (8, 2),
    "max_locks_per_transaction": (64, 32),
    "max_prepared_transactions": (0, 0),
}

WHERE = ("patroni/config.py _process_postgresql_parameters, CMDLINE_OPTIONS "
         "IntValidator(min={floor}) in patroni/postgresql/config.py")


def patroni_floors(settings: dict[str, Setting], who: str
                   ) -> tuple[dict[str, Setting], list[str]]:
    """`settings` as PostgreSQL runs them under Patroni: each CMDLINE_OPTIONS parameter
    below its validator's floor replaced by Patroni's default, traced to the line that
    set the refused value; and one notice per parameter replaced. `who` names where the
    operator put the parameters ("Zalando operator (bootstrap.dcs)")."""
    out = dict(settings)
    notices: list[str] = []
    for name, (default, floor) in CMDLINE_FLOORS.items():
        setting = settings.get(name)
        if setting is None or not isinstance(setting.value, int | float) \
                or isinstance(setting.value, bool) or setting.value >= floor:
            continue
        at = setting.source.label()
        why = (f"Patroni default {default}: {name} = {setting.raw} at {at} is below Patroni's "
               f"minimum {floor}, so Patroni drops it ('failed validation, defaulting to "
               f"{default}', {WHERE.format(floor=floor)})")
        out[name] = Setting(name=name, raw=str(default), value=default, unit=setting.unit,
                            source=Source.default_of(why, key=name))
        notices.append(f"{who}: {name} = {setting.raw} ({at}) is below Patroni's minimum "
                       f"{floor}: Patroni logs 'postgresql parameter {name}={setting.raw} "
                       f"failed validation, defaulting to {default}' and PostgreSQL runs "
                       f"with {default}")
    return out, notices


# heartbeat, and restapi once a querying REST call opened it (module docstring): an
# upper bound, counted whole so a verdict never rests on Patroni's REST traffic
PATRONI_SESSIONS = 2
SESSIONS_WHERE = ("Patroni's named connections as the superuser, up to 2: 'heartbeat' "
                  "(patroni/postgresql/__init__.py:94-95), always, and 'restapi' "
                  "(patroni/api.py:1583-1587), once a REST call that queries opens it "
                  "(GET /patroni; not a leader's /readiness), at patroni/patroni de6b22c8")


def patroni_sessions(why: str | None = None) -> Term:
    """The slots Patroni's own superuser sessions hold (at most) on each instance it
    runs; `why`: what says Patroni runs there, when no operator or Spilo image does."""
    where = SESSIONS_WHERE if why is None else f"{SESSIONS_WHERE}; Patroni runs: {why}"
    return Term(label="Patroni's superuser sessions", value=PATRONI_SESSIONS,
                source=Source.default_of(where, key="patroni"))
