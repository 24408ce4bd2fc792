"""Step 4 of the advise plan, where a server's memory limit is known and exceeded:
max_connections brought down to what the clients (and its standbys) need, shared_buffers
and effective_cache_size to the pgtune shares of the RAM, then work_mem to what fits the
limit; each replaced at its line or added to the server's postgresql.conf."""

from __future__ import annotations

import math

from msgspec.structs import replace

from advisor.advise.records import Edit, Proposal, added_at, by_hand_at, edit_at, num
from advisor.model import Budget, MemoryBudget, Server, Setting, Source

KIB = 1024
MIB = 1024 * 1024
HEADROOM_SHARE = 0.10  # max_connections above the need, when no headroom is declared
MIN_HEADROOM = 5
WORK_MEM_MIN_KB = 64  # guc_tables.c: work_mem's minimum
GIB_KB = 1024 * 1024  # kB in a GB
# pgtune's maintenance_work_mem: RAM / 16, at most 2GB (web, OLTP, mixed, desktop)
PGTUNE_MAINTENANCE_SHARE = 16
MAINTENANCE_CAP_KB = 2 * GIB_KB
# pgtune (le0pard/pgtune, configuration.js) for every DB type but desktop, and the
# PostgreSQL docs' "a reasonable starting value for shared_buffers is 25% of the memory
# in your system": shared_buffers = RAM / 4, effective_cache_size = RAM x 3 / 4.
SHARED_BUFFERS_SHARE = 0.25
EFFECTIVE_CACHE_SHARE = 0.75


def server_settings(
    server: Server,
    b: Budget,
    memory: object,
    notes: list[str],
    standby_peaks: list[float] | None = None,
) -> list[Proposal]:
    """max_connections to what the clients need (when memory is short), shared_buffers
    and autovacuum_work_mem to the pgtune shares of the RAM, then work_mem; a note when
    the estimate is still over the limit after them."""
    from advisor.budget.slots import memory_budget

    proposals: list[Proposal] = []
    m = b.memory
    if m is None or m.limit is None or m.total <= m.limit.value:
        return proposals
    limit = m.limit.value
    max_conn = b.max_connections
    reserved = sum(t.value for t in b.reserved)
    counts_max = getattr(memory, "connections", "max_connections") == "max_connections"
    # Standbys take the primary's max_connections (they may not run with less): size it
    # for the busiest of them too.
    busiest = max([b.peak, *(standby_peaks or [])])
    # Room for people and tools (psql, monitoring, migrations) unless the configuration
    # declares its own headroom, which is then already among the reserved terms.
    declared = any("headroom" in t.label for t in b.reserved)
    spare = 0 if declared else max(MIN_HEADROOM, math.ceil(busiest * HEADROOM_SHARE))
    needed = math.ceil(busiest + reserved + spare)
    uncounted = _uncounted(b)
    if counts_max and needed < max_conn.value and uncounted:
        # the peak leaves clients out: slots cut to it are too few once they connect
        notes.append(f"max_connections {num(max_conn.value)} is not lowered to the "
                     f"{num(busiest)} at peak: {uncounted}; the other memory settings "
                     "are sized for it as it is")
    elif counts_max and needed < max_conn.value:
        new_max = int(math.ceil(needed / 5) * 5)
        new_max = min(new_max, max_conn.int_value)
        if new_max < max_conn.value:
            mc_edit, mc_manual = _set_or_insert(server, max_conn.source, "max_connections",
                                                num(max_conn.value), str(new_max))
            _set_server(server, "max_connections", new_max, str(new_max),
                        added_at(mc_edit) or max_conn.source)
            proposals.append(
                Proposal(
                    kind="server",
                    subject=server.name,
                    key="max_connections",
                    old=max_conn.show(),
                    new=str(new_max),
                    reason=(
                        f"the clients need {num(busiest)}"
                        + (" (on the busiest standby)" if busiest > b.peak else "")
                        + f" + {num(reserved)} reserved"
                        + (f" + {spare} headroom (10%, at least {MIN_HEADROOM}, for psql, "
                           "monitoring and migrations)" if spare else "")
                        + f" = {needed} slots, rounded up to 5s; every slot is memory the "
                        "estimate must cover"
                    ),
                    assumption="memory estimate counts max_connections (PA301 connections)",
                    edit=mc_edit,
                    manual=mc_manual,
                )
            )
    proposals += _cache_settings(server, limit, m.limit.source.label())
    after = memory_budget(server, b.peak, memory)  # type: ignore[arg-type]
    if after is None or after.total <= limit:
        return proposals
    # autovacuum_work_mem first when autovacuum is the largest term, else only when
    # work_mem alone cannot make up the difference
    label = m.limit.source.label()
    if len(after.terms) > 3 and after.terms[3].value >= max(t.value for t in after.terms):
        proposals += _autovacuum_setting(server, after, limit, label)
        after = memory_budget(server, b.peak, memory)  # type: ignore[arg-type]
        if after is None or after.total <= limit:
            return proposals
    short: list[str] = []
    proposals += _work_mem_setting(server, after, limit, label, short)
    if short and not any(p.key == "autovacuum_work_mem" for p in proposals):
        lowered = _autovacuum_setting(server, after, limit, label)
        if lowered:
            proposals += lowered
            short.clear()
            after = memory_budget(server, b.peak, memory)  # type: ignore[arg-type]
            if after is not None and after.total > limit:
                proposals += _work_mem_setting(server, after, limit, label, short)
    final = memory_budget(server, b.peak, memory)  # type: ignore[arg-type]
    if final is not None and final.total > limit:
        notes.append(_still_over(server, final, limit, short))
    return proposals


