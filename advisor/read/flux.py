"""Flux Kustomization (kustomize.toolkit.fluxcd.io) `spec.targetNamespace`: Flux sets
that namespace on every namespaced object it builds from `spec.path`, so the Secrets,
Services and releases of an app folder whose files name no namespace are read in the
namespace they are deployed to (and two apps' same-named objects are not taken for
alternatives of one another).

Pure functions over already-loaded objects; whether a folder exists is asked through
the `resolve` callable the caller gives.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from typing import Any

from msgspec.structs import replace

from advisor.read.releases import FLUX_KUSTOMIZE_GROUP
from advisor.read.sources.k8s import K8sObject, get

# Kinds that have no namespace: Flux leaves them as they are.
CLUSTER_SCOPED = frozenset({
    "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
    "PersistentVolume", "StorageClass", "PriorityClass", "IngressClass", "RuntimeClass",
    "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "APIService",
    "ClusterIssuer", "ClusterSecretStore", "ClusterExternalSecret", "ClusterPolicy",
    "CSIDriver", "VolumeSnapshotClass", "Node"})


def is_flux_kustomization(obj: K8sObject) -> bool:
    return obj.kind == "Kustomization" and obj.api_version.startswith(FLUX_KUSTOMIZE_GROUP)


def built_by(obj: K8sObject, resolve: Callable[[str], str | None]) -> str | None:
    """The folder Flux Kustomization `obj` builds (`spec.path`, as `resolve` gives it);
    None for a path that still holds `${` or leads nowhere."""
    path = get(obj.body, "spec", "path")
    return resolve(path) if isinstance(path, str) and "${" not in path else None


def builders(objects: list[K8sObject], resolve: Callable[[str], str | None]
             ) -> dict[str, K8sObject]:
    """What each Flux Kustomization builds -> that Kustomization: the folder of its
    `spec.path` (as `resolve` gives it) for the first one building a folder, and an
    instance label (`instance_label`) for each further one whose build differs (its own
    postBuild, targetNamespace or components: a template folder each Kustomization makes
    a database Cluster of, JJGadgets/Biohazard's pg-<app>). One that builds it the same
    way is the same build."""
    out: dict[str, K8sObject] = {}
    builds: dict[str, list[tuple[Any, Any, Any]]] = {}
    for obj in objects:
        folder = built_by(obj, resolve) if is_flux_kustomization(obj) else None
        if folder is None:
            continue
        build = (get(obj.body, "spec", "postBuild"), get(obj.body, "spec", "targetNamespace"),
                 get(obj.body, "spec", "components"))
        earlier = builds.setdefault(folder, [])
        if build in earlier:
            continue
        earlier.append(build)
        out[folder if len(earlier) == 1 else instance_label(folder, obj)] = obj
    return out


_INSTANCE = " (as "


def instance_label(folder: str, ks: K8sObject) -> str:
    """The label of a folder as a further Kustomization builds it (a kustomize leaf of
    its own): `<folder> (as Kustomization/<ns>/<name>)`."""
    return f"{folder}{_INSTANCE}{ks.ref})"


def label_folder(label: str) -> str:
    """The folder of a leaf label, an instance label's included."""
    return label.split(_INSTANCE, 1)[0]


def target_namespaces(objects: list[K8sObject], resolve: Callable[[str], str | None]
                      ) -> dict[str, str]:
    """What a Flux Kustomization builds (a folder, or an instance label: `builders`: a
    folder built into two namespaces is two builds) -> its targetNamespace."""
    folders: dict[str, str] = {}
    for built, obj in builders(objects, resolve).items():
        namespace = get(obj.body, "spec", "targetNamespace")
        if isinstance(namespace, str) and namespace:
            folders[built] = namespace
    return folders


def namespace_of(place: str, folders: dict[str, str]) -> str | None:
    """The targetNamespace for a folder or file `place` (relative to the root): the one
    of the deepest built folder holding it."""
    folder = deepest_folder(place, folders)
    return None if folder is None else folders[folder]


def deepest_folder(place: str, folders: Container[str]) -> str | None:
    """The deepest of `folders` (relative to the root; "" is the root) that holds the
    folder or file `place`: `place` itself, else its parents, walked up (a lookup per
    level, not a scan of every folder per place: linking asks it of every Kustomization
    and leaf)."""
    parts = place.split("/") if place else []
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end])
        if candidate in folders:
            return candidate
    return "" if "" in folders else None


