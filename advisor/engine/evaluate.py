"""A topology -> a CheckResult: the budgets, the selected rules with their options,
suppression comments and annotations (used, kept, suppressed), the caps on findings."""

from __future__ import annotations

from pathlib import Path

from advisor import __version__
from advisor.config.settings import Settings
from advisor.engine.options import CheckOptions, UsageError
from advisor.guard import crash_text, is_internal
from advisor.model import TEMPLATE_PROGRAM, CheckResult, Finding, Severity, Topology
from advisor.read.fs import InputError, Root
from advisor.read.suppress import is_suppressed, scan_suppressions
from advisor.rule_context import RuleContext
from advisor.rules import Registry, Rule


def memory_options(settings: Settings, registry: Registry):
    """PA301's options (the memory estimate's assumptions) from the configuration."""
    from advisor.budget.slots import MemoryOptions

    found = _rule_options(settings, registry).get("PA301")
    return found if isinstance(found, MemoryOptions) else MemoryOptions()


def evaluate(topo: Topology, settings: Settings, options: CheckOptions, registry: Registry,
             roots: list[str], *, root: Path | None = None,
             suppressions_read: frozenset[str] = frozenset(),
             marks: dict[str, dict[int, list[str]]] | None = None) -> CheckResult:
    from advisor.budget.slots import MemoryOptions, budgets

    # Validated once: with a configuration file, each validation builds a pydantic schema
    ctx = RuleContext(pg_version=options.pg_version,
                      rule_options=_rule_options(settings, registry))
    ctx.budgets = budgets(topo, ctx.options_for("PA301", MemoryOptions))
    selected = _selected_rules(registry, settings, options)
    # PA902 judges the suppressions, so it runs after the rules whose findings they match
    last = [r for r in selected if r.code == UNUSED_SUPPRESSION]
    raw = [(r, f) for r in selected if r not in last for f in _rule_findings(r, topo, ctx)]
    if root is not None:
        _scan_finding_files(topo, [f for _, f in raw if f.location.path not in
                                   suppressions_read], Root(root), marks or {})
    use = _suppression_use(topo, registry, selected)
    findings, suppressed = _kept(raw, topo, use)
    if last:
        ctx.suppression_use = use
        more, more_suppressed = _kept(
            [(r, f) for r in last for f in _rule_findings(r, topo, ctx)], topo, None)
        findings += more
        suppressed += more_suppressed
    if len(topo.overlays) > 1:  # (imported only then: most runs have no overlays)
        from advisor.engine.overlay_findings import merged_across_overlays

        findings = merged_across_overlays(findings, topo.overlays)

    def order(f: Finding):
        return (-f.severity.rank, f.location.path, f.location.line or 0, f.code)

    findings.sort(key=order)
    findings = _capped(findings, topo.notices)
    shown = {(f.location.path, f.message) for f in findings}
    for p in topo.problems:  # a crash stays visible with PA901 ignored or suppressed
        if (is_internal(p) or p.program == TEMPLATE_PROGRAM) \
                and (p.location.path, p.message) not in shown:
            topo.notices.append(f"{p.location.label()}: {p.message}")
    return CheckResult(tool_version=__version__, roots=roots, budgets=ctx.budgets,
                       findings=findings, suppressed=sorted(suppressed, key=order),
                       notices=list(dict.fromkeys(topo.notices)),
                       fail_on=settings.fail_on, root=str(root) if root else "",
                       unbudgeted=list(topo.unbudgeted_servers),
                       client_peaks=_client_peaks(topo, ctx.budgets))


def _client_peaks(topo: Topology, budgets: list) -> list[str]:
    """Each client's own peak when no server is budgeted and the repository runs some
    where they are not read (compose, helm install): the summary says them, printed
    nowhere else (audit 21: KEDA's default 100 pods x jdbc.max-size 16 = 1600). Only the
    clients whose connections per pod are known (PA106 says the others) and no Helm hook
    (its phase arithmetic is a release's, not a client's)."""
    if budgets or not topo.unbudgeted_servers or not topo.clients:
        return []
    from advisor.budget.arith import Style, equation, num
    from advisor.budget.slots import client_contribution

    short = Style(term=lambda t: num(t.value))
    found = [client_contribution(c) for c in topo.clients if c.hook is None]
    return [equation(c, short) for c in found if not c.unknown]


# A file of 40,000 bad lines is not 40,000 findings: the first ones (most severe first)
# are shown, and a notice counts the rest.
MAX_PER_FILE_AND_RULE = 50
MAX_PER_RULE = 500


def _capped(findings: list[Finding], notices: list[str]) -> list[Finding]:
    kept: list[Finding] = []
    per_pair: dict[tuple[str, str], int] = {}
    per_rule: dict[str, int] = {}
    left_out: dict[tuple[str, str], int] = {}
    for f in findings:
        pair = (f.code, f.location.path)
        if per_pair.get(pair, 0) >= MAX_PER_FILE_AND_RULE or \
                per_rule.get(f.code, 0) >= MAX_PER_RULE:
            left_out[pair] = left_out.get(pair, 0) + 1
            continue
        per_pair[pair] = per_pair.get(pair, 0) + 1
        per_rule[f.code] = per_rule.get(f.code, 0) + 1
        kept.append(f)
    for (code, path), count in left_out.items():
        notices.append(f"{code}: {count} more finding{'s' if count != 1 else ''} in {path} "
                       f"not shown (at most {MAX_PER_FILE_AND_RULE} per file and rule, "
                       f"{MAX_PER_RULE} per rule)")
    return kept


