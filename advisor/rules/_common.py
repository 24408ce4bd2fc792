"""Helpers shared by rule modules: building findings from terms."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from advisor.budget.arith import num
from advisor.model import Client, Location, Pooler, RelatedLocation, Term


def related(terms: Iterable[Term], fmt: Callable[[float], str] = num
            ) -> tuple[RelatedLocation, ...]:
    """One related location per term that came from a file (not from a default)."""
    seen: set[tuple[str, int | None, str]] = set()
    out = []
    for t in terms:
        loc = t.source.location()
        if loc is None:
            continue
        key = (loc.path, loc.line, t.label)
        if key in seen:
            continue
        seen.add(key)
        out.append(RelatedLocation(location=loc, message=f"{t.label} = {fmt(t.value)}"))
    return tuple(out)


def primary(terms: Iterable[Term], fallback: Location) -> Location:
    """The first term that has a file position, else `fallback`."""
    for t in terms:
        loc = t.source.location()
        if loc is not None:
            return loc
    return fallback


def secs(term: Term) -> str:
    """`30 s (HikariCP connectionTimeout, k8s/app.yaml:9)`: a duration in seconds."""
    return f"{num(term.value)} s ({term.label}, {term.source.label()})"


def pg_seconds(setting: object) -> float:
    """A PostgreSQL time setting in seconds (its value is in its base unit, ms by
    default): one conversion for every rule that compares timeouts."""
    value = float(getattr(setting, "value", 0) or 0)
    unit = getattr(setting, "unit", None) or "ms"
    return value * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}.get(unit, 1e-3)


# Keys the CloudNativePG Pooler webhook lets through spec.pgbouncer.parameters
# (internal/webhook/v1/pooler_webhook.go AllowedPgbouncerGenericConfigurationParameters);
# only those the rules propose are listed.
_CNPG_POOLER_PARAMETERS = frozenset({"idle_transaction_timeout", "query_wait_timeout"})


def bouncer_key_place(pooler: Pooler, key: str) -> str | None:
    """Where the user sets PgBouncer `key` for `pooler`, in the words of how it is
    deployed: its pgbouncer.ini, the image's environment variable, or the operator's
    field; None when the deployment offers no way (the Zalando operator's pooler takes
    only mode and maxDBConnections, CloudNativePG only its allowed parameters)."""
    from advisor.read.sources.operators.containers import bouncer_env_variable

    origin = pooler.id.split(":", 1)[0]
    if origin == "zalando-pooler":
        return None
    if origin.startswith("declared-proxy/"):
        # a PgBouncer the repository does not deploy: set where it runs (its provider),
        # and in its declaration when that has the key, so the check follows
        # (advisor.link.poolers.declared_bouncer)
        from advisor.link.poolers import DECLARED_BOUNCER_KEYS

        said = (f", then `{key}` of its [[proxies]] declaration" if key in
                DECLARED_BOUNCER_KEYS else "")
        return f"{pooler.name}'s own settings (where it runs, outside the repository){said}"
    if origin == "cnpg-pooler":
        return (f"spec.pgbouncer.parameters of Pooler {pooler.name}"
                if key in _CNPG_POOLER_PARAMETERS else None)
    if origin in ("crunchy-pooler", "percona-pooler"):
        cluster = pooler.name.removesuffix("-pgbouncer")  # PGO names it <cluster>-pgbouncer
        kind = "PerconaPGCluster" if origin == "percona-pooler" else "PostgresCluster"
        return f"spec.proxy.pgBouncer.config.global of {kind} {cluster}"
    if pooler.env_style and pooler.main_end is None:
        variable = bouncer_env_variable(pooler.env_style, key)
        if variable is None:
            return f"a pgbouncer.ini mounted into {pooler.name} (its image has no variable for it)"
        return f"the {variable} variable of {pooler.name}'s PgBouncer container"
    return f"{pooler.name}'s pgbouncer.ini"


def floor_clients(clients: Iterable[Client]) -> list[str]:
    """The names of the clients whose connections are a floor: unknown, or a pool with no
    limit (a pooler's client side then cannot be said to fit: PA201, PA212)."""
    return [c.name for c in clients if c.unknown or not c.pools
            or any(p.bound == "unbounded" for p in c.pools)]


def floor_text(names: list[str]) -> str:
    """'2 clients of unknown or unbounded size: web, worker'."""
    return (f"{len(names)} client{'s' if len(names) > 1 else ''} of unknown or unbounded "
            f"size: {', '.join(names)}")
