"""PA111 connections-beyond-cpu-knee: more connections may run at once on a server than
its CPUs can serve before throughput falls."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import num
from advisor.model import Finding, Fix, Severity, Source, Term, Topology
from advisor.options import OPTIONS_CONFIG, at_least, options_class
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._common import primary, related

# Measured on a 4-core PostgreSQL (shared/data/usl-pgbench-4core.json, pgbench TPC-B-like
# read-write): throughput peaked at 48 clients (18,039 tps) and the USL fit puts the
# optimum at N* = 45.1, i.e. 11 to 12 connections per core. Past it every extra
# connection costs throughput: 400 clients did 10,992 tps (-37%) at 36.4 ms average
# latency against 2.7 ms (x13.3).
KNEE_PER_CORE = 12.0
EVIDENCE = ("measured on 4 cores (pgbench read-write, PostgreSQL 17): throughput peaked at "
            "48 connections (18,039 tps; USL N* = 45.1); at 400 it fell to 10,992 tps (-37%) "
            "while average latency rose 2.7 -> 36.4 ms (x13.3)")


@options_class
class KneeOptions:
    __pydantic_config__ = OPTIONS_CONFIG

    # Connections per CPU core a server runs at once before throughput falls. 12 is
    # the measured peak of the 4-core sweep above (48 / 4); set it from your own sweep.
    connections_per_core: float = KNEE_PER_CORE
    # N* of your own `pool-advisor sweep` of this server (connections): used instead of
    # connections_per_core x cores when set.
    n_star: float | None = None

    def __post_init__(self) -> None:
        at_least(self, "connections_per_core", 1)
        at_least(self, "n_star", 1)


@rule("PA111", "connections-beyond-cpu-knee", Severity.warning,
      "More connections may run at once on a server than its CPUs serve before "
      "throughput falls", options=KneeOptions)
def connections_beyond_cpu_knee(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Compares the connections a server may be asked to run at once (its peak per
    instance: direct application pools at peak plus the server side of every pooler in
    front of it, as in PA101's budget) with what its CPUs can serve: the server's cores
    (container `resources.limits.cpu`, else `resources.requests.cpu`; the operator
    resource's `resources`; `cpus` of a declared server) x `connections_per_core`, or
    the `n_star` of your own sweep. A server whose CPUs are not known is not checked; for
    one whose cores are only a CPU request (no limit), the detail says it may run on
    more of its node's cores when they are free.

    ## Why is this bad
    Connections that fit in `max_connections` can still be too many. Each active
    connection is a process competing for the same cores, locks and buffers; past the
    knee, throughput falls and latency climbs for everyone. Measured on 4 cores
    (pgbench read-write, PostgreSQL 17): throughput peaked at 48 connections (18,039
    tps; the USL fit's optimum N* = 45.1); at 400 connections it fell to 10,992 tps
    (-37%) while average latency rose from 2.7 to 36.4 ms (x13.3). Another 4-core
    sweep: 32 connections did 24,206 tps at 1.3 ms, 90 did 21,436 tps at 4.2 ms.

    ## Example
    ```yaml
    # 20 pods x 20 HikariCP connections = 400 straight to a 4-CPU PostgreSQL
    resources:
      limits:
        cpu: "4"
    ```

    ## Use instead
    Put a transaction-mode PgBouncer in front of the server and size its server-side
    pool near the knee (about 48 on 4 cores here), letting application pools queue in
    PgBouncer instead of in PostgreSQL; measure your own knee with
    `pool-advisor sweep` and set `n_star`.

    ## Options
    - `connections_per_core` (default 12: the measured peak above, 48 connections on
      4 cores): the knee per core.
    - `n_star`: the knee of this deployment from your own sweep (connections), used
      instead of `connections_per_core` x cores.

    ## References
    - shared data: usl-pgbench-4core.json (USL fit: lambda 1952, sigma 0.0739,
      kappa 0.000456, N* = sqrt((1 - sigma) / kappa) = 45.1).
    - PostgreSQL wiki, Number Of Database Connections.
    - N. Gunther, the Universal Scalability Law.
    """
    options = ctx.options_for("PA111", KneeOptions)
    for server in topo.servers:
        cores = server.cpu_limit
        budget = ctx.budget_for(server.id)
        if cores is None or budget is None or cores.value <= 0 or not budget.contributions:
            continue
        if options.n_star is not None:
            knee = Term(label="N* from your sweep", value=float(options.n_star),
                        source=Source(default="option PA111 n_star", key="n_star"))
            knee_text = knee.show()
        else:
            per_core = Term(label="connections per core", value=options.connections_per_core,
                            source=Source(default="PA111 connections_per_core"
                                          if options.connections_per_core == KNEE_PER_CORE
                                          else "option PA111 connections_per_core"))
            knee = Term(label="knee", value=per_core.value * cores.value, source=per_core.source)
            knee_text = f"{cores.show()} x {per_core.show()} = {num(knee.value)}"
        if budget.peak <= knee.value:
            continue
        terms = [cores]
        for c in budget.contributions:
            terms.extend(c.factors)
        ratio = budget.peak / knee.value
        # A request without a limit is what the scheduler reserves, not a ceiling: on a
        # node with idle cores the server runs on more. Still a warning: the cores it is
        # guaranteed are these (requests-only is the common production shape), but the
        # detail says so (audit s23: 41 connections over a 250m request read as noise)
        request_only = _request_only(cores)
        # One short line; the derivation and the evidence are the finding's detail (-v,
        # the PR comment's collapsible block, the long text of SARIF and annotations).
        # a floor (clients of unknown size) is "at least", not "up to" (openreplay)
        bound = "at least" if budget.peak_is_floor else "up to"
        message = (f"{server.name}: {bound} {num(budget.peak)} connections at once > "
                   f"{num(knee.value)} its CPUs serve before throughput falls "
                   f"({'at least ' if budget.peak_is_floor else ''}x{ratio:.1f})")
        detail = "\n".join([
            f"knee: {knee_text}",
            f"peak of its budget, per instance: {'>= ' if budget.peak_is_floor else ''}"
            f"{num(budget.peak)}",
            f"For scale: {EVIDENCE}.",
            "Past the knee PostgreSQL runs the extra connections, slower for everyone, "
            "instead of queueing them.",
            *(["Its cores are its CPU request, with no CPU limit: what the scheduler "
               "guarantees it; it may run on more of its node's cores when they are free, "
               "so the knee may be higher then. Set [rules.PA111] n_star from a sweep on "
               "the node it runs on, or resources.limits.cpu."]
              if request_only else [])])
        yield Finding(
            code="PA111", name="connections-beyond-cpu-knee", severity=Severity.warning,
            message=message, detail=detail, location=primary([cores], server.location),
            related=related(terms),
            fix=Fix(description=(
                f"put a transaction-mode PgBouncer in front of {server.name} with a "
                f"server-side pool near {num(knee.value)} and let clients queue there, or "
                "shrink the application pools; measure the real knee with "
                "`pool-advisor sweep` and set [rules.PA111] n_star")),
            subject=server.id)


def _request_only(cores: Term) -> bool:
    """The server's cores are a container's or an operator resource's CPU request (no
    limit is set: advisor.read.workloads._cpu_request, operators.common.cpu_term)."""
    key = (cores.source.key if cores.source is not None else None) or ""
    return key.endswith("requests.cpu") or "CPU request" in cores.label