def _rule_findings(r: Rule, topo: Topology, ctx: RuleContext) -> list[Finding]:
    """A rule's findings; a rule that raises is reported (its findings are missing) and
    the other rules still run."""
    try:
        return list(r.func(topo, ctx))
    except Exception as exc:  # one broken rule never ends the run
        topo.notices.append(f"internal error in rule {r.code} {r.name} ({crash_text(exc)}); "
                            "its findings are missing (please report this)")
        return []


def _rule_options(settings: Settings, registry: Registry) -> dict:
    out: dict = {}
    if not settings.rules:
        return out  # pydantic is imported only to validate what a configuration sets
    from pydantic import ValidationError

    from advisor.options import error_text, validate_options

    for key, values in settings.rules.items():
        r = registry.resolve(key)
        if r is None:
            raise UsageError(f"{settings.origin}: [rules.{key}]: no such rule")
        try:
            out[r.code] = validate_options(r.options, values)
        except ValidationError as exc:
            raise UsageError(f"{settings.origin}: [rules.{key}] {error_text(exc)}") from None
    return out


def _selected_rules(registry: Registry, settings: Settings, options: CheckOptions) -> list[Rule]:
    def resolve(names: list[str]) -> set[str]:
        codes = set()
        for n in names:
            if n.upper() == "ALL":
                codes |= set(registry.rules)
                continue
            matched = [c for c in registry.rules if c.startswith(n.upper())] \
                if n[:2].upper() == "PA" else []
            r = registry.resolve(n)
            if r is None and not matched:
                raise UsageError(f"unknown rule {n!r} (see `pool-advisor rules`)")
            codes |= {r.code} if r else set(matched)
        return codes

    select = resolve(options.select or settings.select) if (options.select or settings.select) \
        else set(registry.rules)
    ignore = resolve([*settings.ignore, *options.ignore])
    return [r for r in registry.ordered() if r.code in select and r.code not in ignore]


def _scan_finding_files(topo: Topology, findings: list[Finding], root: Root,
                        marks: dict[str, dict[int, list[str]]]) -> None:
    """Suppression comments are read here, once per file a finding points at (a manifest,
    a Helm values file, an overlay patch), and merged with what the readers found (text
    that is not on disk as such: stdin). `marks`: those of the application sources the
    scan read already (not read again)."""
    for path in {f.location.path for f in findings}:
        known = marks.get(path)
        if known is None:
            try:
                known = scan_suppressions(root.read_text(path))
            except InputError:
                continue
        add_suppressions(topo, path, known)


def add_suppressions(topo: Topology, path: str, found: dict[int, list[str]]) -> None:
    known = topo.line_suppressions.setdefault(path, {})
    for line, codes in found.items():
        known.setdefault(line, []).extend(c for c in codes if c not in known.get(line, []))


UNUSED_SUPPRESSION = "PA902"


def _suppression_use(topo: Topology, registry: Registry, selected: list[Rule]):
    from advisor.rule_context import SuppressionUse

    use = SuppressionUse(selected={r.code for r in selected})
    for r in registry.ordered():
        use.known[r.code] = r.code
        use.known[r.name] = r.code
    for path, lines in topo.line_suppressions.items():
        for line, codes in lines.items():
            use.lines[(path, line)] = list(dict.fromkeys(codes))
    for entity in (*topo.clients, *topo.servers, *topo.poolers):
        if entity.suppressed:
            loc = entity.location
            use.annotations[(entity.id, loc.path, loc.line)] = list(entity.suppressed)
    return use


def _kept(raw: list[tuple[Rule, Finding]], topo: Topology, use
          ) -> tuple[list[Finding], list[Finding]]:
    """(findings kept, findings suppressed by a comment or an annotation on their
    subject); `use` records which suppression matched."""
    # Entity id -> its suppressed codes, built once: a scan of every entity per finding
    # is findings x entities.
    annotated: dict[str, list[tuple[tuple[str, str, int | None], list[str]]]] = {}
    for entity in (*topo.clients, *topo.servers, *topo.poolers):
        if entity.suppressed:
            key = (entity.id, entity.location.path, entity.location.line)
            annotated.setdefault(entity.id, []).append((key, entity.suppressed))
    kept, suppressed = [], []
    for r, f in raw:
        (suppressed if _suppressed(f, r, topo, annotated, use) else kept).append(f)
    return kept, suppressed


def _suppressed(f: Finding, r: Rule, topo: Topology, annotated, use) -> bool:
    lines = topo.line_suppressions.get(f.location.path, {})
    line = f.location.line
    for at in (line, line - 1) if line is not None else ():
        for c in lines.get(at, ()):
            if is_suppressed({at: [c]}, line, r.code, r.name):
                if use is not None:
                    use.used.add((f.location.path, at, c))
                return True
    subject = f.subject.split("|", 1)[0]
    for key, codes in annotated.get(subject, ()):
        for c in codes:
            if c.upper() == r.code or c.lower() == r.name:
                if use is not None:
                    use.used.add((key[1], key[2], c))
                return True
    return False


def at_or_above(findings: list[Finding], level: str) -> list[Finding]:
    threshold = Severity(level).rank
    return [f for f in findings if f.severity.rank >= threshold]
