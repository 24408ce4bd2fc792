"""SQL files a PostgreSQL image runs as its initialisation scripts, not as a client.

The official image's entrypoint runs every *.sql (and *.sql.gz, *.sh) in
/docker-entrypoint-initdb.d once, when the data directory is empty, with psql over the
server's local socket while it still listens on no TCP port (docker-library/postgres
docker-entrypoint.sh `docker_process_init_files`, `docker_temp_server_start`); Bitnami's
image does the same for /docker-entrypoint-initdb.d and /docker-entrypoint-preinitdb.d
(bitnami/containers postgresql libpostgresql.sh `postgresql_custom_init_scripts`). No
pooler is on that path, and a session SET in such a one-shot psql session leaks to no one:
these files are not client SQL for the PA4xx rules (as pg_dump preambles are not).

Where the files get there, read here: a Dockerfile `COPY`/`ADD` to the folder, a compose
volume (short `src:/docker-entrypoint-initdb.d...` or long `source:`/`target:`), and a
Kubernetes volume mounted there from a ConfigMap that a kustomization's
configMapGenerator builds from files. A ConfigMap written inline holds its SQL in the
manifest (never scanned as SQL); a Helm template's `.Files.Get` is not followed.

    initdb_scripts(root, files, manifests, candidates) -> {sql path: where it is put}
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from advisor.lazyregex import lazy
from advisor.read.fs import InputError, Root, rel_inside

_MARK = "docker-entrypoint-"
_INITDB = r"/docker-entrypoint-(?:pre)?initdb\.d"
# COPY [--chown=..] [--from=..] src... dest (shell form; the JSON form below)
_COPY = lazy(rf"^\s*(?:COPY|ADD)\s+(?P<args>.*?)\s+['\"]?{_INITDB}(?:/\S*)?['\"]?\s*$",
             re.IGNORECASE | re.MULTILINE)
_COPY_JSON = lazy(r"^\s*(?:COPY|ADD)\s+(?:--\S+\s+)*\[(?P<args>[^\]]*)\]\s*$",
                  re.IGNORECASE | re.MULTILINE)
# compose short syntax `./init:/docker-entrypoint-initdb.d[/x.sql][:ro]`
_SHORT = lazy(rf"(?P<src>[^\s\"'\[\],:]+):{_INITDB}(?:/[^\s\"':,\]]*)?")
# compose long syntax: `source:` then `target:` of one volume (either order, adjacent keys)
_LONG = lazy(rf"source:\s*['\"]?(?P<a>[^\s'\"]+)['\"]?\s*\n(?:[ \t]*(?!-)[\w.-]+:.*\n)*?"
             rf"[ \t]*target:\s*['\"]?{_INITDB}"
             rf"|target:\s*['\"]?{_INITDB}[^\n]*\n(?:[ \t]*(?!-)[\w.-]+:.*\n)*?"
             rf"[ \t]*source:\s*['\"]?(?P<b>[^\s'\"]+)")
_INITDB_PATH = lazy(_INITDB)


def is_dockerfile(name: str) -> bool:
    lower = name.lower()
    return (lower.startswith(("dockerfile", "containerfile"))
            or lower.endswith((".dockerfile", ".containerfile")))


def dockerfile_sources(text: str) -> list[tuple[str, int]]:
    """(source, line) of each COPY/ADD whose destination is an init folder."""
    found: list[tuple[str, int]] = []
    for m in _COPY.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        if "--from" in m.group("args") or "[" in m.group("args"):
            continue  # from another stage or image (not a file here), or the JSON form
        found += [(a.strip("'\""), line) for a in m.group("args").split()
                  if not a.startswith("--")]
    for m in _COPY_JSON.finditer(text):
        parts = [p.strip().strip("'\"") for p in m.group("args").split(",")]
        if len(parts) > 1 and _INITDB_PATH.match(parts[-1]) and "--from" not in m.group():
            line = text.count("\n", 0, m.start()) + 1
            found += [(p, line) for p in parts[:-1]]
    return found


def compose_sources(text: str) -> list[tuple[str, int]]:
    """(host path, line) of each volume mounted at an init folder."""
    found = [(m.group("src"), text.count("\n", 0, m.start()) + 1)
             for m in _SHORT.finditer(text)]
    found += [(m.group("a") or m.group("b"), text.count("\n", 0, m.start()) + 1)
              for m in _LONG.finditer(text)]
    return [(src, line) for src, line in found if src.startswith((".", "/")) or "/" in src
            or "." in src]  # a bare word is a named volume: no file of the repository


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def _dict(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _configmaps_mounted(doc: object) -> list[str]:
    """Names of the ConfigMaps a pod (template) mounts at an init folder."""
    spec = _dict(_dict(doc).get("spec"))
    pod = _dict(_dict(spec.get("template")).get("spec")) or spec
    at = {str(_dict(m).get("name"))
          for c in [*_list(pod.get("containers")), *_list(pod.get("initContainers"))]
          for m in _list(_dict(c).get("volumeMounts"))
          if _INITDB_PATH.match(str(_dict(m).get("mountPath", "")))}
    names = []
    for vol in map(_dict, _list(pod.get("volumes"))):
        if str(vol.get("name")) not in at:
            continue
        maps = [vol.get("configMap")] + [_dict(src).get("configMap") for src in
                                          _list(_dict(vol.get("projected")).get("sources"))]
        names += [str(m["name"]) for m in map(_dict, maps) if m.get("name")]
    return names


def _generated_files(doc: object, names: set[str]) -> list[tuple[str, str]]:
    """(ConfigMap name, file) of a kustomization's configMapGenerator entries named in
    `names` (`key=path` keeps the path)."""
    return [(str(gen["name"]), str(f).split("=", 1)[-1])
            for gen in map(_dict, _list(_dict(doc).get("configMapGenerator")))
            if str(gen.get("name")) in names for f in _list(gen.get("files"))]


def _line_of(text: str, needle: str) -> int:
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def initdb_scripts(root: Root, files: list[Path], manifests: list[Path],
                   kustomize_dirs: list[Path], candidates: list[str]) -> dict[str, str]:
    """The SQL files among `candidates` (paths relative to the root) that an init folder
    receives -> where ("Dockerfile.postgres:2"). `files`: the repository's other files
    (Dockerfiles among them); `manifests`: its YAML files (compose, Kubernetes);
    `kustomize_dirs`: the folders of its kustomizations. Every manifest is read only
    when a kustomization generates a ConfigMap (the only kind whose mount can name a
    file here)."""
    sql = [c for c in candidates if c.lower().endswith(".sql")]
    if not sql:
        return {}
    sources: list[tuple[str, str, str]] = []  # (source, folder it is relative to, where)
    for p in files:
        if is_dockerfile(p.name):
            text, rel = _text(root, p)
            if _MARK in text:
                # the build context is not known here: the Dockerfile's folder or the root
                sources += [(s, base, f"{rel}:{line}") for s, line in dockerfile_sources(text)
                            for base in (_folder(rel), ".")]
    from advisor.read.apps.locate import is_build_file

    for p in manifests:
        if is_build_file(p.name):
            text, rel = _text(root, p)
            if _MARK in text:
                sources += [(s, _folder(rel), f"{rel}:{line}")
                            for s, line in compose_sources(text)]
    kustomizations = [(rel, text) for d in kustomize_dirs for k in _KUSTOMIZATIONS
                      if (d / k).is_file() for text, rel in [_text(root, d / k)]
                      if "configMapGenerator" in text]
    if kustomizations:
        texts = [(rel, text) for p in manifests for text, rel in [_text(root, p)]
                 if _MARK in text]
        sources += _kustomize_sources(texts + kustomizations)
    found: dict[str, str] = {}
    for src, base, where in sources:
        pattern = _joined(base, src)
        if pattern is None:
            continue
        for c in sql:
            if c not in found and (c == pattern or c.startswith(pattern.rstrip("/") + "/")
                                   or fnmatchcase(c, pattern)):
                found[c] = where
    return found


_KUSTOMIZATIONS = frozenset({"kustomization.yaml", "kustomization.yml", "Kustomization"})


def _folder(rel: str) -> str:
    return PurePosixPath(rel).parent.as_posix()


def _text(root: Root, p: Path) -> tuple[str, str]:
    try:
        return root.read_text(p), root.rel(p)
    except InputError:
        return "", root.rel(p)  # said by the reader that needs the file


def _kustomize_sources(texts: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    from advisor.read.yamlpos import YAMLError, load_all

    docs: list[tuple[str, str, object]] = []
    for rel, text in texts:
        try:
            docs += [(rel, text, d) for d in load_all(text)]
        except (YAMLError, RecursionError):  # a template or broken YAML: said elsewhere
            continue
    mounted: dict[str, str] = {}
    for rel, text, d in docs:
        for name in _configmaps_mounted(d):
            mounted.setdefault(name, f"{rel}:{_line_of(text, _MARK)}")
    if not mounted:
        return []
    return [(f, PurePosixPath(rel).parent.as_posix(), f"{mounted[name]} (ConfigMap {name}, {rel})")
            for rel, _text, d in docs for name, f in _generated_files(d, set(mounted))]


def _joined(base: str, src: str) -> str | None:
    """`src` relative to `base` as a path from the root; None when it leaves the root."""
    if src.startswith("/"):
        return None  # an absolute host path: not this repository's file
    joined = rel_inside(src if base in ("", ".") else f"{base}/{src}")
    return None if joined is None else joined or "."
