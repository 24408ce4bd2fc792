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
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from advisor.model import ConfigProblem, Location, Source
from advisor.read.fs import InputError, Root
from advisor.read.render import Rendered, field_path, flatten, sandbox
from advisor.read.sources.k8s import (
    K8sObject,
    block_offset,
    get,
    k8s_objects,
    line_of,
    load_yaml_stream,
)

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
TIMEOUT_SECONDS = sandbox.TIMEOUT_SECONDS
ORIGIN = "config.kubernetes.io/origin"
# Locations kustomize would clone or download (api/internal/git/repospec.go and
# loader.IsRemoteFile): URLs of any scheme, go-getter's `git::`, scp-like `user@host:path`,
# `gh:` and bare git hosts, and query parameters only remote specs take.
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:/|git::|gh:|[\w.~-]+@[\w.-]+:|"
                     r"(?:github\.com|gitlab\.com|bitbucket\.org)[/:])"
                     r"|\?(?:ref|version|timeout|submodules)=|^//", re.I)

Key = tuple[str | int, ...]


class Layer(Struct):
    """One kustomization in the tree, base-most first in `Tree.layers`."""

    directory: Path
    file: Path
    doc: Any
    shown: str


class Tree(Struct):
    layers: list[Layer] = field(default_factory=list)
    files: set[Path] = field(default_factory=set)  # every file kustomize will read
    resource_files: list[Path] = field(default_factory=list)  # plain manifests, in order
    problems: list[ConfigProblem] = field(default_factory=list)


def render_kustomization(root: Root, directory: str, *, binary: list[str] | None = None,
                         prepared: Prepared | None = None) -> Rendered:
    """Render the kustomization in `directory` (inside `root`); `prepared` (from
    `prepare_kustomize`, once per run) saves checking the binary again for each one."""
    out = Rendered()
    try:
        top = root.resolve(directory)
    except InputError as exc:
        out.problems.append(_problem(exc.path, exc.message, fatal=True))
        return out
    tree = Tree()
    _scan(root, top, tree, set(), depth=0)
    if tree.problems:
        out.problems.extend(tree.problems)
        return out
    command = prepared.command if prepared is not None else (
        binary if binary is not None else find_kustomize())
    shown = root.rel(top)
    if not command:
        return _plain(root, tree, shown, out)
    built = build_sandboxed(root, top, [layer.directory for layer in tree.layers],
                            prepared or command, files=sorted(tree.files))
    out.notices.extend(built.notices)
    text = built.text
    if text is None:
        out.problems.append(_problem(_kfile(root, top), f"kustomize failed: {built.error}",
                                     fatal=True, program="kustomize"))
        return out
    text, crds = _without_crds(text)
    if crds:
        out.notices.append(f"kustomize: {shown}: {crds} CustomResourceDefinition(s) in the "
                           "output not read (schemas, no workload or setting)")
    objects, problems = k8s_objects(text, f"{shown} (kustomize output)",
                                    origin=f"kustomize:{shown}")
    out.problems.extend(problems)
    for obj in objects:
        _place(root, top, tree, obj)
    out.objects.extend(objects)
    out.notices.append(f"kustomize: rendered {shown} with {' '.join(command)}")
    return out


class KustomizeReads(Struct):
    skip: set[Path] = field(default_factory=set)  # not read as plain manifests
    notices: list[str] = field(default_factory=list)
    # An unlisted manifest in the folders of one built kustomization only: deployed (by
    # hand) with it, so it joins that kustomization's environment.
    beside: dict[Path, Path] = field(default_factory=dict)  # manifest -> leaf


