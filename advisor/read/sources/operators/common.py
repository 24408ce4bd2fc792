"""What the operator readers share: the record a read fills (OperatorEntities) and its
context, the host names of a Service, Terms and Sources at a resource's field, PostgreSQL
and PgBouncer settings from a parameters map, versions from a field or an image tag,
Kubernetes quantities, the Servers a cluster resource becomes, and the Secrets an
operator makes. Used by the other modules of this package only.
"""

from __future__ import annotations

import math
import re
from typing import Any

from msgspec import field

from advisor.model import (
    BouncerVersion,
    ConfigProblem,
    Location,
    NotSubtracted,
    Pooler,
    Record,
    Server,
    Setting,
    Source,
    Term,
)
from advisor.read.fs import Root
from advisor.read.render import field_source
from advisor.read.sources.k8s import K8sObject, count_field, get


class OperatorEntities(Record, kw_only=True):
    servers: list[Server] = field(default_factory=list)
    poolers: list[Pooler] = field(default_factory=list)
    # hostname (name, name.ns, name.ns.svc, name.ns.svc.cluster.local) -> (kind, id)
    services: dict[str, tuple[str, str]] = field(default_factory=dict)
    problems: list[ConfigProblem] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    claimed: list[str] = field(default_factory=list)  # K8sObject refs represented here


class ReadContext:
    """One read of the operator resources: the objects, the PostgreSQL major to assume,
    the root includes are read under, what the read fills, CloudNativePG clusters by
    (namespace, name) for their Poolers, and the namespace of objects without one."""

    def __init__(self, objects: list[K8sObject], version_default: int, root: Root,
                 out: OperatorEntities, declared_version: Term | None = None) -> None:
        self.objects = objects
        self.version_default = version_default
        # The major the user declared (--pg-version, pg-version), None when none was: a
        # resource that names none runs the operator's default, unless the user says.
        self.declared_version = declared_version
        self.root = root
        self.out = out
        self.cnpg: dict[tuple[str | None, str], tuple[Server, Server | None]] = {}
        self.default_ns = "default"
        # (namespace, name) of a CloudNativePG Pooler -> the HPAs and KEDA ScaledObjects
        # that target it; built on the first Pooler (advisor.read.sources.operators.cnpg)
        self.pooler_scalers: dict[tuple[str, str], list[K8sObject]] | None = None

    def problem(self, obj: K8sObject, keys: tuple[str | int, ...], message: str,
                fatal: bool = False, program: str = "pool-advisor") -> None:
        loc = location_at(obj, *keys)
        self.out.problems.append(ConfigProblem(location=loc, message=message, fatal=fatal,
                                               program=program))

    def services(self, names: list[str], namespace: str | None, kind: str, ident: str) -> None:
        for name in names:
            for host in host_forms(name, namespace or self.default_ns):
                self.out.services[host] = (kind, ident)


def host_forms(name: str, namespace: str | None) -> list[str]:
    """The names a pod may use for a Service: name, name.ns, name.ns.svc and the FQDN."""
    if not namespace:
        return [name]
    return [name, f"{name}.{namespace}", f"{name}.{namespace}.svc",
            f"{name}.{namespace}.svc.cluster.local"]


def source_at(obj: K8sObject, *keys: str | int) -> Source:
    return field_source(obj, *keys)


def location_at(obj: K8sObject, *keys: str | int) -> Location:
    s = source_at(obj, *keys)
    return Location(path=s.path or obj.path, line=s.line)


def pooler_surge(obj: K8sObject, replicas: Term, why: str,
                 strategy: tuple[str, ...] | None = None) -> Term | None:
    """Extra PgBouncer pods while an operator's pooler Deployment rolls out: its
    strategy at `strategy` when the resource has one, else Kubernetes' RollingUpdate
    default (maxSurge 25%, rounded up), `why` saying the operator leaves it so."""
    from advisor.read.workloads import K8S_DEFAULT, SurgeSpec, surge_term

    default = f"{K8S_DEFAULT}: maxSurge 25% ({why})"
    if strategy is None or get(obj.body, *strategy) is None:
        return surge_term(SurgeSpec("default", keys="maxSurge"), replicas.value, default)
    if get(obj.body, *strategy, "type", default="RollingUpdate") == "Recreate":
        return None
    keys = (*strategy, "rollingUpdate", "maxSurge")
    raw = get(obj.body, *keys)
    spec = SurgeSpec("default", keys=".".join(keys)) if raw is None else SurgeSpec(
        "given", text=str(raw).strip(), source=source_at(obj, *keys))
    return surge_term(spec, replicas.value, default)


