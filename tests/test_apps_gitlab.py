"""GitLab from its Cloud Native images as the official chart runs them (gitlab-org/charts/
gitlab: the tool counted webservice, sidekiq, migrations, toolbox and gitlab-exporter as
clients of unknown size, 1 per pod, peak >= 30 on a server of 97 usable): each Puma
worker and each Sidekiq process holds a pool per database of its mounted database.yml,
of Gitlab::Database.default_pool_size = Gitlab::Runtime.max_threads + DB_POOL_HEADROOM
(Puma 1 + max threads + ActionCable's 4, Sidekiq its concurrency; headroom 10). The
manifests below are written in the chart's shape: a database.yml.erb in a ConfigMap
mounted at CONFIG_TEMPLATE_DIRECTORY, with `main:` and the chart's `ci:` on one host."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.read.apps.gitlab import ruby_to_i
from tests.tree_helpers import POSTGRES_DB, write

DB = POSTGRES_DB.replace("max_connections=50", "max_connections=500")
CNG = "registry.gitlab.com/gitlab-org/build/cng"
TEMPLATES = "/var/opt/gitlab/templates"


def entry(name: str, host: str = "db", tasks: str = "true", extra: str = "") -> str:
    return f"""      {name}:
        adapter: postgresql
        encoding: unicode
        database: gitlabhq_production
        username: gitlab
        password: <%= File.read('/etc/gitlab/postgres/psql-password-{name}').strip.to_json %>
        host: "{host}"
        port: 5432
        prepared_statements: false
        database_tasks: {tasks}
{extra}"""


SHARED = entry("ci", tasks="false") + entry("main")


def config_map(name: str, databases: str = SHARED, key: str = "database.yml.erb") -> str:
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: {name}}}
data:
  installation_type: gitlab-helm-chart
  {key}: |
    production:
{databases}"""


def rails(name: str, image: str, env: dict[str, str | None], *, kind: str = "Deployment",
          args: str = "", config: str = "", hpa: int = 0, replicas: int = 1,
          projected: bool = False) -> str:
    """A Rails workload as the chart renders it: the template ConfigMap mounted at
    CONFIG_TEMPLATE_DIRECTORY in the main container and in a wait-for-deps init
    container of the same image; Recreate, so the pods at peak are the replicas."""
    env = {"CONFIG_TEMPLATE_DIRECTORY": TEMPLATES, "CONFIG_DIRECTORY": "/srv/gitlab/config",
           **env}
    lines = "".join(
        f"            - {{name: {k}, value: \"{v}\"}}\n" if v is not None else
        f"            - {{name: {k}, valueFrom: {{secretKeyRef: {{name: s, key: {k}}}}}}}\n"
        for k, v in env.items())
    source = f"{{configMap: {{name: {config or name}}}}}"
    volume = f"{{name: config, projected: {{sources: [{source}]}}}}" if projected else \
        f"{{name: config, configMap: {{name: {config or name}}}}}"
    spec = "  backoffLimit: 6\n" if kind == "Job" else \
        f"  replicas: {replicas}\n  strategy: {{type: Recreate}}\n"
    autoscaler = f"""
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: {name}}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: {name}}}
  minReplicas: 1
  maxReplicas: {hpa}
""" if hpa else ""
    return f"""
apiVersion: {"batch/v1" if kind == "Job" else "apps/v1"}
kind: {kind}
metadata: {{name: {name}}}
spec:
{spec}  template:
    spec:
      initContainers:
        - name: dependencies
          image: {image}
          args: [/scripts/wait-for-deps]
          volumeMounts:
            - {{name: config, mountPath: {TEMPLATES}}}
      containers:
        - name: {name}
          image: {image}
{f"          args: {args}" + chr(10) if args else ""}          env:
{lines}          volumeMounts:
            - {{name: config, mountPath: {TEMPLATES}}}
      volumes:
        - {volume}
{autoscaler}"""


PUMA_ENV = {"GITLAB_WEBSERVER": "puma", "WORKER_PROCESSES": "2", "PUMA_THREADS_MIN": "4",
            "PUMA_THREADS_MAX": "4"}
