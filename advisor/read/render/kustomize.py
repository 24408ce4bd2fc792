"""kustomize overlays rendered by the real kustomize (`kubectl kustomize DIR`, Debian's
kubectl embeds Kustomize v5.5.0, or a `kustomize` binary when one is on PATH).

Safety, in two layers:
1. before anything runs, every file and directory the kustomization tree names
   (resources, bases, components, patches, generators' files and envs, replacements,
   crds, configurations, openapi) is resolved through `Root`: a remote resource (any
   syntax kustomize accepts as a git or HTTP location), a reference outside the
   repository, a symlinked kustomization file or a Helm chart inflator stops the
   render with a finding;
2. the boundary (advisor.read.render.sandbox): kustomize runs on a working copy of the
   kustomization folders that holds only the repository's files, with an environment
   in which git and helm cannot be found and proxies point at a closed port, in a
   network namespace of its own when the kernel allows it, with a time and an output
   limit, the default load restrictor and none of the flags that enable plugins,
   exec or container functions, Helm or the network (the binary's `--help` is checked
   for their defaults first).

Positions: the copy of the top kustomization gets `buildMetadata: [originAnnotations]`,
so each output object says which file it came from (`config.kubernetes.io/origin`; the
annotation is removed again). Each object is then reported in that file with that
file's lines, and fields an overlay changed are traced (`K8sObject.value_sources`) to
the overlay line that set them: `replicas:` entries, `images:` entries, strategic-merge
patches (files, inline `patch:`, patchesStrategicMerge; list items matched by `name`),
JSON 6902 patches (replace/add of a path), and configMapGenerator/secretGenerator
literals and env files. Labels, prefixes, namespaces and replacements are applied
but not traced to a line.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from advisor.read.fs import InputError, Root
from advisor.read.render import Rendered, sandbox
from advisor.read.render.kustomize_positions import place
from advisor.read.render.kustomize_tree import KUSTOMIZATION_FILES, Tree, kfile_shown, problem, scan
from advisor.read.sources.k8s import K8sObject, k8s_objects

TIMEOUT_SECONDS = sandbox.TIMEOUT_SECONDS


def _run(argv: list[str], env: dict[str, str], where: Path, *, first_unrestricted: bool
         ) -> tuple[bytes | None, str, bool]:
    """(output, error, built with LoadRestrictionsNone) of kustomize at `where`. Flux's
    kustomize-controller builds with LoadRestrictionsNone (a component or patch file of
    another folder of the repository): a build the default restrictor refuses is run so
    again; the working copy holds only the repository's files the scan admitted, none
    outside it. `first_unrestricted`: the scan saw a file outside the folder, and the
    first build would fail so (52 of gavinmcfall/home-ops' 211 builds ran twice)."""
    if not first_unrestricted:
        out, stderr, error = sandbox.run_bounded(
            [*argv, "--load-restrictor=LoadRestrictionsRootOnly"], env=env, cwd=where,
            timeout=TIMEOUT_SECONDS)
        # the whole of stderr: the error kept is cut, and a component nested in a
        # component says where it failed first (gavinmcfall/home-ops)
        if out is not None or "is not in or below" not in stderr:
            return out, error, False
    out, _stderr, error = sandbox.run_bounded(
        [*argv, "--load-restrictor=LoadRestrictionsNone"], env=env, cwd=where,
        timeout=TIMEOUT_SECONDS)
    return out, error, True


def _stable_error(error: str, mirror: Path) -> str:
    """kustomize's error as the same input always gives it: the working copy's folder
    taken out, and Go's pointer addresses (`&{0xc000a1b2c0 ...}`, printed from structs in
    some messages) replaced, so a run's output and a PR comment do not change between runs
    of the same tree."""
    error = error.replace(str(mirror) + "/", "").replace(str(mirror), ".")
    return _GO_POINTER.sub("0x…", error)


_GO_POINTER = re.compile(r"\b0x[0-9a-f]{8,16}\b")


def render_kustomization(root: Root, directory: str, *, binary: list[str] | None = None,
                         prepared: Prepared | None = None,
                         components: list[str] | None = None, cache: Any = None,
                         defer: bool = False, scanned: Tree | None = None
                         ) -> Rendered | PendingBuild:
    """Render the kustomization in `directory` (inside `root`); `prepared` (from
    `prepare_kustomize`, once per run) saves checking the binary again for each one.
    `components` (relative to `directory`) are added to its `components:` first, as
    Flux does with a Kustomization's spec.components. With a `cache` (advisor.read.cache)
    and `prepared`, a build of the same inputs is taken from it and kustomize is not run
    (advisor.read.render.kustomize_cache). `defer`: a PendingBuild instead of running
    kustomize, whose finish() runs it with what was worked out here (what needs no
    build, a refusal or the cache's build, is returned as it is). `scanned`: the scan of
    `directory` made already (without components), not made again."""
    out = Rendered()
    try:
        top = root.resolve(directory)
    except InputError as exc:
        out.problems.append(problem(exc.path, exc.message, fatal=True))
        return out
    seen: set[Path] = set()
    if scanned is not None and not components:
        tree = scanned
    else:
        tree = Tree()
        scan(root, top, tree, seen, depth=0)
    for entry in components or []:
        try:
            target = root.resolve(entry.strip(), relative_to=top)
        except InputError:
            tree.problems.append(problem(kfile_shown(root, top), f"Flux component {entry!r} "
                                         "is outside the scanned root; not rendered",
                                         fatal=True, program="kustomize"))
            continue
        tree.included_by.setdefault(target, top)
        scan(root, target, tree, seen, depth=1)
    shown = root.rel(top)
    if tree.problems:
        out.problems.extend(tree.problems)
        if not tree.layers:
            return out  # its own kustomization unreadable: nothing it lists is known
        # kustomize would refuse it (a listed file missing, a generator's credentials
        # file never committed), but the files it lists that are there are still what
        # the repository deploys: read as written, each peak a floor by the PA901 error
        # (audit 10a D2: CrunchyData's kustomize/s3 lost its PostgresCluster)
        out.problems.extend(tree.helm_charts + tree.remote + tree.missing)
        return _plain(root, tree, shown, out, why="kustomize cannot build it (PA901)")
    out.problems.extend(tree.helm_charts + tree.remote + tree.missing)
    command = prepared.command if prepared is not None else (
        binary if binary is not None else find_kustomize())
    if not command:
        return _plain(root, tree, shown, out)
    key = None
    if cache is not None and cache.enabled and prepared is not None and not prepared.error:
        from advisor.read.render import kustomize_cache

        key = kustomize_cache.known_key(cache, root, top,
                                        [layer.directory for layer in tree.layers],
                                        sorted(tree.files), components or [], prepared)
        cached = kustomize_cache.lookup(cache, shown, key) if key is not None else None
        if cached is not None:
            return _joined(out, cached)
    pending = PendingBuild(root, top, tree, shown, prepared or command, components, out,
                           cache, key)
    return pending if defer else pending.finish()


class PendingBuild:
    """A build render_kustomization scanned and keyed but did not run (`defer`):
    finish() runs kustomize, keeps the result in the cache and returns it."""

    def __init__(self, root: Root, top: Path, tree: Tree, shown: str,
                 command: list[str] | Prepared, components: list[str] | None, out: Rendered,
                 cache: Any, key: str | None) -> None:
        self.root, self.top, self.tree, self.shown = root, top, tree, shown
        self.command, self.components, self.out = command, components, out
        self.cache, self.key = cache, key

    def finish(self) -> Rendered:
        built, succeeded = _built(self.root, self.top, self.tree, self.shown, self.command,
                                  self.components)
        if self.key is not None and succeeded:
            from advisor.read.render import kustomize_cache

            kustomize_cache.store(self.cache, self.shown, self.key, built)
        return _joined(self.out, built)


def _joined(out: Rendered, more: Rendered) -> Rendered:
    out.objects.extend(more.objects)
    out.problems.extend(more.problems)
    out.notices.extend(more.notices)
    return out


def _built(root: Root, top: Path, tree: Tree, shown: str, command: list[str] | Prepared,
           components: list[str] | None) -> tuple[Rendered, bool]:
    """The build of the scanned `tree` at `top`, read and placed; and whether kustomize
    built it (a failure may be a limit that another run would not hit: not kept)."""
    out = Rendered()
    built = build_sandboxed(root, top, [layer.directory for layer in tree.layers], command,
                            files=sorted(tree.files), components=components,
                            remote_left_out=bool(tree.remote), missing=tree.left_out,
                            files_outside=tree.files_outside)
    out.notices.extend(built.notices)
    text = built.text
    if text is None:
        out.problems.append(problem(kfile_shown(root, top), f"kustomize failed: {built.error}",
                                    fatal=True, program="kustomize"))
        # what it lists is still what the repository deploys: read as written (hasura's
        # overlays/local, which kustomize 5 refuses for its string `patches`, held the
        # only server), each peak a floor by the PA901 error
        return _plain(root, tree, shown, out, why="kustomize failed on it (PA901)"), False
    text, crds = _without_crds(text)
    if crds:
        out.notices.append(f"kustomize: {shown}: {crds} CustomResourceDefinition(s) in the "
                           "output not read (schemas, no workload or setting)")
    objects, problems = k8s_objects(text, f"{shown} (kustomize output)",
                                    origin=f"kustomize:{shown}")
    out.problems.extend(problems)
    for obj in objects:
        place(root, top, tree, obj)
    out.objects.extend(objects)
    argv = command.command if isinstance(command, Prepared) else command
    out.notices.append(f"kustomize: rendered {shown} with {' '.join(argv)}")
    return out, True


_CRD = re.compile(r"^kind: CustomResourceDefinition\s*$", re.M)


def _without_crds(text: str) -> tuple[str, int]:
    """kustomize's output without its CustomResourceDefinitions (an operator's install
    tree holds megabytes of them; parsing them with positions took minutes). kustomize
    prints each document's top-level keys at column 0 between `---` lines."""
    docs = re.split(r"(?m)^---[ \t]*\n", text)
    kept = [d for d in docs if not _CRD.search(d)]
    return "---\n".join(kept), len(docs) - len(kept)


def find_kustomize() -> list[str] | None:
    found = shutil.which("kustomize")
    if found:
        return [found, "build"]
    kubectl = shutil.which("kubectl")
    if kubectl:
        return [kubectl, "kustomize"]
    return None


class Build(Struct):
    text: str | None
    error: str = ""
    notices: list[str] = field(default_factory=list)


class Prepared(Struct):
    """A kustomize binary checked once for a run: its `--help` defaults are safe (else
    `error`), and the network-namespace prefix this machine allows."""

    command: list[str]
    prefix: list[str] = field(default_factory=list)
    error: str = ""


def prepare_kustomize(command: list[str] | None = None) -> Prepared | None:
    """None when there is no kustomize binary (`command` None: the one on PATH)."""
    command = command if command is not None else find_kustomize()
    if not command:
        return None
    binary = Path(command[0])
    with tempfile.TemporaryDirectory(prefix="pool-advisor-kustomize-") as tmp:
        env = sandbox.sealed_env(Path(tmp), binary)
        argv = [env["PATH"] + "/" + binary.name, *command[1:]]
        helped, _, failed = sandbox.run_bounded(sandbox.help_command(argv), env=env,
                                                cwd=Path(tmp), timeout=10)
    if helped is None:
        return Prepared(command, error=f"{' '.join(command)} --help failed: {failed}")
    unsafe = sandbox.unsafe_defaults(helped.decode("utf-8", "replace"))
    if unsafe:
        return Prepared(command, error=f"{binary} defaults to {', '.join(unsafe)}; not run "
                        "(pool-advisor runs kustomize without plugins, Helm or network)")
    return Prepared(command, prefix=sandbox.network_namespace_prefix())


def build_sandboxed(root: Root, top: Path, directories: list[Path],
                    command: list[str] | Prepared, *, files: list[Path] | None = None,
                    origins: bool = True, components: list[str] | None = None,
                    remote_left_out: bool = False, files_outside: bool = False,
                    missing: set[tuple[Path, str]] | None = None) -> Build:
    """Run kustomize (`command`, checked by `prepare_kustomize` unless it is already) on a
    working copy of `directories` (the kustomization folders of the tree, inside `root`)
    with the build at `top`, sealed as advisor.read.render.sandbox describes. The URL filter
    of `scan` is not needed for this to hold: tests call it with kustomizations the
    filter would refuse. `remote_left_out`: the scan left remote resources out of the
    build; they are taken out of the working copy's kustomizations. `files_outside`: a
    kustomization of the tree names a file outside its folder, which kustomize's default
    load restrictor refuses: built with LoadRestrictionsNone at once (see below).
    `missing`: (kustomization folder, entry) of resources and generator files the
    repository does not hold (Tree.left_out), taken out of the working copy's
    kustomizations as the remote ones are."""
    prepared = command if isinstance(command, Prepared) else prepare_kustomize(command)
    if prepared is None or prepared.error:
        return Build(None, prepared.error if prepared else "no kustomize binary")
    binary = Path(prepared.command[0])
    with tempfile.TemporaryDirectory(prefix="pool-advisor-kustomize-") as tmp:
        scratch = Path(tmp)
        env = sandbox.sealed_env(scratch / "env", binary)
        argv = [env["PATH"] + "/" + binary.name, *prepared.command[1:]]
        mirror = scratch / "repo"
        mirror.mkdir()
        notices: list[str] = []
        try:
            copied = sandbox.copy_tree(root.path, directories, mirror)
            if copied.full and files:
                # The folders are too big to copy whole (a kustomization at the top of a
                # large repository): only the files the scan found it reads.
                shutil.rmtree(mirror)
                mirror.mkdir()
                copied = sandbox.Copied()
                notices.append("kustomize: the kustomization folders are larger than "
                               f"{sandbox.MAX_COPY_BYTES // 2**20} MiB; only the files "
                               "its entries name were copied for kustomize")
            for f in files or []:
                sandbox.copy_file(root.path, f, mirror / f.relative_to(root.path), copied)
            charted = _without_helm_charts(mirror, directories, root.path)
            if remote_left_out:
                _without_remote(mirror, directories, root.path)
            if missing:
                _without_missing(mirror, directories, root.path, missing)
            if origins or components:
                _edit_top(next(mirror / top.relative_to(root.path) / n
                               for n in KUSTOMIZATION_FILES
                               if (mirror / top.relative_to(root.path) / n).is_file()),
                          origins=origins, components=components or [])
        except (OSError, ValueError, StopIteration) as exc:
            return Build(None, f"cannot copy the kustomization to a working folder: {exc}")
        notices += [f"kustomize: {item}; not copied to kustomize's working folder"
                    for item in copied.left_out]
        if copied.full:
            return Build(None, "the kustomization folders hold more than "
                         f"{sandbox.MAX_COPY_BYTES // (1024 * 1024)} MiB or "
                         f"{sandbox.MAX_COPY_FILES} files; not rendered", notices)
        where = mirror / top.relative_to(root.path)
        prefix = prepared.prefix
        if not prefix:
            # Go's HTTP client sends loopback requests past any proxy: without a network
            # namespace, a kustomization that names a location anywhere is not run.
            named = _names_a_location(mirror)
            if named:
                return Build(None, f"{named} names a network or git location and no network "
                             "namespace can be made here (unshare); not rendered", notices)
        run = partial(_run, [*prefix, *argv, str(where)], env, where)
        out, error, restricted = run(first_unrestricted=files_outside)
        if out is None and charted and any(words in error for words in _NO_TARGET):
            # a patch of a chart's objects, which are not inflated: built again without
            # the patches of the kustomizations that hold a chart
            unpatched = _without_patches(mirror, charted, root.path)
            out, error, restricted = run(first_unrestricted=files_outside)
            if out is not None:
                shown = ", ".join(d.relative_to(root.path).as_posix() or "."
                                  for d in unpatched)
                notices.append(f"kustomize: {shown}: built without the patches and "
                               "replacements beside the Helm charts there (kustomize fails "
                               "on a patch of a chart's objects, which are not inflated)")
        if out is not None and restricted:
            notices.append(f"kustomize: {top.relative_to(root.path).as_posix() or '.'} "
                           "reads files outside its folder: built with "
                           "--load-restrictor=LoadRestrictionsNone, as Flux's "
                           "kustomize-controller builds")
        if out is None:
            return Build(None, _stable_error(error, mirror), notices)
        try:
            return Build(out.decode("utf-8"), "", notices)
        except UnicodeDecodeError:
            return Build(None, "kustomize output is not UTF-8", notices)


_LOCATION = re.compile(r"[a-z][a-z0-9+.-]*://|git::|\bgh:|[\w.~-]+@[\w.-]+:[\w~/]|"
                       r"(?:github\.com|gitlab\.com|bitbucket\.org)[/:]|\?ref=", re.I)


def _names_a_location(mirror: Path) -> str | None:
    """The first kustomization file in the working copy whose text names a URL or a git
    location anywhere (resources, generators, inline function configs)."""
    for kfile in sorted(p for name in KUSTOMIZATION_FILES for p in mirror.rglob(name)):
        try:
            text = kfile.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if _LOCATION.search(text):
            return kfile.relative_to(mirror).as_posix()
    return None


_HELM_KEYS = ("helmCharts", "helmChartInflationGenerator", "helmGlobals")


def _without_helm_charts(mirror: Path, directories: list[Path], root: Path) -> list[Path]:
    """The working copy's kustomizations without their Helm charts: inflating one needs
    `--enable-helm` and a helm binary, which pool-advisor does not run; the rest of the
    kustomization (its resources, patches) is still built (scan reports the chart). One
    left with no resources gets an empty list: kustomize refuses a kustomization with
    nothing in it ("kustomization.yaml is empty"), which failed every build that lists
    it (theepicsaxguy/homelab's storage/proxmox-csi, a chart and its patches, failed the
    whole infrastructure tree and its CloudNativePG servers). The folders edited."""
    edited: list[Path] = []

    def drop(doc: dict) -> bool:
        found = [key for key in _HELM_KEYS if key in doc]
        for key in found:
            doc.pop(key)
        if found:
            _not_empty(doc)
        return bool(found)

    def record(directory: Path, doc: dict) -> bool:
        if drop(doc):
            edited.append(directory)
            return True
        return False

    _edit_kustomizations(mirror, directories, root, record,
                         lambda text: any(key in text for key in _HELM_KEYS))
    return edited


def _without_patches(mirror: Path, directories: list[Path], root: Path) -> list[Path]:
    """The working copy's kustomizations in `directories` without their patches and
    replacements: beside a Helm chart they mostly change the chart's objects, which are
    not inflated, and kustomize fails a patch whose target is not there. The folders
    edited."""
    edited: list[Path] = []

    def drop(directory: Path, doc: dict) -> bool:
        found = [key for key in _PATCH_KEYS if key in doc]
        for key in found:
            doc.pop(key)
        if found:
            edited.append(directory)
            _not_empty(doc)
        return bool(found)

    _edit_kustomizations(mirror, directories, root, drop)
    return edited


def _not_empty(doc: dict) -> None:
    """A kustomization left with nothing but its apiVersion and kind gets an empty list
    of resources: kustomize refuses one with nothing in it ("kustomization.yaml is
    empty"), which fails every build that lists it."""
    if not set(doc) - {"apiVersion", "kind"}:
        doc["resources"] = []


_PATCH_KEYS = ("patches", "patchesStrategicMerge", "patchesJson6902", "replacements")
# kustomize's words for a patch or replacement whose target is not among the resources
_NO_TARGET = ("no resource matches", "failed to find unique target", "nothing selected",
              "no matches for")


def _without_remote(mirror: Path, directories: list[Path], root: Path) -> None:
    """The working copy's kustomizations without their remote resources and bases, and
    their generators' remote files (the scan reported each): kustomize never sees a
    location to fetch, and builds the rest."""
    from advisor.read.render.kustomize_tree import (
        LEFT_OUT_WHEN_REMOTE,
        REMOTE_GENERATOR_FILES,
        generator_file,
        is_remote,
    )

    def remote(entry: object) -> bool:
        return isinstance(entry, str) and is_remote(entry)

    def remote_file(entry: object) -> bool:
        return isinstance(entry, str) and is_remote(generator_file(entry))

    def drop_from(mapping: dict, key: str, remote: Callable[[object], bool]) -> bool:
        """The remote entries of the list at `key` deleted in place (a list made anew
        loses the comments ruamel keeps on it, and one left empty after comment lines
        was dumped as `[]` under them: a kustomization no YAML parser reads); an
        emptied list is dropped with its key."""
        entries = mapping.get(key)
        if not isinstance(entries, list) or not any(remote(e) for e in entries):
            return False
        for i in reversed(range(len(entries))):
            if remote(entries[i]):
                del entries[i]
        if not entries:
            del mapping[key]
        return True

    def drop(_directory: Path, doc: dict) -> bool:
        changed = False
        for key in LEFT_OUT_WHEN_REMOTE:
            changed = drop_from(doc, key, remote) or changed
        for gen in REMOTE_GENERATOR_FILES:
            items = doc.get(gen)
            for item in items if isinstance(items, list) else ():
                if isinstance(item, dict):
                    changed = drop_from(item, "files", remote_file) or changed
        if changed:
            _not_empty(doc)
        return changed

    _edit_kustomizations(mirror, directories, root, drop)


def _without_missing(mirror: Path, directories: list[Path], root: Path,
                     missing: set[tuple[Path, str]]) -> None:
    """The working copy's kustomizations without the resources, bases and generator
    files and envs the repository does not hold (the scan reported each, PA901): the
    rest is built, a generated object without those keys."""
    from advisor.read.render.kustomize_tree import generator_file

    def drop_from(mapping: dict, key: str, gone: set[str], path_of=str) -> bool:
        entries = mapping.get(key)
        if not isinstance(entries, list):
            return False
        hits = [i for i, e in enumerate(entries)
                if isinstance(e, str) and path_of(e).strip() in gone]
        for i in reversed(hits):
            del entries[i]
        if hits and not entries:
            del mapping[key]
        return bool(hits)

    def drop(directory: Path, doc: dict) -> bool:
        gone = {entry for folder, entry in missing if folder == directory}
        if not gone:
            return False
        changed = False
        for key in ("resources", "bases"):
            changed = drop_from(doc, key, gone) or changed
        for gen in ("configMapGenerator", "secretGenerator"):
            items = doc.get(gen)
            for item in items if isinstance(items, list) else ():
                if not isinstance(item, dict):
                    continue
                changed = drop_from(item, "files", gone, generator_file) or changed
                changed = drop_from(item, "envs", gone) or changed
                if isinstance(item.get("env"), str) and item["env"].strip() in gone:
                    del item["env"]
                    changed = True
        if changed:
            _not_empty(doc)
        return changed

    _edit_kustomizations(mirror, directories, root, drop)


def _edit_kustomizations(mirror: Path, directories: list[Path], root: Path,
                         edit: Callable[[Path, dict], bool],
                         may_hold: Callable[[str], bool] = lambda _text: True) -> None:
    """`edit` (its folder, its document) each kustomization file of the working copy's
    `directories` whose text `may_hold` what it edits; written back when `edit` says it
    changed it."""
    from ruamel.yaml import YAML

    for directory in directories:
        for name in KUSTOMIZATION_FILES:
            kfile = mirror / directory.relative_to(root) / name
            if not kfile.is_file():
                continue
            text = kfile.read_text(encoding="utf-8")
            if not may_hold(text):
                continue
            yaml = YAML(typ="rt")
            doc = yaml.load(text)
            if isinstance(doc, dict) and edit(directory, doc):
                with kfile.open("w", encoding="utf-8") as handle:
                    yaml.dump(doc, handle)


def _edit_top(kfile: Path, *, origins: bool, components: list[str]) -> None:
    """The working copy's top kustomization asks for origin annotations, and has the
    Flux Kustomization's components added after its own, as Flux adds them."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    doc = yaml.load(kfile.read_text(encoding="utf-8")) or {}
    if origins:
        meta = list(doc.get("buildMetadata") or [])
        if "originAnnotations" not in meta:
            meta.append("originAnnotations")
        doc["buildMetadata"] = meta
    if components:
        doc["components"] = [*list(doc.get("components") or []),
                             *(c for c in components if c not in (doc.get("components") or []))]
    with kfile.open("w", encoding="utf-8") as handle:
        yaml.dump(doc, handle)


def _plain(root: Root, tree: Tree, shown: str, out: Rendered,
           why: str = "neither `kustomize` nor `kubectl` is on PATH") -> Rendered:
    from advisor.read.render.kustomize_plain import generated, in_namespace, namespace_of

    read: list[K8sObject] = []
    for f in tree.resource_files:
        try:
            text = root.read_text(f)
        except InputError as exc:
            out.problems.append(problem(exc.path, exc.message, line=exc.line))
            continue
        objects, problems = k8s_objects(text, root.rel(f), origin=f"kustomize-plain:{shown}")
        # in the namespace kustomize gives them: a pod and the Secret it reads, listed by
        # kustomizations of one `namespace:`, meet (audit 10b D3)
        listed_in = tree.listed_in.get(f)
        read += in_namespace(objects, namespace_of(tree, listed_in) if listed_in else None)
        out.problems.extend(problems)
    objects, problems = generated(root, tree, shown, read)
    out.objects.extend(objects)
    out.problems.extend(problems)
    out.notices.append(
        f"kustomize: {shown} was NOT rendered: {why}. "
        "Its resource files were read as plain manifests, in the namespace its "
        "kustomizations set, with the ConfigMaps and Secrets their generators make; "
        "patches, replicas, images, namePrefix/nameSuffix and labels of the overlays were "
        "NOT applied, so counts are the base's")
    return out
