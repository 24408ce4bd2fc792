"""Nextcloud's official image (advisor/read/apps/nextcloud.py): one PDO connection per PHP
process; the processes are Apache prefork's MaxRequestWorkers (150, Debian's
mpm_prefork.conf) for the apache variant, PHP-FPM's pm.max_children (5, php-src
www.conf) for the fpm variants, each read from the files the pod mounts over them."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.read.apps import pools_for_container
from tests.apphelpers import container
from tests.tree_helpers import POSTGRES_DB as DB
from tests.tree_helpers import write

PG = {"POSTGRES_HOST": "db", "POSTGRES_DB": "nextcloud", "POSTGRES_USER": "nc"}


def _pools(image: str, env: dict[str, str] | None = None, command: tuple[str, ...] = ()):
    return pools_for_container(replace(container(PG if env is None else env,
                                                 command=command), image=image))


@pytest.mark.parametrize(("image", "processes"), [
    ("nextcloud:34.0.1-apache", 150),
    ("nextcloud:34", 150),  # the bare version tags are the apache variant
    ("docker.io/library/nextcloud:stable", 150),
    ("nextcloud", 150),
    ("nextcloud:34.0.1-fpm", 5),
    ("mirror.gcr.io/library/nextcloud:33-fpm-alpine", 5),
])
def test_php_processes_by_variant(image, processes):
    (pool,) = _pools(image).pools
    assert (pool.processes.value, pool.size.value, pool.bound) == (processes, 1, "default")
    assert pool.per_pod() == processes
    text = pool.processes.source.default
    assert ("MaxRequestWorkers 150" in text) == (processes == 150)
    assert ("pm.max_children = 5" in text) == (processes == 5)
    assert "ConnectionFactory.php at 001260223e" in pool.size.source.default


@pytest.mark.parametrize(("image", "env"), [
    ("nextcloud:34-apache", {"MYSQL_HOST": "mysql"}),
    ("nextcloud:34-apache", {"SQLITE_DATABASE": "nc", **PG}),
    ("nextcloud:34-apache", {}),  # config.php on the volume decides: not read
    ("lscr.io/linuxserver/nextcloud:30.0.0", PG),  # another image of that name
    ("xperimental/nextcloud-exporter:0.8.0", PG),
])
def test_no_postgresql_pool(image, env):
    assert _pools(image, env).pools == []


def test_cron_sidecar_cronjob_and_occ_hold_one():
    for command in (("/cron.sh",), ("php", "-f", "/var/www/html/cron.php", "--", "--verbose"),
                    ("php", "occ", "files:scan", "--all")):
        (pool,) = _pools("nextcloud:34-apache", command=command).pools
        assert (pool.size.value, pool.processes, pool.per_pod()) == (1, None, 1)
    assert _pools("nextcloud:34-apache", command=("sh", "-c", "sleep 1")).pools == []


def test_a_digest_without_a_tag_names_no_variant():
    got = _pools("nextcloud@sha256:" + "a" * 64)
    assert got.pools == [] and "variant" in got.unknown[0]


def nextcloud_chart(*, image: str = "nextcloud:34.0.1-apache", mounts: str = "",
                    configmap: str = "", cron: bool = False) -> str:
    """The nextcloud chart's shape (nextcloud/helm 9.x): the image with no command,
    POSTGRES_* env, an HPA of 10, Recreate; phpConfigs in a ConfigMap mounted file by
    file with subPath (php-fpm.d for the fpm flavour), and a crond sidecar."""
    sidecar = f"""
        - name: nextcloud-cron
          image: {image}
          command: [/cron.sh]
          env:
            - {{name: POSTGRES_HOST, value: db}}""" if cron else ""
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: nextcloud-phpconfig}}
data:
{configmap or "  none: ''"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: nextcloud}}
spec:
  replicas: 1
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: nextcloud
          image: {image}
          env:
            - {{name: POSTGRES_HOST, value: db}}
            - {{name: POSTGRES_DB, value: nextcloud}}
            - {{name: POSTGRES_USER, value: nc}}
            - name: POSTGRES_PASSWORD
              valueFrom: {{secretKeyRef: {{name: db, key: password}}}}
          volumeMounts:
{mounts or "            []"}{sidecar}
      volumes:
        - name: nextcloud-phpconfig
          configMap: {{name: nextcloud-phpconfig}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: nextcloud}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: nextcloud}}
  maxReplicas: 10
"""


def _mount(path: str, key: str) -> str:
    return (f"            - {{name: nextcloud-phpconfig, mountPath: {path}/{key}, "
            f"subPath: {key}}}\n")


def _run(root):
    (budget,) = run_check([str(root)], CheckOptions()).budgets
    (client,) = [c for c in scan([str(root)], CheckOptions()).topology.clients
                 if c.name == "nextcloud"]
    return budget, client


