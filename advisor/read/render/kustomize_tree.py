"""The kustomization tree a build reads, checked before anything runs: every file and
directory it names (resources, bases, components, patches, generators' files and envs,
replacements, crds, configurations, openapi) resolved inside the repository; a remote
resource, a reference outside the root, a symlinked kustomization file or a Helm chart
inflator stops the render with a finding (advisor.read.render.kustomize runs the build);
and, from the trees of the built kustomizations, which plain manifests the renders own
(manifests_kustomize_reads)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from advisor.model import ConfigProblem, Location
from advisor.read.fs import InputError, Root
from advisor.read.sources.k8s import K8sObject, get, line_of, load_yaml_stream

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
# Entries whose remote targets only add objects (a vendor's CRDs, an operator's install):
# the build goes on without them. A remote component or patch changes the objects that
# are read, so it still stops the build.
LEFT_OUT_WHEN_REMOTE = ("resources", "bases")
# Generators whose remote `files` (a Grafana dashboard by URL) are left out the same way:
# the object is generated without that key.
REMOTE_GENERATOR_FILES = ("configMapGenerator", "secretGenerator")


# Locations kustomize would clone or download (api/internal/git/repospec.go and
# loader.IsRemoteFile): URLs of any scheme, go-getter's `git::`, scp-like `user@host:path`,
# `gh:` and bare git hosts, and query parameters only remote specs take.
_REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*:/|git::|gh:|[\w.~-]+@[\w.-]+:|"
                     r"(?:github\.com|gitlab\.com|bitbucket\.org)[/:])"
                     r"|\?(?:ref|version|timeout|submodules)=|^//", re.I)


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
    # helmCharts entries left out of the build: reported, the rest still built
    helm_charts: list[ConfigProblem] = field(default_factory=list)
    # remote resources and bases left out of the build, the same way
    remote: list[ConfigProblem] = field(default_factory=list)
    # resources, bases and generator files/envs the repository does not hold (a
    # credentials file each user writes, never committed): kustomize refuses the build
    # (PA901 errors, each peak a floor), but they only add objects or keys, so the rest
    # is built without them; (kustomization folder, entry as written) of each
    missing: list[ConfigProblem] = field(default_factory=list)
    left_out: set[tuple[Path, str]] = field(default_factory=set)
    # a kustomization names a file outside its own folder (kustomize's default load
    # restrictor, LoadRestrictionsRootOnly, refuses that; Flux builds with None)
    files_outside: bool = False
    # resource file -> the folder of the kustomization listing it, and kustomization
    # folder -> the one that first includes it: the namespace kustomize gives a file's
    # objects when the build fails and they are read as written (kustomize_plain)
    listed_in: dict[Path, Path] = field(default_factory=dict)
    included_by: dict[Path, Path] = field(default_factory=dict)


# Entries whose target only adds objects (resources, bases) or keys of a generated
# object: one the repository does not hold is left out of the build (Tree.missing).
_ONLY_ADD = ("resources", "bases", "configMapGenerator", "secretGenerator")


def is_remote(entry: str) -> bool:
    """Whether kustomize would fetch `entry` (a git or HTTP location) instead of reading
    a path of the repository."""
    return bool(_REMOTE.match(entry.strip()))


def generator_file(entry: str) -> str:
    """The file a generator's `files` entry reads: `key=path`, or the path alone (a URL
    keeps its `?ref=` query)."""
    return entry if is_remote(entry) else entry.split("=", 1)[-1]


def kfile_shown(root: Root, directory: Path) -> str:
    for name in KUSTOMIZATION_FILES:
        if (directory / name).is_file():
            return root.rel(directory / name)
    return root.rel(directory)


def scan(root: Root, directory: Path, tree: Tree, seen: set[Path], depth: int) -> None:
    if directory in seen or depth > 20:
        return
    seen.add(directory)
    kfile = next((directory / n for n in KUSTOMIZATION_FILES if (directory / n).is_file()), None)
    if kfile is None:
        tree.problems.append(problem(root.rel(directory), "no kustomization.yaml here",
                                     fatal=True, program="kustomize"))
        return
    shown = root.rel(kfile)
    if kfile.is_symlink():
        tree.problems.append(problem(shown, "the kustomization file is a symlink; not "
                                     "followed (kustomize would read whatever it points at)",
                                     fatal=True, program="kustomize"))
        return
    try:
        text = root.read_text(kfile)
    except InputError as exc:
        tree.problems.append(problem(exc.path, exc.message, fatal=True))
        return
    docs, problems = load_yaml_stream(text, shown)
    if problems:
        tree.problems.extend(problems)
        return
    doc = docs[0][0] if docs else {}
    if not isinstance(doc, dict):
        tree.problems.append(problem(shown, "kustomization is not a mapping", fatal=True))
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
            if keys[0] in REMOTE_GENERATOR_FILES and "files" in keys:
                # a dashboard a ConfigMap carries: built without that key
                tree.remote.append(problem(
                    shown, f"remote file {entry!r} of {keys[0]} not fetched (pool-advisor "
                    "does not fetch from the network): the generated object lacks that key, "
                    "the rest of the kustomization is read", line=at(*keys),
                    program="kustomize"))
                return
            if keys[0] in LEFT_OUT_WHEN_REMOTE:
                # Not fatal: built without it (advisor.read.render.kustomize
                # _without_remote), as without a helmCharts entry.
                tree.remote.append(problem(
                    shown, f"remote resource {entry!r} not fetched (pool-advisor does not "
                    "fetch from the network): its objects are not read, the rest of the "
                    "kustomization is; vendor it into the repository to read it",
                    line=at(*keys), program="kustomize"))
                return
            tree.problems.append(problem(shown, f"remote resource {entry!r}: pool-advisor "
                                         "does not fetch from the network; vendor it into "
                                         "the repository", fatal=True, line=at(*keys),
                                         program="kustomize"))
            return
        try:
            target = root.resolve(entry.strip(), relative_to=directory)
        except InputError:
            tree.problems.append(problem(shown, f"{entry!r} is outside the scanned root; "
                                         "not rendered", fatal=True, line=at(*keys),
                                         program="kustomize"))
            return
        if target.is_dir():
            if allow_dir:
                if target not in seen:
                    tree.included_by.setdefault(target, directory)
                scan(root, target, tree, seen, depth + 1)
                return
            tree.problems.append(problem(shown, f"{entry!r} is a directory", fatal=True,
                                         line=at(*keys), program="kustomize"))
            return
        if not target.is_file():
            if target.exists() or keys[0] not in _ONLY_ADD:
                # a patch or component changes what is read: not built
                tree.problems.append(problem(shown, f"{entry!r} not found", fatal=True,
                                             line=at(*keys), program="kustomize"))
                return
            tree.missing.append(problem(
                shown, f"{entry!r} not found (kustomize refuses this kustomization); the "
                "rest of it is built without it", fatal=True, line=at(*keys),
                program="kustomize"))
            tree.left_out.add((directory, entry.strip()))
            return
        tree.files.add(target)
        if not target.is_relative_to(directory):
            tree.files_outside = True
        if resource:
            tree.resource_files.append(target)
            tree.listed_in.setdefault(target, directory)

    for key in ("resources", "bases", "components"):
        for i, entry in enumerate(as_list(doc.get(key))):
            ref(entry, key, i, allow_dir=True, resource=True)
    for i, patch in enumerate(as_list(doc.get("patches")) + as_list(doc.get("patchesJson6902"))):
        key = "patches" if i < len(as_list(doc.get("patches"))) else "patchesJson6902"
        index = i if key == "patches" else i - len(as_list(doc.get("patches")))
        if isinstance(patch, dict) and "path" in patch:
            ref(patch["path"], key, index, allow_dir=False)
        elif isinstance(patch, str) and "\n" not in patch and ":" not in patch:
            # `patches: [./deployment.yaml]`, which kustomize 5 refuses (PA901): still a
            # patch file of this kustomization, not a manifest it forgot to list
            ref(patch, key, index, allow_dir=False)
    for i, entry in enumerate(as_list(doc.get("patchesStrategicMerge"))):
        if isinstance(entry, str) and "\n" not in entry and ":" not in entry:
            ref(entry, "patchesStrategicMerge", i, allow_dir=False)
    for gen in ("configMapGenerator", "secretGenerator"):
        for i, item in enumerate(as_list(doc.get(gen))):
            if not isinstance(item, dict):
                continue
            for j, entry in enumerate(as_list(item.get("files"))):
                if isinstance(entry, str):
                    ref(generator_file(entry), gen, i, "files", j, allow_dir=False)
            for j, entry in enumerate(as_list(item.get("envs"))):
                ref(entry, gen, i, "envs", j, allow_dir=False)
            if isinstance(item.get("env"), str):
                ref(item["env"], gen, i, "env", allow_dir=False)
    for key in ("crds", "configurations", "generators", "transformers", "validators"):
        for i, entry in enumerate(as_list(doc.get(key))):
            if isinstance(entry, str) and "\n" not in entry:
                ref(entry, key, i, allow_dir=True)
    for i, item in enumerate(as_list(doc.get("replacements"))):
        if isinstance(item, dict) and isinstance(item.get("path"), str):
            ref(item["path"], "replacements", i, allow_dir=False)
    if isinstance(get(doc, "openapi", "path"), str):
        ref(doc["openapi"]["path"], "openapi", "path", allow_dir=False)
    if doc.get("helmCharts") or doc.get("helmChartInflationGenerator"):
        # Not fatal: the rest of the kustomization is built without the chart.
        charts = [str(c.get("name")) for c in as_list(doc.get("helmCharts"))
                  if isinstance(c, dict) and c.get("name")]
        tree.helm_charts.append(problem(
            shown, f"helmCharts{' ' + ', '.join(charts) if charts else ''} not inflated: that "
            "needs kustomize --enable-helm, which runs a helm binary; the chart's objects are "
            "not read (the rest of the kustomization is; the values of a chart from a Helm "
            "repository are read for database connections only). Point pool-advisor at the "
            "chart, with its values, to read them", line=at("helmCharts"),
            program="kustomize"))
    tree.layers.append(Layer(directory=directory, file=kfile, doc=doc, shown=shown))


# A helmCharts entry as an object of the build that holds it (kustomize's own name for
# the generator): its values are read for where the release connects, as a Flux
# HelmRelease's are (advisor.read.releases), so it is a client of unknown size.
CHART_KIND = "HelmChartInflationGenerator"
CHART_API = "builtin"


def chart_objects(root: Root, tree: Tree) -> tuple[list[K8sObject], list[ConfigProblem]]:
    """The tree's helmCharts entries of a chart from a Helm repository (a chart of the
    repository, under chartHome, is not one), each with its values: body `spec` is the
    entry (valuesInline at its lines), `values` the documents of valuesFile and
    additionalValuesFiles in that order, `valuesPaths` their files. The namespace is the
    one its objects end in: the built kustomization's `namespace:`, else that of the
    kustomization holding the entry, else the entry's own."""
    out: list[K8sObject] = []
    problems: list[ConfigProblem] = []
    top_ns = tree.layers[-1].doc.get("namespace") if tree.layers else None
    for layer in tree.layers:
        for i, entry in enumerate(as_list(layer.doc.get("helmCharts"))):
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                continue
            home = str(entry.get("chartHome") or "charts")
            if not entry.get("repo") or (layer.directory / home / entry["name"]
                                         / "Chart.yaml").is_file():
                continue
            line0 = line_of(layer.doc, "helmCharts", i)
            values, paths = _chart_values(root, layer, entry, line0, problems)
            namespace = top_ns or layer.doc.get("namespace") or entry.get("namespace")
            out.append(K8sObject(
                kind=CHART_KIND, api_version=CHART_API,
                name=str(entry.get("releaseName") or entry["name"]),
                namespace=str(namespace) if namespace else None,
                body={"spec": entry, "values": values, "valuesPaths": paths},
                path=layer.shown, line=line0 + 1 if line0 is not None else 1,
                origin=f"helmCharts:{layer.shown}"))
    return out, problems


