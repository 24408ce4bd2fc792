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

Templates are evaluated for `{{ .key }}` (and `{{ index . "key" }}`) substitution only:
a fetched value is a remote, unknown part, and a value that is all remote parts is
unknown; a value with any other action (pipelines on a known value, functions) is
unknown as a whole.

A store of provider `kubernetes` (SecretStore, ClusterSecretStore) fetches from the
cluster's own Secrets, in its `remoteNamespace` (default "default"; external-secrets
apis/externalsecrets/v1 SecretStore KubernetesProvider.RemoteNamespace,
`+kubebuilder:default= default`): a Secret the repository writes, or one a PostgreSQL
operator makes (Crunchy's `<cluster>-pguser-<user>`, read through such a store by
bjw-s/home-ops), is read there, key by key, for `remoteRef: {key: <secret>, property:
<key>}` and `dataFrom: [{extract: {key: <secret>}}]`; what it does not hold (a
password) stays unknown.
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
# `{{ index . "pgbouncer-host" }}`: a key that is no Go identifier (Crunchy's keys)
_INDEX = re.compile(r'\s*index\s+\.\s+"([^"\\]+)"\s*(\|[^{}]*)?', re.S)
STORE_KINDS = frozenset({"SecretStore", "ClusterSecretStore"})


def is_external_secret(obj: K8sObject) -> bool:
    return obj.kind == "ExternalSecret" and obj.api_version.startswith("external-secrets.io/")


def external_secret_index(objects: list[K8sObject], configs: ConfigIndex,
                          stores: list[K8sObject] | None = None,
                          cluster_secrets: ConfigIndex | None = None) -> ConfigIndex:
    """The target Secret of each ExternalSecret, by ("secret", namespace, name).
    `configs`: the repository's ConfigMaps and Secrets, for templateFrom; `stores`: the
    SecretStores and ClusterSecretStores; `cluster_secrets`: the Secrets a store of
    provider kubernetes reads (the repository's and those operators make)."""
    out: ConfigIndex = {}
    for obj in objects:
        if not is_external_secret(obj):
            continue
        made = made_secret(obj, configs, _in_cluster(obj, stores or [], cluster_secrets or {}))
        if made is not None:
            name, data = made
            out[("secret", obj.namespace, name)] = data
    return out


def _in_cluster(obj: K8sObject, stores: list[K8sObject], secrets: ConfigIndex
                ) -> tuple[str, str, dict[str, ConfigMapData]] | None:
    """(store label, remote namespace, Secrets by name there) when the ExternalSecret's
    store is of provider kubernetes; None otherwise (a vault, 1Password: unknown here)."""
    spec = obj.body.get("spec") if isinstance(obj.body, dict) else None
    ref = spec.get("secretStoreRef") if isinstance(spec, dict) else None
    if not isinstance(ref, dict) or not stores:
        return None
    kind = str(ref.get("kind") or "SecretStore")
    name = str(ref.get("name") or "")
    for store in stores:
        if store.kind != kind or store.name != name or (
                kind == "SecretStore" and store.namespace != obj.namespace):
            continue
        provider = store.body.get("spec", {}).get("provider") \
            if isinstance(store.body.get("spec"), dict) else None
        k8s = provider.get("kubernetes") if isinstance(provider, dict) else None
        if not isinstance(k8s, dict):
            return None
        remote_ns = str(k8s.get("remoteNamespace") or "default")
        there = {n: data for (k, ns, n), data in secrets.items()
                 if k == "secret" and ns == remote_ns}
        return f"{kind} {name} ({store.source().label()})", remote_ns, there
    return None


