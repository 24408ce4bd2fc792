"""A synthetic manifest built from a chart's values, each field pinned to the values line
it reads: what the values-only fallback (helm_fallback) and the unvendored dependency
builders (helm_cloudpirates) make when the engine does not render a chart."""

from __future__ import annotations

import io
from typing import Any

from msgspec.structs import replace

from advisor.model import Source
from advisor.read.render import field_path
from advisor.read.render.helm_positions import in_chart, relocate
from advisor.read.render.helm_values import Key, ValuesLayer, leaf_source
from advisor.read.sources.k8s import K8sObject, k8s_objects


class ValuesBuilder:
    """Builds a synthetic manifest while recording, per field, the values key it
    reads; then loads it with ruamel and pins every position to the values lines."""

    def __init__(self, layers: list[ValuesLayer], prefix: Key) -> None:
        self.layers = layers
        self.prefix = prefix
        self.sources: dict[str, Source] = {}

    def src(self, field_keys: Key, *value_key: str | int) -> None:
        source = leaf_source(self.layers, (*self.prefix, *value_key))
        if source is not None:
            self.sources[field_path(*field_keys)] = replace(source, key=f"values: {source.key}")

    def build(self, body: dict[str, Any], anchor: Source | None, chart_rel: str,
              namespace: str | None) -> K8sObject:
        from ruamel.yaml import YAML

        yaml = YAML(typ="rt")
        buffer = io.StringIO()
        yaml.dump(body, buffer)
        objects, _ = k8s_objects(buffer.getvalue(), anchor.path if anchor and anchor.path
                                 else in_chart(chart_rel, "values.yaml"))
        obj = objects[0]
        line0 = ((anchor.line or 1) - 1) if anchor else 0
        relocate(obj.body, lambda _line: line0)
        obj.line = line0 + 1
        obj.value_sources = dict(self.sources)
        obj.origin = f"helm-values:{chart_rel}"
        if obj.namespace is None and namespace:
            obj.namespace = namespace
        return obj
