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


def _formula(c: Contribution) -> str:
    if c.op == "min":
        inner = " + ".join(f"{num(p.total)} ({p.who})" for p in c.parts) or "0"
        caps = ", ".join(t.show() for t in c.factors)
        return f"min({inner}, {caps})"
    if not c.factors:
        return " + ".join(f"{num(p.total)} ({p.who})" for p in c.parts) or num(c.total)
    if c.op == "+":
        return " + ".join(t.show() for t in c.factors)
    head, rest = _pods(c.factors)
    return " x ".join([head, *(t.show() for t in rest)])


def contribution_lines(c: Contribution, depth: int = 0) -> list[str]:
    """The contribution and, indented below it, how each part was computed."""
    pad = "  " * depth
    if c.unknown:
        lines = [f"{pad}{c.who}: {_formula(c)} pods x unknown connections per pod: "
                 "not counted"]
    else:
        lines = [f"{pad}{c.who}: {_formula(c)} = {num(c.total)}"]
    for p in c.parts:
        lines.extend(contribution_lines(p, depth + 1))
    # What was assumed, after the arithmetic it qualifies. Below the top only caps are
    # worth a line: the rest restates the operator ("pool_size + reserve_pool_size").
    if c.note and (depth == 0 or "capped" in c.note):
        lines.append(f"{pad}  note: {c.note}")
    return lines


def contribution_expr(c: Contribution) -> str:
    """One line: `checkout: 40 (HPA maxReplicas, k8s/hpa.yaml:9) x 20 (...) = 800`,
    then each part after `; ` (notes left out: the budget block shows them)."""
    return "; ".join(x.strip() for x in contribution_lines(c)
                     if not x.strip().startswith("note: "))


def usable_expr(b: Budget) -> str:
    """`97 usable = 100 max_connections (postgresql.conf:64) - 3 superuser_... (default)`."""
    parts = [b.max_connections.show()] + [t.show() for t in b.reserved]
    return f"{num(b.usable)} usable = " + " - ".join(parts)


def peak_expr(b: Budget) -> str:
    if not b.contributions:
        return "0 (no client or pooler in the repository connects to it)"
    total = b.total_peak if b.total_peak is not None else b.peak
    text = num(total) if len(b.contributions) == 1 else " + ".join(
        f"{num(c.total)} ({c.who})" for c in b.contributions) + f" = {num(total)}"
    if b.spread_over is not None:
        text += (f", spread over {b.spread_over.show()}: {num(b.peak)} per instance "
                 "(rounded up; assumes the Service spreads connections evenly)")
    if b.unknown_clients:
        text = f">= {text} ({unknown_clients_text(b)})"
    return text


def unknown_clients_text(b: Budget) -> str:
    """'2 clients unknown: web, worker' for a budget whose peak is a floor."""
    n = len(b.unknown_clients)
    return f"{n} client{'s' if n != 1 else ''} unknown: {', '.join(b.unknown_clients)}"


def peak_text(b: Budget) -> str:
    """'peak 120' or 'peak >= 120 (2 clients unknown: web, worker)'."""
    if b.unknown_clients:
        return f"peak >= {num(b.peak)} ({unknown_clients_text(b)})"
    return f"peak {num(b.peak)}"


def size(value: float) -> str:
    for unit, factor in (("TB", 1024**4), ("GB", 1024**3), ("MB", 1024**2), ("kB", 1024)):
        if value >= factor:
            return f"{value / factor:.2f}".rstrip("0").rstrip(".") + unit
    return f"{value:g}B"
