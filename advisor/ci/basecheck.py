"""`check --base REF`: the same check on a git revision, for a before -> after budget
and `--new-only`.

The revision's files are exported with `git archive` into a temporary folder (read-only
for the repository: no worktree, no checkout, no index change) and checked with the
same paths and options, so reported paths and fingerprints line up with the working
tree's. Only git is run, never anything from the repository.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec.structs import replace

from advisor.model import CheckResult
from advisor.report.compare import ResultDiff, compare, status, term_move

if TYPE_CHECKING:
    from advisor.engine.options import CheckOptions
    from advisor.rules import Registry

GIT_TIMEOUT_S = 120


class BaseError(Exception):
    """The base revision cannot be checked: a usage error (exit code 2)."""


def _git(args: list[str], cwd: Path, stdin: str | None = None) -> bytes:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True,
                              input=None if stdin is None else stdin.encode(),
                              timeout=GIT_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise BaseError("--base needs git, which is not installed") from None
    except subprocess.TimeoutExpired:
        raise BaseError(f"git {args[0]} took longer than {GIT_TIMEOUT_S} s") from None
    if proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip().splitlines()
        raise BaseError(f"git {args[0]}: {message[-1] if message else 'failed'}")
    return proc.stdout


def resolve(ref: str, cwd: Path) -> tuple[Path, str]:
    """(repository top level, full commit id of `ref`)."""
    if ref.startswith("-"):
        raise BaseError(f"--base {ref!r} is not a revision")
    top = Path(_git(["rev-parse", "--show-toplevel"], cwd).decode().strip())
    try:
        sha = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd).decode().strip()
    except BaseError:
        raise BaseError(f"--base {ref}: no such revision in {top}") from None
    return top, sha


def _tree(top: Path, sha: str) -> list[tuple[str, str, str]]:
    """(mode, object id, path) of each entry in the tree of `sha`, recursively."""
    entries = []
    for entry in _git(["ls-tree", "-r", "-z", "--full-tree", sha], top).split(b"\0"):
        meta, _, path = entry.partition(b"\t")
        fields = meta.split(b" ")
        if len(fields) == 3:
            entries.append((fields[0].decode(), fields[2].decode(),
                            path.decode(errors="surrogateescape")))
    return entries


def _extract(data: bytes, into: Path) -> list[tarfile.TarInfo]:
    """Extract with tarfile's "data" filter (no links out, no devices, no absolute or
    parent paths). A symlink it refuses (to an absolute path or out of the tree) is made
    after everything else is written, as it is, so nothing is written through it: the
    working tree's run reports such a link (PA901, not followed), and the base's must
    too, not fail the whole comparison."""
    refused: list[tarfile.TarInfo] = []

    def keep(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
        try:
            return tarfile.data_filter(member, dest)
        except tarfile.FilterError:
            refused.append(member)
            return None

    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter=keep)
    return refused


def _links(refused: list[tarfile.TarInfo], into: Path) -> None:
    """The symlinks _extract refused, made as they are, once nothing else is written."""
    for member in refused:
        link = into / member.name
        if member.issym() and ".." not in Path(member.name).parts and not link.exists() \
                and link.parent.resolve().is_relative_to(into.resolve()):
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(member.linkname)


def _ignored_blobs(top: Path, blobs: list[tuple[str, str]], into: Path) -> list[str]:
    """Write the files `git archive` left out: a `.gitattributes` `export-ignore`
    (meant for release tarballs) is still in the working tree the head's run reads.
    The paths whose object the repository lacks (`<oid> missing`) are returned."""
    data = _git(["cat-file", "--batch"], top, stdin="".join(f"{o}\n" for o, _ in blobs))
    at = 0
    missing = []
    for _, path in blobs:
        header_end = data.index(b"\n", at)
        header = data[at:header_end].split(b" ")
        if header[-1] == b"missing":
            missing.append(path)
            at = header_end + 1
            continue
        size = int(header[2])
        body = data[header_end + 1:header_end + 1 + size]
        at = header_end + 1 + size + 1
        target = into / path
        if ".." in Path(path).parts or not target.resolve().is_relative_to(into.resolve()):
            continue  # a tree git itself refuses to check out
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
    return missing


def _archive(top: Path, sha: str) -> bytes | None:
    """`git archive` of `sha`; None when git cannot write it (an object the repository
    lacks: a large file left out of a mirror, a partial clone offline), so the tree is
    written blob by blob and only what is missing is said."""
    try:
        return _git(["archive", "--format=tar", sha], top)
    except BaseError:
        return None


def _substituted(top: Path, sha: str, entries: list[tuple[str, str, str]]
                 ) -> list[tuple[str, str]]:
    """(object, path) of the files `git archive` rewrote through `export-subst` (its
    `$Format:...$` placeholders expanded), which a checkout, and so the working tree's
    run, reads as written: looked for only when an attributes file of the tree (or the
    repository's info/attributes) names export-subst, then by `git grep` at `sha`.
    Audit 51: a ConfigMap marked export-subst with `$Format:%H%n%n%n$` read with its
    lines moved at the base."""
    attributes = [(obj, path) for mode, obj, path in entries
                  if path.rsplit("/", 1)[-1] == ".gitattributes" and mode == "100644"]
    info = Path(_git(["rev-parse", "--git-path", "info/attributes"], top).decode().strip())
    named = (top / info).is_file() and b"export-subst" in (top / info).read_bytes()
    if attributes and not named:
        text = _git(["cat-file", "--batch"], top,
                    stdin="".join(f"{o}\n" for o, _ in attributes))
        named = b"export-subst" in text
    if not named:
        return []
    try:
        found = _git(["grep", "-l", "-z", "-F", "$Format:", sha], top)
    except BaseError:  # exit 1: no file holds a placeholder
        return []
    paths = {hit.split(b":", 1)[1].decode(errors="surrogateescape")
             for hit in found.split(b"\0") if b":" in hit}
    return [(obj, path) for mode, obj, path in entries
            if path in paths and mode in ("100644", "100755")]


def export(top: Path, sha: str, into: Path) -> list[str]:
    """Write the tree of `sha` under `into`; what could not be written, worded ("submodule
    P (...)", "P (...)").
    The archive is git's own output, but it is still extracted with tarfile's "data"
    filter: no links out, no devices, no absolute or parent paths.

    `git archive` leaves out files marked `export-ignore` and writes a submodule as an
    empty folder, while the working tree's run reads both: those files are written from
    the tree, and each submodule checked out here is exported at the commit `sha`
    records for it, from its own clone (nested ones alike). One not checked out here has
    no files in the working tree's run either; one whose recorded commit its clone lacks
    is returned, to be said, never read as empty. When git cannot archive the tree (an
    object is missing), every file is written from the tree and the missing ones are
    returned: one unreadable blob (PostHog/charts-clickhouse's 2022 `helm-docs` binary,
    absent from the clone) failed the whole --base with exit 2 (audit 51)."""
    data = _archive(top, sha)
    refused = _extract(data, into) if data is not None else []
    entries = _tree(top, sha)
    left_out = [(obj, path) for mode, obj, path in entries
                if mode in ("100644", "100755") and not (into / path).exists()
                and not (into / path).is_symlink()]
    if data is not None:
        left_out += _substituted(top, sha, entries)
    if data is None:  # the links too, made last as _links makes the refused ones
        links = [(obj, path) for mode, obj, path in entries if mode == "120000"]
        left_out += links
    missing = [f"{path} (its object is not in the repository)"
               for path in (_ignored_blobs(top, left_out, into) if left_out else [])]
    if data is None:
        for _, path in links:
            link = into / path
            if link.is_file():
                target = link.read_bytes().decode(errors="surrogateescape")
                link.unlink()
                refused.append(tarfile.TarInfo(path))
                refused[-1].type, refused[-1].linkname = tarfile.SYMTYPE, target
    for mode, commit, path in entries:
        clone = top / path
        if mode != "160000" or not (clone / ".git").exists():
            continue  # not checked out: `git -C` there would find our repository
        target = into / path
        target.mkdir(parents=True, exist_ok=True)
        try:
            missing += [f"submodule {path}/{m.removeprefix('submodule ')}"
                        if m.startswith("submodule ") else f"{path}/{m}"
                        for m in export(clone, commit, target)]
        except BaseError:
            missing.append(f"submodule {path} (submodule commit {commit[:12]} is not in "
                           "its clone)")
    _links(refused, into)
    return missing


def _inside(path: Path, top: Path) -> Path:
    try:
        return path.relative_to(top)
    except ValueError:
        raise BaseError(f"{path} is outside the git repository {top}; --base compares "
                        "files of one repository") from None


def result_at(
    ref: str,
    paths: list[str],
    options: CheckOptions,
    registry: Registry,
    *,
    cwd: Path | None = None,
) -> tuple[CheckResult, str, list[str]]:
    """Check `paths` as they are at `ref`; (result, commit id, what of it was not read,
    to be said with the comparison). Paths that do not exist at that revision (added or
    moved by the change) are skipped, and named; none left -> an empty result."""
    from advisor.engine.check import run_check
    from advisor.read.discover import repository_root

    here = Path(os.path.abspath(cwd or Path.cwd()))
    top, sha = resolve(ref, here)
    # The same repository root as the working tree's run, so paths and fingerprints match.
    root = repository_root([here / p for p in paths if p != "-"],
                           here / options.root if options.root is not None else None)
    with tempfile.TemporaryDirectory(prefix="pool-advisor-base-") as tmp:
        tree = Path(tmp)
        unread = export(top, sha, tree)
        mapped = []
        for raw in paths:
            if raw == "-":
                raise BaseError("--base cannot compare input read from stdin")
            rel = _inside(Path(os.path.abspath(here / raw)), top)
            if (tree / rel).exists():
                mapped.append(str(tree / rel))
            else:
                unread.append(f"{raw} (not in that revision: added or moved by the change)")
        base_options = replace(options, root=tree / _inside(root, top.resolve()),
                               cache=False)
        # A values file is read from the working directory (as `helm -f`): the base's
        # own copy, else the base ran with the head's (or failed: outside its root).
        values = []
        for raw in options.values_files:
            rel = _inside(Path(os.path.abspath(here / raw)), top)
            if (tree / rel).is_file():
                values.append(str(tree / rel))
            else:
                unread.append(f"--values {raw} (not in that revision: the chart is "
                              "rendered without it)")
        base_options = replace(base_options, values_files=values)
        if options.config is not None:
            rel = _inside(Path(os.path.abspath(here / options.config)), top)
            config = tree / rel if (tree / rel).exists() else None
            base_options = replace(base_options, config=config)
        if not mapped:
            return CheckResult(tool_version=_version()), sha, unread
        result = run_check(mapped, base_options, registry)
    return result, sha, unread


def _version() -> str:
    from advisor import __version__

    return __version__


def apply_base(head: CheckResult, base: CheckResult) -> tuple[CheckResult, ResultDiff]:
    """The diff (new findings matched by fingerprint: rule, file, subject, not line;
    plus findings about a server the change made worse). Every finding stays in the
    result: `--new-only` changes what fails, not what is reported, so code scanning
    keeps the alerts that still exist."""
    return head, compare(base, head)


def unread_notices(ref: str, sha: str, unread: list[str]) -> list[str]:
    """What of the base revision was not read, as notices of the head's result, so every
    format says it (JSON, SARIF, GitHub annotations, GitLab, rdjson and markdown carry
    notices; "not read" makes each a warning there, report.common.degrades): the text
    report's change table said it, and the markdown and JSON of the same run did not
    (audit 51), while their "before" lacks it."""
    return [f"--base {ref} ({sha[:12]}): not read at that revision: {u}; the budget "
            "before lacks it" for u in unread]


def change_text(diff: ResultDiff, ref: str, sha: str, unread: list[str] | None = None) -> str:
    """Plain-text table: per server, usable and peak before -> after and the change;
    `unread`: what of the base revision was not read (from result_at), said after the
    title, as the "before" lacks it."""
    def n(v: float | None) -> str:
        return "-" if v is None else (str(int(v)) if float(v).is_integer() else f"{v:g}")

    def peak(v: float | None, floor: bool) -> str:
        return f">= {n(v)}" if floor and v is not None else n(v)

    rows = [("server", "usable", "peak before -> after", "change", "status")]
    for s in diff.servers:
        usable = n(s.usable_after) if s.usable_before == s.usable_after else \
            f"{n(s.usable_before)} -> {n(s.usable_after)}"
        change = "new" if s.peak_before is None else (
            "removed" if s.change is None else f"{s.change:+g}")
        if s.unread_before or s.unread_after:  # the file did not parse at one revision
            change = f"{'base' if s.unread_before else 'head'} not read (PA901 " \
                     f"{s.unread_before or s.unread_after})"
        rows.append((s.server, usable, f"{peak(s.peak_before, s.floor_before)} -> "
                     f"{peak(s.peak_after, s.floor_after)}", change, status(s)))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = [f"Budget change against {ref} ({sha[:12]}):"]
    lines += [f"  not read at {ref}: {u}" for u in unread or []]
    for r in rows:
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    for s in diff.servers:
        for t in s.terms:
            lines.append(f"  {s.server}: {term_move(t)}")
    regressed = f" ({len(diff.regressed)} of them existed but got worse)" \
        if diff.regressed else ""
    unknown = f"{len(diff.not_known)} not known at head (what they are about was not "\
        "read there), " if diff.not_known else ""
    lines.append(f"Findings: {len(diff.new)} new{regressed}, {len(diff.fixed)} fixed, "
                 f"{unknown}{len(diff.unchanged)} unchanged (matched by fingerprint).")
    lines += [f"  not known at head (PA901 {n.unread}): {n.finding.location.label()}: "
              f"{n.finding.code} {n.finding.message}" for n in diff.not_known]
    return "\n".join(lines) + "\n"
