"""The arithmetic, written out: every number with its label and source.

This is the one place a budget's terms become text. Every format (text, markdown and
the PR comment, and the finding messages JSON, SARIF, GitLab, rdjson and GitHub
annotations carry) goes through `formula`, which joins a contribution's terms with
its own operator: "x" for a product, "+" for a sum, "min(...)" for a cap, "max(...) -
counted" for a Helm release's hooks (advisor.budget.hooks). A `Style`
only changes how a number, a term and a sign look (markdown: thousands separators,
escaped labels, typographic signs), never the arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from advisor.model import Budget, Contribution, StartRefusal, Term


def num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


class Style(NamedTuple):
    """How a number, a term, a name and the signs are written."""

    number: Callable[[float], str] = num
    term: Callable[[Term], str] = Term.show
    name: Callable[[str], str] = str
    times: str = "x"
    minus: str = "-"


PLAIN = Style()


# The per-pod term of an unknown client counted at the pools read (budget.slots)
READ_FLOOR = "connections per pod, at least the pools read"


def _pods(factors: list[Term], s: Style) -> tuple[str, list[Term]]:
    """Leading replica factors, with a surge term added to the pod count."""
    if len(factors) >= 2 and "surge" in factors[1].label:
        return f"({s.term(factors[0])} + {s.term(factors[1])})", factors[2:]
    return s.term(factors[0]), factors[1:]


def _part(p: Contribution, s: Style) -> str:
    at_least = ">= " if p.unknown else ""  # a floor of its own: 1 per pod, or 0 unread
    return f"{at_least}{s.number(p.total)} ({s.name(p.who)})"


def formula(c: Contribution, s: Style = PLAIN) -> str:
    """The right-hand side of `who: ... = total`, honouring `c.op`."""
    if c.op == "min":
        inner = " + ".join(_part(p, s) for p in c.parts) or "0"
        caps = ", ".join(s.term(t) for t in c.factors)
        return f"min({inner}, {caps})"
    if c.op == "max":  # a release's hook phases, less its pods counted above
        inner = ", ".join(_part(p, s) for p in c.parts)
        less = f" {s.minus} {s.term(c.factors[0])}" if c.factors else ""
        return f"max({inner}){less}"
    if not c.factors:
        return " + ".join(_part(p, s) for p in c.parts) or s.number(c.total)
    if c.op == "+":
        return " + ".join(s.term(t) for t in c.factors)
    head, rest = _pods(c.factors, s)
    return f" {s.times} ".join([head, *(s.term(t) for t in rest)])


def equation(c: Contribution, s: Style = PLAIN) -> str:
    """`who: formula = total`."""
    return f"{s.name(c.who)}: {formula(c, s)} = {s.number(c.total)}"


def contribution_lines(c: Contribution, depth: int = 0, s: Style = PLAIN) -> list[str]:
    """The contribution and, indented below it, how each part was computed."""
    pad = "  " * depth
    if c.kind == "hooks":  # a sum or max of floors when a hook's connections are unknown
        lines = [f"{pad}{s.name(c.who)}: {formula(c, s)} = "
                 f"{'>= ' if c.unknown else ''}{s.number(c.total)}"]
    elif c.unknown and c.kind == "pooler":  # pairs not all known: a floor of pools
        lines = [f"{pad}{s.name(c.who)}: {formula(c, s)} = >= {s.number(c.total)}"]
    elif c.unknown and not c.factors:  # not even its pods are known (a chart not rendered)
        lines = [f"{pad}{s.name(c.who)}: unknown pods (at least 1) x "
                 f"{'unknown connections per pod (at least 1)' if c.total <= 1 else 'its pools'}"
                 f" = >= {s.number(c.total)}"]
    elif c.unknown and c.factors and c.factors[-1].label == READ_FLOOR:
        # the pools read, another's size not: at least their sum per pod
        head, rest = _pods(c.factors[:-1], s)
        pods = f" {s.times} ".join([head, *(s.term(t) for t in rest)])
        lines = [f"{pad}{s.name(c.who)}: {pods} pods x at least {s.term(c.factors[-1])} "
                 f"= >= {s.number(c.total)}"]
    elif c.unknown:
        lines = [f"{pad}{s.name(c.who)}: {formula(c, s)} pods x unknown connections per pod "
                 f"(at least 1) = >= {s.number(c.total)}"]
    else:
        lines = [f"{pad}{equation(c, s)}"]
    for p in c.parts:
        lines.extend(contribution_lines(p, depth + 1, s))
    # What was assumed, after the arithmetic it qualifies. Below the top only caps are
    # worth a line: the rest restates the operator ("pool_size + reserve_pool_size").
    if c.note and (depth == 0 or "capped" in c.note):
        lines.append(f"{pad}  note: {s.name(c.note)}")
    return lines


def contribution_expr(c: Contribution, s: Style = PLAIN) -> str:
    """One line: `checkout: 40 (HPA maxReplicas, k8s/hpa.yaml:9) x 20 (...) = 800`,
    then each part after `; ` (notes left out: the budget block shows them)."""
    return "; ".join(x.strip() for x in contribution_lines(c, 0, s)
                     if not x.strip().startswith("note: "))


def usable_expr(b: Budget, s: Style = PLAIN) -> str:
    """`97 usable = 100 (max_connections, postgresql.conf:64) - 3 (superuser_..., default)`."""
    parts = [s.term(b.max_connections)] + [s.term(t) for t in b.reserved]
    return f"{s.number(b.usable)} usable = " + f" {s.minus} ".join(parts)


def unserved_text(n: int) -> str:
    """A fit whose server some clients cannot reach through their PgBouncer (PA213):
    they open nothing there now, so the fit is not theirs (Budget.unserved)."""
    return f"fits, but {n} client{'s' if n != 1 else ''} cannot connect (PA213)"


def no_room_text(b: Budget) -> str:
    """Budget.no_room_once_streaming in words, with its arithmetic: `no slots left for
    non-superusers once 9 standbys stream (max_wal_senders 10): 12 - 3 - 10 = -1 usable,
    9 while none streams`."""
    ws = b.wal_sender_slots
    free = b.usable + ws  # the slots a plain role has while no WAL sender runs
    steps = " - ".join(num(t.value) for t in (b.max_connections, *b.reserved))
    return (f"no slots left for non-superusers once {num(free)} standby"
            f"{'s' if free != 1 else ''} stream (max_wal_senders {num(ws)}, which takes "
            f"ordinary slots before PostgreSQL 12): {steps} = {num(b.usable)} usable, "
            f"{num(free)} while none streams")


def peak_sum(b: Budget, s: Style = PLAIN) -> str:
    """`800 (checkout) + 50 (pgbouncer) = 850`, or the one total."""
    total = b.total_peak if b.total_peak is not None else b.peak
    if len(b.contributions) == 1:
        return s.number(total)
    at_least = ">= " if b.peak_is_floor else ""
    return " + ".join(_part(c, s) for c in b.contributions) + f" = {at_least}{s.number(total)}"


def peak_expr(b: Budget, s: Style = PLAIN) -> str:
    if not b.contributions:
        if b.peak_is_floor:
            return f">= 0 (no client or pooler read connects to it; {unknown_clients_text(b, s)})"
        return "0 (no client or pooler in the repository connects to it)"
    text = peak_sum(b, s)
    if b.spread_over is not None:
        text += (f", spread over {s.term(b.spread_over)}: {s.number(b.peak)} per instance "
                 "(rounded up; assumes the Service spreads connections evenly)")
    if b.peak_is_floor:
        # a sum of parts says ">=" at its total (peak_sum)
        text = f"{'' if len(b.contributions) > 1 else '>= '}{text} ({unknown_clients_text(b, s)})"
    return text


def unknown_clients_text(b: Budget, s: Style = PLAIN) -> str:
    """'2 clients unknown: web, worker; 1 client unbounded: api' for a budget whose peak
    is a floor."""
    parts = []
    for names, what in ((b.unknown_clients, "unknown"), (b.unbounded_clients, "unbounded")):
        if names:
            parts.append(f"{len(names)} client{'s' if len(names) != 1 else ''} {what}: "
                         + ", ".join(s.name(x) for x in names))
    parts += [f"pooler {s.name(x)}, each may be a pool more" for x in b.unknown_pairs]
    if b.unplaced_clients:
        n = len(b.unplaced_clients)
        parts.append(f"{n} client{'s' if n != 1 else ''} whose server is not known, which may "
                     "connect here: " + ", ".join(s.name(x) for x in b.unplaced_clients))
    if b.unread_files:
        n = len(b.unread_files)
        shown = ", ".join(s.name(x) for x in b.unread_files[:3])
        more = f" and {n - 3} more" if n > 3 else ""
        parts.append(f"{n} file{'s' if n != 1 else ''} not read (PA901), whose clients may "
                     f"connect here: {shown}{more}")
    if b.exposed:
        parts.append("exposed outside the cluster by " + ", ".join(s.name(x) for x in b.exposed)
                     + ": its clients there are in no repository read (declare headroom = N, "
                     "the connections they take, to budget them)")
    return "; ".join(parts)


def peak_text(b: Budget) -> str:
    """'peak 120' or 'peak >= 120 (2 clients unknown: web, worker)'."""
    if b.peak_is_floor:
        return f"peak >= {num(b.peak)} ({unknown_clients_text(b)})"
    return f"peak {num(b.peak)}"


def derivation(b: Budget, s: Style = PLAIN) -> list[str]:
    """A budget's whole arithmetic, one line each: usable, every contribution (parts
    indented), peak against usable; for a server PostgreSQL refuses to start, its
    message and the settings it compared in place of usable (there are no slots)."""
    if b.refused is not None:
        out = [f"refused at start-up (PA109): {refusal_text(b.refused, s)}"]
    else:
        out = [f"usable: {usable_expr(b, s)}"]
    for c in b.contributions:
        out.extend(contribution_lines(c, 0, s))
    out.append(f"peak: {peak_expr(b, s)}{against_usable(b, s)}")
    return out


def refusal_text(r: StartRefusal, s: Style = PLAIN) -> str:
    """A start-up refusal: its message and the settings it compared, or, for an error of
    the configuration, the file:line PA109 reports it at."""
    if r.terms:
        return f"{s.name(r.message)}: " + ", ".join(s.term(t) for t in r.terms)
    where = f" ({s.name(r.location.label())})" if r.location is not None else ""
    return f"{s.name(r.message)}{where}"


def against_usable(b: Budget, s: Style = PLAIN, le: str = "<=") -> str:
    """How the peak compares with usable: ` > 197 usable`, ` <= 197 usable`, or for a
    floor that is not past it `, cannot tell against 197 usable` (a `<=` under a
    "cannot tell" verdict read as "fits": saasodoo's `>= 187 ... <= 197 usable`, where
    the pooler's unknown pairs made it over 450). An over peak within usable without a
    term counted at its maximum names it (Budget.rests_on)."""
    if b.refused is not None:
        return ", no slots to compare it with: the server does not start"
    usable = f"{s.number(b.usable)} usable"
    if b.no_room_once_streaming:  # peak 0: not over the slots it has while none streams
        free = b.usable + b.wal_sender_slots
        return (f", not over: nothing connects, and non-superusers have {s.number(free)} "
                f"slots while no standby streams ({usable} counts every max_wal_senders "
                "slot taken)")
    if b.peak > b.usable:
        rests = "; ".join(s.name(x) for x in b.rests_on)
        return f" > {usable}" + (f" (within it without a term counted at its maximum: {rests})"
                                   if rests else "")
    if b.peak_is_floor:
        return f", cannot tell against {usable}"
    return f" {le} {usable}"


def size(value: float) -> str:
    for unit, factor in (("TB", 1024**4), ("GB", 1024**3), ("MB", 1024**2), ("kB", 1024)):
        if value >= factor:
            return f"{value / factor:.2f}".rstrip("0").rstrip(".") + unit
    return f"{value:g}B"
