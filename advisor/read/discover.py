"""Walk the paths given on the command line and classify what is there.

Like kube-linter: YAML manifests, Helm chart folders (Chart.yaml), kustomize folders
(kustomization.yaml), plus the config files pool-advisor reads (postgresql.conf,
pgbouncer.ini) and the application files the app and SQL scanners look at. Skips .git,
node_modules, virtualenvs, `--exclude` globs and .gitignore'd paths; never follows a
symlink out of the root.

All the paths of one run are one deployment, read inside one boundary: the repository
(`repository_root`: `--root`, else the git top-level that holds every path, else the
paths' common folder). `Discovered.root` is that boundary; every reader and renderer
gets it as its `Root` (a kustomize overlay reads `../../base`, a chart's values file
may sit anywhere in it), and every path shown to users is relative to it, whatever the
working directory and however the path was spelt.
"""

from __future__ import annotations

import contextlib
import errno
import operator
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from advisor.model import ConfigProblem, Location
from advisor.read.fs import relative_posix, walk_entries

SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", ".venv", "venv", "__pycache__",
                       ".tox", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".terraform",
                       ".pool-advisor-cache"})
YAML_SUFFIXES = (".yaml", ".yml")
KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")


class Discovered(Struct):
    root: Path  # the repository: the boundary of every read, the base of every shown path
    manifests: list[Path] = field(default_factory=list)
    pg_confs: list[Path] = field(default_factory=list)
    bouncer_inis: list[Path] = field(default_factory=list)
    helm_charts: list[Path] = field(default_factory=list)
    kustomize_dirs: list[Path] = field(default_factory=list)  # the ones users build
    kustomize_all: list[Path] = field(default_factory=list)  # bases and components too
    # the `kind: Component` ones, not leaves: built only when a Flux Kustomization's
    # spec.path names one (repository._flux_component_roots)
    kustomize_components: list[Path] = field(default_factory=list)
    other_files: list[Path] = field(default_factory=list)  # app sources, SQL, ...
    # str() of the files met in a walk that are symlinks (known from the folder listing):
    # a reader that cares asks this set, not an lstat per file. Files named on the command
    # line are resolved, never symlinks.
    linked: set[str] = field(default_factory=set)
    # str() of the folders a walk entered below the root: real paths (the walk starts
    # from a resolved folder and never enters a symlinked one), see Root.trust_folders
    real_dirs: list[str] = field(default_factory=list)
    # every file classified, by its name, in the order found: readers that look for a
    # few names (Dockerfile, package.json) do not ask each file for its name
    names: dict[str, list[Path]] = field(default_factory=dict)
    problems: list[ConfigProblem] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # FIFOs, sockets, devices skipped
    # (file, chart) of the values files named as paths inside a chart folder: each stands
    # for its chart, and is said when the chart is not rendered with it (--values)
    chart_values_named: list[tuple[Path, Path]] = field(default_factory=list)
    # (file, the kustomization file beside it, whether it lists the file) of the files named
    # as paths beside a kustomization: each is read as it is; said when the folder is not
    # built (repository.scan_paths)
    named_beside: list[tuple[Path, Path, bool]] = field(default_factory=list)
    # kustomization folder -> the files named as paths that it lists as resources, when
    # no path builds the folder as a whole: it is built and only those files' objects are
    # kept (repository._render), so its replicas, patches, prefix and namespace apply
    kustomize_only: dict[Path, list[Path]] = field(default_factory=dict)

    def rel(self, p: Path) -> str:
        found = relative_posix(str(p), str(self.root)) if p.is_absolute() else None
        return found if found is not None else p.as_posix()


def is_pg_conf(name: str) -> bool:
    return name == "postgresql.auto.conf" or (
        name.endswith(".conf") and name.startswith("postgresql"))


def is_bouncer_ini(name: str) -> bool:
    return name.endswith(".ini") and "pgbouncer" in name.lower()


def repository_root(paths: list[Path], override: Path | None = None) -> Path:
    """The folder nothing is read outside of and every shown path is relative to:
    `override` (--root), else the git top-level holding every path (found by looking
    for .git upwards, without running git), else the paths' common folder."""
    if override is not None:
        return override.resolve()
    resolved = [p.resolve() for p in paths] or [Path.cwd().resolve()]
    tops = {_git_top(p) for p in resolved}
    if len(tops) == 1 and (top := next(iter(tops))) is not None:
        return top
    return Path(os.path.commonpath([p if p.is_dir() else p.parent for p in resolved]))


def _git_top(path: Path) -> Path | None:
    """The nearest folder at or above `path` with a .git (a folder, or a file in a
    worktree or submodule)."""
    start = path if path.is_dir() else path.parent
    return next((d for d in (start, *start.parents) if (d / ".git").exists()), None)


def discover(path: Path, *, excludes: list[str] | None = None) -> Discovered:
    """Classify every file under `path` (a folder or a single file), as its own root."""
    path = path.resolve()
    return discover_paths(path if path.is_dir() else path.parent, [path],
                          excludes=[("", excludes or [])])