WEBSERVICE = f"{CNG}/gitlab-webservice-ee:v18.9.1"
SIDEKIQ = f"{CNG}/gitlab-sidekiq-ee:v18.9.1"
TOOLBOX = f"{CNG}/gitlab-toolbox-ee:v18.9.1"


def webservice(env: dict[str, str | None] | None = None, databases: str = SHARED,
               hpa: int = 10) -> dict[str, str]:
    return {"k8s/webservice-cm.yaml": config_map("webservice", databases),
            "k8s/webservice.yaml": rails("webservice", WEBSERVICE,
                                         PUMA_ENV if env is None else env, hpa=hpa)}


def sidekiq(env: dict[str, str | None] | None = None, databases: str = SHARED
            ) -> dict[str, str]:
    return {"k8s/sidekiq-cm.yaml": config_map("sidekiq", databases),
            "k8s/sidekiq.yaml": rails("sidekiq", SIDEKIQ, {"SIDEKIQ_CONCURRENCY": "20"}
                                      if env is None else env, hpa=10, projected=True)}


def clients(root):
    topo = scan([str(root)], CheckOptions(cache=False)).topology
    return {c.name: c for c in topo.clients}


def budget(root, server: str = "db"):
    result = run_check([str(root)], CheckOptions(cache=False))
    return result, next(b for b in result.budgets if b.server == server)


def test_chart_defaults_webservice_and_sidekiq_two_pools_each(tmp_path):
    """The chart's defaults at HPA maxReplicas 10: webservice 10 x 2 workers x 19 x 2
    databases = 760, sidekiq 10 x 30 x 2 = 600, the migrations Job 2, the toolbox 0."""
    write(tmp_path, {
        "k8s/db.yaml": DB, **webservice(), **sidekiq(),
        "k8s/toolbox-cm.yaml": config_map("toolbox"),
        "k8s/toolbox.yaml": rails("toolbox", TOOLBOX, {}, args=(
            "[/bin/bash, -c, 'cp -v -r -L /etc/gitlab/.s3cfg $HOME/.s3cfg && while sleep "
            "3600; do :; done']")),
        "k8s/migrations-cm.yaml": config_map("migrations"),
        "k8s/migrations.yaml": rails("migrations", TOOLBOX, {}, kind="Job", args=(
            "[/bin/bash, -c, 'set -e; /scripts/wait-for-deps; /scripts/db-migrate;']"))})
    result, b = budget(tmp_path)
    totals = {c.who: c.total for c in b.contributions}
    assert totals == {"webservice": 760, "sidekiq": 600, "toolbox": 0, "migrations": 2}
    assert b.peak == 1362 and not b.unknown_clients
    assert any(f.code == "PA101" for f in result.findings)
    found = clients(tmp_path)
    ci, main = found["webservice"].pools  # database.yml's order: the chart puts main last
    assert (main.label, ci.label) == ("GitLab main pool (Puma worker)",
                                      "GitLab ci pool (Puma worker)")
    assert (main.size.value, main.processes.value, main.bound) == (19, 2, "fixed")
    assert main.processes.source.key == "WORKER_PROCESSES"
    assert main.processes.source.path == "k8s/webservice.yaml"
    why = main.size.source.default
    for part in ("max_threads 9 = 1 (main thread)", "4 (Puma max threads (PUMA_THREADS_MAX), "
                 "k8s/webservice.yaml:", "4 (ActionCable workers (ACTION_CABLE_WORKER_POOL_SIZE), "
                 "default:", "+ 10 (DB_POOL_HEADROOM, default:"):
        assert part in why
    assert main.route.host == "db" and main.route.source.path == "k8s/webservice-cm.yaml"
    assert main.route.source.line == 25  # the host: line of main in the ConfigMap
    assert ci.route.source.line == 15 and ci.size == main.size
    (_, sk_main) = found["sidekiq"].pools
    assert (sk_main.size.value, sk_main.processes) == (30, None)
    assert "20 (Sidekiq concurrency (SIDEKIQ_CONCURRENCY), k8s/sidekiq.yaml:" in \
        sk_main.size.source.default
    (toolbox,) = found["toolbox"].pools
    assert toolbox.size.value == 0 and "sleep loop" in toolbox.size.source.default


