"""Jsonnet deployment sources: the `*.jsonnet` files an Argo CD Application's plain
directory source renders (advisor.read.argo_cd), read through the optional evaluator
(advisor.read.render.jsonnet) or, without it, named as not read; and `.jsonnet` files
that describe Kubernetes objects that no Application in the checked paths renders.

Before, both were skipped without a word: walnuts1018/infra, whose CloudNativePG
Clusters and Deployments are all jsonnet under an ApplicationSet, printed "no findings
(no PostgreSQL server found)" and exit 0, which a CI gate takes for a pass. A source not
read is a PA901 warning (as an unvendored chart that runs PostgreSQL is), so it is not.
"""

from __future__ import annotations

import os
import re
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.model import ConfigProblem, Location
from advisor.read.argo_cd import ArgoBuild
from advisor.read.fs import InputError, Root
from advisor.read.sources.k8s import K8sObject

if TYPE_CHECKING:
    from advisor.read.render.jsonnet import Evaluator

# the kinds a connection budget is made of: a Jsonnet file naming one of them deploys
# a server or a client
_BUDGET_KINDS = frozenset({
    "Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod", "ReplicaSet",
    "Cluster", "Pooler", "postgresql", "PostgresCluster", "PerconaPGCluster", "Rollout"})
_KIND = re.compile(r"""\bkind['"]?\s*:\s*['"](\w+)['"]""")
_API_VERSION = re.compile(r"""\bapiVersion['"]?\s*:""")
_SHOWN = 3  # folders or files named in a message; the rest counted


def _listing(top: Path, folder: str, dirs: bool) -> list[str]:
    try:
        with os.scandir(top / folder if folder else top) as entries:
            return sorted(e.name for e in entries if e.name != ".git"
                          and (e.is_dir(follow_symlinks=False) if dirs
                               else e.is_file(follow_symlinks=False)))
    except OSError:
        return []


def _named(items: list[str]) -> str:
    more = f" and {len(items) - _SHOWN} more" if len(items) > _SHOWN else ""
    return ", ".join(items[:_SHOWN]) + more


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _env(build: ArgoBuild) -> dict[str, str]:
    """Argo CD's build variables known from the Application (an ApplicationSet's name
    once its generator's path parameters are put in, else only the source path)."""
    from advisor.read.sources.k8s import get

    by = build.by
    env = {"ARGOCD_APP_SOURCE_PATH": build.folder}
    if build.app_name:
        env["ARGOCD_APP_NAME"] = build.app_name
    if by.kind == "Application":
        env["ARGOCD_APP_NAME"] = by.name
        ns = get(by.body, "spec", "destination", "namespace")
        if isinstance(ns, str) and ns:
            env["ARGOCD_APP_NAMESPACE"] = ns
    return env


def jsonnet_sources(root: Root, other_files: list[Path], every: list[K8sObject],
                    problems: list[ConfigProblem], notices: list[str]) -> list[K8sObject]:
    """The objects the Argo CD-rendered `.jsonnet` files among `other_files` make (none
    without the evaluator); what is not read goes to `problems` / `notices`."""
    files = sorted(root.rel(p) for p in other_files if p.name.endswith(".jsonnet"))
    if not files:
        return []
    claimed: set[str] = set()
    objects = _argo_cd(root, files, every, problems, notices, claimed)
    libs = sorted(root.rel(p) for p in other_files if p.name.endswith(".libsonnet"))
    _unrendered(root, [f for f in files if f not in claimed], problems, notices, libs)
    return objects