def _uncounted(b: Budget) -> str:
    """Why the peak is not what the server must hold: a floor (unbounded pools, unknown
    pairs, unread files...); "" when it is. (Clients a PgBouncer refuses, PA213, are
    served first by advise.serve, so their pools are in the peak here.)"""
    if not b.peak_is_floor:
        return ""
    from advisor.budget.arith import unknown_clients_text

    return f"the peak is a floor ({unknown_clients_text(b)})"


def _work_mem_setting(server: Server, after: MemoryBudget, limit: float, limit_label: str,
                      short: list[str]) -> list[Proposal]:
    """work_mem brought to what fits the limit once the other terms are counted; when
    even PostgreSQL's minimum does not fit, why (in `short`) and no proposal."""
    from advisor.budget.slots import setting_term

    wm = setting_term(server, "work_mem")
    if wm is None or len(after.terms) < 2:
        return []
    work_term = after.terms[1]
    rest = after.total - work_term.value
    per_kb = work_term.value / wm.value if wm.value else 0  # bytes per kB of work_mem
    if per_kb <= 0:
        return []
    new_kb = math.floor((limit - rest) / per_kb)
    if new_kb < WORK_MEM_MIN_KB:
        short.append(f"work_mem cannot make up the difference: the other terms leave "
                     f"{max(new_kb, 0)}kB per sort or hash, below PostgreSQL's minimum of "
                     f"{WORK_MEM_MIN_KB}kB")
        return []
    # Whole megabytes read better, but below 4MB a megabyte is a quarter of the value:
    # kB there (PostgreSQL takes either).
    new_kb = new_kb - new_kb % 1024 if new_kb >= 4096 else new_kb
    if new_kb >= wm.value:
        return []
    new_text = f"{new_kb // 1024}MB" if new_kb % 1024 == 0 else f"{new_kb}kB"
    old_raw = server.settings["work_mem"].raw if "work_mem" in server.settings else num(wm.value)
    wm_edit, wm_manual = _set_or_insert(server, wm.source, "work_mem", old_raw, new_text)
    _set_server(server, "work_mem", new_kb, new_text, added_at(wm_edit) or wm.source)
    return [Proposal(
        kind="server",
        subject=server.name,
        key="work_mem",
        old=f"{old_raw} ({wm.source.label()})",
        new=new_text,
        reason=(
            f"(limit {_mib(limit)} ({limit_label}) - {_mib(rest)} for "
            f"shared_buffers, backends and autovacuum) / {per_kb / 1024:g} (connections x "
            f"sort/hash nodes x hash_mem_multiplier) = {new_text} per sort or hash"
        ),
        assumption="; ".join(after.assumptions),
        edit=wm_edit,
        manual=wm_manual,
    )]


def _autovacuum_setting(server: Server, after: MemoryBudget, limit: float,
                        limit_label: str) -> list[Proposal]:
    """autovacuum_work_mem brought to pgtune's maintenance_work_mem for the RAM (RAM / 16,
    at most 2GB: le0pard/pgtune@7d204bdb src/features/configuration/configurationSlice.js
    selectMaintenanceWorkMem) when each worker may take more (asked when autovacuum is
    the largest term, or work_mem alone cannot fit): every autovacuum worker
    may hold it at once, so a large maintenance_work_mem (which autovacuum takes while
    autovacuum_work_mem is -1) can be most of the estimate, past what work_mem or
    max_connections can make up. Manual VACUUM and CREATE INDEX keep maintenance_work_mem
    (one session at a time, not in the estimate)."""
    from advisor.budget.arith import size
    from advisor.budget.slots import autovacuum_memory, setting_term

    av = autovacuum_memory(server)
    own = setting_term(server, "autovacuum_work_mem")
    if av is None or own is None or len(after.terms) < 4:
        return []
    share_kb = min(math.floor(limit / PGTUNE_MAINTENANCE_SHARE / KIB), MAINTENANCE_CAP_KB)
    share_kb -= share_kb % 1024  # whole megabytes
    if share_kb < 1024 or av.per_worker_kb <= share_kb:
        return []
    new_text = f"{share_kb // GIB_KB}GB" if share_kb % GIB_KB == 0 else f"{share_kb // 1024}MB"
    term = after.terms[3]
    was = (server.settings["autovacuum_work_mem"].raw if "autovacuum_work_mem" in server.settings
           else "-1")
    old = f"{was} ({own.source.label()})" + (
        "" if av.own else f": maintenance_work_mem {size(av.per_worker_kb * KIB)} "
        f"({av.source.label()}) for each worker")
    edit, manual = _set_or_insert(server, own.source, "autovacuum_work_mem", was, new_text)
    _set_server(server, "autovacuum_work_mem", share_kb, new_text, added_at(edit) or own.source)
    workers = av.workers.value
    return [Proposal(
        kind="server", subject=server.name, key="autovacuum_work_mem", old=old, new=new_text,
        reason=(f"{num(workers)} autovacuum workers x {new_text} = "
                f"{size(workers * share_kb * KIB)} (was {size(term.value)}, "
                f"{term.value / after.total:.0%} of the {size(after.total)} estimate): "
                f"{new_text} is pgtune's maintenance_work_mem for {size(limit)} of RAM "
                f"({limit_label}): RAM / 16, at most 2GB, here for each worker"
                + ("" if av.own else "; VACUUM and CREATE INDEX run by hand keep "
                   "maintenance_work_mem")),
        assumption=(f"{num(workers)} autovacuum workers at once ({av.workers.source.label()}); "
                    "the memory limit is the server's RAM"),
        edit=edit, manual=manual)]