def manifests_kustomize_reads(root: Root, leaves: list[Path], every: list[Path],
                              manifests: list[Path]) -> KustomizeReads:
    """Which of `manifests` not to read as plain files, and notices, for the kustomization
    folders `every` of which `leaves` are built:
    - a file a built kustomization reads (a resource, a patch, a generator's input) is
      read through the render only;
    - a Kubernetes manifest in a built kustomization's folder that it does not list is
      still read as a plain manifest, with a notice that kustomize would not deploy it;
    - the files of a kustomization no built one uses (an unused component, whose patches
      are fragments rather than objects) are not read, with a notice."""
    from advisor.read.sources.k8s import looks_like_k8s

    read: set[Path] = set()
    users: dict[Path, list[Path]] = {}  # kustomization folder -> leaves that build it
    for leaf in leaves:
        tree = Tree()
        _scan(root, leaf.resolve(), tree, set(), depth=0)
        read |= tree.files
        for layer in tree.layers:
            users.setdefault(layer.directory, []).append(leaf)
    homes = sorted({d.resolve() for d in every}, key=lambda p: -len(p.parts))
    out = KustomizeReads()
    unused: dict[Path, int] = {}
    for manifest in manifests:
        real = manifest.resolve()
        home = next((d for d in homes if real.is_relative_to(d)), None)
        if real in read:
            out.skip.add(manifest)
        elif home is None:
            continue
        elif home not in users:
            out.skip.add(manifest)
            unused[home] = unused.get(home, 0) + 1
        else:
            try:
                text = root.read_text(real)
            except InputError:
                continue  # the plain reader reports it
            if not looks_like_k8s(text):
                continue
            built_by = sorted(set(users[home]))
            if len(built_by) == 1:
                out.beside[manifest] = built_by[0]
            out.notices.append(f"kustomize: {root.rel(manifest)} is in {root.rel(home)} but "
                               "its kustomization does not list it, so kustomize would not "
                               "deploy it; read as a plain manifest"
                               + (f" deployed with {root.rel(built_by[0])}"
                                  if len(built_by) == 1 and built_by[0] != home else ""))
    for home, count in sorted(unused.items()):
        out.notices.append(f"kustomize: {root.rel(home)} is a kustomization that no built "
                           f"kustomization uses; its {count} YAML file(s) are not read")
    return out


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


# --- scanning the tree ----------------------------------------------------------------


def _kfile(root: Root, directory: Path) -> str:
    for name in KUSTOMIZATION_FILES:
        if (directory / name).is_file():
            return root.rel(directory / name)
    return root.rel(directory)


