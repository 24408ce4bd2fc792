"""Argo Workflows' own database pools: the workflow-controller and argo-server read
their configuration from a ConfigMap through the Kubernetes API (never mounted), and
open one database/sql pool per database section in it. Checked in argoproj/argo-workflows
(util/sqldb/sqldb.go, workflow/controller/config.go, server/apiserver/argoserver.go,
cmd/workflow-controller/main.go):

- ConfigMap: `--configmap` (default workflow-controller-configmap) in `--namespace`
  (the server also reads ARGO_NAMESPACE), else the pod's namespace; either one `config`
  key holding the YAML, or one data key per top-level key.
- `persistence:` (postgresql): a pool in every controller pod (opened before leader
  election) and every server pod.
- `synchronization:` (postgresql): a pool on the controller's leader only (unless
  LEADER_ELECTION_DISABLE=true: every pod), and on every server pod when
  `synchronization.enableAPI` is true.
- Size: `connectionPool.maxOpenConns` > 0; 0, missing, or no connectionPool at all is
  database/sql's no limit (Argo never sets one of its own).
"""

from __future__ import annotations

from typing import Any

from advisor.model import Container, Pool, Route, Source, Term
from advisor.read.apps import AppPools
from advisor.read.sources.k8s import get, line_of, load_yaml_stream
from advisor.read.workloads import ConfigIndex, ConfigMapData, lookup

DEFAULT_CONFIGMAP = "workflow-controller-configmap"
# A pool only the controller's leader opens: linking counts it on one pod.
LEADER_ONLY = "Argo Workflows synchronization (leader only)"


def argo_role(c: Container) -> str | None:
    """"controller" or "server" for Argo Workflows' own containers, else None."""
    words = [*c.command, *c.args]
    image = c.image.lower()
    if "argoproj/workflow-controller" in image or any(
            w.rsplit("/", 1)[-1] == "workflow-controller" for w in c.command):
        return "controller"
    if "argoproj/argocli" in image and "server" in c.args[:1]:
        return "server"
    if "argoproj/argocli" in image and words[-1:] == ["server"]:
        return "server"
    return None


def _flag(words: list[str], name: str) -> str | None:
    for i, w in enumerate(words):
        if w == name and i + 1 < len(words):
            return words[i + 1]
        if w.startswith(name + "="):
            return w.split("=", 1)[1]
    return None


def _config_of(data: ConfigMapData) -> list[tuple[str, Any, str, int]]:
    """(section, its mapping, file shown, line offset) of the ConfigMap's configuration:
    the `config` key's YAML, or each data key's YAML under its own name."""
    out: list[tuple[str, Any, str, int]] = []
    keys = ["config"] if "config" in data.data else list(data.data)
    for key in keys:
        shown, offset = data.text_origin(key)
        docs, _problems = load_yaml_stream(data.data[key], shown, offset)
        if not docs:
            continue
        doc = docs[0][0]
        if key == "config":
            if isinstance(doc, dict):
                out += [(str(k), v, shown, offset) for k, v in doc.items()]
        else:
            out.append((key, doc, shown, offset))
    return out


def _at(node: Any, shown: str, offset: int, *keys: str) -> Source:
    line = line_of(node, *keys)
    return Source(path=shown, line=offset + line + 1 if line is not None else None,
                  key=".".join(keys) if keys else None)


def _secret_value(index: ConfigIndex, namespace: str, ref: Any) -> str | None:
    """The value a `{name, key}` Secret reference names, when the Secret is here."""
    if not isinstance(ref, dict) or not ref.get("name") or not ref.get("key"):
        return None
    data = lookup(index, "secret", namespace, str(ref["name"]))
    return data.data.get(str(ref["key"])) if data is not None else None


def argo_workflows_pools(c: Container, index: ConfigIndex, namespace: str) -> AppPools | None:
    """The pools of an Argo Workflows controller or server container, from its ConfigMap
    in the repository; None for any other container."""
    role = argo_role(c)
    if role is None:
        return None
    words = [*c.command, *c.args]
    name = _flag(words, "--configmap") or DEFAULT_CONFIGMAP
    env = {e.name: e.value for e in c.env}
    ns = _flag(words, "--namespace") or (env.get("ARGO_NAMESPACE") if role == "server"
                                         else None) or namespace
    data = lookup(index, "configmap", ns, name)
    out = AppPools()
    what = f"Argo Workflows {'workflow-controller' if role == 'controller' else 'argo-server'}"
    if data is None:
        out.notices.append(f"{c.name}: {what} reads ConfigMap {ns}/{name} through the API; "
                           "it is not in the repository, so its persistence and "
                           "synchronization databases are not read")
        return out
    leader_election = env.get("LEADER_ELECTION_DISABLE", "").lower() != "true"
    for section, node, shown, offset in _config_of(data):
        if section not in ("persistence", "synchronization") or not isinstance(node, dict):
            continue
        pg = node.get("postgresql")
        if not isinstance(pg, dict):
            if isinstance(node.get("mysql"), dict):
                out.notices.append(f"{c.name}: {what} {section} uses MySQL: not budgeted")
            continue
        if section == "synchronization" and role == "server" and node.get("enableAPI") is not True:
            continue  # argoserver.go: the sync API (and its pool) only with enableAPI
        route = Route(host=str(pg.get("host") or "") or None,
                      port=int(pg["port"]) if str(pg.get("port", "")).isdigit() else None,
                      dbname=str(pg.get("database") or "") or None,
                      user=_secret_value(index, ns, pg.get("userNameSecret")),
                      source=_at(pg, shown, offset, "host"))
        pool_cfg = node.get("connectionPool")
        max_open = get(pool_cfg, "maxOpenConns") if isinstance(pool_cfg, dict) else None
        leader = section == "synchronization" and role == "controller" and leader_election
        label = LEADER_ONLY if leader else f"Argo Workflows {section}"
        if isinstance(max_open, int) and max_open > 0:
            size = Term(label=f"{label} maxOpenConns", value=max_open,
                        source=_at(pool_cfg, shown, offset, "maxOpenConns"))
            bound = "fixed"
            note = ""
        else:
            where = _at(pool_cfg, shown, offset, "maxOpenConns") if max_open is not None \
                else _at(node, shown, offset, "connectionPool") if pool_cfg is not None \
                else _at(node, shown, offset)
            size = Term(label=f"{label} maxOpenConns", value=0, source=where)
            bound = "unbounded"
            note = ("maxOpenConns 0: database/sql's no limit" if max_open is not None
                    else "no connectionPool.maxOpenConns: database/sql's no limit (Argo "
                    "sets none of its own)")
        if leader:
            note = (note + "; " if note else "") + "opened by the leader only (leader election)"
        out.pools.append(Pool(label=label, size=size, route=route, bound=bound, note=note))
    if out.pools:
        out.notices.append(f"{c.name}: {what} pools from ConfigMap {ns}/{name} "
                           f"({data.obj.location().label()}), read through the API")
    return out
