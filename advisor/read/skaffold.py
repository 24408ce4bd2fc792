"""Which kustomizations one skaffold run deploys together: a config's
`deploy.kustomize.paths` (skaffold/v2) or `manifests.kustomize.paths` (v3, v4), with those
of every config it `requires`, are applied by one `skaffold run` (skaffold.dev/docs/design/
config/#multiple-configuration-support). Profiles are left out: a profile replaces the
paths for one run, an alternative, not a part deployed with the rest."""

from __future__ import annotations

import posixpath
from typing import Any


def _join(folder: str, path: str) -> str:
    joined = posixpath.normpath(posixpath.join(folder, path)) if folder else \
        posixpath.normpath(path)
    return "" if joined == "." else joined


def _kustomize_paths(doc: dict) -> list[str]:
    """The kustomization folders a config applies outside its profiles; `kustomize:` with
    no paths is skaffold's default, the config's own folder."""
    found: list[str] = []
    for section in ("deploy", "manifests"):
        part = doc.get(section)
        kustomize = part.get("kustomize") if isinstance(part, dict) else None
        if not isinstance(kustomize, dict):
            continue
        paths = kustomize.get("paths")
        if paths is None:
            found.append(".")
        elif isinstance(paths, list):
            found += [p for p in paths if isinstance(p, str)]
    return found


def _required(doc: dict, folder: str) -> list[str]:
    """The skaffold files a config requires (`requires[].path`: a folder holding
    skaffold.yaml, or the file); remote (git) ones are not in the repository."""
    out = []
    for req in doc.get("requires") or []:
        if not isinstance(req, dict) or not isinstance(req.get("path"), str):
            continue
        path = _join(folder, req["path"])
        out.append(path if path.endswith((".yaml", ".yml")) else _join(path, "skaffold.yaml"))
    return out


def deployed_together(files: dict[str, list[Any]]) -> dict[str, str]:
    """Kustomization folder -> the skaffold file whose run deploys it, for each file
    (repository-relative path -> its YAML documents) that no other file requires.
    A file that deploys one folder only groups nothing and is left out."""
    own: dict[str, list[str]] = {}
    needs: dict[str, list[str]] = {}
    for path, docs in files.items():
        folder = posixpath.dirname(path)
        configs = [d for d in docs if isinstance(d, dict)]
        own[path] = [_join(folder, p) for d in configs for p in _kustomize_paths(d)]
        needs[path] = [r for d in configs for r in _required(d, folder)]
    required = {r for rs in needs.values() for r in rs}
    out: dict[str, str] = {}
    for top in sorted(p for p in files if p not in required):
        folders: list[str] = []
        seen: set[str] = set()
        stack = [top]
        while stack:
            path = stack.pop()
            if path in seen or path not in files:
                continue
            seen.add(path)
            folders += own[path]
            stack += needs[path]
        if len(set(folders)) > 1:
            for folder in folders:
                out.setdefault(folder, f"skaffold {top}")
    return out
