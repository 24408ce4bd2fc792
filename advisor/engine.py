"""paths -> discover -> sources -> topology -> rules -> findings (a CheckResult)."""

from __future__ import annotations

import os
import sys
from functools import partial
from pathlib import Path

from msgspec import Struct, field
from msgspec.structs import replace

from advisor import __version__
from advisor.config.settings import Settings, find_config, load_settings
from advisor.guard import crash_text, guarded, is_internal
from advisor.model import CheckResult, ConfigProblem, Finding, Location, Severity, Topology
from advisor.read.fs import InputError, ReadOnce, Root
from advisor.read.sources.k8s import K8sObject, k8s_objects, looks_like_k8s
from advisor.read.suppress import is_suppressed, scan_suppressions
from advisor.rule_context import RuleContext
from advisor.rules import Registry, Rule, load_rules


class CheckOptions(Struct):
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    config: Path | None = None
    pg_version: int | None = None
    excludes: list[str] = field(default_factory=list)
    stdin_text: str | None = None  # YAML stream when a path is "-"
    # For a chart given on the command line: `check charts/api --values values-prod.yaml`
    values_files: list[str] = field(default_factory=list)
    set_values: list[str] = field(default_factory=list)
    release: str | None = None
    namespace: str | None = None
    # The boundary of every read and the base of every shown path (--root); default:
    # the git top-level holding the paths, else their common folder.
    root: Path | None = None
    # The paths are the changed files pre-commit passes: the whole repository that holds
    # them is read (a budget is the deployment's, not one file's); they are the focus.
    changed_files: bool = False
    # Per-file parse results cached in the repository's .pool-advisor-cache/ (advisor.read.cache):
    # the command line's default (--no-cache), off for library calls and --base's checkout.
    cache: bool = False


class UsageError(Exception):
    """Bad options or configuration: exit code 2."""


class Scanned(Struct):
    """What the scan stages produce, before the rules: for check, advise and inspect."""

    topology: Topology
    settings: Settings
    roots: list[str]  # the paths given, relative to `root` ("." for the root itself)
    root: Path  # the repository: see discover.repository_root
    focus: list[str] = field(default_factory=list)  # changed files, relative to `root`
    # Files whose every suppression comment the scan read (not read again for them)
    suppressions_read: frozenset[str] = frozenset()


def scan(paths: list[str] | list[Path], options: CheckOptions | None = None) -> Scanned:
    """paths -> discover -> sources -> topology, with the project's settings. All the
    paths are one deployment: discovered together inside one repository root and built
    into one topology, linked once."""
    paths = [str(p) for p in paths]
    options = options or CheckOptions()
    on_disk = [Path(raw) for raw in paths if raw != "-"]
    for raw in on_disk:
        if not raw.exists() and not options.changed_files:
            raise UsageError(f"{raw}: no such file or directory")
    root = _repository(on_disk, options)
    focus = [_rel_to(root, p) for p in on_disk] if options.changed_files else []
    if options.changed_files:
        on_disk = [root]
    settings = project_settings([str(p) for p in on_disk] or paths, options, root)
    topo = Topology()
    roots = [_rel_to(root, p) for p in on_disk]
    once = ReadOnce()  # each file read once: app sources, manifests' suppressions
    if on_disk:
        _merge(topo, scan_paths(Root(root, once), on_disk, settings, options))
    if "-" in paths:
        _read_stdin(topo, options, settings, roots)
    if options.config is None:
        from advisor.config.settings import symlinked_configs

        links = symlinked_configs(_config_start([str(p) for p in on_disk]))
        topo.notices += [f"{_shown_config(link, root)} is a symlink; not followed (no "
                         "configuration read from it)" for link in links]
    return Scanned(topo, settings, roots, root, focus,
                   suppressions_read=frozenset(once.suppressions_read))