@pytest.mark.parametrize("env, size, processes", [
    ({"DB_POOL_HEADROOM": "5", "ACTION_CABLE_WORKER_POOL_SIZE": "0"}, 10, 2),
    ({"DB_POOL_HEADROOM": " "}, 19, 2),  # .presence: blank is the default 10
    ({"DB_POOL_HEADROOM": "abc"}, 9, 2),  # "abc".to_i == 0
    ({"WORKER_PROCESSES": "0"}, 19, None),  # Puma's single mode: one process
    ({"WORKER_PROCESSES": None, "PUMA_THREADS_MAX": None}, 31, 3),  # CNG puma.rb 3 x 16
    ({"PUMA_THREADS_MAX": "8"}, 23, 2),
])
def test_puma_pool_from_the_env(tmp_path, env, size, processes):
    merged = {**PUMA_ENV, **env}
    merged = {k: v for k, v in merged.items() if v is not None or k not in env}
    write(tmp_path, {"k8s/db.yaml": DB, **webservice(merged, hpa=0)})
    ci, main = clients(tmp_path)["webservice"].pools
    assert (main.size.value, ci.size.value) == (size, size)
    assert (main.processes.value if main.processes else None) == processes


def test_defaults_are_said_to_be_defaults(tmp_path):
    env = {"GITLAB_WEBSERVER": "PUMA"}  # the wrapper upper-cases it
    write(tmp_path, {"k8s/db.yaml": DB, **webservice(env, hpa=0)})
    _, main = clients(tmp_path)["webservice"].pools
    assert main.bound == "default" and main.size.value == 1 + 16 + 4 + 10
    assert main.processes.source.default.startswith("CNG configuration/puma.rb:67")


def test_decomposed_ci_on_its_own_server(tmp_path):
    """values-decomposition: ci on another host is a pool on that server, not main's."""
    other = DB.replace("name: db", "name: db-ci").replace("app: db", "app: db-ci")
    databases = entry("ci", host="db-ci") + entry("main")
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/db-ci.yaml": other,
                     **webservice(databases=databases)})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    peaks = {b.server: b.peak for b in result.budgets}
    assert peaks == {"db": 380, "db-ci": 380}  # 10 pods x 2 workers x 19 each


def test_load_balancing_hosts_a_pool_each(tmp_path):
    lb = ("        load_balancing:\n          hosts:\n          - db-replica-1\n"
          "          - db-replica-2\n")
    write(tmp_path, {"k8s/db.yaml": DB, **webservice(databases=entry("main", extra=lb))})
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    # the replicas, no server of the repository, are a part of the client apart
    pools = [p for c in topo.clients if c.name == "webservice" for p in c.pools]
    assert [(p.label, p.route.host, p.size.value) for p in pools] == [
        ("GitLab main pool (Puma worker)", "db", 19),
        ("GitLab main replica db-replica-1 pool (Puma worker)", "db-replica-1", 19),
        ("GitLab main replica db-replica-2 pool (Puma worker)", "db-replica-2", 19)]


@pytest.mark.parametrize("databases, why", [
    (entry("main", extra=("        load_balancing:\n          discover:\n"
                          "            record: db.x\n")),
     "load_balancing.discover (k8s/webservice-cm.yaml:"),
    (entry("main") + entry("geo"), "database.yml entry 'geo' (k8s/webservice-cm.yaml:"),
    ("      main: [unclosed\n", "var/opt/gitlab/templates/database.yml.erb "
     "(k8s/webservice-cm.yaml) is not read as YAML"),
    ("      []\n", "has no production databases pool-advisor reads"),
])
def test_what_is_not_read_is_unknown(tmp_path, databases, why):
    # PGHOST links it when the file says nowhere
    write(tmp_path, {"k8s/db.yaml": DB, **webservice({**PUMA_ENV, "PGHOST": "db"},
                                                     databases=databases)})
    client = clients(tmp_path)["webservice"]
    assert client.pools == [] and why in client.unknown


