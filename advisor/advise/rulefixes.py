"""Step 5 of the advise plan: the one-value rules' fixes (PA501-PA504 timeouts and
lifetimes, PA210 PgBouncer replicas) for the findings about a server, as proposals;
a second PgBouncer replica only when the server still fits with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec.structs import replace

from advisor.advise.records import Edit, Proposal
from advisor.model import Server, Topology

if TYPE_CHECKING:
    from advisor.rules import Registry


# Rules whose fix is one value: a timeout, a lifetime, PgBouncer replicas.
ONE_VALUE_RULES = ("PA501", "PA502", "PA503", "PA504", "PA210")


ONE_VALUE_KEYS = {"PA501": "query_wait_timeout", "PA502": "maximum lifetime",
                  "PA503": "idle_session_timeout",
                  "PA504": "idle_in_transaction_session_timeout", "PA210": "replicas"}


def _entity_name(topo: Topology, subject: str) -> str:
    """The name of the first entity a finding's subject names (a client over its pooler)."""
    names = [e.name for part in subject.split("|")
             for e in (*topo.servers, *topo.poolers, *topo.clients) if e.id == part]
    return names[0] if names else subject


def _server_of(topo: Topology, subject: str) -> str | None:
    """The server a finding's subject (ids joined by |) is about."""
    for part in subject.split("|"):
        if topo.server(part) is not None:
            return part
        pooler = topo.pooler(part)
        if pooler is not None:
            return pooler.server_id
        client = next((c for c in topo.clients if c.id == part), None)
        if client is not None and client.target_id:
            if client.target_kind == "server":
                return client.target_id
            target = topo.pooler(client.target_id)
            return target.server_id if target else None
    return None


def rule_fixes(topo: Topology, server: Server, memory: object,
                notes: list[str], registry: Registry) -> list[Proposal]:
    """Proposals for the one-value rules' findings about `server`, applied to `topo` (a
    copy) where they change the budget: PgBouncer replicas 1 -> 2 only when the server
    still fits with the second replica's server connections."""
    from advisor.budget.slots import budgets as all_budgets
    from advisor.budget.slots import server_budget
    from advisor.rule_context import RuleContext

    ctx = RuleContext(budgets=all_budgets(topo, memory))  # type: ignore[arg-type]
    out: list[Proposal] = []
    for code in ONE_VALUE_RULES:
        for finding in registry.rules[code].func(topo, ctx):
            if _server_of(topo, finding.subject) != server.id or finding.fix is None:
                continue
            rep = finding.fix.replacement
            kind = {"PA502": "client-pool", "PA503": "server", "PA504": "server"}.get(
                code, "pooler")
            if code == "PA210" and rep is not None:
                pooler = topo.pooler(finding.subject)
                if pooler is None:
                    continue
                before = pooler.replicas
                pooler.replicas = replace(before, value=float(rep.new))
                if not server_budget(server, topo, memory).fits:  # type: ignore[arg-type]
                    pooler.replicas = before
                    notes.append(f"PA210: a second {pooler.name} replica would open more "
                                 f"server connections than {server.name} has; make its "
                                 "pools fit first, then run two replicas")
                    continue
            out.append(Proposal(
                kind=kind, subject=_entity_name(topo, finding.subject),
                key=rep.key if rep else ONE_VALUE_KEYS[code],
                old=rep.old if rep else "not set (default)",
                new=rep.new if rep else "see below",
                reason=f"{code} {finding.name}: {finding.fix.description}",
                edit=Edit(path=rep.path, line=rep.line, key=rep.key, old=rep.old, new=rep.new)
                if rep else None,
                manual="" if rep else finding.fix.description))
    return out