def _repository(paths: list[Path], options: CheckOptions) -> Path:
    from advisor.read.discover import repository_root

    if options.root is not None and not options.root.is_dir():
        raise UsageError(f"--root {options.root}: not a directory")
    root = repository_root(paths, options.root)
    for p in paths:
        if p.resolve() != root and root not in p.resolve().parents:
            raise UsageError(f"{p} is outside --root {options.root}")
    return root


def _rel_to(root: Path, path: Path) -> str:
    """`path` as shown: relative to the root, whatever the working directory."""
    absolute = Path(os.path.abspath(path))
    for candidate in (absolute, absolute.resolve()):
        try:
            return candidate.relative_to(root).as_posix() or "."
        except ValueError:
            continue
    return absolute.as_posix()


def run_check(paths: list[str] | list[Path], options: CheckOptions | None = None,
              registry: Registry | None = None) -> CheckResult:
    options = options or CheckOptions()
    registry = registry or load_rules()
    scanned = scan(paths, options)
    result = evaluate(scanned.topology, scanned.settings, options, registry, scanned.roots,
                      root=scanned.root, suppressions_read=scanned.suppressions_read)
    result.focus = scanned.focus
    return result


def memory_options(settings: Settings, registry: Registry):
    """PA301's options (the memory estimate's assumptions) from the configuration."""
    from advisor.budget.slots import MemoryOptions

    found = _rule_options(settings, registry).get("PA301")
    return found if isinstance(found, MemoryOptions) else MemoryOptions()


def evaluate(topo: Topology, settings: Settings, options: CheckOptions, registry: Registry,
             roots: list[str], *, root: Path | None = None,
             suppressions_read: frozenset[str] = frozenset()) -> CheckResult:
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
                                   suppressions_read], Root(root))
    use = _suppression_use(topo, registry, selected)
    findings, suppressed = _kept(raw, topo, use)
    if last:
        ctx.suppression_use = use
        more, more_suppressed = _kept(
            [(r, f) for r in last for f in _rule_findings(r, topo, ctx)], topo, None)
        findings += more
        suppressed += more_suppressed

    def order(f: Finding):
        return (-f.severity.rank, f.location.path, f.location.line or 0, f.code)

    findings.sort(key=order)
    findings = _capped(findings, topo.notices)
    shown = {(f.location.path, f.message) for f in findings}
    for p in topo.problems:  # a crash stays visible with PA901 ignored or suppressed
        if is_internal(p) and (p.location.path, p.message) not in shown:
            topo.notices.append(f"{p.location.label()}: {p.message}")
    return CheckResult(tool_version=__version__, roots=roots, budgets=ctx.budgets,
                       findings=findings, suppressed=sorted(suppressed, key=order),
                       notices=list(dict.fromkeys(topo.notices)),
                       fail_on=settings.fail_on, root=str(root) if root else "")


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


def internal_errors(result: CheckResult) -> list[str]:
    """What failed inside pool-advisor during a run (crashes caught per file and per
    rule), one line each: such a run exits 2 whatever else it found."""
    found = [f"{f.location.label()}: {f.message}" for f in result.findings
             if f.code == "PA901" and f.message.startswith("internal error")]
    return found + [n for n in result.notices if "internal error" in n.split("(", 1)[0]]


def project_settings(paths: list[str], options: CheckOptions,
                     root: Path | None = None) -> Settings:
    """The configuration that applies: --config, else the nearest file at or above the
    paths' common folder (the same for `check db apps` as for `check .`)."""
    config = options.config
    shown = str(config) if config else None
    if config is None:
        start = _config_start(paths)
        config = find_config(start)
        shown = _shown_config(config, root or start) if config else None
    try:
        settings = load_settings(config, shown)
    except InputError as exc:
        raise UsageError(f"{exc.label()}: {exc.message}") from None
    if config is not None and root is not None:
        folder = _rel_to(root, config.resolve().parent)
        settings.folder = "" if folder == "." or folder.startswith("/") else folder
    if options.pg_version is not None:
        settings.pg_version = options.pg_version
    return settings