def discover_paths(root: Path, paths: list[Path], *,
                   excludes: list[tuple[str, list[str]]] | None = None) -> Discovered:
    """Classify the files under every path (folders walked, files taken as given) into
    one `Discovered` relative to `root`. A path inside a Helm chart stands for the chart
    (the outermost one below the root: subcharts render through their parent), except a
    Kubernetes manifest Helm does not deploy (outside templates/, charts/, crds/, and
    read by no template through .Files: advisor.read.chart_parts), which is read as a
    manifest. A file named that its folder's kustomization does not list is read as it
    is; one it lists is read through that build, of which only the named files' objects
    are kept (`kustomize_only`). The whole build is kept when a path names the folder, a
    folder above it or the kustomization file itself (`check k8s/*.yaml` is then `check
    k8s`); a file a build lists is read through it only (kustomize_tree.
    manifests_kustomize_reads). Each file is classified once, however many paths
    hold it. `excludes`: (folder relative to the root, gitignore-style globs relative to
    that folder)."""
    root = root.resolve()
    found = Discovered(root=root)
    ignores = Ignores([(folder, spec) for folder, globs in excludes or []
                       if (spec := _excludes_spec(globs)) is not None])
    walked: list[Path] = []
    seen: set[str] = set()  # str(path): a Path hashes its parts
    kustomize_dirs: list[Path] = []
    only: dict[Path, list[Path]] = {}  # Discovered.kustomize_only, before the whole builds
    uses: dict[Path, Any] = {}  # chart -> its templates' chart_parts.FilesUse, once asked
    given = sorted({p.resolve() for p in paths}, key=lambda p: (len(p.parts), p))
    in_order = len(given) == 1  # one folder walked and nothing else: see the sort below
    # Parents first, so a folder inside one already walked is not walked again.
    for path in given:
        if any(path == w or w in path.parents for w in walked):
            continue
        held = _enclosing_chart(root, path)
        if held is not None and path.is_dir():
            chart, own = held
            in_order = False
            if not own:
                walked.append(path)
            if own or _walk_beside(found, chart, path, ignores, seen, kustomize_dirs, uses):
                _add_once(found.helm_charts, chart)
        elif held is not None and (held[1] or not _beside_chart(found, held[0], path, uses)):
            in_order = False
            _add_once(found.helm_charts, held[0])
        elif path.is_dir():
            walked.append(path)
            _load_gitignores_above(ignores, found, path)
            _walk(found, path, ignores, seen, kustomize_dirs)
        elif path.name in KUSTOMIZATION_NAMES:
            in_order = False
            _add_once(kustomize_dirs, path.parent)
        elif str(path) not in seen and not ignores.match_excluded(found.rel(path)):
            in_order = False
            seen.add(str(path))
            if (kind := _special(path)) is not None:
                found.notices.append(f"{found.rel(path)}: {kind}, not a regular file; skipped")
                continue
            _classify(found, path)
            # `check manifests/cluster.yaml` beside a kustomization that lists only the
            # operator: building the folder instead read nothing of the file named
            beside = next((path.parent / k for k in KUSTOMIZATION_NAMES
                           if (path.parent / k).is_file()), None)
            if beside is not None:
                listed = path in _kustomization_files(path.parent)
                found.named_beside.append((path, beside, listed))
                if listed:  # `check k8s/api.yaml` deploys what the build makes of it
                    only.setdefault(path.parent, []).append(path)
    # A folder also named as a whole (walked, or its kustomization file named) keeps
    # everything its build makes.
    found.kustomize_only = {d: files for d, files in only.items() if d not in kustomize_dirs}
    for d in only:
        _add_once(kustomize_dirs, d)
    # A chart inside another's charts/ renders through it (by set: a pairwise test of 200
    # charts was 40,000 `parents` scans); one in another's examples/ is a chart of its own.
    charts = set(found.helm_charts)
    if len(charts) > 1:
        found.helm_charts = [c for c in found.helm_charts
                             if not any(p in charts and _charts_own(p, c) for p in c.parents)]
    for chart in found.helm_charts:
        _note_unread_manifests(found, chart, ignores, seen)
    # One order whatever the paths and their order: a walk of the root (files of a folder,
    # then its subfolders, each by name), so `check k8s/*.yaml` lists what `check k8s` does.
    # One folder walked (`check .`, pre-commit's whole repository) is in that order as
    # found: not sorted again (the sort keys were a fifth of discovering 5,000 files).
    if not in_order:
        for files in (found.manifests, found.pg_confs, found.bouncer_inis, found.other_files):
            files.sort(key=lambda p: _walk_order(root, p, is_file=True))
        for dirs in (found.helm_charts, kustomize_dirs):
            dirs.sort(key=lambda p: _walk_order(root, p, is_file=False))
    found.kustomize_all = kustomize_dirs
    found.kustomize_dirs, found.kustomize_components = _leaf_kustomizations(kustomize_dirs)
    return found