def _scan(root: Root, directory: Path, tree: Tree, seen: set[Path], depth: int) -> None:
    if directory in seen or depth > 20:
        return
    seen.add(directory)
    kfile = next((directory / n for n in KUSTOMIZATION_FILES if (directory / n).is_file()), None)
    if kfile is None:
        tree.problems.append(_problem(root.rel(directory), "no kustomization.yaml here",
                                      fatal=True, program="kustomize"))
        return
    shown = root.rel(kfile)
    if kfile.is_symlink():
        tree.problems.append(_problem(shown, "the kustomization file is a symlink; not "
                                      "followed (kustomize would read whatever it points at)",
                                      fatal=True, program="kustomize"))
        return
    try:
        text = root.read_text(kfile)
    except InputError as exc:
        tree.problems.append(_problem(exc.path, exc.message, fatal=True))
        return
    docs, problems = load_yaml_stream(text, shown)
    if problems:
        tree.problems.extend(problems)
        return
    doc = docs[0][0] if docs else {}
    if not isinstance(doc, dict):
        tree.problems.append(_problem(shown, "kustomization is not a mapping", fatal=True))
        return
    tree.files.add(kfile)

    def at(*keys: str | int) -> int | None:
        line0 = line_of(doc, *keys)
        return None if line0 is None else line0 + 1

    def ref(entry: Any, *keys: str | int, allow_dir: bool, resource: bool = False
            ) -> None:
        if not isinstance(entry, str) or not entry.strip():
            return
        if _REMOTE.match(entry.strip()):
            tree.problems.append(_problem(shown, f"remote resource {entry!r}: pool-advisor "
                                          "does not fetch from the network; vendor it into "
                                          "the repository", fatal=True, line=at(*keys),
                                          program="kustomize"))
            return
        try:
            target = root.resolve(entry.strip(), relative_to=directory)
        except InputError:
            tree.problems.append(_problem(shown, f"{entry!r} is outside the scanned root; "
                                          "not rendered", fatal=True, line=at(*keys),
                                          program="kustomize"))
            return
        if target.is_dir():
            if allow_dir:
                _scan(root, target, tree, seen, depth + 1)
                return
            tree.problems.append(_problem(shown, f"{entry!r} is a directory", fatal=True,
                                          line=at(*keys), program="kustomize"))
            return
        if not target.is_file():
            tree.problems.append(_problem(shown, f"{entry!r} not found", fatal=True,
                                          line=at(*keys), program="kustomize"))
            return
        tree.files.add(target)
        if resource:
            tree.resource_files.append(target)

    for key in ("resources", "bases", "components"):
        for i, entry in enumerate(_items(doc.get(key))):
            ref(entry, key, i, allow_dir=True, resource=True)
    for i, patch in enumerate(_items(doc.get("patches")) + _items(doc.get("patchesJson6902"))):
        if isinstance(patch, dict) and "path" in patch:
            key = "patches" if i < len(_items(doc.get("patches"))) else "patchesJson6902"
            index = i if key == "patches" else i - len(_items(doc.get("patches")))
            ref(patch["path"], key, index, allow_dir=False)
    for i, entry in enumerate(_items(doc.get("patchesStrategicMerge"))):
        if isinstance(entry, str) and "\n" not in entry and ":" not in entry:
            ref(entry, "patchesStrategicMerge", i, allow_dir=False)
    for gen in ("configMapGenerator", "secretGenerator"):
        for i, item in enumerate(_items(doc.get(gen))):
            if not isinstance(item, dict):
                continue
            for j, entry in enumerate(_items(item.get("files"))):
                if isinstance(entry, str):
                    ref(entry.split("=", 1)[-1], gen, i, "files", j, allow_dir=False)
            for j, entry in enumerate(_items(item.get("envs"))):
                ref(entry, gen, i, "envs", j, allow_dir=False)
            if isinstance(item.get("env"), str):
                ref(item["env"], gen, i, "env", allow_dir=False)
    for key in ("crds", "configurations", "generators", "transformers", "validators"):
        for i, entry in enumerate(_items(doc.get(key))):
            if isinstance(entry, str) and "\n" not in entry:
                ref(entry, key, i, allow_dir=True)
    for i, item in enumerate(_items(doc.get("replacements"))):
        if isinstance(item, dict) and isinstance(item.get("path"), str):
            ref(item["path"], "replacements", i, allow_dir=False)
    if isinstance(get(doc, "openapi", "path"), str):
        ref(doc["openapi"]["path"], "openapi", "path", allow_dir=False)
    if doc.get("helmCharts") or doc.get("helmChartInflationGenerator"):
        tree.problems.append(_problem(shown, "helmCharts needs kustomize --enable-helm, which "
                                      "runs a helm binary; point pool-advisor at the chart "
                                      "instead", fatal=True, line=at("helmCharts"),
                                      program="kustomize"))
    tree.layers.append(Layer(directory=directory, file=kfile, doc=doc, shown=shown))


def _items(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


# --- running kustomize ----------------------------------------------------------------


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
                    origins: bool = True) -> Build:
    """Run kustomize (`command`, checked by `prepare_kustomize` unless it is already) on a
    working copy of `directories` (the kustomization folders of the tree, inside `root`)
    with the build at `top`, sealed as advisor.read.render.sandbox describes. The URL filter
    of `_scan` is not needed for this to hold: tests call it with kustomizations the
    filter would refuse."""
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
            if origins:
                _ask_for_origins(next(mirror / top.relative_to(root.path) / n
                                      for n in KUSTOMIZATION_FILES
                                      if (mirror / top.relative_to(root.path) / n).is_file()))
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
        out, _stderr, error = sandbox.run_bounded(
            [*prefix, *argv, str(where), "--load-restrictor=LoadRestrictionsRootOnly"],
            env=env, cwd=where, timeout=TIMEOUT_SECONDS)
        if out is None:
            return Build(None, error.replace(str(mirror) + "/", "").replace(str(mirror), "."),
                         notices)
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