def _config_start(paths: list[str]) -> Path:
    """Where the configuration is looked for: the paths' common folder."""
    given = [Path(p).resolve() for p in paths if p != "-"]
    if not given:
        return Path.cwd()
    return Path(os.path.commonpath([p if p.is_dir() else p.parent for p in given]))


def _shown_config(config: Path, root: Path) -> str:
    """A found configuration file as findings show it: relative to the repository root
    like every other path (SARIF and GitLab reports need relative paths), else as it is."""
    try:
        return config.resolve().relative_to(root).as_posix()
    except ValueError:
        return str(config)


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


def _scan_finding_files(topo: Topology, findings: list[Finding], root: Root) -> None:
    """Suppression comments are read here, once per file a finding points at (a manifest,
    a Helm values file, an overlay patch), and merged with what the readers found (text
    that is not on disk as such: stdin)."""
    for path in {f.location.path for f in findings}:
        try:
            text = root.read_text(path)
        except InputError:
            continue
        _add_suppressions(topo, path, scan_suppressions(text))


def _add_suppressions(topo: Topology, path: str, found: dict[int, list[str]]) -> None:
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


def _merge(into: Topology, other: Topology) -> None:
    into.servers += other.servers
    into.poolers += other.poolers
    into.clients += other.clients
    into.problems += other.problems
    into.notices += other.notices
    into.sql_hazards += other.sql_hazards
    into.client_env.update(other.client_env)
    for path, lines in other.line_suppressions.items():
        into.line_suppressions.setdefault(path, {}).update(lines)


def _read_stdin(topo: Topology, options: CheckOptions, settings: Settings,
                roots: list[str]) -> None:
    from advisor.link.inputs import Inputs
    from advisor.link.topology import build_topology

    text = options.stdin_text if options.stdin_text is not None else sys.stdin.read()
    roots.append("-")
    problems: list[ConfigProblem] = []
    objects, problems = guarded(problems, "<stdin>", partial(k8s_objects, text, "<stdin>"),
                                ([], problems))
    inputs = Inputs(root=Root.of(Path.cwd()), objects=objects, settings=settings,
                    pg_version_override=options.pg_version, namespace=options.namespace)
    built = guarded(problems, "<stdin>", partial(build_topology, inputs), Topology(),
                    "linking clients, poolers and servers")
    built.problems[:0] = problems
    built.line_suppressions["<stdin>"] = scan_suppressions(text)
    _merge(topo, built)


