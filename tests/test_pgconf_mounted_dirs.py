"""include_dir of a directory the container mounts (advisor.read.sources.pgconf.MountedDir):
a ConfigMap volume's keys read as PostgreSQL reads a directory, checked against the real
PostgreSQL 15 (`postgres -C`) on the same files laid out as the kubelet lays out a
ConfigMap volume (each key a symlink into `..data`, itself a link to a dated folder)."""

from __future__ import annotations

import os

import pytest

from advisor.read.fs import Root
from advisor.read.sources.pgconf import (
    MountedDir,
    MountedFile,
    conf_dir_order,
    read_mounted_dir,
    read_pgconf,
)

MAIN = """\
max_connections = 50
shared_buffers = 16MB
include_dir = 'conf.d'
shared_buffers = 32MB
"""
# Keys as a ConfigMap holds them. strcmp order reads B.conf before a.conf (a locale
# order would read a.conf first); .hidden.conf, notes.txt and the 5-byte ".conf" are not
# read.
KEYS = {
    "override.conf": "max_connections = 500\nwork_mem = 1MB\n",
    "a.conf": "statement_timeout = 20s\nwork_mem = 3MB\n",
    "B.conf": "statement_timeout = 10s\nwork_mem = 2MB\nlock_timeout = 5s\n",
    ".hidden.conf": "max_connections = 7\n",
    "notes.txt": "max_connections = 8\n",
}
ASKED = ["max_connections", "shared_buffers", "work_mem", "statement_timeout", "lock_timeout"]


def _mounted(path: str = "/etc/postgresql/conf.d") -> MountedDir:
    return MountedDir(path, {k: MountedFile(v, f"cm.yaml#{k}", 10) for k, v in KEYS.items()})


def _ours(tmp_path) -> dict[str, str]:
    from advisor.facts import pg_guc as pgguc

    conf = read_pgconf(Root.of(tmp_path), "values.yaml", text=MAIN, line_offset=3,
                       display_path="values.yaml", auto_conf=False,
                       container_path="/etc/postgresql/postgresql.conf", mounts=[_mounted()])
    assert conf.problems == []
    assert conf.mounted_read == ["/etc/postgresql/conf.d"]
    return {n: pgguc.show(conf.settings[n].value) for n in ASKED}


def test_directory_order_and_filter_are_postgresql_s():
    assert conf_dir_order(KEYS) == ["B.conf", "a.conf", "override.conf"]
    assert conf_dir_order([".conf", "x.conf", "x.conf.bak", "é.conf"]) == ["x.conf", "é.conf"]


def test_a_mounted_directory_is_read_at_the_include_dir_line(tmp_path):
    conf = read_pgconf(Root.of(tmp_path), "values.yaml", text=MAIN, line_offset=3,
                       display_path="values.yaml", auto_conf=False,
                       container_path="/etc/postgresql/postgresql.conf", mounts=[_mounted()])
    mc, sb, wm = (conf.settings[n] for n in ("max_connections", "shared_buffers", "work_mem"))
    assert (mc.value, mc.source.path, mc.source.line) == (500, "cm.yaml#override.conf", 11)
    # after the include_dir line, the main file's own value wins
    assert (sb.raw, sb.source.path, sb.source.line) == ("32MB", "values.yaml", 7)
    assert (wm.raw, wm.source.path) == ("1MB", "cm.yaml#override.conf")
    assert conf.settings["statement_timeout"].raw == "20s"  # a.conf after B.conf


def test_an_absolute_include_dir_names_the_mount_itself(tmp_path):
    text = "include_dir = '/etc/postgresql/conf.d'\n"
    conf = read_pgconf(Root.of(tmp_path), "values.yaml", text=text, display_path="values.yaml",
                       auto_conf=False, container_path="/var/lib/x/postgresql.conf",
                       mounts=[_mounted()])
    assert conf.settings["max_connections"].value == 500 and conf.problems == []


def test_a_directory_mounted_from_a_configmap_not_given_is_said(tmp_path):
    absent = MountedDir("/etc/postgresql/conf.d", None, why="ConfigMap extra, which is not in "
                        "the repository")
    conf = read_pgconf(Root.of(tmp_path), "values.yaml", text=MAIN, line_offset=3,
                       display_path="values.yaml", auto_conf=False,
                       container_path="/etc/postgresql/postgresql.conf", mounts=[absent])
    [notice] = conf.problems
    assert not notice.fatal and (notice.location.path, notice.location.line) == ("values.yaml", 6)
    assert notice.message == ('included directory "conf.d" (/etc/postgresql/conf.d) is mounted '
                              "from ConfigMap extra, which is not in the repository; settings "
                              "it may hold are unknown")
    assert conf.settings["max_connections"].value == 50


def test_a_directory_not_mounted_is_still_unknown(tmp_path):
    conf = read_pgconf(Root.of(tmp_path), "values.yaml", text=MAIN, line_offset=3,
                       display_path="values.yaml", auto_conf=False,
                       container_path="/etc/postgresql/postgresql.conf",
                       mounts=[_mounted("/elsewhere")])
    [notice] = conf.problems
    assert notice.message.startswith('included directory "conf.d" is not in the repository')


def test_a_mounted_directory_read_alone_is_the_image_s_conf_d(tmp_path):
    conf = read_mounted_dir(Root.of(tmp_path), _mounted(), 16)
    assert {n: conf.settings[n].raw for n in ("max_connections", "work_mem",
                                              "statement_timeout")} == {
        "max_connections": "500", "work_mem": "1MB", "statement_timeout": "20s"}