def _still_over(server: Server, final: MemoryBudget, limit: float, short: list[str]) -> str:
    """Said when the proposals leave the estimate over the limit: nothing advise
    changes fits it, and by how much it is short."""
    from advisor.budget.arith import size

    terms = " + ".join(f"{size(t.value)} ({t.label})" for t in final.terms)
    return (f"nothing advise changes fits {server.name} in its memory limit: after these "
            f"proposals the estimate is {terms} = {size(final.total)} > {size(limit)}"
            + "".join(f"; {x}" for x in short)
            + "; raise the memory limit, or lower max_connections further with fewer "
            "connections from the clients (put PgBouncer in front of them)")


def _cache_settings(server: Server, limit: float, limit_label: str) -> list[Proposal]:
    """shared_buffers above 25% of the RAM the server has, effective_cache_size above
    75% of it: brought to the pgtune values (whole MB)."""
    from advisor.budget.slots import setting_term

    out: list[Proposal] = []
    for name, share, unit_bytes in (("shared_buffers", SHARED_BUFFERS_SHARE, 8 * KIB),
                                    ("effective_cache_size", EFFECTIVE_CACHE_SHARE, 8 * KIB)):
        term = setting_term(server, name)
        if term is None:
            continue
        current = term.value * unit_bytes
        target_mb = math.floor(limit * share / MIB)
        if current <= target_mb * MIB or target_mb < 1:
            continue
        new_text = f"{target_mb // 1024}GB" if target_mb % 1024 == 0 else f"{target_mb}MB"
        old_raw = server.settings[name].raw if name in server.settings else _mib(current)
        edit, manual = _set_or_insert(server, term.source, name, old_raw, new_text)
        _set_server(server, name, target_mb * MIB // unit_bytes, new_text,
                    added_at(edit) or term.source)
        out.append(Proposal(
            kind="server", subject=server.name, key=name,
            old=f"{old_raw} ({term.source.label()})", new=new_text,
            reason=(f"{share:.0%} of the {_mib(limit)} the server has ({limit_label}): the "
                    "pgtune starting point (PostgreSQL docs: shared_buffers 25% of RAM; "
                    "effective_cache_size, a planner hint, 75%)"),
            assumption="the memory limit is the server's RAM",
            edit=edit, manual=manual))
    return out


def _set_server(server: Server, name: str, value: float, raw: str, source: Source) -> None:
    old = server.settings.get(name)
    if old is not None and old.source.path is None and source.path is not None:
        server.settings[name] = replace(old, value=int(value), raw=raw, source=source)
    elif old is not None:
        server.settings[name] = replace(old, value=int(value), raw=raw)
    else:
        server.settings[name] = Setting(name=name, raw=raw, value=int(value), source=source)


def _conf_insert(server: Server, name: str, value: str) -> Edit | None:
    """`name = value` added after the last line of the server's postgresql.conf (the
    setting is absent, so nothing later in that file overrides it), when the server has
    one; never as a new `-c` argument."""
    end = server.conf_end
    if end is None or end.path is None or end.line is None:
        return None
    return Edit(path=end.path, line=end.line, key=name, old="", new=f"{name} = {value}",
                insert=True)


def _set_or_insert(server: Server, source: Source, name: str, old: str,
                   new: str) -> tuple[Edit | None, str]:
    """The edit for a server setting (replaced at its line, else added to the conf
    file) and the manual step when neither is possible."""
    if source.path is not None and source.line is not None:
        return edit_at(source, old, new), by_hand_at(source, new)
    added = _conf_insert(server, name, new)
    if added is not None:
        return added, ""
    return None, f"set {name} = {new} in postgresql.conf (or as `-c {name}={new}`)"


def _mib(value: float) -> str:
    from advisor.budget.arith import size

    return size(value)