def test_nextcloud_chart_apache_is_1500(tmp_path):
    """Audit D4 (nextcloud/helm c968d8b, hpa.enabled): '>= 10' (PA106) -> 10 pods x 150
    Apache processes x 1 = 1500 > 47; with the crond sidecar one more per pod."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/nextcloud.yaml": nextcloud_chart()})
    budget, client = _run(tmp_path)
    assert (budget.peak, budget.usable) == (1500, 47)
    write(tmp_path, {"k8s/nextcloud.yaml": nextcloud_chart(cron=True)})
    budget, client = _run(tmp_path)
    assert budget.peak == 10 * (150 + 1)
    assert [p.label for p in client.pools] == ["Nextcloud PDO connection per PHP process",
                                               "Nextcloud PHP CLI PDO connection"]


def test_php_fpm_d_files_in_glob_order(tmp_path):
    """php-fpm includes php-fpm.d/*.conf in name order and a [www] section continues the
    pool: aa.conf's 99 is overridden by the image's www.conf (5), zz-custom.conf's 20
    wins. The value is cited at its ConfigMap line."""
    fpm = "/usr/local/etc/php-fpm.d"
    configmap = ("  aa.conf: |-\n    [www]\n    pm.max_children = 99\n"
                 "  zz-custom.conf: |-\n    [www]\n    pm = static\n"
                 "    pm.max_children = 20\n")
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/nextcloud.yaml": nextcloud_chart(
        image="nextcloud:34-fpm", configmap=configmap,
        mounts=_mount(fpm, "aa.conf") + _mount(fpm, "zz-custom.conf"))})
    budget, client = _run(tmp_path)
    (pool,) = client.pools
    assert (pool.processes.value, pool.bound) == (20, "fixed")
    assert (pool.processes.source.path, pool.processes.source.line) == ("k8s/nextcloud.yaml", 12)
    assert budget.peak == 10 * 20
    only_early = "  aa.conf: |-\n    [www]\n    pm.max_children = 99\n"
    write(tmp_path, {"k8s/nextcloud.yaml": nextcloud_chart(
        image="nextcloud:34-fpm", configmap=only_early, mounts=_mount(fpm, "aa.conf"))})
    budget, client = _run(tmp_path)
    assert budget.peak == 10 * 5


def test_php_fpm_second_pool_and_process_max(tmp_path):
    fpm = "/usr/local/etc/php-fpm.d"
    configmap = ("  zz-more.conf: |-\n    [global]\n    process.max = 8\n"
                 "    [other]\n    pm.max_children = 10\n")
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/nextcloud.yaml": nextcloud_chart(
        image="nextcloud:34-fpm", configmap=configmap, mounts=_mount(fpm, "zz-more.conf"))})
    budget, _ = _run(tmp_path)
    assert budget.peak == 10 * 8  # [www] 5 + [other] 10 = 15, capped by process.max 8
    configmap = "  zz-more.conf: |-\n    [other]\n    pm.max_children = 10\n"
    write(tmp_path, {"k8s/nextcloud.yaml": nextcloud_chart(
        image="nextcloud:34-fpm", configmap=configmap, mounts=_mount(fpm, "zz-more.conf"))})
    budget, _ = _run(tmp_path)
    assert budget.peak == 10 * 15


@pytest.mark.parametrize(("path", "text", "per_pod"), [
    # the image's mpm_prefork.conf replaced: its value, inside <IfModule mpm_prefork_module>
    ("/etc/apache2/mods-available", "<IfModule mpm_prefork_module>\n"
     "      MaxRequestWorkers 40\n    </IfModule>", 40),
    # a conf-enabled file is read after mods-enabled: it wins
    ("/etc/apache2/conf-enabled", "MaxRequestWorkers 60", 60),
    # another MPM's block does not apply to prefork
    ("/etc/apache2/conf-enabled", "<IfModule mpm_event_module>\n"
     "      MaxRequestWorkers 400\n    </IfModule>", 150),
    # above the ServerLimit default (256), prefork lowers it
    ("/etc/apache2/conf-enabled", "MaxRequestWorkers 1000", 256),
    ("/etc/apache2/conf-enabled", "ServerLimit 1000\n    MaxRequestWorkers 1000", 1000),
    # a conf-available file the image does not enable is not read
    ("/etc/apache2/conf-available", "MaxRequestWorkers 10", 150),
])
def test_apache_mpm_settings_the_pod_mounts(tmp_path, path, text, per_pod):
    key = "mpm_prefork.conf" if "mods" in path else "zz-tuning.conf"
    configmap = f"  {key}: |-\n    " + text.replace("\n    ", "\n    ") + "\n"
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/nextcloud.yaml": nextcloud_chart(
        configmap=configmap, mounts=_mount(path, key))})
    budget, client = _run(tmp_path)
    assert budget.peak == 10 * per_pod and not client.unknown


@pytest.mark.parametrize(("path", "key", "text"), [
    ("/etc/apache2", "apache2.conf", "ServerRoot /etc/apache2"),
    ("/etc/apache2/conf-enabled", "zz.conf", "<IfDefine BIG>\n      MaxRequestWorkers 9\n"
     "    </IfDefine>"),
    ("/etc/apache2/mods-available", "mpm_prefork.conf", "StartServers 2"),
    ("/usr/local/etc/php-fpm.d", "zz.conf", "[www]\n    pm.max_children = ${CHILDREN}"),
])
def test_config_pool_advisor_does_not_read_is_unknown(tmp_path, path, key, text):
    image = "nextcloud:34-fpm" if "php-fpm" in path else "nextcloud:34-apache"
    configmap = f"  {key}: |-\n    {text}\n"
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/nextcloud.yaml": nextcloud_chart(
        image=image, configmap=configmap, mounts=_mount(path, key))})
    _, client = _run(tmp_path)
    assert client.pools == [] and client.unknown