def test_a_plain_database_yml_is_copied_over_the_template(tmp_path):
    """set-config renders *.erb, then copies *.yml over them: database.yml wins."""
    files = webservice()
    files["k8s/webservice-cm.yaml"] += "  database.yml: |\n    production:\n" + \
        entry("main")
    write(tmp_path, {"k8s/db.yaml": DB, **files})
    (main,) = clients(tmp_path)["webservice"].pools
    assert main.route.source.line == 37  # database.yml's host:, not database.yml.erb's


@pytest.mark.parametrize("files, why", [
    ({"k8s/webservice-cm.yaml": config_map("webservice", key="gitlab.yml.erb",
                                           databases="      main: {}\n"),
      "k8s/webservice.yaml": rails("webservice", WEBSERVICE, {**PUMA_ENV, "PGHOST": "db"})},
     "database.yml not read (/var/opt/gitlab/templates/database.yml: no key of volume"),
    ({**webservice({**PUMA_ENV, "GITLAB_WEBSERVER": "unicorn"})},
     "GITLAB_WEBSERVER is 'unicorn'"),
    ({**sidekiq({"SIDEKIQ_CONCURRENCY": None})}, "SIDEKIQ_CONCURRENCY"),
    ({**sidekiq({})}, "SIDEKIQ_CONCURRENCY unset"),
    ({**sidekiq({"SIDEKIQ_CONCURRENCY": "5", "DB_POOL_HEADROOM": "-5"})},
     "pool 5 threads + -5 (DB_POOL_HEADROOM, k8s/sidekiq.yaml:"),
    ({"k8s/toolbox-cm.yaml": config_map("toolbox"),
      "k8s/toolbox.yaml": rails("toolbox", TOOLBOX, {}, args="[backup-utility, --backup]")},
     "whose connections pool-advisor does not read"),
    ({"k8s/exporter-cm.yaml": config_map("exporter"),
      "k8s/exporter.yaml": rails("exporter", f"{CNG}/gitlab-exporter:16.6.0", {
          "PGHOST": "db"}, config="exporter")}, "gitlab-exporter gem's own pool"),
])
def test_unknown_sizes_say_why(tmp_path, files, why):
    write(tmp_path, {"k8s/db.yaml": DB, **files})
    (client,) = clients(tmp_path).values()
    assert client.pools == [] and why in client.unknown, client.unknown
    _, b = budget(tmp_path)
    assert b.unknown_clients == [client.name]


def test_a_host_computed_by_erb_is_not_a_route(tmp_path):
    databases = entry("main", host="<%= ENV['GITLAB_DB_HOST'] %>")
    write(tmp_path, {"k8s/db.yaml": DB, **webservice(
        {**PUMA_ENV, "PGHOST": "db"}, databases=databases, hpa=0)})
    result = scan([str(tmp_path)], CheckOptions(cache=False))
    (client,) = result.topology.clients
    (main,) = client.pools
    assert main.size.value == 19 and client.target_id == "StatefulSet/db"  # by PGHOST
    assert any("main's host (k8s/webservice-cm.yaml:" in n and "an ERB expression" in n
               for n in result.topology.notices)


def test_another_image_with_a_marker_is_not_gitlab(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/x.yaml": rails(
        "x", "example.com/gitlab-sidekiq-exporter:1", {"PGHOST": "db"}, config="x")})
    (client,) = clients(tmp_path).values()
    assert not any("GitLab" in u for u in client.unknown)


@pytest.mark.parametrize("text, value", [("4", 4), ("", 0), ("abc", 0), (" 12x", 12),
                                         ("-3", -3), ("1_000", 1000), ("١٢", 0)])
def test_ruby_to_i(text, value):
    assert ruby_to_i(text) == value
