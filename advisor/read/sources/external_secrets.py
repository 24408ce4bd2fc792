"""The Secrets the External Secrets Operator makes from ExternalSecret objects
(external-secrets.io v1beta1 and v1), modelled so that a workload's envFrom and
secretKeyRef to them resolve: which keys the Secret holds, which values are written in
the repository, and which come from the remote store (unknown here, never empty).

What the operator puts in the target Secret (external-secrets.io "ExternalSecret" and
"Advanced Templating v2"):
- the Secret is named spec.target.name, by default the ExternalSecret's own name, in its
  namespace;
- without a template (or a template with neither data nor templateFrom), its keys are
  spec.data[].secretKey, plus whatever spec.dataFrom extracts (names not known here);
- with template.data or template.templateFrom, its keys are the template's, each value
  a Go template over the fetched values; the fetched keys join them only with
  template.mergePolicy Merge.

Templates are evaluated for `{{ .key }}` substitution only: a fetched value is a
remote, unknown part, and a value that is all remote parts is unknown; a value with any
other action (`index`, pipelines, functions) is unknown as a whole.
"""

from __future__ import annotations

import re
from typing import Any

from advisor.model import Source
from advisor.read.sources.k8s import K8sObject
from advisor.read.workloads import ConfigIndex, ConfigMapData, lookup

_ACTION = re.compile(r"\{\{(-?)(.*?)(-?)\}\}", re.S)
# `{{ .key }}`, or a pipeline on it (`{{ .password | urlquery | replace "+" "%20" }}`):
# a remote part either way, the literal text around it known (damacus/home-ops'
# DATABASE_URL lost its host to a urlquery'd password). Control actions (if, range,
# with, end) change which text is there: not read.
_SIMPLE = re.compile(r"\s*\.([A-Za-z_][A-Za-z0-9_]*)\s*(?:\|[^{}]*)?", re.S)


def is_external_secret(obj: K8sObject) -> bool:
    return obj.kind == "ExternalSecret" and obj.api_version.startswith("external-secrets.io/")


def external_secret_index(objects: list[K8sObject], configs: ConfigIndex) -> ConfigIndex:
    """The target Secret of each ExternalSecret, by ("secret", namespace, name).
    `configs`: the repository's ConfigMaps and Secrets, for templateFrom."""
    out: ConfigIndex = {}
    for obj in objects:
        if not is_external_secret(obj):
            continue
        made = made_secret(obj, configs)
        if made is not None:
            name, data = made
            out[("secret", obj.namespace, name)] = data
    return out


def made_secret(obj: K8sObject, configs: ConfigIndex) -> tuple[str, ConfigMapData] | None:
    spec = obj.body.get("spec")
    if not isinstance(spec, dict):
        return None
    target = spec.get("target") if isinstance(spec.get("target"), dict) else {}
    name = str(target.get("name") or obj.name)
    here = obj.source()
    label = f"ExternalSecret {obj.name} ({here.label()})"
    values: dict[str, str] = {}
    unknown: dict[str, str] = {}
    sources: dict[str, Source] = {}
    open_keys = ""

    remote = [(i, str(d["secretKey"])) for i, d in enumerate(_items(spec.get("data")))
              if d.get("secretKey") is not None]
    extracted = bool(_items(spec.get("dataFrom")))
    fetched_why = f"fetched from the remote store by {label}"

    template = target.get("template") if isinstance(target.get("template"), dict) else {}
    tdata = template.get("data") if isinstance(template.get("data"), dict) else {}
    tfrom = _items(template.get("templateFrom"))
    templated = bool(tdata or tfrom)
    if not templated or template.get("mergePolicy") == "Merge":
        for i, key in remote:
            unknown[key] = fetched_why
            sources[key] = obj.source("spec", "data", i, "secretKey", key=key)
        if extracted:
            open_keys = f"further keys {fetched_why} (spec.dataFrom)"
    for key, text in tdata.items():
        key = str(key)
        sources[key] = obj.source("spec", "target", "template", "data", key, key=key)
        _put(key, render(str(text)), values, unknown, f"templated from values {fetched_why}")
    for i, item in enumerate(tfrom):
        why = _template_from(obj, item, configs, values, unknown, sources, i, fetched_why)
        if why:
            open_keys = open_keys or why
    data = ConfigMapData(obj, values, secret=True, made_by=here, unknown=unknown,
                         open=open_keys, key_sources=sources)
    return name, data


def render(text: str) -> str | None:
    """The template's text with each `{{ .key }}` kept as a remote part (a placeholder
    the URL readers treat as unknown); None when any action is something else or the
    value is nothing but remote parts."""
    out: list[str] = []
    pos = 0
    remote = False
    for m in _ACTION.finditer(text):
        before = text[pos:m.start()]
        if m.group(1):  # {{- trims the whitespace before it
            before = before.rstrip()
        out.append(before)
        field = _SIMPLE.fullmatch(m.group(2))
        if field is None:
            return None
        out.append("{{ ." + field.group(1) + " }}")
        remote = True
        pos = m.end()
        if m.group(3):  # -}} trims the whitespace after it
            while pos < len(text) and text[pos].isspace():
                pos += 1
    out.append(text[pos:])
    result = "".join(out)
    if "{{" in text[pos:]:
        return None  # an action left open: the operator fails to parse it
    if remote and not _ACTION.sub("", result).strip():
        return None
    return result


def _put(key: str, value: str | None, values: dict[str, str], unknown: dict[str, str],
         why: str) -> None:
    if value is None:
        unknown[key] = why
        values.pop(key, None)
    else:
        values[key] = value
        unknown.pop(key, None)


def _template_from(obj: K8sObject, item: dict, configs: ConfigIndex, values: dict[str, str],
                   unknown: dict[str, str], sources: dict[str, Source], i: int,
                   fetched_why: str) -> str:
    """Reads one templateFrom item into values/unknown; returns why further keys are
    unknown ("" when every key it makes is named)."""
    if str(item.get("target") or "Data").lower() != "data":
        return ""  # Annotations or Labels of the Secret
    here = obj.source("spec", "target", "template", "templateFrom", i)
    literal = item.get("literal")
    if isinstance(literal, str):
        if _ACTION.search(literal):
            return f"keys of a literal template ({here.label()}) rendered when applied"
        import yaml

        try:
            parsed = yaml.safe_load(literal)
        except yaml.YAMLError:
            return f"keys of a literal template ({here.label()}) that is no YAML mapping"
        if not isinstance(parsed, dict):
            return f"keys of a literal template ({here.label()}) that is no YAML mapping"
        for key, value in parsed.items():
            values[str(key)] = "" if value is None else str(value)
            sources[str(key)] = here
        return ""
    for kind in ("configMap", "secret"):
        ref = item.get(kind)
        if not isinstance(ref, dict):
            continue
        held = lookup(configs, kind.lower(), obj.namespace, str(ref.get("name")))
        why = ""
        for entry in _items(ref.get("items")):
            key = str(entry.get("key"))
            if str(entry.get("templateAs") or "Values") != "Values":
                why = (f"keys of {kind} {ref.get('name')}/{key} (templateAs "
                       f"{entry.get('templateAs')}, {here.label()}) rendered when applied")
                continue
            if held is None or key not in held.data:
                unknown[key] = (f"a template in {kind} {ref.get('name')}/{key}, which is not "
                                "in the repository")
                sources[key] = here
                continue
            sources[key] = held.source(key)
            _put(key, render(held.data[key]), values, unknown,
                 f"templated from values {fetched_why}")
        return why
    return ""


def _items(value: Any) -> list[dict]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []

