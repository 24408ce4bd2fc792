"""PA301 memory-overcommit."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import size
from advisor.budget.slots import MemoryOptions
from advisor.model import Budget, Finding, Fix, MemoryBudget, Severity, Term, Topology
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._common import related


@rule("PA301", "memory-overcommit", Severity.warning,
      "Worst-case PostgreSQL memory exceeds the container limit or declared RAM",
      options=MemoryOptions)
def memory_overcommit(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Estimates the worst case a server can be asked for:
    `shared_buffers + connections x (work_mem x nodes_per_query x hash_mem_multiplier
    + backend overhead) + autovacuum workers x (autovacuum_work_mem, or
    maintenance_work_mem when it is -1)` and compares it with the container's memory
    limit or the declared RAM. `work_mem` is per sort or hash node, not per connection;
    hash nodes may use `work_mem x hash_mem_multiplier` (2.0 by default since
    PostgreSQL 15, 1.0 in 13 and 14).

    ## Why is this bad
    In a container the kernel's OOM killer ends the backend that crosses the cgroup
    limit, and the postmaster then restarts every connection (crash recovery); outside
    one the server swaps. Example from the field: 200 connections x 64MB work_mem =
    12.8 GB before any other memory.

    ## Example
    ```ini
    max_connections = 200
    work_mem = 64MB        # 200 x 64MB x 2 nodes x 2.0 = 51.2GB > 8Gi limit
    ```

    ## Use instead
    ```ini
    max_connections = 100  # behind PgBouncer
    work_mem = 16MB
    ```
    and raise work_mem per role or per query (`SET LOCAL work_mem`) where it is needed.
    When autovacuum's workers x `maintenance_work_mem` is the largest term (`autovacuum_work_mem
    = -1` gives each worker maintenance_work_mem), set `autovacuum_work_mem` (for example
    RAM / 16 per worker) and keep maintenance_work_mem for manual VACUUM and CREATE INDEX.

    ## Options
    - `nodes_per_query` (default 2): sort/hash nodes one query runs at once.
    - `backend_overhead` (default "2MB"): private memory per backend besides work_mem.
    - `connections` (default "max_connections"; or "peak").

    ## References
    - PostgreSQL 15 docs, 20.4.1 Memory: work_mem, hash_mem_multiplier,
      maintenance_work_mem, autovacuum_work_mem.
    - pgtune (le0pard/pgtune, configurationSlice.js): maintenance_work_mem = RAM / 16,
      at most 2GB, what `advise` gives each autovacuum worker when they take more.
    """
    # A primary and its standbys from one resource (a CloudNativePG Cluster) share the
    # settings, the limit and the line: one finding names them all, not one each.
    over = [(b, b.memory, b.memory.limit) for b in ctx.budgets
            if b.memory is not None and b.memory.limit is not None
            and b.memory.total > b.memory.limit.value]
    same: dict[tuple, list[str]] = {}
    for b, mem, limit in over:
        same.setdefault(_key(b, mem, limit), []).append(b.server)
    for budget, mem, limit in over:
        names = same.pop(_key(budget, mem, limit), None)
        if names is None:
            continue  # said with the first of its resource
        shown = names[0] + (f" (and {', '.join(names[1:])})" if len(names) > 1 else "")
        # One short line; the sum, term by term, and its assumptions are the detail.
        detail = "\n".join([
            "worst case: " + " + ".join(f"{size(t.value)} ({t.label}, {t.source.label()})"
                                        for t in mem.terms) + f" = {size(mem.total)}",
            f"limit: {size(limit.value)} ({limit.label}, {limit.source.label()})",
            "assumes: " + "; ".join(mem.assumptions)])
        yield Finding(
            code="PA301", name="memory-overcommit", severity=Severity.warning,
            message=(f"{shown}: worst-case memory {size(mem.total)} > "
                     f"{size(limit.value)} {limit.label}"),
            detail=detail,
            location=mem.terms[1].source.location() or budget.location,
            related=related([*mem.terms, limit], fmt=size),
            fix=Fix(description=_fix_text(mem)),
            subject=budget.server_id)


def _fix_text(mem: MemoryBudget) -> str:
    """The levers, the one of the largest term first: autovacuum's workers x
    autovacuum_work_mem (maintenance_work_mem while it is -1) is out of reach of
    work_mem and max_connections when it is most of the estimate."""
    usual = ("lower work_mem or max_connections (put PgBouncer in front), or raise the "
             "memory limit; set larger work_mem per role or per query where needed")
    autovacuum = mem.terms[3] if len(mem.terms) > 3 else None
    if autovacuum is None or autovacuum.value < max(t.value for t in mem.terms):
        return usual
    return (f"set autovacuum_work_mem lower: autovacuum is the largest term, "
            f"{size(autovacuum.value)} ({autovacuum.label}; at -1 each worker takes "
            f"maintenance_work_mem); or {usual}")


def _key(budget: Budget, mem: MemoryBudget, limit: Term) -> tuple:
    return (mem.terms[1].source.location() or budget.location, mem.total, limit.value)