def discover_names(root: Path, wanted: Callable[[str], bool], *,
                   excludes: list[tuple[str, list[str]]] | None = None,
                   given: list[Path] | None = None) -> Discovered:
    """The files of the whole repository whose names `wanted` takes, by name
    (`Discovered.names`; the YAML ones in `manifests` too): the application folders and
    build files looked for beside narrower paths (`check k8s/`). The walk skips what
    discover_paths' does (SKIP_DIRS, hidden folders, what .gitignore or --exclude
    leaves out, symlinked folders, below a Chart.yaml) but classifies nothing else and
    asks the ignore rules only of folders and wanted files: in this repository the demo's
    check spent more on listing the repository this way than on everything else. A test
    folder (TEST_DIRS: its package.json and Dockerfiles are fixtures, not what is
    deployed) is walked only when one of the `given` paths is inside it."""
    root = root.resolve()
    found = Discovered(root=root)
    wanted_tests = {str(p.resolve()) for p in given or ()}
    ignores = Ignores([(folder, spec) for folder, globs in excludes or []
                       if (spec := _excludes_spec(globs)) is not None])
    base = str(root)
    # Test folders walked only for a path given inside them: in those, only the projects
    # (their subfolders) that hold a given path; fixtures/acme-shop's check is not
    # fixtures/rds-proxy's deployment
    narrowed: set[str] = set()
    for folder, dirs, entries, links in walk_entries(root):
        rel_here = relative_posix(folder, base) or "."
        files = [entry.name for entry in entries]
        if ".gitignore" in files and not os.path.islink(os.path.join(folder, ".gitignore")):
            ignores.add(rel_here, Path(folder, ".gitignore"))
        if "Chart.yaml" in files and folder != base:
            dirs[:] = []
        else:
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")
                             and d not in links and not ignores.match(_dir_rel(rel_here, d))
                             and ((d not in TEST_DIRS and folder not in narrowed)
                                  or _holds_any(os.path.join(folder, d), wanted_tests)))
            narrowed.update(path for d in dirs if d in TEST_DIRS
                            and (path := os.path.join(folder, d)) not in wanted_tests
                            and not _inside_any(path, wanted_tests))
        prefix = "" if rel_here == "." else rel_here + "/"
        # discover_paths' order (a folder's files, then its subfolders, each by name): the
        # first build context that names an image is the one taken
        for entry in sorted(entries, key=_entry_name):
            name = entry.name
            if not wanted(name) or (ignores.specs and _matches(ignores.specs, prefix + name)):
                continue
            path = Path(entry.path)
            if (_is_symlink(entry) and (_loops(entry.path) or _escapes(root, path))) \
                    or not entry.is_file():
                continue  # the walk of the paths given says what is wrong with it
            found.names.setdefault(name, []).append(path)
            if name.endswith(YAML_SUFFIXES):
                found.manifests.append(path)
    return found


# Folders of tests and their fixtures: no application deployed from the repository lives
# there (matched by name, at any depth).
TEST_DIRS = frozenset({"test", "tests", "testdata", "__tests__", "e2e", "fixtures"})


def _holds_any(folder: str, paths: set[str]) -> bool:
    return any(p == folder or p.startswith(folder + os.sep) for p in paths)


def _inside_any(folder: str, paths: set[str]) -> bool:
    return any(folder.startswith(p + os.sep) for p in paths)


def _walk_order(root: Path, path: Path, *, is_file: bool) -> tuple[tuple[int, str], ...]:
    rel = relative_posix(str(path), str(root)) if path.is_absolute() else None
    # Path(rel).parts, without parsing it again
    parts = path.parts if rel is None else () if rel == "." else tuple(rel.split("/"))
    if not is_file:
        return tuple((1, d) for d in parts)
    return (*((1, d) for d in parts[:-1]), (0, parts[-1]))


def _add_once(into: list[Path], item: Path) -> None:
    if item not in into:
        into.append(item)


def _enclosing_chart(root: Path, path: Path) -> tuple[Path, bool] | None:
    """The chart whose folder holds `path` (the outermost folder from `root` down with a
    Chart.yaml; a chart folder in another's examples/ rather than its charts/ is a chart
    of its own), and whether `path` is the chart's own: the folder itself, or under
    templates/, charts/ or crds/ (chart_parts.is_charts_own)."""
    start = path if path.is_dir() else path.parent
    if start != root and root not in start.parents:
        return None
    chain = [start, *(d for d in start.parents if d == root or root in d.parents)]
    chart = None
    for d in reversed(chain):
        if (d / "Chart.yaml").is_file() and (chart is None or not _charts_own(chart, d)):
            chart = d
    if chart is None:
        return None
    return chart, _charts_own(chart, path)


def _charts_own(chart: Path, path: Path) -> bool:
    from advisor.read.chart_parts import is_charts_own

    return is_charts_own(path.parts[len(chart.parts):])


def _files_use(uses: dict[Path, Any], chart: Path) -> Any:
    if chart not in uses:
        from advisor.read.chart_parts import files_use

        uses[chart] = files_use(chart)
    return uses[chart]