def scan_paths(root: Root, paths: list[Path], settings: Settings, options: CheckOptions
               ) -> Topology:
    """Everything under the command-line paths, inside the repository `root`, as one
    topology."""
    from advisor.link.inputs import Inputs
    from advisor.link.topology import build_topology
    from advisor.read.discover import discover_paths

    found = discover_paths(root.path, paths, excludes=[("", options.excludes),
                                                       (settings.folder, settings.exclude)])
    problems: list[ConfigProblem] = list(found.problems)
    objects: list[K8sObject] = []
    lambdas: list = []  # advisor.read.sources.serverless.LambdaFunction
    notices: list[str] = list(found.notices)
    owned: set[Path] = set()
    beside: dict[Path, Path] = {}  # an unlisted manifest -> the overlay it sits in
    beside_objects: dict[str, list[K8sObject]] = {}
    if found.kustomize_all:
        from advisor.read.render.kustomize import manifests_kustomize_reads

        reads = manifests_kustomize_reads(root, found.kustomize_dirs, found.kustomize_all,
                                          found.manifests)
        owned, beside = reads.skip, reads.beside
        notices += reads.notices
    comments: dict[str, dict[int, list[str]]] = {}
    cache = _open_cache(root, options)
    for manifest in found.manifests:
        if manifest in owned:
            continue
        shown = root.rel(manifest)
        try:
            text = root.read_text(manifest)
        except InputError as exc:
            problems.append(_input_problem(exc))
            continue
        if not looks_like_k8s(text):
            guarded(problems, shown, partial(_serverless, text, shown, lambdas, problems), None)
            continue
        objs, probs, found_comments = guarded(
            problems, shown, partial(_manifest, text, shown, cache), ([], [], None))
        if found_comments is not None:  # every suppression, for PA902, not only those used
            comments[shown] = found_comments
        if root.once is not None:
            root.once.suppressions_read.add(shown)
        if manifest in beside:
            beside_objects.setdefault(root.rel(beside[manifest]), []).extend(objs)
        else:
            objects += objs
        problems += probs
    cache.save()
    environments = _render(found, root, settings, options, objects, problems, notices,
                           beside_objects)
    hints = guarded(problems, ".", partial(build_contexts, found, root), None,
                    "reading skaffold and compose build contexts")
    topo = Topology()
    shared = Topology()
    reached_by: dict[str, list[str]] = {}  # shared server or pooler -> overlays using it
    # The objects outside the overlays first, once; then each alternative overlay with
    # them, keeping only its own entities (its clients may still link to shared ones).
    for label, env_objects in [("", []), *environments]:
        inputs = Inputs(root=root, objects=objects + env_objects, pg_conf_files=found.pg_confs,
                        bouncer_ini_files=found.bouncer_inis, settings=settings,
                        pg_version_override=options.pg_version,
                        app_dirs=_app_dirs(settings),
                        app_candidates=app_source_dirs(found),
                        build_hints=hints, namespace=options.namespace,
                        lambdas=lambdas)
        built = guarded(problems, label or ".", partial(build_topology, inputs), None,
                        "linking clients, poolers and servers")
        if built is None:
            continue
        if label:
            for reached in _drop_shared(built, shared):
                reached_by.setdefault(reached, []).append(label)
            _label_environment(built, label)
        else:
            shared = built
        _merge(topo, built)
    names = {e.id: e.name for e in (*shared.servers, *shared.poolers)}
    notices += [f"{names[i]} is outside the overlays {', '.join(labels)}: the clients of all of "
                "them count toward it together (if each overlay is deployed to a cluster of "
                "its own with its own copy of it, each copy's peak is lower)"
                for i, labels in reached_by.items() if len(labels) > 1 and i in names]
    topo.problems[:0] = problems
    topo.notices[:0] = notices
    for path, lines in comments.items():
        _add_suppressions(topo, path, lines)
    guarded(topo.problems, ".", partial(_sql, found, root, topo, settings.scan_test_code),
            None, "scanning SQL for pooler hazards")
    return topo


def _open_cache(root: Root, options: CheckOptions):
    from advisor.read.cache import FileCache, disabled_by_env

    if not options.cache or disabled_by_env():
        return FileCache.disabled()
    return FileCache.open(root.path)


def _manifest(text: str, shown: str, cache) -> tuple[list[K8sObject], list[ConfigProblem],
                                                     dict[int, list[str]] | None]:
    """A Kubernetes YAML file's objects, problems and suppression comments (None without
    any): from the cache when this content was read before."""
    from advisor.read.cache import CachedObject, ManifestEntry, decode_tree, encode_tree

    entry = cache.get("k8s", shown, text, ManifestEntry)
    if entry is not None:
        try:
            objs = [K8sObject(kind=o.kind, api_version=o.api_version, name=o.name,
                              namespace=o.namespace, body=decode_tree(o.body), path=shown,
                              line=o.line, line_offset=o.line_offset, origin=o.origin)
                    for o in entry.objects]
            return objs, entry.problems, entry.comments
        except (ValueError, TypeError, KeyError, IndexError):
            pass  # not what this version writes: parsed again below
    comments = scan_suppressions(text) if "pool-advisor:" in text else None
    objs, probs = k8s_objects(text, shown)
    if cache.enabled:
        try:
            cached = [CachedObject(kind=o.kind, api_version=o.api_version, name=o.name,
                                   namespace=o.namespace, body=encode_tree(o.body), line=o.line,
                                   line_offset=o.line_offset, origin=o.origin) for o in objs]
        except TypeError:
            cached = None
        if cached is not None and all(not o.value_sources for o in objs):
            cache.put("k8s", shown, text, ManifestEntry(cached, probs, comments))
    return objs, probs, comments


