"""A health checker's config names the pooler without connecting to PostgreSQL (audit 8a,
the TCP probe defect): an uptime monitor's `url: tcp://pgbouncer-ro:5432` endpoint is a TCP
connect with no startup packet, and a comment beside its HTTP checks ("the readiness
probe goes through pgbouncer-ro") is prose. Neither made its pod a client of the pooler
(PA106 "(database, user) unknown", PA201 "cannot tell"). PostgreSQL URLs and scheme-less
host:port lines on the same kind of file still link."""

from __future__ import annotations

import textwrap

import pytest

from advisor.engine.check import scan
from advisor.engine.options import CheckOptions
from advisor.model import EnvVar, Source
from advisor.read.apps.urls import other_scheme_hosts, route_from_env
from tests.tree_helpers import POSTGRES_DB, write


def monitor(config: str) -> str:
    """A monitor Deployment with `config` mounted from a ConfigMap."""
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: monitor-config}}
data:
  config.yaml: |
{textwrap.indent(config, "    ")}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: monitor}}
spec:
  template:
    spec:
      containers:
        - name: monitor
          image: example.test/uptime:5
          volumeMounts: [{{name: cfg, mountPath: /config}}]
      volumes:
        - name: cfg
          configMap: {{name: monitor-config}}
"""


def _clients(tmp_path, config: str) -> list:
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/monitor.yaml": monitor(config)})
    return scan([str(tmp_path)], CheckOptions(cache=False)).topology.clients


@pytest.mark.parametrize("config", [
    "checks:\n  - name: database port\n    url: tcp://db:5432\n",
    "checks:\n  - name: database port\n    url: tcp://db.default.svc.cluster.local:5432\n",
    "checks:\n  - url: http://db:9187/metrics\n",
    # prose on a comment line that mentions a URL variable and the host
    "checks:\n  # the API's DATABASE_URL_READ goes to db, so this catches replica lag\n"
    "  - url: http://api:3000/health\n",
])
def test_a_probe_or_a_comment_naming_the_server_is_no_client(tmp_path, config):
    assert _clients(tmp_path, config) == []


@pytest.mark.parametrize("config", [
    "storage:\n  url: postgres://monitor@db:5432/monitor\n",
    "storage:\n  dsn: jdbc:postgresql://db:5432/monitor\n",
    "storage:\n  address: db:5432\n",
    # a tcp:// probe of another host on the line does not hide a PostgreSQL URL's host
    "storage: {probe: \"tcp://cache:6379\", url: \"postgresql://db/monitor\"}\n",
])
def test_a_postgresql_url_or_host_port_still_links(tmp_path, config):
    (client,) = _clients(tmp_path, config)
    assert (client.target_kind, client.target_id) == ("server", "StatefulSet/db")


def test_hosts_of_other_schemes():
    assert other_scheme_hosts("url: tcp://pgbouncer-ro.ns.svc:5432") == {"pgbouncer-ro.ns.svc"}
    assert other_scheme_hosts("x: jdbc:mysql://u@my:3306/a, y: https://web/x") == {"my", "web"}
    for line in ("url: postgres://db/x", "jdbc:postgresql://db:5432/x",
                 "r2dbc:pool:postgresql://db/x", "postgresql+asyncpg://db/x", "host: db:5432"):
        assert other_scheme_hosts(line) == set()


def test_a_host_variable_holding_a_tcp_url_is_no_route():
    source = Source(path="k8s/app.yaml")
    assert route_from_env((EnvVar(name="DB_HOST", value="tcp://db:5432", source=source),)) \
        is None
    route = route_from_env((EnvVar(name="DB_HOST", value="db:5432", source=source),))
    assert route is not None and (route.host, route.port) == ("db", 5432)