def _argo_cd(root: Root, files: list[str], every: list[K8sObject],
             problems: list[ConfigProblem], notices: list[str], claimed: set[str]
             ) -> list[K8sObject]:
    from advisor.read.argo_cd import argo_builds, is_argo_cd, rendered_jsonnet
    from advisor.read.releases import repo_folder
    from advisor.read.render import jsonnet
    from advisor.read.render.kustomize_tree import KUSTOMIZATION_FILES

    if not any(is_argo_cd(o) for o in every):
        return []
    top = root.path

    def resolve(path: str) -> str | None:
        return repo_folder(path, top.parts, lambda rel: (top / rel).is_dir())

    def plain(folder: str) -> bool:
        return not any((top / folder / name).is_file()
                       for name in (*KUSTOMIZATION_FILES, "Chart.yaml"))

    builds = argo_builds(every, resolve, partial(_listing, top, dirs=True),
                         partial(_listing, top, dirs=False))
    rendered = rendered_jsonnet(files, builds, plain)
    for _build, mine in rendered:
        claimed.update(mine)
    if not rendered:
        return []
    if not jsonnet.available():
        by_app: dict[int, tuple[K8sObject, list[str], list[str]]] = {}
        for build, mine in rendered:
            _obj, folders, held = by_app.setdefault(id(build.by), (build.by, [], []))
            folders.append(build.folder or ".")
            held += mine
        for obj, folders, held in by_app.values():
            what = (f"Argo CD {obj.kind} {obj.name} ({obj.path}:{obj.line}) renders "
                    f"{_plural(len(held), '.jsonnet file')} with its built-in Jsonnet "
                    f"(in {_named(folders)}), not read: no Jsonnet evaluator is installed "
                    "(pip install 'pool-advisor[jsonnet]')")
            # a finding when they name a workload or a server (their budget is not
            # known), else a notice (cert-manager's Issuers change no budget)
            if any(_kinds(root, f) & _BUDGET_KINDS for f in held):
                problems.append(ConfigProblem(
                    location=Location(path=obj.path, line=obj.line),
                    message=f"{what}, so the servers and clients they deploy are in no "
                            "budget"))
            else:
                notices.append(what)
        return []
    with jsonnet.Evaluator() as evaluator:  # one child for the run's files
        objects, count, done = _render_all(top, rendered, problems, evaluator)
    evaluated = len({key[0] for key in done})
    runs = f" ({count} evaluations: their TLAs or extVars differ)" if count > evaluated else ""
    notices.append(f"jsonnet: {_plural(evaluated, '.jsonnet file')}{runs} that Argo CD renders "
                   "evaluated with the `jsonnet` package; an object's numbers cite the "
                   "line of its file that names its kind")
    return objects


def _render_all(top: Path, rendered: list[tuple[ArgoBuild, list[str]]],
                problems: list[ConfigProblem], evaluator: Evaluator
                ) -> tuple[list[K8sObject], int, set[tuple]]:
    """The objects of every (file, inputs) the builds render, each evaluated once by
    `evaluator` (render.jsonnet.Evaluator); problems added to `problems`."""
    from advisor.read.render import jsonnet

    objects: list[K8sObject] = []
    count = 0
    done: set[tuple] = set()
    for build, mine in rendered:
        if build.unfilled:
            problems += [_templated(build, shown) for shown in mine]
            continue
        env = _env(build)
        tlas, ext_vars = _substituted(build.tlas, env), _substituted(build.ext_vars, env)
        for shown in mine:
            # the same file with the same inputs renders the same objects: once
            key = (shown, build.folder, build.jsonnet_libs, tlas, ext_vars)
            if key in done:
                continue
            done.add(key)
            objs, probs = jsonnet.render(top, shown, build.folder, build.jsonnet_libs,
                                         tlas, ext_vars, {}, evaluator=evaluator)
            objects += objs
            problems += probs
            count += 1
    return objects, count, done


def _substituted(pairs: tuple[tuple[str, str, bool], ...], env: dict[str, str]
                 ) -> tuple[tuple[str, str, bool], ...]:
    from advisor.read.render.jsonnet import substitute

    return tuple((n, substitute(v, env), c) for n, v, c in pairs)