def _ask_for_origins(kfile: Path) -> None:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    doc = yaml.load(kfile.read_text(encoding="utf-8")) or {}
    meta = list(doc.get("buildMetadata") or [])
    if "originAnnotations" not in meta:
        meta.append("originAnnotations")
    doc["buildMetadata"] = meta
    with kfile.open("w", encoding="utf-8") as handle:
        yaml.dump(doc, handle)


# --- placing objects back in their files ----------------------------------------------


def _place(root: Root, top: Path, tree: Tree, obj: K8sObject) -> None:
    origin_text = obj.annotations.get(ORIGIN)
    _drop_origin_annotation(obj)
    if not origin_text:
        return
    docs, _ = load_yaml_stream(origin_text, ORIGIN)
    origin = docs[0][0] if docs else {}
    rel = get(origin, "path") or get(origin, "configuredIn")
    if not isinstance(rel, str):
        return
    try:
        source_file = root.resolve(rel, relative_to=top)
    except InputError:
        return
    shown = root.rel(source_file)
    base = _base_object(root, source_file, shown, obj) if get(origin, "path") else None
    if base is not None:
        _relocate_pair(obj.body, base.body, (base.line or 1) - 1 - base.line_offset)
        obj.line = base.line
    else:
        line0 = (line_of_configured(root, source_file, origin) or 1) - 1
        _relocate_all(obj.body, line0)
        obj.line = line0 + 1
    obj.path = shown
    obj.line_offset = 0
    obj.value_sources = _overlay_sources(root, tree, obj, base)


def line_of_configured(root: Root, kfile: Path, origin: Any) -> int | None:
    """A generated object (configMapGenerator): the generator entry's line."""
    kind = get(origin, "configuredBy", "kind")
    try:
        docs, _ = load_yaml_stream(root.read_text(kfile), root.rel(kfile))
    except InputError:
        return None
    doc = docs[0][0] if docs else {}
    key = {"ConfigMapGenerator": "configMapGenerator",
           "SecretGenerator": "secretGenerator"}.get(str(kind))
    line0 = line_of(doc, key) if key else None
    return None if line0 is None else line0 + 1


def _drop_origin_annotation(obj: K8sObject) -> None:
    meta = obj.body.get("metadata")
    annotations = get(meta, "annotations")
    if isinstance(annotations, dict) and ORIGIN in annotations:
        del annotations[ORIGIN]
        if not annotations:
            del meta["annotations"]


def _base_object(root: Root, path: Path, shown: str, obj: K8sObject) -> K8sObject | None:
    try:
        text = root.read_text(path)
    except InputError:
        return None
    objects, _ = k8s_objects(text, shown)
    same_kind = [o for o in objects if o.kind == obj.kind]
    exact = [o for o in same_kind if o.name == obj.name]
    if exact:
        return exact[0]
    # namePrefix/nameSuffix: the original name is inside the rendered one.
    inside = sorted((o for o in same_kind if o.name in obj.name), key=lambda o: -len(o.name))
    if inside:
        return inside[0]
    return same_kind[0] if len(same_kind) == 1 else None


def _match_item(items: list[Any], item: Any, index: int) -> Any:
    """Strategic-merge list matching: by `name` when both have one, else by index."""
    name = item.get("name") if isinstance(item, dict) else None
    if name is not None:
        return next((x for x in items if isinstance(x, dict) and x.get("name") == name), None)
    return items[index] if index < len(items) else None


def _relocate_pair(node: Any, base: Any, fallback0: int) -> None:
    """Give every node of the rendered `node` the line of its counterpart in `base`
    (0-based), or the nearest enclosing counterpart's line when the overlay added it."""
    lc = getattr(node, "lc", None)
    if isinstance(node, dict):
        for k in list(node.keys()):
            base_child = base.get(k) if isinstance(base, dict) else None
            line0 = line_of(base, k) if isinstance(base, dict) and k in base else None
            here = fallback0 if line0 is None else line0
            if lc is not None:
                lc.data[k] = [here, 0, here, 0]
            _relocate_pair(node[k], base_child, here)
    elif isinstance(node, list):
        base_items = base if isinstance(base, list) else []
        for i, item in enumerate(node):
            counterpart = _match_item(base_items, item, i)
            here = fallback0
            if counterpart is not None:
                j = next(n for n, x in enumerate(base_items) if x is counterpart)
                got = line_of(base_items, j)
                here = fallback0 if got is None else got
            if lc is not None:
                lc.data[i] = [here, 0]
            _relocate_pair(item, counterpart, here)
    if lc is not None:
        lc.line = fallback0


