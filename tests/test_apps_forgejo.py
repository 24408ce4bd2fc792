"""Forgejo from its published image (advisor/read/apps/images.py forgejo_pools): the Gitea
reader with Forgejo's default, MAX_OPEN_CONNS 100 from 8.0.0 (forgejo#3383; 0 = no limit
before), and both env prefixes, FORGEJO__ and GITEA__ (config_env.go)."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.read.apps import pools_for_container
from tests.apphelpers import container
from tests.tree_helpers import write

# A CloudNativePG-like server of our own: a plain StatefulSet with max_connections 200
DB = """
apiVersion: v1
kind: Service
metadata: {name: forgejo-db-rw}
spec:
  selector: {app: forgejo-db}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: forgejo-db}
spec:
  template:
    metadata: {labels: {app: forgejo-db}}
    spec:
      containers:
        - name: postgres
          image: postgres:17.2
          args: ["-c", "max_connections=200"]
"""


def forgejo_chart(database: str, *, env: str = "", tag: str = "13.0.3-rootless",
                  replicas: int = 3) -> str:
    """The shape forgejo-helm 15.x renders: gitea.config as the Secret
    <release>-inline-config, one key per app.ini section of KEY=VALUE lines, mounted at
    /env-to-ini-mounts/inlines/ into the init container that exports them as FORGEJO__
    variables and runs environment-to-ini; the rootless image with no command;
    deployment.env in both; maxSurge 100%."""
    image = f"code.forgejo.org/forgejo/forgejo:{tag}"
    return f"""
apiVersion: v1
kind: Secret
metadata: {{name: forgejo-inline-config}}
type: Opaque
stringData:
  _generals_: ""
  database: |-
{database}
  server: |-
    HTTP_PORT=3000
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: forgejo}}
spec:
  replicas: {replicas}
  strategy:
    type: RollingUpdate
    rollingUpdate: {{maxSurge: "100%", maxUnavailable: 0}}
  template:
    spec:
      initContainers:
        - name: init-app-ini
          image: "{image}"
          command: ["/usr/sbinx/config_environment.sh"]
          env:
            - {{name: GITEA_APP_INI, value: /data/gitea/conf/app.ini}}
{env}          volumeMounts:
            - {{name: inline-config-sources, mountPath: /env-to-ini-mounts/inlines/}}
      containers:
        - name: forgejo
          image: "{image}"
          env:
            - {{name: GITEA_APP_INI, value: /data/gitea/conf/app.ini}}
{env}      volumes:
        - name: inline-config-sources
          secret: {{secretName: forgejo-inline-config}}
"""


PG = "    DB_TYPE=postgres\n    HOST=forgejo-db-rw:5432\n    NAME=forgejo\n    USER=forgejo"


def _budget(root):
    result = run_check([str(root)], CheckOptions())
    (budget,) = [b for b in result.budgets if b.server == "forgejo-db"]
    (client,) = [c for c in scan([str(root)], CheckOptions()).topology.clients
                 if c.name == "forgejo"]
    return budget, client


def test_forgejo_chart_on_postgresql_holds_100_per_pod(tmp_path):
    """Audit D3 (forgejo-helm e78fa53, Forgejo 13.0.3, 3 replicas, maxSurge 100%): the
    Gitea reader did not take Forgejo's image (PA106, '>= 6'); Forgejo 8.0.0+ caps its
    engine at MAX_OPEN_CONNS 100: (3 + 3) x 100 = 600 > 197."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/forgejo.yaml": forgejo_chart(PG)})
    budget, client = _budget(tmp_path)
    (pool,) = client.pools
    assert (pool.label, pool.size.value, pool.bound) == (
        "Forgejo [database] MAX_OPEN_CONNS", 100, "default")
    assert pool.size.source.default.startswith("Forgejo 8.0.0+ default [database] "
                                               "MAX_OPEN_CONNS 100")
    assert "b5e91db9c9" in pool.size.source.default
    assert (pool.route.host, pool.route.dbname) == ("forgejo-db-rw", "forgejo")
    assert (budget.peak, budget.usable) == ((3 + 3) * 100, 197)


def test_forgejo_max_open_conns_from_the_charts_config_then_either_prefix(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB,
                     "k8s/forgejo.yaml": forgejo_chart(PG + "\n    MAX_OPEN_CONNS=30")})
    budget, client = _budget(tmp_path)
    (pool,) = client.pools
    assert (pool.size.value, pool.bound) == (30, "fixed")
    assert (pool.size.source.path, pool.size.source.line) == ("k8s/forgejo.yaml", 13)
    assert budget.peak == 6 * 30
    for name in ("FORGEJO__database__MAX_OPEN_CONNS", "GITEA__DATABASE__MAX_OPEN_CONNS"):
        env = f"            - {{name: {name}, value: \"20\"}}\n"
        write(tmp_path, {"k8s/forgejo.yaml": forgejo_chart(PG + "\n    MAX_OPEN_CONNS=30",
                                                           env=env)})
        budget, client = _budget(tmp_path)
        assert client.pools[0].size.source.key == name and budget.peak == 6 * 20