def int_term(obj: K8sObject, label: str, keys: tuple[str | int, ...], default: float,
             who: str) -> Term:
    """The integer at `keys`, or `default` with `who` as its named default."""
    raw = get(obj.body, *keys)
    if raw is None:
        return Term(label=label, value=default, source=Source.default_of(who, key=keys[-1]
                                                                          if keys else None))
    try:
        value = int(str(raw))
    except ValueError:
        return Term(label=label, value=default, source=Source.default_of(
            f"{who} ({'.'.join(map(str, keys))}={raw!r} is not a number)"))
    count_field(obj, keys, value)  # 400 digits or -3: the operator's schema refuses it
    return Term(label=label, value=value, source=source_at(obj, *keys))


def entity_id(prefix: str, obj: K8sObject, suffix: str = "") -> str:
    ns = f"{obj.namespace}/" if obj.namespace else ""
    return f"{prefix}:{ns}{obj.name}{suffix}"


# --- PostgreSQL settings from a parameters map --------------------------------------


def pg_parameter_settings(ctx: ReadContext | None, obj: K8sObject, keys: tuple[str | int, ...],
                          version: int, *, strings_only: str | None = None,
                          problems: list[ConfigProblem] | None = None) -> dict[str, Setting]:
    """postgresql.conf settings from a CR's parameter map (name -> value), each at its
    own line, converted to base units as PostgreSQL would (advisor.facts.pg_guc)."""
    from advisor.facts import pg_guc as pgguc

    found = get(obj.body, *keys)
    sink = problems if problems is not None else (ctx.out.problems if ctx else [])
    settings: dict[str, Setting] = {}
    if not isinstance(found, dict):
        return settings
    params = pgguc.pg_params(version)
    for name, raw in found.items():
        name = str(name)
        at = location_at(obj, *keys, name)
        if strings_only and not isinstance(raw, str):
            sink.append(ConfigProblem(
                location=at, program="Kubernetes", fatal=True,
                message=f"{strings_only} needs string values: `{name}: {raw}` is refused by "
                "the API server (write it quoted)"))
        text = str(raw).lower() if isinstance(raw, bool) else str(raw)
        param = params.get(name.lower())
        if param is None:
            if "." not in name:
                exact = pgguc.has_table(version)  # else the nearest major's table
                sink.append(ConfigProblem(
                    location=at, program="PostgreSQL" if exact else "pool-advisor",
                    fatal=exact, message=f'unrecognized configuration parameter "{name}"'
                    + ("" if exact else f" (checked against PostgreSQL "
                                        f"{pgguc.table_major(version)}'s parameters)")))
                if exact and (note := pgguc.version_note(name, version)) is not None:
                    sink.append(ConfigProblem(
                        location=at, program="pool-advisor", fatal=False,
                        message=f'"{name}" was {note}: not a PostgreSQL {version} parameter'))
            continue
        parsed = pgguc.parse_value(param, name, text, version)
        if not parsed.ok:
            sink.append(ConfigProblem(location=at, program="PostgreSQL", fatal=True,
                                      message=parsed.message()))
            continue
        settings[param.name.lower()] = Setting(
            name=param.name.lower(), raw=text, value=parsed.value, unit=param.unit,
            source=source_at(obj, *keys, name))
    return settings