def _chart_values(root: Root, layer: Layer, entry: dict, line0: int | None,
                  problems: list[ConfigProblem]) -> tuple[list[Any], list[str]]:
    """The documents of a helmCharts entry's values files, and their files."""
    files = [("valuesFile", entry.get("valuesFile"))]
    files += [("additionalValuesFiles", f) for f in as_list(entry.get("additionalValuesFiles"))]
    values: list[Any] = []
    paths: list[str] = []
    for key, name in files:
        if not isinstance(name, str) or not name.strip():
            continue
        where = f"{key} {name!r} of helmCharts {entry['name']}"
        if is_remote(name):
            problems.append(problem(layer.shown, f"{where} not fetched (pool-advisor does "
                                    "not fetch from the network): its database hosts are "
                                    "not read", line=line0 + 1 if line0 is not None else None))
            continue
        try:
            target = root.resolve(name.strip(), relative_to=layer.directory)
            text = root.read_text(target)
        except InputError as exc:
            problems.append(problem(layer.shown, f"{where} not read: {exc.message}",
                                    line=line0 + 1 if line0 is not None else None))
            continue
        shown = root.rel(target)
        docs, found = load_yaml_stream(text, shown)
        problems += found
        if docs and isinstance(docs[0][0], dict):
            values.append(docs[0][0])
            paths.append(shown)
    return values, paths


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else []


