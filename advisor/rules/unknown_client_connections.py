"""PA106 unknown-client-connections."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import num
from advisor.budget.slots import client_contribution
from advisor.model import Client, Finding, Fix, RelatedLocation, Severity, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._app_pools import pods
from advisor.rules._unknown_pairs import pairs_findings


@rule("PA106", "unknown-client-connections", Severity.warning,
      "A workload connects to a database but its connections per pod could not be read")
def unknown_client_connections(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Reports a workload that connects to PostgreSQL (its environment names a database URL
    or host) when pool-advisor could not determine how many connections one of its pods
    opens: no application source folder was found for it, or the folder holds no pool
    setting of a stack pool-advisor reads and no driver dependency whose default could be
    named. The message says what was looked for and where.

    A Flux HelmRelease or Argo CD Application whose chart is not in the repository (a Helm
    or OCI repository) is not rendered: when its values connect it to a server or pooler
    of the repository (env, referenced Secrets, a database host), its pods are unknown
    too, and the finding names the release and its chart and asks for both numbers.

    A pool size or process count the application reads from a variable the container
    sets from a Secret (or a reference whose value the repository does not hold) is
    unknown too, in every stack pool-advisor reads: the finding names the variable and
    its line. The code's fallback (`getenv("X", 5)`, `Number(process.env.X) || 10`,
    `${X:4}`) and the library's default are not what runs, since the variable is set.

    An object of a kind pool-advisor does not read (an application operator's custom
    resource, such as a LiteLLMProxy) that takes a connection Secret a PostgreSQL
    operator makes (CloudNativePG `<cluster>-app`) connects to that cluster: its pods and
    pools are the other operator's, so both are unknown, and the finding asks for both.

    Behind a PgBouncer with a `*` fallback (or an entry that forces no user), each
    (database, user) a client logs in with is a pool of its own. When the pairs of some
    clients are not read (a URL from a Secret, a database name in a variable the route
    does not read), the budget counts the pools of the pairs it knows, or one pool for
    them all: a floor. The finding names the pooler and those clients, what was counted,
    and the worst case: each a pair of its own, a pool of `pool_size + reserve` capped by
    `max_db_connections`/`max_user_connections`, x PgBouncer processes, and whether the
    server's peak would then pass its usable slots. A PgBouncer no client of the
    repository connects to has no pair read at all: unless its caps bound every pair a
    client could bring (advisor.budget.pairs.open_bound), it is counted as the pairs its
    config names, a floor, and the finding says how many pairs would take the server over.

    A workload whose database host is no server, pooler or Service of the repository is
    in no budget at all: PA107 unlinked-database-client reports it, not this rule.

    ## Why is this bad
    Such a workload is not counted as 0 but as one connection per pod at peak, or, when
    some of its pools were read and another's size was not, as the pools read, the least
    a pod that connects holds: the server's budget prints `peak >= N (K clients
    unknown)` and is never reported as fitting, and PA101 reports it when even that
    floor is past the usable slots. The unknown pods
    may be the ones that exhaust `max_connections`; a budget that leaves them out would
    say "fits" for a deployment that refuses connections at peak.

    ## Example
    ```toml
    # .pool-advisor.toml: nothing says what the reports worker opens
    ```

    ## Use instead
    ```toml
    [[workloads]]
    name = "reports"
    connections = 12        # per pod, all processes and pools together
    # or: source = "services/reports"   (the folder its image is built from)

    [[workloads]]
    name = "miniflux"       # a HelmRelease of a chart not in the repository
    connections = 10
    replicas = 2            # its pods at peak: the chart is not rendered
    ```

    ## Options
    None.

    ## References
    - DESIGN.md: "a client whose pool size cannot be determined uses the driver default
      and says so, or is reported as unknown. Never guess silently."
    - PA104 default-pool-size-applied: when the stack is identified (URL scheme, driver in
      the dependency files, image) its library default is used instead.
    """
    budgets = {b.server_id: b for b in ctx.budgets}
    for client in topo.clients:
        if not client.unknown or (client.target_id is None and client.route is not None):
            continue  # a client whose host is in no budget is PA107's, not a floor
        if not client.replicas_unknown and not pods(client):
            continue  # no pod at peak (a suspended CronJob) opens nothing
        target = ""
        if client.target_id is not None:
            budget = budgets.get(client.target_id)
            name = budget.server if budget is not None else client.target_id
            target = f" in the budget of {client.target_kind} {name}"
        related = []
        if client.route is not None and (loc := client.route.source.location()) is not None:
            related.append(RelatedLocation(location=loc, message="its database connection"))
        if client.kind in RELEASE_KINDS or client.replicas_unknown:
            # a release not rendered, or a custom resource whose operator makes the pods
            yield _release_finding(client, target, tuple(related))
            continue
        yield Finding(
            code="PA106", name="unknown-client-connections", severity=Severity.warning,
            message=(f"{client.name}: connections per pod unknown, so its "
                     f"{_pods_text(pods(client), _read_per_pod(client))}{target}, the least "
                     "a pod that connects holds (peak is a floor): "
                     f"{client.unknown}. Declare it: [[workloads]] name = "
                     f"\"{client.name}\" connections = N (per pod), or source = \"<folder>\""),
            location=client.location, related=tuple(related),
            fix=Fix(description=f"declare [[workloads]] name = \"{client.name}\" with "
                                "connections = N or source = \"<folder>\""),
            subject=f"{client.id}|unknown")
    yield from pairs_findings(topo, ctx.budgets)


def _read_per_pod(client: Client) -> float:
    """The connections per pod its pools read hold when another's size is not read
    (Client.floor_pools; advisor.budget.slots counts the same), else 1."""
    return max(1, sum(p.per_pod() for p in client.floor_pools))


def _pods_text(n: float, per_pod: float = 1) -> str:
    if per_pod > 1:
        each = f"{num(per_pod)} connections (the pools read)"
        return f"1 pod is counted as {each}" if n == 1 else \
            f"{num(n)} pods are counted as {each} each"
    if n == 1:
        return "1 pod is counted as 1 connection"
    return f"{num(n)} pods are counted as 1 connection each"


# Clients that are releases of a chart not rendered (advisor.link.releases): neither
# their pods nor their pools are read, and no source folder would tell.
RELEASE_KINDS = frozenset({"HelmRelease", "Application", "helmCharts"})


def _release_finding(client: Client, target: str, related: tuple[RelatedLocation, ...]
                     ) -> Finding:
    """PA106 for a release: it asks for what is missing, connections per pod and/or
    replicas (`client.unknown` starts with what that is)."""
    asks = []
    if client.unknown.startswith("connections per pod"):
        asks.append("connections = N (per pod)")
    if client.replicas_unknown:
        asks.append("replicas = N (pods at peak)")
    declare = f"[[workloads]] name = \"{client.name}\" " + " ".join(asks)
    return Finding(
        code="PA106", name="unknown-client-connections", severity=Severity.warning,
        message=(f"{client.name}: {client.unknown}; it is counted as "
                 f"{_least(client)}{target}, the least it holds (peak is a floor). "
                 f"Declare it: {declare}"),
        location=client.location, related=related,
        fix=Fix(description=f"declare {declare}"),
        subject=f"{client.id}|unknown")


def _least(client: Client) -> str:
    """What a release of unknown size is counted as, as its budget counts it."""
    n = client_contribution(client).total
    return (f"{n:g} connection{'s' if n != 1 else ''} "
            f"({'one pod' if client.replicas_unknown else '1 per pod'})")