def version_term(obj: K8sObject, keys: tuple[str | int, ...], default: int, who: str
                 ) -> Term:
    from advisor.facts.pg_version import declared_major

    raw = get(obj.body, *keys)
    major = declared_major(raw)
    if major is not None:
        return Term(label="PostgreSQL version", value=major, source=source_at(obj, *keys))
    if raw is not None:
        who = f"{'.'.join(map(str, keys))} {raw!r} is not a PostgreSQL major"
    return Term(label="PostgreSQL version", value=default,
                source=Source.default_of(f"assumed PostgreSQL {default}: {who}"))


def image_version(obj: K8sObject, keys: tuple[str | int, ...], default: int, who: str) -> Term:
    from advisor.facts.pg_version import image_major

    image = get(obj.body, *keys)
    if isinstance(image, str):
        major = image_major(image)
        if major is not None:
            return Term(label="PostgreSQL version", value=major, source=source_at(obj, *keys))
        who = f"image {image} names no PostgreSQL version"
    return Term(label="PostgreSQL version", value=default,
                source=Source.default_of(f"assumed PostgreSQL {default}: {who}"))


_QUANTITY = re.compile(r"^\s*([0-9.]+)\s*([KMGTPE]i?|[kmunEPTGM]?)\s*$")
_FACTORS = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
            "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4, "Pi": 1024**5,
            "Ei": 1024**6, "m": 1e-3, "u": 1e-6, "n": 1e-9}


def quantity(text: Any) -> float | None:
    """A Kubernetes resource quantity ("2Gi", "500m", "1.5") as a number."""
    match = _QUANTITY.match(str(text))
    if not match:
        return None
    try:
        value = float(match.group(1)) * _FACTORS[match.group(2)]
    except ValueError:  # `1.2.3`: the pattern admits it, Kubernetes does not
        return None
    return value if math.isfinite(value) else None


def memory_term(obj: K8sObject, keys: tuple[str | int, ...]) -> Term | None:
    raw = get(obj.body, *keys)
    value = quantity(raw) if raw is not None else None
    if value is None:
        if raw is not None:  # `1.2.3Gi`: the resource's schema refuses it
            _not_a_quantity(obj, keys, raw)
        return None
    return Term(label="memory limit", value=value, source=source_at(obj, *keys))


def _not_a_quantity(obj: K8sObject, keys: tuple[str | int, ...], raw: Any) -> None:
    from advisor.model import WrongType
    from advisor.read.sources.k8s import type_name

    raise WrongType(location_at(obj, *keys), f"{obj.ref} {'.'.join(map(str, keys))}: "
                    f"{type_name(raw)} is not a Kubernetes quantity; Kubernetes refuses this "
                    "object, so it is not read")


def cpu_term(obj: K8sObject, resources: tuple[str | int, ...]) -> Term | None:
    """The cores the database pods get: limits.cpu, else requests.cpu (PA111)."""
    for kind in ("limits", "requests"):
        raw = get(obj.body, *resources, kind, "cpu")
        value = quantity(raw) if raw is not None else None
        if raw is not None and value is None:
            _not_a_quantity(obj, (*resources, kind, "cpu"), raw)
        if value is not None and value > 0:
            return Term(label=f"CPU {kind[:-1]}", value=value,
                        source=source_at(obj, *resources, kind, "cpu"))
    return None


def add_server(ctx: ReadContext, obj: K8sObject, ident: str, name: str, *, version: Term,
               settings: dict[str, Setting], instances: Term, memory: Term | None,
               cpu: Term | None = None,
               hosts: list[str], role: str = "primary", primary_id: str | None = None,
               held: list[Term] | None = None,
               start_errors: list[ConfigProblem] | None = None,
               unsubtracted: list[NotSubtracted] | None = None) -> Server:
    server = Server(id=ident, name=name, kind="operator", namespace=obj.namespace,
                    version=version, settings=dict(settings), instances=instances,
                    held=list(held or ()), start_errors=list(start_errors or ()),
                    unsubtracted=list(unsubtracted or ()),
                    memory_limit=memory, cpu_limit=cpu, location=location_at(obj), role=role,
                    primary_id=primary_id,
                    hosts=[h for n in hosts
                           for h in host_forms(n, obj.namespace or ctx.default_ns)])
    ctx.out.servers.append(server)
    ctx.services(hosts, obj.namespace, "server", ident)
    return server