def _serverless(text: str, shown: str, lambdas: list, problems: list[ConfigProblem]) -> None:
    """AWS Lambda functions of a SAM/CloudFormation template or serverless.yml."""
    from advisor.read.sources.serverless import lambda_functions, looks_like_serverless

    if not looks_like_serverless(text):
        return
    try:
        lambdas.extend(lambda_functions(text, shown))
    except Exception as exc:  # a YAML error: reported like a manifest's
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problems.append(ConfigProblem(location=Location(path=shown, line=line),
                                      message=f"not read as a serverless template: {exc}",
                                      program="YAML"))


def _drop_shared(built: Topology, shared: Topology) -> list[str]:
    """An environment's topology without what `shared` (the objects outside every overlay,
    the config files and declared servers) already holds: those are one deployment
    whatever the number of overlays, their findings reported once. Returns the shared
    servers and poolers the environment's clients and poolers reach."""
    ids = {e.id for e in (*shared.servers, *shared.poolers, *shared.clients)}
    built.servers = [s for s in built.servers if s.id not in ids]
    built.poolers = [p for p in built.poolers if p.id not in ids]
    built.clients = [c for c in built.clients if c.id not in ids]
    built.problems = [p for p in built.problems if p not in shared.problems]
    reached = {c.target_id for c in built.clients} | {p.server_id for p in built.poolers}
    return sorted(i for i in reached if i in ids)


def _label_environment(topo: Topology, label: str) -> None:
    """Alternative overlays (staging, prod) are budgeted apart: each is its own
    deployment. Their objects keep their names, qualified by the overlay."""
    for entity in (*topo.servers, *topo.poolers, *topo.clients):
        entity.name = f"{entity.name} [{label}]"
    ids = {e.id: f"{label}|{e.id}" for e in (*topo.servers, *topo.poolers, *topo.clients)}
    for entity in (*topo.servers, *topo.poolers, *topo.clients):
        entity.id = ids[entity.id]
    for s in topo.servers:
        s.primary_id = ids.get(s.primary_id, s.primary_id) if s.primary_id else None
    for p in topo.poolers:
        p.server_id = ids.get(p.server_id, p.server_id) if p.server_id else None
    for c in topo.clients:
        c.target_id = ids.get(c.target_id, c.target_id) if c.target_id else None
    for i, h in enumerate(topo.sql_hazards):
        if h.client_id:
            topo.sql_hazards[i] = replace(h, client_id=ids.get(h.client_id))
    topo.client_env = {ids.get(k, k): v for k, v in topo.client_env.items()}


def _render(found, root: Root, settings: Settings, options: CheckOptions,
            objects: list[K8sObject], problems: list[ConfigProblem], notices: list[str],
            beside: dict[str, list[K8sObject]] | None = None
            ) -> list[tuple[str, list[K8sObject]]]:
    """Helm charts and kustomize overlays, rendered as they would be deployed. Chart
    objects join `objects`; kustomize leaves are returned as (label, objects): when two
    leaves render the same object they are alternatives (staging, prod), each its own
    environment, else they all join one."""
    if not found.helm_charts and (options.values_files or options.set_values):
        raise UsageError("--values/--set are for a Helm chart, and there is none among the "
                         "paths")
    if found.helm_charts:
        from advisor.read.render.helm import render_chart
        from advisor.read.render.helm_process import EngineProcess

        given = _chart_values(root, found.helm_charts, options)  # before a process starts
        # One engine process for the run's charts (per-chart crashes are caught by
        # `guarded`; the process also ends on its own when its stdin closes).
        engine = EngineProcess()
        for chart in found.helm_charts:
            rel = root.rel(chart)
            decl = next((c for c in settings.charts
                         if _in_config_folder(settings, c.path.strip("/")) == rel), None)
            values, sets = given.get(chart, ([], []))
            cli = bool(values or sets)
            rendered = guarded(problems, rel, partial(
                render_chart, root, rel,
                values_files=values if cli else _declared_values(root, settings, chart, decl),
                set_values=sets if cli else (decl.set if decl else []),
                release=options.release or (decl.release if decl else "release"),
                namespace=options.namespace or (decl.namespace if decl else None),
                engine=engine), None, "rendering this chart")
            if rendered is None:
                continue
            objects += rendered.objects
            problems += rendered.problems
            notices += rendered.notices
        engine.close()
    if found.kustomize_dirs:
        from advisor.read.render.kustomize import prepare_kustomize, render_kustomization

        prepared = prepare_kustomize()  # the binary's flags checked once for the run
        leaves = []
        for d in found.kustomize_dirs:
            extra = (beside or {}).get(root.rel(d), [])
            rendered = guarded(problems, root.rel(d), partial(
                render_kustomization, root, root.rel(d), prepared=prepared), None,
                "rendering this kustomization")
            if rendered is None:
                leaves.append((root.rel(d), extra))
                continue
            leaves.append((root.rel(d), rendered.objects + extra))
            problems += rendered.problems
            notices += rendered.notices
        alternatives = _alternatives(leaves)
        for label, objs in leaves:
            if label not in alternatives:
                objects += objs
        return [(label, objs) for label, objs in leaves if label in alternatives]
    return []


