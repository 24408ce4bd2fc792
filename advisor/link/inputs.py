"""What every linking step reads and records the same way: the `Inputs` of
`build_topology`, a workload's id, and the finding codes an object's annotation or a
config file's comments suppress."""

from __future__ import annotations

from pathlib import Path

from msgspec import Struct, field

from advisor.config.settings import Settings
from advisor.model import Topology
from advisor.read.fs import Root
from advisor.read.sources.k8s import K8sObject
from advisor.read.workloads import Workload, WorkloadShape


class Inputs(Struct):
    root: Root
    objects: list[K8sObject] = field(default_factory=list)
    pg_conf_files: list[Path] = field(default_factory=list)
    bouncer_ini_files: list[Path] = field(default_factory=list)
    app_dirs: dict[str, str] = field(default_factory=dict)  # workload name -> source dir
    app_candidates: list[str] = field(default_factory=list)  # folders holding an app
    build_hints: object | None = None  # advisor.read.apps.locate.BuildHints: image -> context
    app_cache: dict = field(default_factory=dict)  # folder -> AppSource, read once
    settings: Settings = field(default_factory=Settings)
    pg_version_override: int | None = None
    # --namespace: where objects without metadata.namespace are deployed
    namespace: str | None = None
    lambdas: list = field(default_factory=list)  # advisor.read.sources.serverless.LambdaFunction
    # --cluster: resources whose listing the API refused ("configmaps"); what they would
    # hold is said once per server by advisor.live.cluster, not again by each reader
    refused: frozenset[str] = frozenset()
    # False: the caller names the app-template releases (Topology.app_template_named)
    # once for all its builds (advisor.engine.repository.scan_paths: an overlay's build
    # reads the shared objects again)
    app_template_notice: bool = True


ANNOTATION_IGNORE = "pool-advisor.io/ignore"


def workload_id(w: Workload) -> str:
    ns = f"{w.namespace}/" if w.namespace else ""
    return f"{w.kind}/{ns}{w.name}"


def suppressed_codes(obj: K8sObject) -> list[str]:
    known = obj.extract()  # a workload's annotations are in what the cache kept of it
    found = known.annotations if isinstance(known, WorkloadShape) else obj.annotations
    raw = found.get(ANNOTATION_IGNORE, "")
    return [c.strip() for c in raw.replace(";", ",").split(",") if c.strip()]


def merge_suppressions(topo: Topology, found: dict[str, dict[int, list[str]]]) -> None:
    for path, lines in found.items():
        target = topo.line_suppressions.setdefault(path, {})
        for line, codes in lines.items():
            target.setdefault(line, []).extend(codes)