def split_instances(obj: K8sObject, total: Term) -> tuple[Term, Term | None]:
    """One primary and total - 1 standbys (Terms keep the total's source)."""
    primary = Term(label="primary instance", value=1, source=total.source)
    if total.value <= 1:
        return primary, None
    return primary, Term(label=f"standby instances ({total.show()} - 1 primary)",
                         value=total.value - 1, source=total.source)


# --- PgBouncer settings -----------------------------------------------------------------


def bouncer_version(obj: K8sObject, keys: tuple[str | int, ...]) -> BouncerVersion:
    image = get(obj.body, *keys)
    if isinstance(image, str):
        # `pgbouncer:1.23.1`, `:v1.23`, and Crunchy's base-image prefixed tags
        # (crunchy-pgbouncer:ubi8-1.23-0, ubi9-1.24-1, centos8-1.15-3): the version after it
        match = re.search(r":(?:v|[a-z]+\d+-)?(\d{1,9})\.(\d{1,9})", image)
        if match:
            return BouncerVersion(major=int(match.group(1)), minor=int(match.group(2)),
                                  source=source_at(obj, *keys))
    return BouncerVersion()


def bouncer_setting(name: str, raw: str, source: Source, version: BouncerVersion
                    ) -> Setting | None:
    """A [pgbouncer] setting converted as PgBouncer's setter would (advisor.facts.pgbouncer);
    None for a name this PgBouncer version does not have."""
    from advisor.facts.pgbouncer import params, parse_param_value

    spec = params(version).get(name)
    if spec is None:
        return None
    ok, value, unit = parse_param_value(spec[0], raw, version)
    if not ok:
        return None
    return Setting(name=name, raw=raw, value=value, unit=unit, source=source)


def bouncer_parameter_settings(ctx: ReadContext, obj: K8sObject, keys: tuple[str | int, ...],
                               version: BouncerVersion, *, strings_only: str | None = None
                               ) -> dict[str, Setting]:
    from advisor.facts.pgbouncer import params

    found = get(obj.body, *keys)
    settings: dict[str, Setting] = {}
    if not isinstance(found, dict):
        return settings
    for name, raw in found.items():
        name = str(name)
        if strings_only and not isinstance(raw, str):
            ctx.problem(obj, (*keys, name), f"{strings_only} needs string values: "
                        f"`{name}: {raw}` is refused by the API server (write it quoted)",
                        fatal=True, program="Kubernetes")
        setting = bouncer_setting(name, str(raw), source_at(obj, *keys, name), version)
        if setting is None:
            known = name in params(version)
            ctx.problem(obj, (*keys, name), (
                f'invalid value "{raw}" for parameter {name}' if known else
                f"unknown {version.cite()} parameter {name!r}"), fatal=known,
                program="PgBouncer")
            continue
        settings[name] = setting
    return settings


class MadeSecret(Record, kw_only=True):
    """A Secret an operator creates at run time (not in the repository): its
    connection keys (never a password), derived from the resource at `source`."""

    namespace: str | None
    name: str
    data: dict[str, str]
    source: Source
    obj: K8sObject


def pg_uri(user: str | None, host: str, port: str, dbname: str | None) -> str:
    who = f"{user}@" if user else ""
    return f"postgresql://{who}{host}:{port}/{dbname or ''}"


def jdbc_uri(user: str | None, host: str, port: str, dbname: str | None, extra: str = "") -> str:
    query = f"?user={user}{extra}" if user else ""
    return f"jdbc:postgresql://{host}:{port}/{dbname or ''}{query}"


def made_secret(obj: K8sObject, name: str, data: dict[str, str], who: str) -> MadeSecret:
    at = source_at(obj, "metadata", "name")
    return MadeSecret(namespace=obj.namespace, name=name, data=data, obj=obj,
                      source=Source(path=at.path, line=at.line, key=name,
                                    default=f"Secret {name} made by the {who}"))
