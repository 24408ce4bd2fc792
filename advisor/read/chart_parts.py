"""Which files in a Helm chart's folder are the chart's, and which are manifests beside it.

What Helm makes of a chart folder (helm/helm@e9b85e4, pkg/chart/v2/loader/load.go
LoadFiles, the loader `helm template` and `helm package` use; directory.go LoadDir leaves
out what .helmignore names): Chart.yaml, Chart.lock, values.yaml, values.schema.json and
requirements.yaml/.lock are read; `templates/` is rendered; `charts/` holds the subcharts;
`crds/` is installed as it is (pkg/chart/v2/chart.go CRDObjects). Every other file is only
in `.Files`, which a template may read (pkg/engine/files.go: Get, GetBytes, Lines, Glob
with gobwas/glob and `/` as the separator). So a Kubernetes manifest in a chart's
examples/, docs/ or next to its Chart.yaml is never applied by `helm install`: it is
applied by hand, if at all (codecentric/helm-charts@57c2f8e keeps keycloakx's CloudNativePG
Cluster in charts/keycloakx/examples/cloudnative-pg/keycloak-cluster.yaml). A values file
in ci/ or examples/ is values, not a manifest: it has no top-level apiVersion and kind.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from msgspec import Struct

# A chart folder's entries Helm deploys from (see the module docstring)
HELM_FOLDERS = frozenset({"templates", "charts", "crds"})

_HEAD_BYTES = 64 * 1024
_TOP_KEYS = (b"apiVersion:", b"kind:", b"metadata:")
# the files at a chart's top that Helm reads itself (load.go LoadFiles)
CHART_FILES = frozenset({"Chart.yaml", "Chart.lock", "values.yaml", "requirements.yaml",
                         "requirements.lock"})


def is_charts_own(rel_parts: tuple[str, ...]) -> bool:
    """Whether a path at `rel_parts` under a chart folder is what Helm deploys or reads
    as the chart: the folder itself, or anything under templates/, charts/, crds/."""
    return not rel_parts or rel_parts[0] in HELM_FOLDERS


def manifest_head(head: bytes) -> bool:
    """Whether a YAML file's start is a Kubernetes manifest: `apiVersion:`, `kind:` and
    `metadata:` as top-level keys (a values file's `extraObjects` holds them indented; a
    kind or kubeadm configuration has no metadata)."""
    # a substring search, not a multi-line regex: a 64 KiB values.yaml took 0.5 ms
    return all(head.startswith(key) or b"\n" + key in head for key in _TOP_KEYS)


def is_manifest_file(path: Path) -> bool:
    if not path.name.endswith((".yaml", ".yml")):
        return False
    try:
        with open(path, "rb") as handle:
            return manifest_head(handle.read(_HEAD_BYTES))
    except OSError:
        return False


class FilesUse(Struct, frozen=True):
    """What a chart's templates read through `.Files`: the literal paths and patterns
    (Get, GetBytes, Lines, Glob) and, when a call's argument is not a literal (`.Files.Get
    $path`, `index .Files`), the text of every template, to look for a file's folder in."""

    patterns: tuple[str, ...] = ()
    dynamic_text: str | None = None

    def reads(self, rel: str) -> bool:
        """Whether a template may read the chart file at `rel` (posix, from the chart)."""
        if any(_glob_match(p, rel) for p in self.patterns):
            return True
        if self.dynamic_text is None:
            return False
        top = rel.split("/", 1)[0]
        # a path built in the template names its folder, or the file's own name
        return (f"{top}/" in self.dynamic_text if "/" in rel else False) or \
            rel.rsplit("/", 1)[-1] in self.dynamic_text


_FILES_CALL = re.compile(r"\.Files\.(?:Get|GetBytes|Lines|Glob)\s+\"((?:[^\"\\]|\\.)*)\"")
_FILES_ANY = re.compile(r"\.Files\b")
MAX_TEMPLATE_BYTES = 16 * 1024 * 1024  # what is read of a chart's templates, in all


def files_use(chart: Path) -> FilesUse:
    """The `.Files` reads of the templates under `chart`/templates (links not followed)."""
    texts: list[str] = []
    budget = MAX_TEMPLATE_BYTES
    for folder, _dirs, names in os.walk(chart / "templates"):
        for name in names:
            try:
                with open(os.path.join(folder, name), "rb") as handle:
                    data = handle.read(max(budget, 0))
            except OSError:
                continue
            budget -= len(data)
            if b".Files" in data:
                texts.append(data.decode("utf-8", "replace"))
    return files_use_of(texts)


def files_use_of(texts: Iterable[str]) -> FilesUse:
    patterns: list[str] = []
    dynamic: list[str] = []
    for text in texts:
        calls = list(_FILES_CALL.finditer(text))
        patterns += [m.group(1).replace('\\"', '"') for m in calls]
        if len(_FILES_ANY.findall(text)) > len(calls):
            dynamic.append(text)
    return FilesUse(tuple(dict.fromkeys(patterns)), "\n".join(dynamic) if dynamic else None)


def _glob_match(pattern: str, rel: str) -> bool:
    try:
        return re.fullmatch(_glob_regex(pattern), rel) is not None
    except re.error:
        return False


def _glob_regex(pattern: str) -> str:
    """gobwas/glob with `/` as the separator (what Files.Glob compiles): `*` is any run of
    characters but `/`, `**` any run, `?` one character but `/`, `[...]` and `[!...]` a
    class, `{a,b}` either; `\\` escapes. Get, GetBytes and Lines take a plain path, which
    this reads as itself unless it holds those characters."""
    out: list[str] = []
    i, depth = 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "*":
            if pattern.startswith("**", i):
                out.append(".*")
                i += 2
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1:end]
                negated = body.startswith("!")
                body = body[1:] if negated else body
                out.append(f"[{'^' if negated else ''}{body.replace(chr(92), chr(92) * 2)}]")
                i = end + 1
                continue
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out) + ")" * depth


def unrendered_manifests(chart: Path, skip_dir: Callable[[Path], bool],
                         skip_file: Callable[[Path], bool], *, limit: int = 2000,
                         opened: int = 200) -> list[Path]:
    """The Kubernetes manifests in `chart`'s folder that Helm does not deploy (outside
    templates/, charts/, crds/) and no template reads through `.Files`, in walk order:
    looked for among the first `limit` entries and `opened` YAML files. Hidden folders,
    the folders `skip_dir` names (skipped, ignored), a chart folder of its own below and
    links are not entered; `skip_file` names the files already read or ignored."""
    found: list[Path] = []
    use: FilesUse | None = None
    seen = 0
    for folder, dirs, names in os.walk(chart):
        here = Path(folder)
        if here != chart and "Chart.yaml" in names:
            dirs[:] = []
            continue
        dirs[:] = sorted(d for d in dirs if not d.startswith(".")
                         and (here != chart or d not in HELM_FOLDERS)
                         and not skip_dir(here / d))
        seen += len(dirs) + len(names)
        for name in sorted(names):
            path = here / name
            if not name.endswith((".yaml", ".yml")) or (here == chart and name in CHART_FILES) \
                    or os.path.islink(path) or skip_file(path):
                continue
            if opened <= 0:
                return found
            opened -= 1
            if not is_manifest_file(path):
                continue
            if use is None:
                use = files_use(chart)
            if not use.reads(path.relative_to(chart).as_posix()):
                found.append(path)
        if seen > limit:
            break
    return found