def _beside_chart(found: Discovered, chart: Path, path: Path, uses: dict[Path, Any]) -> bool:
    """Whether `path`, a file in `chart`'s folder but not the chart's own, is a manifest
    of its own: a Kubernetes manifest no template reads through .Files (then read as any
    file given). Else it stands for the chart: said when a template reads it, and kept
    when it is a values file (said when the chart is rendered without it)."""
    from advisor.read.chart_parts import is_manifest_file

    rel = path.relative_to(chart).as_posix()
    if not is_manifest_file(path):
        if "values" in path.name and path.name.endswith(YAML_SUFFIXES) \
                and path.name != "values.yaml":
            found.chart_values_named.append((path, chart))
        return False
    if _files_use(uses, chart).reads(rel):
        found.notices.append(
            f"{found.rel(path)}: a template of chart {found.rel(chart)} reads it through "
            ".Files, so it is read as part of the chart, not as a manifest of its own")
        return False
    return True


def _walk_beside(found: Discovered, chart: Path, folder: Path, ignores: Ignores,
                 seen: set[str], kustomize_dirs: list[Path], uses: dict[Path, Any]) -> bool:
    """A folder in `chart`'s folder but not the chart's own (examples/, docs/), given as
    a path: walked, its Kubernetes manifests read (those no template reads through
    .Files), its other files left to the chart. Whether any file stands for the chart."""
    from advisor.read.chart_parts import is_manifest_file

    sub = Discovered(root=found.root)
    _load_gitignores_above(ignores, found, folder)
    _walk(sub, folder, ignores, seen, kustomize_dirs)
    kept = set()
    stands = bool(sub.pg_confs or sub.bouncer_inis)
    for p in sub.manifests:
        if is_manifest_file(p) and not _files_use(uses, chart).reads(
                p.relative_to(chart).as_posix()):
            kept.add(p)
            found.manifests.append(p)
        else:
            stands = True
    for p in sub.other_files:
        if p in kept:
            found.other_files.append(p)
        elif not p.name.endswith(YAML_SUFFIXES):
            stands = True
    for name, paths in sub.names.items():
        if (mine := [p for p in paths if p in kept]):
            found.names.setdefault(name, []).extend(mine)
    found.linked |= {p for p in sub.linked if Path(p) in kept}
    found.real_dirs += sub.real_dirs
    found.helm_charts += [c for c in sub.helm_charts if c not in found.helm_charts]
    found.problems += sub.problems
    found.notices += sub.notices
    return stands


def _note_unread_manifests(found: Discovered, chart: Path, ignores: Ignores,
                           seen: set[str]) -> None:
    """One notice per chart whose folder holds Kubernetes manifests Helm does not deploy
    and no path named (a chart's examples/ are alternatives to what it deploys, applied
    by hand: not read, but never without a word)."""
    from advisor.read.chart_parts import unrendered_manifests

    def skip_dir(d: Path) -> bool:
        return d.name in SKIP_DIRS or ignores.match(found.rel(d) + "/")

    def skip_file(f: Path) -> bool:
        return str(f) in seen or ignores.match(found.rel(f))

    unread = unrendered_manifests(chart, skip_dir, skip_file)
    if not unread:
        return
    names = [p.relative_to(chart).as_posix() for p in unread]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    found.notices.append(
        f"{found.rel(chart)}: {len(names)} Kubernetes manifest{'s' if len(names) > 1 else ''} "
        f"in the chart's folder but outside templates/ ({shown}): Helm does not deploy "
        f"{'them' if len(names) > 1 else 'it'} (examples, CI and test files are applied by "
        "hand, if at all, often as alternatives), so not read; pass a file or folder as a "
        "path to read it")


def _load_gitignores_above(ignores: Ignores, found: Discovered, folder: Path) -> None:
    """.gitignore files between the root and `folder` (exclusive): they apply to a
    folder given on the command line as they do to the same folder met in a walk."""
    for d in sorted((p for p in folder.parents if p == found.root or found.root in p.parents),
                    key=lambda p: len(p.parts)):
        if (d / ".gitignore").is_file() and not (d / ".gitignore").is_symlink():
            ignores.add(found.rel(d), d / ".gitignore")


# Hidden folders of CI and editors: skipped without a notice.
_TOOL_DIRS = frozenset({".github", ".gitlab", ".circleci", ".devcontainer", ".vscode", ".idea",
                        ".husky", ".buildkite", ".gitea", ".forgejo", ".woodpecker"})


def _holds_manifests(folder: Path, limit: int = 2000, opened: int = 50) -> bool:
    """Whether a Kubernetes manifest (a YAML file whose start names apiVersion and kind)
    is below `folder`: looked for among its first `limit` entries and `opened` YAML
    files, links not followed (a Taskfile or CI config is no manifest)."""
    seen = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        seen += len(filenames) + len(dirnames)
        for name in filenames:
            if not name.endswith(YAML_SUFFIXES) or opened <= 0:
                continue
            opened -= 1
            try:
                with open(os.path.join(dirpath, name), "rb") as handle:
                    head = handle.read(4096)
            except OSError:
                continue
            if b"apiVersion:" in head and b"kind:" in head:
                return True
        if seen > limit or opened <= 0:
            return False
    return False


