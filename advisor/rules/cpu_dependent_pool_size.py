"""PA103 cpu-dependent-pool-size."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.budget.arith import num
from advisor.model import CpuFormula, Finding, Fix, NodeCpus, Pool, Severity, Topology
from advisor.options import OPTIONS_CONFIG, in_range, options_class
from advisor.rule_context import RuleContext
from advisor.rules import rule
from advisor.rules._app_pools import (
    location_of,
    pods,
    pools_with_cpu_formula,
    processes,
    related_of,
    subject,
)


@options_class
class CpuOptions:
    __pydantic_config__ = OPTIONS_CONFIG

    # Read as the top-level node-cpus and threads-per-core (advisor.config.settings
    # _cpu_settings), so that the budget is computed for the same node: kept for the
    # configurations that set them here.
    node_cpus: int | None = None
    threads_per_core: int = 1

    def __post_init__(self) -> None:
        in_range(self, "node_cpus", 1, 1024)
        in_range(self, "threads_per_core", 1, 8)


_EXAMPLE_SIZES = (2, 8, 32, 96)


@rule("PA103", "cpu-dependent-pool-size", Severity.warning,
      "A pool size or process count depends on the node's CPU count", options=CpuOptions)
def cpu_dependent_pool_size(topo: Topology, ctx: RuleContext) -> Iterator[Finding]:
    """## What it does
    Reports pools whose size, or whose process count, the library derives from the CPUs
    of the machine: pgx `pgxpool` without MaxConns/`pool_max_conns`
    (`max(4, runtime.NumCPU())`), Prisma without `connection_limit`
    (physical cores x 2 + 1), Celery without `--concurrency` (`cpu_count()`), gunicorn
    configs with `multiprocessing.cpu_count() * 2 + 1`, PM2 `-i max`, Puma
    `workers :auto`. It says what the number is on a given node size.

    ## Why is this bad
    These functions count the CPUs of the node, not the pod's CPU limit: the same image
    opens 5 connections per pod on a 2-CPU node and 193 on a 96-CPU node. Moving the
    workload to bigger nodes, or a cluster autoscaler choosing a larger instance type,
    silently multiplies the connections every pod opens.

    ## Example
    ```go
    pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))  // MaxConns = max(4, NumCPU)
    ```

    ## Use instead
    ```text
    postgres://app@db:5432/app?pool_max_conns=10
    ```
    or `config.MaxConns = 10`; for Prisma `?connection_limit=10`; for Celery
    `--concurrency=8`.

    The node size is the top-level `node-cpus` (logical CPUs of the nodes) and
    `threads-per-core` (logical CPUs per physical core; unset, 1 is assumed: no SMT, the
    larger pool, so the budget can only over-count; set 2 for x86 nodes with
    hyperthreading), the same the budget (PA101) sizes these pools with. Unset, the
    budget assumes 4 CPUs and says so, and this message shows a few node sizes.

    ## Options
    - `node_cpus` (int, default unset), `threads_per_core` (int, default 1): read as the
      top-level `node-cpus` and `threads-per-core` (a different value in both places is
      an error).

    ## References
    - jackc/pgx v5.10.0 pgxpool/pool.go (defaultMaxConns = 4; MaxConns = max(4, NumCPU)).
    - prisma/prisma-engines quaint/src/pooled.rs at 031bd6305f, Builder::new
      (num_cpus::get_physical() * 2 + 1: the node's physical cores from /proc/cpuinfo,
      seanmonstar/num_cpus v1.17.0 src/linux.rs, no cgroup; on arm64 nodes, whose
      /proc/cpuinfo has no `physical id`, the pod's CPU limit or the logical CPUs:
      threads-per-core 1, the default).
    - celery/worker/worker.py (concurrency defaults to cpu_count()).
    """
    for client, pool in pools_with_cpu_formula(topo):
        formula = pool.cpu_formula
        assert formula is not None
        n_pods = pods(client)
        what = "processes per pod" if formula.applies_to == "processes" else \
            "connections per process"
        basis = "physical cores" if formula.physical else "CPUs"
        node = pool.node
        if node is not None and not node.assumed:
            detail = _on_known_node(pool, node, formula, what, n_pods)
        else:
            # the same conversion the reader sized the pool with (formula.on_node)
            sizes = ", ".join(f"{num(formula.on_node(c))} on {c} CPUs" for c in _EXAMPLE_SIZES)
            used = node.counted_text(formula) if node is not None else (
                pool.cpus.show() if pool.cpus is not None else "an assumed node size")
            # the figure the formula gives: processes when it sizes the process count
            value = processes(pool) if formula.applies_to == "processes" else pool.size.value
            detail = (f"{sizes} (the budget used {num(value)} {what} on {used}; "
                      "set node-cpus" + (" and threads-per-core" if formula.physical else "")
                      + " in .pool-advisor.toml)")
        message = (f"{client.name}: {pool.label} {what} come from {formula.text} "
                   f"({basis} of the node, not the pod's CPU limit): {detail}")
        fix = Fix(description=f"set {pool.label.split(' (')[0]} explicitly so it does not "
                              "change with the node size")
        yield Finding(code="PA103", name="cpu-dependent-pool-size", severity=Severity.warning,
                      message=message, location=location_of(client, pool),
                      related=related_of(client, pool), fix=fix, subject=subject(client, pool))


def _on_known_node(pool: Pool, node: NodeCpus, formula: CpuFormula, what: str,
                   n_pods: float) -> str:
    """The budget's own figures on the configured node size, and how it was counted."""
    per_proc, procs = pool.size.value, processes(pool)
    value = procs if formula.applies_to == "processes" else per_proc
    total = per_proc * procs * n_pods
    return (f"on {node.counted_text(formula)}: {num(value)} {what}, "
            f"{num(per_proc * procs)} per pod, {num(n_pods)} pods x "
            f"{num(per_proc * procs)} = {num(total)}")