def _templated(build: ArgoBuild, shown: str) -> ConfigProblem:
    """A file an ApplicationSet renders with a TLA or extVar that names a generator
    parameter not read here: evaluating it with the literal `{{...}}` would budget
    objects Argo CD never makes, so it is not rendered."""
    by = build.by
    return ConfigProblem(
        location=Location(path=shown, line=1),
        message=f"jsonnet: {shown} not rendered for Argo CD {by.kind} {by.name} "
                f"({by.path}:{by.line}): its {build.unfilled} is templated by a generator "
                "parameter not read: the objects it renders are in no budget")


def _kinds(root: Root, shown: str) -> set[str]:
    """The Kubernetes kinds a `.jsonnet` file names (`kind: 'Deployment'` beside an
    apiVersion), read without evaluating it."""
    try:
        text = root.read_text(shown)
    except InputError:
        return set()
    return set(_KIND.findall(text)) if _API_VERSION.search(text) else set()


_IMPORT = re.compile(r"""\bimport\s+['"]([^'"]+\.(?:lib|j)sonnet)['"]""")
_MAX_IMPORTS = 400  # library files followed from one run's unrendered files


def _resolve_import(shown: str, target: str, libs: list[str]) -> str | None:
    """Where `import 'target'` in `shown` leads: beside it, then in each folder above it
    (a `-J .` at any level), else the repository's one library whose path ends with it
    (a `-J lib` the Makefile passes: koskev/k8s imports 'database/db.libsonnet' from
    lib/); None when not in the repository or ambiguous."""
    folder = Path(shown).parent
    for base in (folder, *folder.parents):
        candidate = os.path.normpath((base / target).as_posix()).replace(os.sep, "/")
        if candidate in libs:
            return candidate
    ends = [lib for lib in libs if lib.endswith("/" + target.lstrip("./"))]
    return ends[0] if len(ends) == 1 else None


def _kinds_imported(root: Root, shown: str, libs: list[str], cache: dict[str, set[str]],
                    budget: list[int]) -> set[str]:
    """The kinds `shown` names itself or through the repository's `.libsonnet` files it
    imports, transitively (each file read once per run, at most _MAX_IMPORTS)."""
    if shown in cache:
        return cache[shown]
    cache[shown] = found = set(_kinds(root, shown))
    try:
        text = root.read_text(shown)
    except InputError:
        return found
    for target in _IMPORT.findall(text):
        lib = _resolve_import(shown, target, libs)
        if lib is None or budget[0] <= 0:
            continue
        budget[0] -= lib not in cache
        found |= _kinds_imported(root, lib, libs, cache, budget)
    return found


def _unrendered(root: Root, files: list[str], problems: list[ConfigProblem],
                notices: list[str], libs: list[str] | None = None) -> None:
    """`.jsonnet` files describing Kubernetes objects that no Argo CD Application in the
    checked paths renders: how they are rendered (which TLAs, which tool) is not known,
    so they are not evaluated; said, and a PA901 warning when they name a workload or a
    PostgreSQL server. A file that names no kind itself but calls a library of the
    repository that does (koskev/k8s: forgejo.jsonnet's `k8s.db.database(...)` from
    lib/database/db.libsonnet, a CloudNativePG Cluster from cnpg.libsonnet) counts too:
    before, those gave no server, no client and no word."""
    cache: dict[str, set[str]] = {}
    budget = [_MAX_IMPORTS]
    kinds = {shown: found for shown in files
             if (found := _kinds_imported(root, shown, libs or [], cache, budget))}
    if not kinds:
        return
    named = sorted(set().union(*kinds.values()))
    budget_files = [f for f, k in kinds.items() if k & _BUDGET_KINDS]
    what = (f"{_plural(len(kinds), '.jsonnet file')} ({_named(sorted(kinds))}) describe "
            f"Kubernetes objects ({_named(named)}), themselves or through the .libsonnet "
            "files they import, that no Argo CD Application in the "
            "checked paths renders, not read (Jsonnet is read only as an Application's "
            "source; check the folder that holds the Application too)")
    if budget_files:
        problems.append(ConfigProblem(
            location=Location(path=budget_files[0], line=1),
            message=f"{what}: the servers and clients they deploy are in no budget"))
    else:
        notices.append(what)