def problem(path: str, message: str, *, fatal: bool = False, line: int | None = None,
            program: str = "kustomize") -> ConfigProblem:
    return ConfigProblem(location=Location(path=path, line=line), message=message,
                         fatal=fatal, program=program)


class KustomizeReads(Struct):
    skip: set[Path] = field(default_factory=set)  # not read as plain manifests
    # An unlisted manifest in the folders of one built kustomization only: deployed (by
    # hand) with it, so it joins that kustomization's environment.
    beside: dict[Path, Path] = field(default_factory=dict)  # manifest -> leaf
    # Every unlisted manifest read as plain: shown path -> (its kustomization's folder,
    # shown; the notice saying so). A Flux-built folder leaves it out again
    # (repository._flux_unlisted), and its notice with it.
    unlisted: dict[str, tuple[str, str]] = field(default_factory=dict)
    # A kustomization folder no built one uses -> the notice saying so; one a Flux
    # Kustomization adds as a component is used after all (repository._flux_components).
    unused: dict[str, str] = field(default_factory=dict)
    # Each built kustomization's scan, by its folder (resolved): its render scans it once
    # (advisor.read.render.kustomize.render_kustomization `scanned`).
    trees: dict[Path, Tree] = field(default_factory=dict)

    @property
    def notices(self) -> list[str]:
        return [notice for _home, notice in self.unlisted.values()] + list(self.unused.values())


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
    out = KustomizeReads()
    for leaf in leaves:
        tree = Tree()
        top = root.real(leaf)
        scan(root, top, tree, set(), depth=0)
        out.trees[top] = tree
        read |= tree.files
        for layer in tree.layers:
            users.setdefault(layer.directory, []).append(leaf)
    homes = {root.real(d) for d in every}
    unused: dict[Path, int] = {}
    for manifest in manifests:
        real = root.real(manifest)
        # the deepest kustomization folder holding it (a lookup per parent, not a test
        # per folder: 117,000 of them in gavinmcfall/home-ops, 1.8 s)
        home = next((d for d in real.parents if d in homes), None)
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
            out.unlisted[root.rel(manifest)] = (root.rel(home), (
                f"kustomize: {root.rel(manifest)} is in {root.rel(home)} but its kustomization "
                "does not list it, so kustomize would not deploy it; read as a plain manifest"
                + (f" deployed with {root.rel(built_by[0])}"
                   if len(built_by) == 1 and built_by[0] != home else "")))
    for home, count in sorted(unused.items()):
        out.unused[root.rel(home)] = (f"kustomize: {root.rel(home)} is a kustomization that "
                                      f"no built kustomization uses; its {count} YAML file(s) "
                                      "are not read")
    return out
