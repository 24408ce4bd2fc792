"""The connection-slot cross-checks PostgreSQL's postmaster makes before it starts
(PostmasterMain, src/backend/postmaster/postmaster.c): a configuration that fails one
exits with the message below and never takes a connection.

Per major, as the real servers of 10 to 18 print them (tests/test_pg_startup_oracle.py
starts each on such a configuration; the texts are the release binaries' own strings):
  before 11: two independent checks, superuser_reserved_connections >= max_connections
             ("superuser_reserved_connections must be less than max_connections"), then
             max_wal_senders >= max_connections ("max_wal_senders must be less than
             max_connections"); commit 6a0b30f0401a ("Fix cross-checking of
             ReservedBackends/max_wal_senders/MaxConnections", no back-patch) says both
             were checked independently "for a long time" before it.
  11:        superuser_reserved_connections + max_wal_senders >= max_connections (that
             commit: WAL senders may not use the superuser slots).
  12 to 15:  superuser_reserved_connections >= max_connections (WAL senders have their
             own slots from 12: release-12 notes, "Make max_wal_senders not count as part
             of max_connections").
  16+:       superuser_reserved_connections + reserved_connections >= max_connections;
             from 17 the parameter names are quoted.
Pure: the caller gives each parameter's Term (its file value, else the version's default).
"""

from __future__ import annotations

from advisor.model import StartRefusal, Term


def _n(term: Term) -> int:
    return term.int_value


def startup_refusal(version: int, max_connections: Term, superuser_reserved: Term,
                    reserved: Term | None = None, wal_senders: Term | None = None
                    ) -> StartRefusal | None:
    """The refusal of a server of major `version` with these settings, or None when the
    checks pass. `reserved` (reserved_connections) counts from 16, `wal_senders`
    (max_wal_senders) before 12."""
    mc, su = max_connections, superuser_reserved
    if version >= 16:
        rc = _n(reserved) if reserved is not None else 0
        if _n(su) + rc < _n(mc):
            return None
        q = '"' if version >= 17 else ""
        return StartRefusal(
            message=(f"{q}superuser_reserved_connections{q} ({_n(su)}) plus "
                     f"{q}reserved_connections{q} ({rc}) must be less than "
                     f"{q}max_connections{q} ({_n(mc)})"),
            terms=tuple(t for t in (mc, su, reserved) if t is not None))
    if version >= 12:
        if _n(su) < _n(mc):
            return None
        return StartRefusal(message=(f"superuser_reserved_connections ({_n(su)}) must be "
                                     f"less than max_connections ({_n(mc)})"),
                            terms=(mc, su))
    ws = _n(wal_senders) if wal_senders is not None else 0
    if version == 11:
        if _n(su) + ws < _n(mc):
            return None
        return StartRefusal(
            message=(f"superuser_reserved_connections ({_n(su)}) plus max_wal_senders ({ws}) "
                     f"must be less than max_connections ({_n(mc)})"),
            terms=tuple(t for t in (mc, su, wal_senders) if t is not None))
    if _n(su) >= _n(mc):
        return StartRefusal(message="superuser_reserved_connections must be less than "
                                    "max_connections", terms=(mc, su))
    if wal_senders is not None and ws >= _n(mc):
        return StartRefusal(message="max_wal_senders must be less than max_connections",
                            terms=(mc, wal_senders))
    return None