def _relocate_all(node: Any, line0: int) -> None:
    lc = getattr(node, "lc", None)
    if lc is not None:
        lc.line = line0
        for k in list(lc.data.keys()):
            lc.data[k] = [line0, 0, line0, 0] if isinstance(node, dict) else [line0, 0]
    if isinstance(node, dict):
        for v in node.values():
            _relocate_all(v, line0)
    elif isinstance(node, list):
        for v in node:
            _relocate_all(v, line0)


# --- tracing overlay edits ------------------------------------------------------------


def _overlay_sources(root: Root, tree: Tree, obj: K8sObject, base: K8sObject | None
                     ) -> dict[str, Source]:
    """Field path -> overlay line, for fields the overlays set; base-most layer first so
    the top overlay wins, as kustomize applies them."""
    found: dict[str, Source] = {}
    original = base.name if base is not None else obj.name
    names = {original, obj.name}
    for layer in tree.layers:
        doc = layer.doc
        _replicas(layer, doc, obj, names, found)
        _images(layer, doc, obj, found)
        _patches(root, layer, doc, obj, names, found)
        _generators(root, layer, doc, obj, found)
    return found


def _at(layer: Layer, node: Any, *keys: str | int, key: str) -> Source:
    line0 = line_of(node, *keys)
    return Source(path=layer.shown, line=None if line0 is None else line0 + 1, key=key)


# Kinds kustomize's ReplicaCountTransformer edits (api/konfig/builtinpluginconsts).
REPLICA_KINDS = ("Deployment", "ReplicationController", "ReplicaSet", "StatefulSet")


def _replicas(layer: Layer, doc: Any, obj: K8sObject, names: set[str],
              found: dict[str, Source]) -> None:
    if obj.kind not in REPLICA_KINDS:
        return
    for i, item in enumerate(_items(doc.get("replicas"))):
        if (isinstance(item, dict) and item.get("name") in names and "count" in item
                and _same(get(obj.body, "spec", "replicas"), item["count"])):
            found["spec.replicas"] = _at(layer, doc, "replicas", i, "count",
                                         key=f"replicas[{item['name']}].count")


def _images(layer: Layer, doc: Any, obj: K8sObject, found: dict[str, Source]) -> None:
    images = _items(doc.get("images"))
    if not images:
        return
    for path, value in flatten(obj.body).items():
        if not path or path[-1] != "image" or not isinstance(value, str):
            continue
        for i, item in enumerate(images):
            if not isinstance(item, dict) or not item.get("name"):
                continue
            new = item.get("newName") or item["name"]
            if value.split("@")[0].rsplit(":", 1)[0] in (new, item["name"]):
                which = next((k for k in ("newTag", "digest", "newName") if k in item), "name")
                found[field_path(*path)] = _at(layer, doc, "images", i, which,
                                               key=f"images[{item['name']}].{which}")


def _patch_targets(patch_doc: Any, selector: Any, obj: K8sObject, names: set[str]) -> bool:
    if isinstance(selector, dict) and selector:
        kind = selector.get("kind")
        name = selector.get("name")
        if kind and kind != obj.kind:
            return False
        if name:
            try:
                if not any(re.fullmatch(str(name), n) for n in names):
                    return False
            except re.error:
                return False
        return True
    if isinstance(patch_doc, dict):
        return patch_doc.get("kind") == obj.kind and get(patch_doc, "metadata", "name") in names
    return False