def _walk(found: Discovered, base: Path, ignores: Ignores, seen: set[str],
          kustomize_dirs: list[Path]) -> None:
    root = str(found.root)
    # Each folder's Path, made from its parent's when the walk meets it (see _child)
    folder_paths: dict[str, Path] = {}
    # str() of the charts found.helm_charts holds: a look-up, where `in` on the list
    # compared each chart found with every one before it (quadratic in charts)
    charts = {str(c) for c in found.helm_charts}

    def unlisted(folder: str, exc: OSError) -> None:
        # an error, as an unreadable file is: what the folder holds may connect to any
        # server, so no budget "fits" from the rest (audit 10a D5: it was skipped unsaid)
        found.problems.append(ConfigProblem(
            location=Location(path=found.rel(Path(folder)) or "."),
            message=f"cannot list this folder: {exc.strerror or exc}; the files in it are "
                    "not read", fatal=True, program="pool-advisor"))

    for folder, dirs, entries, links in walk_entries(base, on_error=unlisted):
        here = folder_paths.pop(folder, None) or Path(folder)
        inside = relative_posix(folder, root)
        rel_here = folder if inside is None else inside  # found.rel(here)
        # The walk starts from a resolved folder and never enters a linked one: `here`
        # is its real path, and a subfolder that is no symlink is inside the root when
        # `here` is (only a symlink needs resolving).
        here_inside = inside is not None
        if here_inside:
            found.real_dirs.append(folder)
        files = [entry.name for entry in entries]
        if ".gitignore" in files:
            if (here / ".gitignore").is_symlink():
                found.problems.append(_not_followed(found, here / ".gitignore"))
            else:
                ignores.add(rel_here, here / ".gitignore")
        kept = []
        for d in sorted(dirs):
            if d in SKIP_DIRS or ignores.match(_dir_rel(rel_here, d)):
                continue
            if d.startswith("."):
                # a hidden folder holds tooling or retired manifests (home-ops repos'
                # .archive/), not what is deployed; given as a path, it is read. Said
                # when it holds manifests (a symlink is not followed: os.walk's default)
                if d not in _TOOL_DIRS and _holds_manifests(here / d):
                    found.notices.append(
                        f"{_dir_rel(rel_here, d)}: hidden folder not read (tooling or "
                        "retired manifests are kept in one); pass it as a path to read it")
                continue
            if (not here_inside or d in links) and _escapes(found.root, here / d):
                found.problems.append(ConfigProblem(
                    location=Location(path=found.rel(here / d)),
                    message="directory symlink points outside the scanned root; not followed",
                    program="pool-advisor"))
                continue
            kept.append(d)
        dirs[:] = kept
        for d in kept:
            folder_paths[os.path.join(folder, d)] = _child(here, d)  # walk_entries' name
        if "Chart.yaml" in files:
            # Nothing below a chart is walked: its templates and subcharts (charts/) are
            # the renderer's (and a per-folder check against every chart was quadratic).
            dirs[:] = []
            if str(here) not in charts:
                charts.add(str(here))
                found.helm_charts.append(here)
            continue
        if "templates" in dirs and (miscased := _miscased_chart_file(files)) is not None:
            # JosueDev-afk/nestjs-k8s-microservice-stack's helm/chart.yaml: helm's loader
            # takes a chart's metadata only from "Chart.yaml" (pkg/chart/loader LoadFiles,
            # `case f.Name == "Chart.yaml"`), else "Chart.yaml file is missing"
            where = "" if rel_here in ("", ".") else rel_here + "/"
            found.notices.append(
                f"{where}{miscased}: Helm reads a chart only from a file named Chart.yaml "
                f"(its loader compares names exactly), so {where or './'} is no chart helm "
                "installs (\"Chart.yaml file is missing\"): its templates/ are not rendered")
        linked = [k for k in KUSTOMIZATION_NAMES if k in files and (here / k).is_symlink()]
        found.problems.extend(_not_followed(found, here / k) for k in linked)
        if any(k in files and k not in linked for k in KUSTOMIZATION_NAMES):
            kustomize_dirs.append(here)
        prefix = "" if rel_here in ("", ".") else rel_here + "/"
        specs = ignores.specs  # none: a tree without .gitignore or --exclude asks nothing
        for entry in sorted(entries, key=_entry_name):
            name = entry.name
            rel = prefix + name  # found.rel(path), without pathlib
            if entry.path in seen or (specs and _matches(specs, rel)):
                continue  # entry.path: str(here / name)
            seen.add(entry.path)
            path = _child(here, name)
            linked = _is_symlink(entry)
            if linked:
                found.linked.add(entry.path)
            if linked and _loops(entry.path):
                found.problems.append(ConfigProblem(
                    location=Location(path=rel),
                    message=f"symlink loop ({name} -> {os.readlink(path)} leads back to "
                    "itself); not read", fatal=True, program="pool-advisor"))
                continue
            if linked and _escapes(found.root, path):
                found.problems.append(ConfigProblem(
                    location=Location(path=rel),
                    message=f"symlink points outside the scanned root ({os.readlink(path)}); "
                    "not followed", program="pool-advisor"))
                continue
            regular = not linked and _is_regular(entry)  # known from the listing
            if not regular and (kind := _special(path)) is not None:
                # never opened: a FIFO blocks the reader until a writer comes
                found.notices.append(f"{rel}: {kind}, not a regular file; skipped")
                continue
            _classify(found, path, name)