@pytest.mark.postgres
def test_mounted_directory_matches_postgres_on_a_kubelet_configmap_layout(tmp_path):
    from tests.realpg import config_dir, have_postgres, postgres_C_result

    if not have_postgres():
        pytest.skip("no PostgreSQL 15 here")
    dated = "conf.d/..2025_01_01_00_00_00.000000001"
    files: dict[str, str | bytes] = {"postgresql.conf": MAIN}
    files.update({f"{dated}/{k}": v for k, v in KEYS.items()})
    with config_dir(files) as data:
        conf_d = data / "conf.d"
        os.symlink(dated.split("/", 1)[1], conf_d / "..data")
        for key in KEYS:
            os.symlink(f"..data/{key}", conf_d / key)
        pg = postgres_C_result(data, ASKED)
    assert pg.ok, pg.stderr
    assert _ours(tmp_path) == pg.values
    # a.conf read after B.conf (20 s, in ms), .hidden.conf and notes.txt not read
    assert (pg.values["max_connections"], pg.values["statement_timeout"]) == ("500", "20000")


HOSTILE_STS = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: pg-configuration}
data:
  postgresql.conf: "max_connections = 40\\ninclude_dir = 'conf.d'\\n"
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: pg
  labels: {app.kubernetes.io/name: postgresql, app.kubernetes.io/component: primary}
spec:
  template:
    spec:
      containers:
        - name: postgresql
          image: docker.io/bitnami/postgresql:17.2.0
          command: "not a list"
          args: [-c, config_file=%s]
          env: {POSTGRESQL_VOLUME_DIR: /x}
          volumeMounts:
            - {name: cfg, mountPath: /bitnami/postgresql/conf}
            - {name: odd, mountPath: /bitnami/postgresql/conf/conf.d, subPath: [1]}
            - {name: items, mountPath: /etc/other}
            - "a string"
            - {name: gone, mountPath: 7}
      volumes:
        - {name: cfg, configMap: {name: pg-configuration}}
        - {name: odd, configMap: {name: pg-configuration}}
        - {name: items, configMap: {name: pg-configuration, items: [{key: [1], path: a.conf}]}}
        - just text
"""


@pytest.mark.parametrize("config_file", ["/bitnami/postgresql/conf/postgresql.conf",
                                         "/nowhere/postgresql.conf"])
def test_odd_shapes_of_a_bitnami_statefulset_are_read_without_a_crash(config_file):
    from advisor.read.sources.k8s import k8s_objects
    from advisor.read.sources.operators import operator_entities

    objects, problems = k8s_objects(HOSTILE_STS % config_file, "k8s/pg.yaml")
    assert not problems
    (server,) = operator_entities(objects).servers
    # (the API server refuses these shapes; the reader skips what it cannot use)
    assert server.settings["max_connections"].value == 40


# A ConfigMap volume mounted at the main file's folder holds its keys and nothing else:
# include_dir 'conf.d' there names a folder that does not exist, and PostgreSQL 15 refuses
# to start (checked: postgres -c config_file=... on such a folder prints `could not open
# configuration directory ".../conf.d": No such file or directory` then `FATAL:
# configuration file ... contains errors`). Audit 10a D4: a PA901 warning and "fits".
def _at_etc(keys: dict[str, str]) -> MountedDir:
    return MountedDir("/etc/postgresql", {k: MountedFile(v, f"cm.yaml#{k}", 10)
                                          for k, v in keys.items()})


def test_an_include_dir_that_cannot_exist_in_a_configmap_volume_stops_postgresql(tmp_path):
    conf = read_pgconf(Root.of(tmp_path), "values.yaml", text=MAIN, line_offset=3,
                       display_path="values.yaml", auto_conf=False,
                       container_path="/etc/postgresql/postgresql.conf",
                       mounts=[_at_etc({"postgresql.conf": MAIN})])
    [fatal] = conf.problems
    assert fatal.fatal and fatal.program == "PostgreSQL"
    assert (fatal.location.path, fatal.location.line) == ("values.yaml", 6)
    assert fatal.message == ('could not open configuration directory '
                             '"/etc/postgresql/conf.d": No such file or directory')


def test_items_that_put_files_in_the_folder_are_read_as_include_dir_reads_them(tmp_path):
    """`items: [{key: x, path: conf.d/override.conf}]`: the folder is there, with those
    files (advisor.read.sources.pgmounts lays them out by their container paths)."""
    held = {f"/etc/postgresql/conf.d/{k}": MountedFile(v, f"cm.yaml#{k}", 10)
            for k, v in KEYS.items()}
    conf = read_pgconf(Root.of(tmp_path), "values.yaml", text=MAIN, line_offset=3,
                       display_path="values.yaml", auto_conf=False,
                       container_path="/etc/postgresql/postgresql.conf",
                       mounts=[_at_etc({"postgresql.conf": MAIN})], mounted_files=held)
    assert conf.problems == []
    assert conf.settings["max_connections"].value == 500
    assert conf.settings["statement_timeout"].raw == "20s"  # a.conf after B.conf
    assert "/etc/postgresql/conf.d/override.conf" in conf.mounted_files_read


def test_a_folder_holding_another_mount_is_still_unknown(tmp_path):
    conf = read_pgconf(Root.of(tmp_path), "values.yaml", text=MAIN, line_offset=3,
                       display_path="values.yaml", auto_conf=False,
                       container_path="/etc/postgresql/postgresql.conf",
                       mounts=[_at_etc({"postgresql.conf": MAIN}),
                               MountedDir("/etc/postgresql/conf.d/extra", None, why="x")])
    [notice] = conf.problems
    assert not notice.fatal and "holds a mounted volume" in notice.message