def in_namespace(objects: list[K8sObject], namespace: str) -> list[K8sObject]:
    """The objects as Flux applies them with targetNamespace `namespace`."""
    return [obj if obj.kind in CLUSTER_SCOPED or obj.namespace == namespace
            else replace(obj, namespace=namespace) for obj in objects]


def apply_target_namespaces(leaves: list[tuple[str, list[K8sObject]]],
                            plain: list[K8sObject], folders: dict[str, str]
                            ) -> tuple[list[tuple[str, list[K8sObject]]], list[K8sObject]]:
    """Kustomize outputs (by their folder) and plain manifests (by their file) in the
    namespace of the Flux Kustomization that builds them; rendered Helm charts are
    left alone (Flux does not build them from a path)."""
    if not folders:
        return leaves, plain
    out_leaves = []
    for label, objs in leaves:
        namespace = namespace_of(label, folders)
        out_leaves.append((label, in_namespace(objs, namespace) if namespace else objs))
    out_plain = []
    for obj in plain:
        namespace = namespace_of(obj.path, folders) if not obj.origin else None
        out_plain.append(obj if namespace is None or obj.kind in CLUSTER_SCOPED
                         else replace(obj, namespace=namespace))
    return out_leaves, out_plain


def built_folders(objects: list[K8sObject], resolve: Callable[[str], str | None]) -> set[str]:
    """The folders of the repository Flux Kustomizations build (`spec.path`)."""
    return {label_folder(built) for built in builders(objects, resolve)}


def components_by_folder(objects: list[K8sObject], resolve: Callable[[str], str | None]
                         ) -> dict[str, tuple[K8sObject, list[str]]]:
    """What a Flux Kustomization builds (a folder, or an instance label: `builders`) ->
    that Kustomization and its `spec.components` (paths relative to the folder), which
    Flux adds to the folder's kustomization.yaml before it builds: a shared component
    that makes each app's database Cluster (joryirving/home-ops)."""
    out: dict[str, tuple[K8sObject, list[str]]] = {}
    for built, obj in builders(objects, resolve).items():
        found = get(obj.body, "spec", "components")
        components = [c for c in found if isinstance(c, str) and c.strip()] \
            if isinstance(found, list) else []
        if components:
            out[built] = (obj, components)
    return out


def clusters(plain: list[K8sObject], leaves: list[tuple[str, list[K8sObject]]],
             resolve: Callable[[str], str | None]) -> dict[str, str]:
    """Kustomize leaf (its folder) -> the cluster Flux builds it for, named by the folder
    that holds all of that cluster's folders (kubernetes/main). A cluster is what one
    Flux Kustomization reaches through the ones it builds: where each Kustomization is
    read (the leaf that renders it, else its file's folder) is joined to the folder it
    builds (`spec.path`), and each of these and each leaf to the deepest built folder
    holding it. A folder two clusters build (a shared apps/base) joins them into one.
    Leaves no Kustomization builds are left out."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    built: set[str] = set()
    homes = [(obj.path.rsplit("/", 1)[0] if "/" in obj.path else "", obj) for obj in plain
             if is_flux_kustomization(obj)]
    homes += [(label, obj) for label, objs in leaves for obj in objs
              if is_flux_kustomization(obj)]
    for home, obj in homes:
        folder = built_by(obj, resolve)
        if folder is not None:
            built.add(folder)
            parent[find(home)] = find(folder)
    # where a Kustomization is read is itself built by the one whose folder holds it
    for home in {home for home, _obj in homes} | {leaf for leaf, _objs in leaves}:
        folder = deepest_folder(label_folder(home), built)
        if folder is not None:
            parent[find(home)] = find(folder)
    members: dict[str, list[str]] = {}
    for folder in list(parent):
        members.setdefault(find(folder), []).append(folder)
    names = {top: _common_folder(folders) for top, folders in members.items()}
    return {leaf: names[find(leaf)] for leaf, _objs in leaves
            if deepest_folder(label_folder(leaf), built) is not None}


def _common_folder(folders: list[str]) -> str:
    """The deepest folder holding all of `folders` ("" is the root): a cluster's name."""
    split = [f.split("/") if f else [] for f in folders]
    common: list[str] = []
    for parts in zip(*split, strict=False):
        if any(p != parts[0] for p in parts):
            break
        common.append(parts[0])
    return "/".join(common)