def _patches(root: Root, layer: Layer, doc: Any, obj: K8sObject, names: set[str],
             found: dict[str, Source]) -> None:
    entries: list[tuple[Any, Any]] = []  # (entry, selector)
    for item in _items(doc.get("patches")) + _items(doc.get("patchesJson6902")):
        if isinstance(item, dict):
            entries.append((item, item.get("target")))
    for item in _items(doc.get("patchesStrategicMerge")):
        entries.append(({"path": item} if "\n" not in str(item) else {"patch": item}, None))
    for entry, selector in entries:
        if "path" in entry and isinstance(entry["path"], str):
            try:
                real = root.resolve(entry["path"], relative_to=layer.directory)
                text = root.read_text(real)
            except InputError:
                continue
            shown, offset = root.rel(real), 0
        elif isinstance(entry.get("patch"), str):
            text = entry["patch"]
            shown = layer.shown
            offset = block_offset(entry, "patch") if hasattr(entry, "lc") else 0
        else:
            continue
        docs, _ = load_yaml_stream(text, shown, offset)
        for patch_doc, _start in docs:
            if isinstance(patch_doc, list):
                if _patch_targets(None, selector, obj, names):
                    _json6902(patch_doc, obj, shown, offset, found)
            elif _patch_targets(patch_doc, selector, obj, names):
                _strategic(patch_doc, obj.body, (), shown, offset, found)


def _strategic(patch: Any, target: Any, prefix: Key, shown: str, offset: int,
               found: dict[str, Source]) -> None:
    """Record the line of every scalar a strategic-merge patch sets, at the rendered
    field it lands on (list items matched by `name`, as the merge keys of containers,
    env and volumes are)."""
    if isinstance(patch, dict):
        for k, v in patch.items():
            if prefix == () and k in ("apiVersion", "kind"):
                continue
            if prefix == ("metadata",) and k in ("name", "namespace"):
                continue
            child = target.get(k) if isinstance(target, dict) else None
            if isinstance(v, dict | list):
                _strategic(v, child, (*prefix, str(k)), shown, offset, found)
            elif _same(child, v):  # not overridden later, and the patch did apply here
                _patch_source(patch, k, shown, offset, (*prefix, k), found)
    elif isinstance(patch, list):
        items = target if isinstance(target, list) else []
        for i, item in enumerate(patch):
            counterpart = _match_item(items, item, i)
            if counterpart is None:
                continue
            j = next(n for n, x in enumerate(items) if x is counterpart)
            if isinstance(item, dict | list):
                _strategic(item, counterpart, (*prefix, j), shown, offset, found)
            elif _same(counterpart, item):
                _patch_source(patch, i, shown, offset, (*prefix, j), found)


def _same(rendered: Any, written: Any) -> bool:
    """Did this value survive into the output? (a later layer may have replaced it, or
    a patch's target selector may not have matched this object)."""
    if rendered is None:
        return False
    if isinstance(rendered, bool) or isinstance(written, bool):
        return str(rendered).lower() == str(written).lower()
    return str(rendered).strip() == str(written).strip()


def _patch_source(node: Any, key: str | int, shown: str, offset: int, path: Key,
                  found: dict[str, Source]) -> None:
    line0 = line_of(node, key)
    dotted = field_path(*path)
    found[dotted] = Source(path=shown, line=None if line0 is None else line0 + 1 + offset,
                           key=f"patch: {dotted}")
    value = node[key]
    if isinstance(value, str) and "\n" in value and isinstance(key, str):
        start = block_offset(node, key) + offset  # content line n is at start + n
        for n in range(1, len(value.splitlines()) + 1):
            found[f"{dotted}#{n}"] = Source(path=shown, line=start + n, key=f"patch: {dotted}")