def made_secret(obj: K8sObject, configs: ConfigIndex,
                in_cluster: tuple[str, str, dict[str, ConfigMapData]] | None = None
                ) -> tuple[str, ConfigMapData] | None:
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

    # what a store of provider kubernetes fetches: the cluster's Secrets, key by key
    fetched: dict[str, str] = {}
    fetched_sources: dict[str, Source] = {}
    extracted_known = False
    if in_cluster is not None:
        store, remote_ns, there = in_cluster
        for d in _items(spec.get("data")):
            ref = d.get("remoteRef") if isinstance(d.get("remoteRef"), dict) else {}
            held = there.get(str(ref.get("key")))
            prop = str(ref.get("property") or "")
            if held is not None and d.get("secretKey") is not None and prop in held.data:
                fetched[str(d["secretKey"])] = held.data[prop]
                fetched_sources[str(d["secretKey"])] = held.source(prop)
        extracts = [d.get("extract") for d in _items(spec.get("dataFrom"))]
        helds = [there.get(str(e.get("key"))) if isinstance(e, dict) else None
                 for e in extracts]
        for held in helds:
            if held is not None:
                for key, value in held.data.items():
                    fetched[key] = value
                    fetched_sources[key] = held.source(key)
        extracted_known = bool(helds) and all(h is not None for h in helds)
        # a copy of one operator-made Secret (no template, one extract, no data): it
        # stands for that Secret, whose keys are alternatives (uri, pgbouncer-uri)
        copied = helds[0] if len(helds) == 1 and extracted_known and not remote else None
        fetched_why = (f"not held by the Secret that {label} reads through {store} in "
                       f"namespace {remote_ns}")

    else:
        copied = None
    template = target.get("template") if isinstance(target.get("template"), dict) else {}
    tdata = template.get("data") if isinstance(template.get("data"), dict) else {}
    tfrom = _items(template.get("templateFrom"))
    templated = bool(tdata or tfrom)
    if not templated or template.get("mergePolicy") == "Merge":
        for i, key in remote:
            if key in fetched:
                values[key] = fetched[key]
                sources[key] = fetched_sources[key]
                continue
            unknown[key] = fetched_why
            sources[key] = obj.source("spec", "data", i, "secretKey", key=key)
        if extracted and extracted_known:
            for key, value in fetched.items():
                values.setdefault(key, value)
                sources.setdefault(key, fetched_sources[key])
        elif extracted:
            open_keys = f"further keys {fetched_why} (spec.dataFrom)"
    for key, text in tdata.items():
        key = str(key)
        sources[key] = obj.source("spec", "target", "template", "data", key, key=key)
        _put(key, render(str(text), fetched), values, unknown,
             f"templated from values {fetched_why}")
    for i, item in enumerate(tfrom):
        why = _template_from(obj, item, configs, values, unknown, sources, i, fetched_why)
        if why:
            open_keys = open_keys or why
    made_by = here
    if copied is not None and not templated and copied.made_by is not None \
            and copied.made_by.default:
        made_by = Source(path=here.path, line=here.line, key=name,
                         default=f"a copy of {copied.made_by.default} ({label})")
    data = ConfigMapData(obj, values, secret=True, made_by=made_by, unknown=unknown,
                         open=open_keys, key_sources=sources)
    return name, data


def render(text: str, known: dict[str, str] | None = None) -> str | None:
    """The template's text with each `{{ .key }}` (`{{ index . "key" }}`) kept as a
    remote part (a placeholder the URL readers treat as unknown), or its value where
    `known` holds it (a store of provider kubernetes); None when any action is
    something else or the value is nothing but remote parts."""
    out: list[str] = []
    pos = 0
    remote = False
    for m in _ACTION.finditer(text):
        before = text[pos:m.start()]
        if m.group(1):  # {{- trims the whitespace before it
            before = before.rstrip()
        out.append(before)
        field = _SIMPLE.fullmatch(m.group(2))
        indexed = _INDEX.fullmatch(m.group(2)) if field is None else None
        if field is None and indexed is None:
            return None
        name = (field or indexed).group(1)  # type: ignore[union-attr]
        piped = "|" in m.group(2)
        if known and name in known and not piped:
            out.append(known[name])
        else:
            # a value piped through a function is not the value: a remote part
            out.append("{{ ." + name + " }}")
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

