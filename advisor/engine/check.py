"""The check's orchestration: paths -> the repository read into a topology
(advisor.engine.repository) -> budgets and rules (advisor.engine.evaluate) -> a
CheckResult; the repository root and the project settings that apply."""

from __future__ import annotations

import os
from pathlib import Path

from msgspec import Struct, field

from advisor.config.settings import Settings, find_config, load_settings
from advisor.engine.evaluate import evaluate
from advisor.engine.options import CheckOptions, UsageError
from advisor.engine.repository import merge, read_stdin, scan_paths
from advisor.model import CheckResult, Topology
from advisor.read.fs import InputError, ReadOnce, Root
from advisor.rules import Registry, load_rules


class Scanned(Struct):
    """What the scan stages produce, before the rules: for check, advise and inspect."""

    topology: Topology
    settings: Settings
    roots: list[str]  # the paths given, relative to `root` ("." for the root itself)
    root: Path  # the repository: see discover.repository_root
    focus: list[str] = field(default_factory=list)  # changed files, relative to `root`
    # Files whose every suppression comment the scan read (not read again for them)
    suppressions_read: frozenset[str] = frozenset()
    # The suppression comments of the application sources the scan read, by path
    marks: dict[str, dict[int, list[str]]] = field(default_factory=dict)


def scan(paths: list[str] | list[Path], options: CheckOptions | None = None) -> Scanned:
    """paths -> discover -> sources -> topology, with the project's settings. All the
    paths are one deployment: discovered together inside one repository root and built
    into one topology, linked once."""
    paths = [str(p) for p in paths]
    options = options or CheckOptions()
    on_disk = [Path(raw) for raw in paths if raw != "-"]
    for raw in on_disk:
        if not raw.exists() and not options.changed_files:
            raise UsageError(f"{raw}: " + ("symlink to nothing (dangling, or a loop)"
                                           if raw.is_symlink() else
                                           "no such file or directory"))
    root = _repository(on_disk, options)
    focus = [_rel_to(root, p) for p in on_disk] if options.changed_files else []
    if options.changed_files:
        on_disk = [root]
    settings = project_settings([str(p) for p in on_disk] or paths, options, root)
    topo = Topology()
    roots = [_rel_to(root, p) for p in on_disk]
    once = ReadOnce()  # each file read once: app sources, manifests' suppressions
    if on_disk:
        merge(topo, scan_paths(Root(root, once), on_disk, settings, options))
    if "-" in paths:
        read_stdin(topo, options, settings, roots)
    if options.config is None:
        from advisor.config.settings import symlinked_configs

        links = symlinked_configs(_config_start([str(p) for p in on_disk]))
        topo.notices += [f"{_shown_config(link, root)} is a symlink; not followed (no "
                         "configuration read from it)" for link in links]
    return Scanned(topo, settings, roots, root, focus,
                   suppressions_read=frozenset(once.suppressions_read), marks=once.marks)


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
                      root=scanned.root, suppressions_read=scanned.suppressions_read,
                      marks=scanned.marks)
    result.focus = scanned.focus
    return result


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