def _json6902(ops: list[Any], obj: K8sObject, shown: str, offset: int,
              found: dict[str, Source]) -> None:
    for i, op in enumerate(ops):
        if not isinstance(op, dict) or op.get("op") not in ("replace", "add"):
            continue
        pointer = str(op.get("path", ""))
        tokens: list[str | int] = []
        node = obj.body
        for raw in pointer.split("/")[1:]:
            token = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, list):
                idx = len(node) - 1 if token == "-" else int(token) if token.isdigit() else -1
                if not 0 <= idx < len(node):
                    break
                tokens.append(idx)
                node = node[idx]
            else:
                tokens.append(token)
                node = get(node, token)
        line0 = line_of(ops, i, "value") if "value" in op else line_of(ops, i)
        line = None if line0 is None else line0 + 1 + offset
        value = op.get("value")
        if isinstance(value, dict | list):
            for sub, scalar in flatten(value).items():
                if not _same(get(obj.body, *tokens, *sub), scalar):
                    continue
                sub0 = line_of(value, *sub)
                found[field_path(*tokens, *sub)] = Source(
                    path=shown, line=line if sub0 is None else sub0 + 1 + offset,
                    key=f"patch: {pointer}")
        elif _same(get(obj.body, *tokens), value):
            found[field_path(*tokens)] = Source(path=shown, line=line, key=f"patch: {pointer}")


def _generators(root: Root, layer: Layer, doc: Any, obj: K8sObject,
                found: dict[str, Source]) -> None:
    gen_key = {"ConfigMap": "configMapGenerator", "Secret": "secretGenerator"}.get(obj.kind)
    if gen_key is None:
        return
    for i, item in enumerate(_items(doc.get(gen_key))):
        if not isinstance(item, dict) or not item.get("name"):
            continue
        if str(item["name"]) not in obj.name:
            continue
        for j, literal in enumerate(_items(item.get("literals"))):
            if isinstance(literal, str) and "=" in literal:
                key, _, value = literal.partition("=")
                key = key.strip()
                if not _same(get(obj.body, "data", key), value.strip().strip("\"'")) \
                        and obj.kind == "ConfigMap":
                    continue
                found[field_path("data", key)] = _at(layer, doc, gen_key, i, "literals", j,
                                                     key=f"{item['name']}: {key}")
        envs = _items(item.get("envs")) + ([item["env"]] if isinstance(item.get("env"), str)
                                           else [])
        for env_file in envs:
            try:
                real = root.resolve(env_file, relative_to=layer.directory)
                text = root.read_text(real)
            except InputError:
                continue
            for number, line in enumerate(text.splitlines(), start=1):
                stripped = line.strip()
                if stripped and not stripped.startswith("#") and "=" in stripped:
                    key, _, value = stripped.partition("=")
                    key = key.strip()
                    if obj.kind == "ConfigMap" and not _same(get(obj.body, "data", key),
                                                             value.strip()):
                        continue
                    found[field_path("data", key)] = Source(path=root.rel(real), line=number,
                                                            key=key)
        for entry in _items(item.get("files")):
            if not isinstance(entry, str):
                continue
            key, _, name = entry.partition("=")
            path = name or key
            key = key if name else Path(path).name
            try:
                real = root.resolve(path, relative_to=layer.directory)
                lines = root.read_text(real).splitlines()
            except InputError:
                continue
            found[field_path("data", key)] = Source(path=root.rel(real), line=1, key=key)
            for n in range(1, len(lines) + 1):
                found[f"{field_path('data', key)}#{n}"] = Source(path=root.rel(real), line=n,
                                                                  key=key)


# --- no binary ------------------------------------------------------------------------


def _plain(root: Root, tree: Tree, shown: str, out: Rendered) -> Rendered:
    for f in tree.resource_files:
        try:
            text = root.read_text(f)
        except InputError as exc:
            out.problems.append(_problem(exc.path, exc.message, line=exc.line))
            continue
        objects, problems = k8s_objects(text, root.rel(f), origin=f"kustomize-plain:{shown}")
        out.objects.extend(objects)
        out.problems.extend(problems)
    out.notices.append(
        f"kustomize: {shown} was NOT rendered: neither `kustomize` nor `kubectl` is on PATH. "
        "Its resource files were read as plain manifests; patches, replicas, images, "
        "namePrefix/nameSuffix, namespace, labels and generators of the overlays were NOT "
        "applied, so counts are the base's")
    return out


def _problem(path: str, message: str, *, fatal: bool = False, line: int | None = None,
             program: str = "kustomize") -> ConfigProblem:
    return ConfigProblem(location=Location(path=path, line=line), message=message,
                         fatal=fatal, program=program)
