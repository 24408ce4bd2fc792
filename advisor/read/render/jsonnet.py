"""Argo CD's built-in Jsonnet (a plain directory source's `*.jsonnet` files), rendered
when a Jsonnet evaluator is installed: the optional `jsonnet` extra (PyPI `jsonnet`,
module `_jsonnet`). Without it the files are named and not read (engine.repository).

As Argo CD's reposerver (findManifests, makeJsonnetVm): each file is evaluated on its
own, its import paths the app folder then `directory.jsonnet.libs` (relative to the
repository root), with the TLAs and extVars of `directory.jsonnet` after Argo CD's
`$ARGOCD_APP_*` substitution; the result is one object or an array of them. Imports
are kept inside the repository (the import callback), as every other read is.

The evaluator is C++ that holds the GIL, so a looping or memory-hungry file cannot be
interrupted in-process: each file is evaluated in a child interpreter with a wall-clock
timeout and an address-space limit, and one that runs out of either is a PA901 at the
file like one that does not evaluate (before, one such file hung the whole run).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from advisor.model import ConfigProblem, Location
from advisor.read.sources.k8s import K8sObject, get

TIMEOUT_S = 10.0  # wall-clock seconds one file may take to evaluate
MEMORY_BYTES = 2 << 30  # the child's address space (RLIMIT_AS)
_MAX_STACK = 500  # jsonnet's own default, passed so it is not left to the binding
# the child: this package importable, then _child() reads a request on stdin
_CHILD = ("import sys; sys.path.insert(0, {top!r}); "
          "from advisor.read.render.jsonnet import _child; _child()")


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
           ext_vars: tuple[tuple[str, str, bool], ...], env: dict[str, str],
           timeout: float = TIMEOUT_S, memory: int = MEMORY_BYTES
           ) -> tuple[list[K8sObject], list[ConfigProblem]]:
    """The Kubernetes objects `shown` (relative to `top`) renders to, built from
    `folder`; a file that does not evaluate, or not within `timeout` seconds and
    `memory` bytes, is a problem at the file (PA901)."""
    def split(pairs: tuple[tuple[str, str, bool], ...], code: bool) -> dict[str, str]:
        return {n: substitute(v, env) for n, v, c in pairs if c is code}

    path = top / shown
    request = {"top": str(top.resolve()), "path": str(path),
               "jpaths": [str(top / folder), *(str(top / lib) for lib in libs)],
               "tla_vars": split(tlas, False), "tla_codes": split(tlas, True),
               "ext_vars": split(ext_vars, False), "ext_codes": split(ext_vars, True),
               "memory": memory}

    def failed(why: str) -> tuple[list[K8sObject], list[ConfigProblem]]:
        return [], [ConfigProblem(location=Location(path=shown, line=1),
                                  message=f"jsonnet: {shown} {why}: "
                                          "the objects it renders are in no budget")]
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return failed(f"does not evaluate ({type(exc).__name__})")
    out = _evaluate(request, timeout)
    if isinstance(out, _Expired):
        return failed(f"did not evaluate within {timeout:g} s (stopped)")
    if isinstance(out, str):
        return failed(f"does not evaluate ({out})")
    value = out.value
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


class _Expired:
    """An evaluation stopped at its timeout."""


class _Value:
    def __init__(self, value: Any) -> None:
        self.value = value


def _evaluate(request: dict[str, Any], timeout: float) -> _Value | _Expired | str:
    """The JSON `request`'s file evaluated in a child interpreter: its value, _Expired,
    or why it failed (the first line of the evaluator's error)."""
    top = str(Path(__file__).resolve().parents[3])
    try:
        done = subprocess.run([sys.executable, "-I", "-c", _CHILD.format(top=top)],
                              input=json.dumps(request), capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:  # run() has killed the child
        return _Expired()
    except OSError as exc:
        return f"the evaluator did not start: {exc}"
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        # killed by the memory limit (bad_alloc aborts) or a crash
        return (f"the evaluator stopped with exit status {done.returncode}: past the "
                f"{request['memory'] >> 20} MiB memory limit, or crashed")
    if "error" in answer:
        return str(answer["error"])
    try:
        return _Value(json.loads(answer["out"]))
    except (KeyError, TypeError, ValueError) as exc:
        return f"not JSON: {exc}"


def _child() -> None:
    """The child's side of _evaluate: limits itself, evaluates, answers on stdout."""
    import resource

    import _jsonnet

    request = json.loads(sys.stdin.read())
    with contextlib.suppress(ValueError, OSError):  # a lower hard limit holds instead
        resource.setrlimit(resource.RLIMIT_AS, (request["memory"], request["memory"]))
    jpaths = request["jpaths"]
    load = _importer(Path(request["top"]))
    try:
        out = _jsonnet.evaluate_file(
            request["path"], jpathdir=jpaths, max_stack=_MAX_STACK,
            import_callback=lambda base, rel: load(base, rel, jpaths),
            tla_vars=request["tla_vars"], tla_codes=request["tla_codes"],
            ext_vars=request["ext_vars"], ext_codes=request["ext_codes"])
        answer = {"out": out}
    except (RuntimeError, OSError, MemoryError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        answer = {"error": first}
    sys.stdout.write(json.dumps(answer))