_entry_name = operator.attrgetter("name")


def _miscased_chart_file(files: list[str]) -> str | None:
    """A file named Chart.yaml but for its case (chart.yaml), in a folder without
    Chart.yaml itself; None when there is none."""
    return next((f for f in files if f.lower() == "chart.yaml" and f != "Chart.yaml"), None)


def _join(folder: Path, name: str) -> Path:
    return folder / name


# `folder / name` for a name from a folder listing (one component, no separator):
# pathlib's own shortcut for walking (Path.iterdir and glob use it) takes the folder's
# parsed parts instead of parsing the joined path again. Joining and parsing every
# file's and folder's path was a third of discovering a 5,000-manifest tree. A Python
# without it joins with `/`.
_child = getattr(Path, "_make_child_relpath", None) or _join


def _is_symlink(entry: os.DirEntry) -> bool:
    try:
        return entry.is_symlink()
    except OSError:
        return False


def _is_regular(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file(follow_symlinks=False)
    except OSError:
        return False


def _not_followed(found: Discovered, path: Path) -> ConfigProblem:
    return ConfigProblem(location=Location(path=found.rel(path)),
                         message=f"{path.name} is a symlink; not followed (pool-advisor reads "
                         "this file only as a regular file of the repository)",
                         program="pool-advisor")


class Ignores:
    """--exclude globs plus every .gitignore met on the way down, each applied (as git
    does) to paths relative to the folder that holds it."""

    def __init__(self, excludes: list[tuple[str, Any]]) -> None:
        self.excludes = [(_prefix(folder), spec) for folder, spec in excludes]
        self.specs = list(self.excludes)

    def add(self, rel_dir: str, gitignore: Path) -> None:
        from advisor.read.fs import read_regular

        with contextlib.suppress(OSError):
            lines = read_regular(gitignore).decode("utf-8", "replace").splitlines()
            self.specs.append((_prefix(rel_dir), LazyGitignore(lines)))

    def match(self, rel: str) -> bool:
        return _matches(self.specs, rel)

    def match_excluded(self, rel: str) -> bool:
        """Excludes only: a file named on the command line is read even if git ignores it."""
        return _matches(self.excludes, rel)


class LazyGitignore:
    """One .gitignore, handed to pathspec only when a path could match one of its patterns.
    Importing pathspec and compiling the patterns is ~7% of the demo's whole check, and
    most paths contain none of the literal text of a repository's patterns (`.venv/`,
    `*.egg-info/`). A pattern ignores a path only if the path holds every literal piece of
    the pattern (the text between `/`, `*` and `?`); negations only re-include. Lines this
    test does not model (`[...]`, backslash escapes, a bare `!`) and patterns without a
    literal piece (`*`) send every path to pathspec, compiled at once as before."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.simple = _simple_patterns(lines)
        self.pieces = _literal_pieces(lines) if self.simple is None else []
        self.spec = None if self.pieces is not None else _gitignore_spec(lines)

    def match_file(self, rel: str) -> bool:
        if self.simple is not None:
            return _simple_match(self.simple, rel)
        if self.pieces is not None and not any(all(p in rel for p in pieces)
                                               for pieces in self.pieces):
            return False
        if self.spec is None:
            self.spec = _gitignore_spec(self.lines)
        return self.spec.match_file(rel)


def _simple_patterns(lines: list[str]) -> list[tuple[bool, bool, str]] | None:
    """(anchored, folders only, name glob) of each line, when every line is one name with
    at most a leading and a trailing `/` (`.venv/`, `/node_modules/`, `*.egg-info/`,
    `*.pyc`, `build`): matched here without pathspec (tests/test_discover checks both
    agree). None when a line is more (a `/` inside, `**`, `[...]`, a backslash) or negates."""
    out = []
    for line in lines:
        pattern = line.rstrip()
        if not pattern or pattern.startswith("#"):
            continue
        if pattern.startswith("!") or "\\" in pattern or "[" in pattern or "**" in pattern:
            return None
        anchored = pattern.startswith("/")
        dir_only = pattern.endswith("/")
        name = pattern.strip("/")
        if not name or "/" in name:
            return None
        out.append((anchored, dir_only, name))
    return out


def _simple_match(patterns: list[tuple[bool, bool, str]], rel: str) -> bool:
    """Git's reading of _simple_patterns: a name matches a path component (the first
    only when anchored); a folder-only one a component that is a folder (`rel` of a
    folder ends with `/`); what is inside a matched folder is matched with it."""
    from fnmatch import fnmatchcase

    is_dir = rel.endswith("/")
    parts = rel.rstrip("/").split("/")
    last = len(parts) - 1
    for anchored, dir_only, name in patterns:
        # a name without a wildcard is compared (fnmatch compiles a pattern per name)
        plain = not any(ch in name for ch in "*?")
        for i, part in enumerate(parts[:1] if anchored else parts):
            if dir_only and i == last and not is_dir:
                continue
            if part == name if plain else fnmatchcase(part, name):
                return True
    return False


def _gitignore_spec(lines: list[str]) -> Any:
    """A .gitignore's lines as git reads them: a line git takes as matching nothing (a
    lone `!`, a pattern ending in an unescaped backslash: git 2.39 `check-ignore`
    ignores nothing by them) is left out, where pathspec refuses it and stopped the run
    (audit 10a D8); a reversed range is read as git reads it (_git_ranges); any other
    line pathspec refuses (a ValueError, or an re.error of the regex it builds) is left
    out, never a crash (review s26 F6)."""
    import re

    import pathspec

    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except (ValueError, re.error):  # pathspec's GitIgnorePatternError; its regex's
        kept = [_git_ranges(line) for line in lines]
        return pathspec.GitIgnoreSpec.from_lines([line for line in kept
                                                  if _git_pattern(line)])


def _git_pattern(line: str) -> bool:
    import re

    import pathspec

    try:
        pathspec.GitIgnoreSpec.from_lines([line])
    except (ValueError, re.error):
        return False
    return True


def _git_ranges(line: str) -> str:
    """`line` with each reversed range of a bracket (`[z-a]`) as git's wildmatch reads
    it: its first character, compared before the range, matches; the range matches
    nothing (wildmatch.c dowild: `t_ch <= p_ch && t_ch >= prev_ch`; git 2.39
    `check-ignore` ignores `z` by `[z-a]`). Python's re refuses a reversed range."""
    out: list[str] = []
    i, inside, dash = 0, False, False
    while i < len(line):
        ch = line[i]
        if ch == "\\" and i + 1 < len(line):
            out.append(line[i:i + 2])
            i += 2
            continue
        if not inside and ch == "[":
            inside = True
            out.append(ch)
            i += 1
            if i < len(line) and line[i] in "!^":
                out.append(line[i])
                i += 1
            if i < len(line) and line[i] == "]":  # a first `]` is itself
                out.append(line[i])
                i += 1
            continue
        if inside and ch == "]":
            inside = False
            if dash:
                out.append("-")
                dash = False
        elif (inside and line[i + 1:i + 2] == "-" and line[i + 2:i + 3] not in ("", "]", "\\")
              and line[i + 2] < ch):
            out.append(ch)  # the range start, as itself; the reversed range dropped
            i += 3
            if line[i:i + 1] == "-":  # after a range a `-` is itself (prev_ch = 0):
                dash = True  # put last, where a regex reads it as itself
                i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _literal_pieces(lines: list[str]) -> list[tuple[str, ...]] | None:
    """Per ignoring pattern, the pieces of text a path must hold to match it; None when a
    line needs pathspec's own reading (see LazyGitignore)."""
    found: list[tuple[str, ...]] = []
    for line in lines:
        pattern = line.rstrip()  # pathspec strips trailing white space (no `\ ` here)
        if not pattern or pattern.startswith("#") or pattern == "/":
            continue
        if "\\" in pattern or "[" in pattern:
            return None
        if pattern.startswith("!"):
            if not pattern[1:]:
                return None  # pathspec rejects it: let it, as before
            continue
        pieces = tuple(p for p in pattern.replace("*", "/").replace("?", "/").split("/") if p)
        if not pieces:
            return None
        found.append(pieces)
    return found