def _chart_values(root: Root, charts: list[Path], options: CheckOptions
                  ) -> dict[Path, tuple[list[str], list[str]]]:
    """Which chart each --values and --set is for. A values file is read from the working
    directory, as `helm -f` reads it, and may be anywhere in the repository; with several
    charts it belongs to the chart whose folder holds it. What cannot be attributed is a
    usage error, never ignored: a budget without the values the user named is wrong."""
    if not (options.values_files or options.set_values):
        return {}
    out: dict[Path, tuple[list[str], list[str]]] = {c: ([], []) for c in charts}
    for name in options.values_files:
        try:
            real = root.resolve(Path(os.path.abspath(name)))
        except InputError as exc:
            raise UsageError(f"--values {name}: {exc.message}") from None
        if not real.is_file():
            near = [root.rel(c / name) for c in charts if (c / name).is_file()]
            hint = f"; did you mean {near[0]}?" if near else ""
            raise UsageError(f"--values {name}: no such file (read from the working "
                             f"directory, as helm -f reads it{hint})")
        holders = [c for c in charts if c in real.parents]
        if len(charts) > 1 and not holders:
            raise UsageError(
                f"--values {name}: {len(charts)} charts are being checked "
                f"({', '.join(root.rel(c) for c in charts)}) and the file is in none of them; "
                "give the chart as the only path, or declare [[charts]] values in the "
                "configuration")
        out[holders[0] if holders else charts[0]][0].append(str(real))
    if options.set_values:
        if len(charts) > 1:
            raise UsageError(f"--set: {len(charts)} charts are being checked "
                             f"({', '.join(root.rel(c) for c in charts)}); give the chart as "
                             "the only path, or declare [[charts]] set in the configuration")
        out[charts[0]][1].extend(options.set_values)
    return out


def _alternatives(leaves: list[tuple[str, list[K8sObject]]]) -> set[str]:
    """Leaves that render an object another leaf renders too (the same kind, namespace
    and name): they cannot run side by side, so each is its own environment (staging,
    prod). A leaf that shares no object with another is deployed with the rest."""
    owners: dict[tuple[str, str | None, str], set[str]] = {}
    for label, objs in leaves:
        for o in objs:
            owners.setdefault((o.kind, o.namespace, o.name), set()).add(label)
    return {label for labels in owners.values() if len(labels) > 1 for label in labels}


