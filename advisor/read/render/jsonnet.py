"""Argo CD's built-in Jsonnet (a plain directory source's `*.jsonnet` files), rendered
when a Jsonnet evaluator is installed: the optional `jsonnet` extra (PyPI `jsonnet`,
module `_jsonnet`). Without it the files are named and not read (engine.repository).

As Argo CD's reposerver (findManifests, makeJsonnetVm): each file is evaluated on its
own, its import paths the app folder then `directory.jsonnet.libs` (relative to the
repository root), with the TLAs and extVars of `directory.jsonnet` after Argo CD's
`$ARGOCD_APP_*` substitution; the result is one object or an array of them. Imports
are kept inside the repository (the import callback), as every other read is.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

from advisor.model import ConfigProblem, Location
from advisor.read.sources.k8s import K8sObject, get


def available() -> bool:
    """Whether the optional evaluator is installed (never imported to ask)."""
    try:
        return importlib.util.find_spec("_jsonnet") is not None
    except (ImportError, ValueError):
        return False


def substitute(value: str, env: dict[str, str]) -> str:
    """Argo CD's Env.Envsubst of `$NAME` / `${NAME}` for the build variables known
    here; the others are left as written."""
    def one(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return env.get(name, m.group(0))
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", one, value)


def _importer(top: Path):
    """An import callback that resolves as jsonnet's file importer does (the importing
    file's folder, then the import paths) but never outside `top`."""
    def load(base: str, rel: str, jpaths: list[str]) -> tuple[str, bytes]:
        for folder in [base, *jpaths]:
            path = (Path(folder) / rel).resolve()
            if path != top and top not in path.parents:
                continue
            if path.is_file():
                return str(path), path.read_bytes()
        raise RuntimeError(f"import {rel!r} not found in the repository")
    return load


def _objects(value: Any) -> list[dict]:
    items = value if isinstance(value, list) else [value]
    out: list[dict] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if str(item.get("kind", "")).endswith("List") and isinstance(item.get("items"), list):
            out += [i for i in item["items"] if isinstance(i, dict)]
        else:
            out.append(item)
    return out


def _kind_line(text: str, kind: str) -> int:
    """The line of the file that names `kind` (`kind: 'Cluster'`): where the object's
    numbers are cited, as the rendered JSON has no lines of the file; else line 1."""
    m = re.search(r"""^.*\bkind['"]?\s*:\s*['"]""" + re.escape(kind) + r"""['"]""",
                  text, re.M)
    return text.count("\n", 0, m.start()) + 1 if m else 1


def render(top: Path, shown: str, folder: str, libs: tuple[str, ...],
           tlas: tuple[tuple[str, str, bool], ...],
           ext_vars: tuple[tuple[str, str, bool], ...], env: dict[str, str]
           ) -> tuple[list[K8sObject], list[ConfigProblem]]:
    """The Kubernetes objects `shown` (relative to `top`) renders to, built from
    `folder`; a file that does not evaluate is a problem at the file (PA901)."""
    import _jsonnet  # the optional extra: the caller asked available()

    def split(pairs: tuple[tuple[str, str, bool], ...], code: bool) -> dict[str, str]:
        return {n: substitute(v, env) for n, v, c in pairs if c is code}

    path = top / shown
    jpaths = [str(top / folder), *(str(top / lib) for lib in libs)]
    load = _importer(top.resolve())
    try:
        text = path.read_text(encoding="utf-8")
        out = _jsonnet.evaluate_file(
            str(path), jpathdir=jpaths,
            import_callback=lambda base, rel: load(base, rel, jpaths),
            tla_vars=split(tlas, False), tla_codes=split(tlas, True),
            ext_vars=split(ext_vars, False), ext_codes=split(ext_vars, True))
        value = json.loads(out)
    except (RuntimeError, OSError, UnicodeDecodeError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return [], [ConfigProblem(location=Location(path=shown, line=1),
                                  message=f"jsonnet: {shown} does not evaluate ({first}): "
                                          "the objects it renders are in no budget")]
    objects = []
    for body in _objects(value):
        kind, name = body.get("kind"), get(body, "metadata", "name")
        if not isinstance(kind, str) or not isinstance(name, str):
            continue
        ns = get(body, "metadata", "namespace")
        objects.append(K8sObject(kind=kind, api_version=str(body.get("apiVersion", "")),
                                 name=name, namespace=str(ns) if ns else None, body=body,
                                 path=shown, line=_kind_line(text, kind),
                                 origin=f"jsonnet:{shown}"))
    return objects, []