def _prefix(rel_dir: str) -> str:
    return "" if rel_dir in ("", ".") else rel_dir.rstrip("/") + "/"


def _matches(specs: list[tuple[str, Any]], rel: str) -> bool:
    return any(rel.startswith(prefix) and spec.match_file(rel[len(prefix):])
               for prefix, spec in specs)


def _excludes_spec(excludes: list[str]):
    """None without --exclude globs: pathspec costs ~10 ms to import, and a tree with no
    .gitignore and no excludes never needs it."""
    if not excludes:
        return None
    import pathspec

    try:
        return pathspec.GitIgnoreSpec.from_lines(excludes)
    except ValueError as exc:  # a glob given on the command line: said, not a crash
        raise ExcludeError(f"exclude: {exc}") from None


class ExcludeError(ValueError):
    """An --exclude (or configured exclude) glob the pattern library refuses: the engine
    says it as a usage error (exit 2)."""


def _dir_rel(rel_here: str, d: str) -> str:
    return f"{d}/" if rel_here in ("", ".") else f"{rel_here}/{d}/"


def _escapes(base: Path, path: Path) -> bool:
    try:
        real = path.resolve()
    except (OSError, RuntimeError):
        # RuntimeError: a symlink loop in Python 3.11's pathlib (3.13 raises OSError);
        # the walk reports loops first (_loops), this only keeps it from escaping
        return True
    return real != base and base not in real.parents


