"""The server a script's (or a README's) `helm install|upgrade --install <release>
bitnami/postgresql [-f values.yaml] [--set k=v] [--version X]` makes, built by the
values-only stand-in of an unvendored Bitnami postgresql dependency (helm_fallback
bitnami_server): the same objects, names and chart defaults, from the command's values
files (found as advisor.engine.repository resolves them) and --set pairs, with the chart
version from --version (else the stand-in's "no version" defaults, named).

Five of ten repositories of audit 13e install their database so; the tool said it
(a PA901 "not budgeted") but did not budget it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from advisor.model import Source
from advisor.read.fs import InputError, Root, rel_inside
from advisor.read.helm_commands import HelmInstall, chart_name, is_bitnami
from advisor.read.render import Rendered
from advisor.read.render.helm_dep_versions import Locked, exact_version
from advisor.read.render.helm_fallback import Stand, bitnami_server
from advisor.read.render.helm_values import ValuesLayer, merge_maps, user_layers

# https://raw.githubusercontent.com/<owner>/<repo>/<ref>/<path>,
# https://github.com/<owner>/<repo>/(raw|blob)/<ref>/<path>: group 1 is <path>
_GITHUB_FILE_URL = re.compile(
    r"https?://(?:raw\.githubusercontent\.com/[^/]+/[^/]+/(?:refs/heads/)?[^/]+|"
    r"github\.com/[^/]+/[^/]+/(?:raw|blob)/[^/]+)/([^?#\s]+)$")


def value_files(root: Root, shown: str, files: tuple[str, ...], manifests: list[Path]
                ) -> list[str]:
    """The command's values files that are in the repository, in order (a later one
    wins), as paths from the root: each found beside the script, else from the root,
    else the repository's one YAML file whose path ends so (toporischev/lesson6's README
    runs its commands in k8s/: `-f postgres/values.yaml`); one not found is left out."""
    here = os.path.dirname(shown)
    out: list[str] = []
    for name in files:
        if name.startswith("http"):
            # a GitHub raw/blob URL of a file this repository holds at that path (zitadel-
            # charts' README: `--values https://raw.githubusercontent.com/zitadel/zitadel-
            # charts/main/examples/1-postgres-insecure/postgres-values.yaml`): that file,
            # not "not in the repository" (audit 47 D5); any other URL is not read
            m = _GITHUB_FILE_URL.match(name)
            rel = rel_inside(m.group(1)) if m else None
            if rel and (root.path / rel).is_file():
                out.append(rel)
            continue
        if "$" in name or name.startswith("/"):
            continue
        tail = rel_inside(name)
        ends = [root.rel(p) for p in manifests
                if tail and root.rel(p).endswith(f"/{tail}")] if tail else []
        for rel in [*dict.fromkeys(rel_inside(f"{b}/{name}" if b else name)
                                   for b in (here, "")), *(ends if len(ends) == 1 else [])]:
            if rel and (root.path / rel).is_file():
                out.append(rel)
                break
    return out


def merged_values(root: Root, files: list[str]) -> dict[str, Any]:
    """The values files' trees merged in order (Helm's -f order); one that does not
    parse is left out (said where the server is built)."""
    import yaml

    out: dict[str, Any] = {}
    for rel in files:
        try:
            loaded = yaml.safe_load(root.read_text(root.path / rel))
        except (InputError, yaml.YAMLError):
            loaded = None
        if isinstance(loaded, dict):
            out = merge_maps(out, loaded)
    return out


def buildable(install: HelmInstall, text: str) -> bool:
    """Whether the stand-in builds the command's server: Bitnami's postgresql chart (its
    postgresql-ha is not modelled) under a release name the command gives."""
    release = install.release
    return chart_name(install.chart) == "postgresql" and is_bitnami(install, text) \
        and bool(release) and "$" not in release and "{{" not in release


# Folders of examples applied by hand (as a chart's examples/ manifests are not read
# unless named: README "What is read"): a command there installs no server of the
# deployment checked
_EXAMPLE_DIRS = frozenset({"example", "examples", "sample", "samples"})


def not_built_because(install: HelmInstall, text: str, shown: str, files: list[str]) -> str:
    """Why the stand-in does not build the command's server ("" when it does): not
    Bitnami's postgresql under a release name given (buildable); a values file not in
    the repository (a URL, or a path not found: what it sets is not known, so no number
    would come from it); a command in an examples folder."""
    if not buildable(install, text):
        return "not modelled"
    if len(files) < len(install.values):
        read = set(files)
        missing = [v for v in install.values if not any(r.endswith(v.lstrip("./"))
                                                          for r in read)]
        return (f"its values {', '.join(missing) or ', '.join(install.values)} "
                "not in the repository: what they set is not known")
    if any(part.lower() in _EXAMPLE_DIRS for part in shown.split("/")[:-1]):
        return "an example (its folder's commands are applied by hand)"
    return ""


def installed_server(root: Root, install: HelmInstall, shown: str, files: list[str]
                     ) -> Rendered:
    """The objects the stand-in builds for the command's release (its StatefulSets,
    Services and configuration ConfigMaps), each number at the values line or --set
    (cited at the command's line) it comes from, else at the chart default named."""
    out = Rendered()
    where = f"{shown}:{install.line}"
    layers, problems = user_layers(root, root.path, files,
                                   [f"{k}={v}" for k, v in install.sets], None)
    out.problems.extend(problems)
    layers = [_at_command(layer, shown, install.line) if layer.display == "--set" else layer
              for layer in layers]
    values: dict[str, Any] = {}
    for layer in layers:
        values = merge_maps(values, layer.plain)
    glob = values.get("global") if isinstance(values.get("global"), dict) else {}
    # --version pins the chart as a lock file does: cited at the command
    locked = Locked(install.version, Source(path=shown, line=install.line,
                                            key=f"helm install --version {install.version}")
                    ) if exact_version(install.version) else None
    shared = "; in no namespace, as the repository's own charts the same text installs " \
        "into its namespace are rendered here" if install.shares_namespace else ""
    stand = Stand(f"release {install.release!r}",
                  f"is installed by {where}, not in the repository's manifests{shared}",
                  f"installed by {where}, read from its values",
                  "set resources in the values, or pin the chart with --version",
                  anchor=Source(path=shown, line=install.line, key="helm install"))
    # a namespace left to a shell variable the script does not set: none, as the
    # repository's own charts are rendered (their clients reach it by its bare name)
    namespace = install.namespace if "$" not in install.namespace else ""
    out.objects.extend(bitnami_server(values, layers, (), install.release, "postgresql",
                                      install.version, locked, shown, namespace or None,
                                      out, glob, stand))
    return out


def _at_command(layer: ValuesLayer, shown: str, line: int) -> ValuesLayer:
    """The --set layer cited at the command's line (its values are written there)."""
    return replace(layer, display=shown, positions=dict.fromkeys(layer.positions, line))
