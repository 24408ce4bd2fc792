"""A database host in a PostgreSQL section of a mounted JSON/YAML configuration file
(`"Postgres": {"Host": ...}` of a ConfigMap's config.json, mattfenwick/scaling's
webserver): the workload connects there. To a known server it is linked; a host that
names none is a PA107 route, never "no database host" (audit 13e N3)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.read.config_sections import section_hosts
from tests.tree_helpers import write

CONFIG_JSON = """\
{
  "LogLevel": "info",
  "Webserver": {"Host": "web", "ServicePort": 80},
  "Postgres": {
    "Host": "HOST",
    "User": "app",
    "Database": "orders"
  }
}
"""

WEB = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data:
  config.json: |
CONFIG
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: ghcr.io/example/web:1
          args: ["webserver", "/config/config.json"]
          volumeMounts: [{name: config, mountPath: /config}]
      volumes:
        - {name: config, configMap: {name: web-config}}
"""


def web(host: str, config: str = CONFIG_JSON) -> str:
    body = "\n".join("    " + line for line in config.replace("HOST", host).splitlines())
    return WEB.replace("CONFIG", body)


def test_section_hosts_reads_a_postgres_section():
    (found,) = section_hosts(CONFIG_JSON.replace("HOST", "orders-db"))
    assert (found.host, found.line, found.section, found.postgres, found.dbname,
            found.user) == ("orders-db", 5, "Postgres", True, "orders", "app")
    # another engine's database section, a template left unrendered: none
    assert section_hosts('database: {driver: mysql, host: db}\n') == []
    assert section_hosts('db: {host: "{{ .Values.host }}"}\n') == []
    (generic,) = section_hosts('database: {host: db, port: 5432}\n')
    assert (generic.postgres, generic.port) == (False, 5432)


def test_a_host_no_server_answers_to_is_a_pa107_at_its_line(tmp_path):
    write(tmp_path, {"k8s/web.yaml": web("orders-db"),
                     "k8s/db.yaml": "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: "
                                    "{name: other-db}\nspec:\n  template:\n    spec:\n"
                                    "      containers: [{name: pg, image: postgres:16}]\n"})
    r = run_check([tmp_path])
    (pa107,) = [f for f in r.findings if f.code == "PA107"]
    assert "host 'orders-db'" in pa107.message
    # the config.json's "Host" line inside the ConfigMap (line 5 of the file, 6 below)
    assert pa107.location.label() == "k8s/web.yaml:10", pa107.location.label()


def test_a_database_section_of_another_engine_is_no_route(tmp_path):
    config = '{"Database": {"Driver": "mysql", "Host": "orders-db"}}\n'
    write(tmp_path, {"k8s/web.yaml": web("orders-db", config)})
    r = run_check([tmp_path])
    assert [f for f in r.findings if f.code == "PA107"] == []


def test_a_script_installed_server_named_in_the_config_is_linked(tmp_path):
    # mattfenwick/scaling's shape: Bitnami installed by dev/deploy.sh, the webserver's
    # host in its mounted config.json; the server's peak is never "fits, peak 0"
    write(tmp_path, {"dev/deploy.sh": "helm upgrade my-pg postgresql --install "
                                      "--repo https://charts.bitnami.com/bitnami\n",
                     "k8s/web.yaml": web("my-pg-postgresql")})
    (budget,) = run_check([tmp_path]).budgets
    assert (budget.server, budget.unknown_clients) == ("my-pg-postgresql", ["web"])
    assert budget.peak >= 2