def _loops(path: str) -> bool:
    """A symlink that leads back to itself (a.yaml -> b.yaml -> a.yaml): os.stat says
    ELOOP whatever the Python version (pathlib's resolve raised RuntimeError in 3.11,
    which stopped the whole run: audit 10a D6)."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def _special(path: Path) -> str | None:
    from advisor.read.fs import special_kind

    try:
        return special_kind(path.stat().st_mode)
    except OSError:
        return None  # a dangling symlink: reported when read


def _classify(found: Discovered, path: Path, name: str | None = None) -> None:
    """`name`: path.name, when the caller has it."""
    name = path.name if name is None else name
    if name in KUSTOMIZATION_NAMES:
        return
    found.names.setdefault(name, []).append(path)
    if name.endswith(YAML_SUFFIXES):
        found.manifests.append(path)  # YAML that is not Kubernetes is skipped when read
        found.other_files.append(path)  # application.yml, database.yml
    elif is_pg_conf(name):
        found.pg_confs.append(path)
    elif is_bouncer_ini(name):
        found.bouncer_inis.append(path)
    else:
        found.other_files.append(path)


def _leaf_kustomizations(dirs: list[Path]) -> tuple[list[Path], list[Path]]:
    """Kustomize folders users build: the ones no other kustomization includes; and the
    `kind: Component` folders.

    A base referenced by an overlay (`resources: [../../base]`) is deployed through the
    overlay and is not also built on its own: a base that is also applied alone is rare,
    and counting it would add a second copy of every object the overlays deploy. A
    `kind: Component` is not built alone: it is made to be added to others (kustomize
    builds one given as the root, refusing it only as a resource: api/internal/target/
    kusttarget.go@12f9e639:524; Flux builds one a Kustomization's spec.path names)."""
    referenced: set[Path] = set()
    components: set[Path] = set()
    refs_of: dict[Path, list[Path]] = {}
    for d in dirs:
        refs, kind = _kustomization_refs_kind(d)
        refs_of[d.resolve()] = refs
        referenced.update(refs)
        if kind == "Component":
            components.add(d)
    leaves = [d for d in dirs if d.resolve() not in referenced and d not in components]
    return (leaves + _cycle_roots(dirs, leaves, components, refs_of),
            [d for d in dirs if d in components])


def _cycle_roots(dirs: list[Path], leaves: list[Path], components: set[Path],
                 refs_of: dict[Path, list[Path]]) -> list[Path]:
    """Kustomizations that only a cycle of kustomizations uses (k lists ../o, o lists
    ../k): no leaf reaches them, so none would be built and their files were dropped
    with a notice. Kustomize refuses a cycle ("cycle detected: candidate root ...
    contains visited root ...", kubectl 1.31): the first of each cycle is built, so the
    refusal is said and its files are read as written (review s26 F5)."""
    reached: set[Path] = set()

    def reach(start: Path) -> None:
        todo = [start]
        while todo:
            d = todo.pop()
            if d not in reached:
                reached.add(d)
                todo.extend(refs_of.get(d, []))

    for leaf in leaves:
        reach(leaf.resolve())
    roots: list[Path] = []
    for d in dirs:
        if d.resolve() not in reached and d not in components:
            roots.append(d)
            reach(d.resolve())
    return roots


def _kustomization_refs(d: Path) -> list[Path]:
    return _kustomization_refs_kind(d)[0]


def _kustomization_refs_kind(d: Path) -> tuple[list[Path], str]:
    data = _kustomization_data(d)
    if data is None:
        return [], ""
    refs = [target for target in _local_refs(d, data) if target.is_dir()]
    return refs, str(data.get("kind") or "Kustomization")


def _kustomization_files(d: Path) -> set[Path]:
    """The files `d`'s kustomization lists as resources (resolved)."""
    data = _kustomization_data(d)
    return set() if data is None else {t for t in _local_refs(d, data) if t.is_file()}


def _local_refs(d: Path, data: dict) -> list[Path]:
    """The local entries of a kustomization's resources, bases and components."""
    refs = []
    for key in ("resources", "bases", "components"):
        items = data.get(key)
        for item in items if isinstance(items, list) else []:
            if isinstance(item, str) and "://" not in item:
                refs.append((d / item).resolve())
    return refs


def _kustomization_data(d: Path) -> dict | None:
    """`d`'s kustomization file, parsed; None when it has none (a symlinked one is not
    read), or it does not parse to a mapping."""
    from advisor.read.yamlpos import YAMLError, load

    for name in KUSTOMIZATION_NAMES:
        path = d / name
        if path.is_file() and not path.is_symlink():
            from advisor.read.fs import read_regular

            try:
                data = load(read_regular(path).decode("utf-8"))
            except (YAMLError, OSError, UnicodeDecodeError, RecursionError):
                return None
            return data if isinstance(data, dict) else None
    return None