def test_forgejo_prefixes_that_disagree_are_unknown(tmp_path):
    """environment-to-ini applies FORGEJO__ and GITEA__ variables in the order of the
    process's environment, which kubelet builds from a map: which one wins is not known."""
    env = ("            - {name: FORGEJO__database__MAX_OPEN_CONNS, value: \"20\"}\n"
           "            - {name: GITEA__database__MAX_OPEN_CONNS, value: \"40\"}\n")
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/forgejo.yaml": forgejo_chart(PG, env=env)})
    budget, client = _budget(tmp_path)
    assert client.pools == [] and "disagree" in client.unknown
    assert "FORGEJO__database__MAX_OPEN_CONNS, GITEA__database__MAX_OPEN_CONNS" in \
        client.unknown
    same = env.replace('"40"', '"20"')
    write(tmp_path, {"k8s/forgejo.yaml": forgejo_chart(PG, env=same)})
    budget, client = _budget(tmp_path)
    assert client.pools[0].size.value == 20 and budget.peak == 6 * 20


@pytest.mark.parametrize(("tag", "size", "bound"), [
    ("13.0.3-rootless", 100, "default"),
    ("8.0.0", 100, "default"),
    ("11", 100, "default"),
    ("latest", 100, "default"),
    ("7.0.14", 0, "unbounded"),  # v7.0 (LTS) kept MustInt(0)
    ("7-rootless", 0, "unbounded"),
    ("1.21.11-2", 0, "unbounded"),
])
def test_forgejo_default_by_release(tag, size, bound):
    env = {"FORGEJO__database__DB_TYPE": "postgres", "FORGEJO__database__HOST": "db"}
    (pool,) = pools_for_container(replace(
        container(env), image=f"codeberg.org/forgejo/forgejo:{tag}")).pools
    assert (pool.size.value, pool.bound) == (size, bound)
    assert ("before 8.0.0" in pool.size.source.default) == (size == 0)
    assert ("assumed" in pool.note) == (tag == "latest")


def test_gitea_reads_no_forgejo_prefix():
    """Gitea's config_env.go takes GITEA__ only: FORGEJO__ variables are not its settings."""
    env = {"FORGEJO__database__DB_TYPE": "postgres"}
    assert pools_for_container(replace(container(env), image="gitea/gitea:1.24.6")).pools == []


def test_forgejo_runner_and_other_forgejo_images_are_not_forgejo():
    env = {"FORGEJO__database__DB_TYPE": "postgres"}
    for image in ("code.forgejo.org/forgejo/runner:9.1.0", "ghcr.io/acme/forgejo-mcp:1"):
        assert pools_for_container(replace(container(env), image=image)).pools == []


def _with_init_env(chart: str, data: bool) -> str:
    """forgejo-helm's gitea.additionalConfigFromEnvs go into the init container alone
    (init-app-ini), whose config_environment.sh writes them into app.ini; `data`: both
    containers mount the chart's data volume at /data, where that app.ini is."""
    chart = chart.replace(
        "            - {name: GITEA_APP_INI, value: /data/gitea/conf/app.ini}\n"
        "          volumeMounts:\n",
        "            - {name: GITEA_APP_INI, value: /data/gitea/conf/app.ini}\n"
        "            - {name: FORGEJO__DATABASE__MAX_OPEN_CONNS, value: \"10\"}\n"
        "          volumeMounts:\n"
        + ("            - {name: data, mountPath: /data}\n" if data else ""), 1)
    if data:
        chart = chart.replace(
            "{env}      volumes:\n".format(env=""),
            "          volumeMounts: [{name: data, mountPath: /data}]\n      volumes:\n"
            "        - {name: data, persistentVolumeClaim: {claimName: forgejo-data}}\n")
    return chart


def test_max_open_conns_in_the_init_containers_env_is_the_apps_when_it_reads_that_app_ini(
        tmp_path):
    """The chart's shape: the init container writes app.ini on the data volume the
    application container mounts at the same path: its variable is the app's setting
    (config_environment.sh reloads its env over the section files), cited there."""
    chart = _with_init_env(forgejo_chart(PG + "\n    MAX_OPEN_CONNS=30"), data=True)
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/forgejo.yaml": chart})
    budget, client = _budget(tmp_path)
    (pool,) = client.pools
    line = chart.splitlines().index(
        '            - {name: FORGEJO__DATABASE__MAX_OPEN_CONNS, value: "10"}') + 1
    assert (pool.size.value, pool.size.source.key, pool.size.source.line) == (
        10, "FORGEJO__DATABASE__MAX_OPEN_CONNS", line)
    assert budget.peak == 6 * 10
    # the application container's own variable is applied last, at its start
    own = chart.replace("          volumeMounts: [{name: data",
                        "          env: [{name: GITEA__database__MAX_OPEN_CONNS, value: \"7\"}]\n"
                        "          volumeMounts: [{name: data", 1)
    write(tmp_path, {"k8s/forgejo.yaml": own})
    assert _budget(tmp_path)[1].pools[0].size.value == 7


def test_max_open_conns_in_an_init_containers_env_whose_app_ini_is_not_read_is_unknown(
        tmp_path):
    """No shared volume at /data: the app.ini the init container writes is in its own
    filesystem, not the application's; its MAX_OPEN_CONNS is unknown, never the
    default 100."""
    chart = _with_init_env(forgejo_chart(PG), data=False)
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/forgejo.yaml": chart})
    budget, client = _budget(tmp_path)
    assert budget.peak is None or budget.unknown_clients
    assert client.pools == []
    assert "FORGEJO__DATABASE__MAX_OPEN_CONNS is set in init container init-app-ini" in \
        client.unknown
    assert "/data/gitea/conf/app.ini is on no volume of init-app-ini" in client.unknown
