"""What tells a Grafana data source file from any other ConfigMap or Secret, kept apart
from advisor.link.grafana_datasources so that linking asks it of every repository
without importing the reader (which only repositories with such files need)."""

from __future__ import annotations

from advisor.read.workloads import ConfigIndex, ConfigMapData

SIDECAR_LABEL = "grafana_datasource"  # the grafana chart's sidecar.datasources.label


def yaml_key(key: str) -> bool:
    return key.endswith((".yaml", ".yml"))


def may_hold_datasources(data: ConfigMapData) -> bool:
    """A file of it may list a PostgreSQL data source (read before its labels: a
    ConfigMap's body is not decoded from the cache for nothing)."""
    return any(yaml_key(k) and "datasources" in v and "postgres" in v
               for k, v in data.data.items())


def sidecar_files_present(index: ConfigIndex) -> bool:
    """A ConfigMap or Secret labelled for Grafana's sidecar that may list a PostgreSQL
    data source."""
    return any(may_hold_datasources(d) and SIDECAR_LABEL in d.obj.labels
               for d in index.values())
