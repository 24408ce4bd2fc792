"""The arithmetic, written out: every number with its label and source."""

from __future__ import annotations

from advisor.model import Budget, Contribution, Term


def num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _pods(factors: list[Term]) -> tuple[str, list[Term]]:
    """Leading replica factors, with a surge term added to the pod count."""
    if len(factors) >= 2 and "surge" in factors[1].label:
        return f"({factors[0].show()} + {factors[1].show()})", factors[2:]
    return factors[0].show(), factors[1:]


def contribution_expr(c: Contribution) -> str:
    """`checkout: 40 (HPA maxReplicas, k8s/hpa.yaml:9) x 20 (HikariCP ..., ...) = 800`."""
    if c.parts:
        inner = " + ".join(f"[{contribution_expr(p)}]" for p in c.parts)
        text = f"{c.who}: {inner} = {num(c.total)}"
    elif c.factors:
        head, rest = _pods(c.factors) if c.kind == "client" else (c.factors[0].show(),
                                                                  c.factors[1:])
        text = " x ".join([head, *(t.show() for t in rest)])
        text = f"{c.who}: {text} = {num(c.total)}"
    else:
        text = f"{c.who}: {num(c.total)}"
    return f"{text} ({c.note})" if c.note else text


def usable_expr(b: Budget) -> str:
    """`97 usable = 100 max_connections (postgresql.conf:64) - 3 superuser_... (default)`."""
    parts = [b.max_connections.show()] + [t.show() for t in b.reserved]
    return f"{num(b.usable)} usable = " + " - ".join(parts)


def peak_expr(b: Budget) -> str:
    if not b.contributions:
        return "0 (no client or pooler in the repository connects to it)"
    if len(b.contributions) == 1:
        return num(b.peak)
    return " + ".join(f"{num(c.total)} ({c.who})" for c in b.contributions) + \
        f" = {num(b.peak)}"


def size(value: float) -> str:
    for unit, factor in (("TB", 1024**4), ("GB", 1024**3), ("MB", 1024**2), ("kB", 1024)):
        if value >= factor:
            return f"{value / factor:.1f}{unit}".replace(".0" + unit, unit)
    return f"{value:g}B"