def _sql(found, root: Root, topo: Topology, test_code: bool = False) -> None:
    if not topo.poolers:
        return  # hazards only matter behind a pooler; skip the SQL scanner otherwise
    from advisor.read.sql.extract import (
        assign_clients,
        is_sql_candidate,
        is_test_path,
        not_checked_notices,
        scan_sql_sources,
    )

    candidates = [rel for rel in map(root.rel, found.other_files) if is_sql_candidate(rel)
                  and (test_code or not is_test_path(rel))]
    if not candidates:
        return
    import importlib.util

    if importlib.util.find_spec("pglast") is None:  # a slim install: say what is not read
        topo.notices.append(
            f"SQL not checked for transaction-mode hazards (PA4xx) in {len(candidates)} "
            "file(s): pglast, PostgreSQL's parser, is not installed (a slim install; "
            "it is a default dependency)")
        return
    # RDS Proxy pins on more than PgBouncer breaks on: look for those forms too.
    pinning = any(p.kind == "rds-proxy" for p in topo.poolers)
    hazards, problems = scan_sql_sources(root, candidates, pinning=pinning)
    from advisor.read.sql.drivers import resolve_erb

    mapped = assign_clients(
        hazards, {c.id: c.source_dir for c in topo.clients if c.source_dir is not None})
    topo.sql_hazards += resolve_erb(mapped, topo.client_env)
    notices, problems = not_checked_notices(problems)
    topo.problems += problems
    topo.notices += notices


# Files that mark the top of an application's source tree.
APP_MARKERS = frozenset({
    "pom.xml", "build.gradle", "build.gradle.kts", "package.json", "requirements.txt",
    "pyproject.toml", "setup.py", "Pipfile", "go.mod", "Gemfile", "mix.exs", "Dockerfile",
    "composer.json", "Cargo.toml", "manage.py", "Procfile"})


def _app_dirs(settings: Settings) -> dict[str, str]:
    return {w.name: _in_config_folder(settings, w.source) for w in settings.workloads
            if w.source}


def _in_config_folder(settings: Settings, path: str) -> str:
    """A path the configuration names (relative to its own folder) as shown: relative to
    the repository root."""
    return os.path.normpath(os.path.join(settings.folder, path)).replace(os.sep, "/") \
        if settings.folder else path


def _declared_values(root: Root, settings: Settings, chart: Path, decl) -> list[str]:
    """[[charts]] values: relative to the chart folder when the file is there, else to
    the configuration file's folder."""
    if decl is None:
        return []
    return [v if (chart / v).is_file() else str(root.path / _in_config_folder(settings, v))
            for v in decl.values]


def build_contexts(found, root: Root):
    """Image -> build folder from skaffold.yaml and compose files in the repository."""
    files = [p for p in found.manifests if p.name in (
        "skaffold.yaml", "docker-compose.yml", "docker-compose.yaml", "compose.yaml",
        "compose.yml")]
    if not files:
        return None
    from advisor.read.apps.locate import BuildHints, _contexts

    contexts = []
    for p in files:
        contexts.extend(_contexts(root, str(p), found.rel(p.parent).strip(".")))
    return BuildHints(contexts=tuple(contexts))


def app_source_dirs(found) -> list[str]:
    """Folders (relative to the root) that hold an application: they contain a build or
    packaging file. The topology maps workloads to them by name."""
    dirs = {found.rel(p.parent) for p in found.other_files if p.name in APP_MARKERS}
    dirs |= {found.rel(p.parent) for p in found.manifests
             if p.name in ("application.yml", "application.yaml")
             and p.parent.name in ("resources", "config")}
    # Rails: config/database.yml belongs to the folder above config/ (often the root)
    dirs |= {found.rel(p.parent.parent) for p in found.manifests + found.other_files
             if p.name == "database.yml" and p.parent.name == "config"}
    # "" is the repository root: a candidate too (Rails/Django/Node apps with k8s/ beside)
    return sorted({"" if d == "." else d for d in dirs})


def _input_problem(exc: InputError) -> ConfigProblem:
    return ConfigProblem(location=Location(path=exc.path, line=exc.line), message=exc.message,
                         fatal=True, program="pool-advisor")


def at_or_above(findings: list[Finding], level: str) -> list[Finding]:
    threshold = Severity(level).rank
    return [f for f in findings if f.severity.rank >= threshold]
