"""A PostgreSQL container that is no Bitnami chart's (the official `postgres` image, or any
image run with `-c config_file=...`): the file config_file names is read from the
ConfigMap the container mounts there, and its include_dir, include and include_if_exists
resolve in the container, against the ConfigMaps it mounts (advisor.read.sources.pgmounts,
advisor.link.servers._conf_settings), as PostgreSQL resolves them: relative to the
including file's directory, a directory's *.conf files (no dotfiles) in strcmp order
(conffiles.c GetConfFilesInDir). Checked against the real `postgres -C` on the same files
laid out as the kubelet lays out the volumes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

MAIN = """\
listen_addresses = '*'
max_connections = 50
include_dir = 'conf.d'
include 'extra/tune.conf'
include_if_exists '/etc/postgresql/conf.d/absent.conf'
shared_buffers = 64MB
"""
CONF_D = {
    "20-mem.conf": "work_mem = 8MB\nstatement_timeout = 20s\n",
    "10-conns.conf": "max_connections = 300\nwork_mem = 2MB\n",
    "B.conf": "statement_timeout = 10s\nlock_timeout = 5s\n",
    ".hidden.conf": "max_connections = 7\n",
    "notes.txt": "max_connections = 8\n",
}
TUNE = "shared_buffers = 256MB\nmaintenance_work_mem = 128MB\n"
ASKED = ["max_connections", "work_mem", "statement_timeout", "lock_timeout",
         "shared_buffers", "maintenance_work_mem"]


def _block(text: str, indent: int = 4) -> str:
    return "".join(" " * indent + line + "\n" for line in text.splitlines())


def _manifest(main: str = MAIN, etc: str = "/etc/postgresql",
              args: str = '["-c", "config_file=/etc/postgresql/postgresql.conf"]',
              image: str = "postgres:16.4") -> str:
    confd = "".join(f"  {k}: |\n{_block(v)}" for k, v in CONF_D.items())
    return f"""\
apiVersion: v1
kind: ConfigMap
metadata: {{name: pg-main}}
data:
  postgresql.conf: |
{_block(main)}---
apiVersion: v1
kind: ConfigMap
metadata: {{name: pg-confd}}
data:
{confd}---
apiVersion: v1
kind: ConfigMap
metadata: {{name: pg-extra}}
data:
  tune.conf: |
{_block(TUNE)}---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: db}}
spec:
  replicas: 1
  template:
    metadata: {{labels: {{app: db}}}}
    spec:
      containers:
        - name: postgres
          image: {image}
          args: {args.replace("/etc/postgresql", etc)}
          volumeMounts:
            - {{name: data, mountPath: /var/lib/postgresql/data}}
            - {{name: main, mountPath: {etc}/postgresql.conf, subPath: postgresql.conf}}
            - {{name: confd, mountPath: {etc}/conf.d}}
            - {{name: extra, mountPath: {etc}/extra}}
      volumes:
        - {{name: data, emptyDir: {{}}}}
        - {{name: main, configMap: {{name: pg-main}}}}
        - {{name: confd, configMap: {{name: pg-confd}}}}
        - {{name: extra, configMap: {{name: pg-extra}}}}
"""


def _scan(tmp_path: Path, manifest: str):
    from advisor.engine.check import scan
    from advisor.engine.options import CheckOptions

    (tmp_path / "k8s").mkdir(exist_ok=True)
    (tmp_path / "k8s" / "pg.yaml").write_text(manifest)
    result = scan([str(tmp_path)], CheckOptions(cache=False))
    (server,) = result.topology.servers
    return server, result.topology.problems


def _line(manifest: str, text: str, after: str = "") -> int:
    lines = manifest.splitlines()
    start = lines.index(after) if after else 0
    return lines.index(text, start) + 1


def test_config_file_reads_the_mounted_file_and_its_includes_in_the_container(tmp_path):
    manifest = _manifest()
    server, problems = _scan(tmp_path, manifest)
    got = {n: server.settings[n].raw for n in ASKED}
    # conf.d in strcmp order (10-conns, 20-mem, B), then extra/tune.conf, then the main
    # file's own last line; .hidden.conf and notes.txt not read
    assert got == {"max_connections": "300", "work_mem": "8MB", "statement_timeout": "10s",
                   "lock_timeout": "5s", "shared_buffers": "64MB",
                   "maintenance_work_mem": "128MB"}
    mc = server.settings["max_connections"]
    assert (mc.source.path, mc.source.line) == (
        "k8s/pg.yaml", _line(manifest, "    max_connections = 300"))
    mwm = server.settings["maintenance_work_mem"]
    assert (mwm.source.path, mwm.source.line) == (
        "k8s/pg.yaml", _line(manifest, "    maintenance_work_mem = 128MB"))
    assert [p.message for p in problems] == []


def test_a_setting_after_the_include_dir_wins_over_the_directory(tmp_path):
    main = MAIN.replace("max_connections = 50\ninclude_dir = 'conf.d'\n",
                        "include_dir = 'conf.d'\nmax_connections = 50\n")
    manifest = _manifest(main)
    server, problems = _scan(tmp_path, manifest)
    mc = server.settings["max_connections"]
    assert (mc.value, mc.source.line) == (50, _line(manifest, "    max_connections = 50"))
    assert server.settings["work_mem"].raw == "8MB"
    assert problems == []


def test_an_include_of_a_key_not_mounted_there_is_not_read_from_the_configmap(tmp_path):
    """postgresql.conf is mounted alone (subPath): another key of its ConfigMap is not in
    the container, so an include naming it is not read from that ConfigMap."""
    main = MAIN.replace("include 'extra/tune.conf'\n", "include 'tune.conf'\n")
    manifest = _manifest(main).replace(
        "  postgresql.conf: |\n", "  tune.conf: |\n    max_connections = 999\n"
        "  postgresql.conf: |\n", 1)
    server, problems = _scan(tmp_path, manifest)
    assert server.settings["max_connections"].value == 300
    notice, unused = problems
    assert unused.message == (
        "postgres: /etc/postgresql/extra/tune.conf (ConfigMap pg-extra) is mounted but not "
        "read (the server reads /etc/postgresql/postgresql.conf (config_file) and its "
        "includes): the settings it holds are not applied")
    assert not notice.fatal and notice.location.line == _line(manifest, "    include 'tune.conf'")
    assert notice.message == (
        'included file "tune.conf" is not in the repository (/etc/postgresql/tune.conf in the '
        "container is on no volume whose files the repository holds); settings it may hold "
        "are unknown")


def test_a_missing_file_in_a_mounted_configmap_directory_stops_postgresql(tmp_path):
    main = MAIN.replace("include 'extra/tune.conf'\n", "include 'extra/missing.conf'\n")
    manifest = _manifest(main)
    _server, problems = _scan(tmp_path, manifest)
    fatal, _unused = problems
    assert fatal.fatal and fatal.program == "PostgreSQL"
    assert fatal.location.line == _line(manifest, "    include 'extra/missing.conf'")
    assert fatal.message == ('could not open configuration file '
                             '"/etc/postgresql/extra/missing.conf": No such file or directory')


def test_a_config_file_mounted_from_a_configmap_not_in_the_repository_is_unknown(tmp_path):
    manifest = _manifest().replace("{name: main, configMap: {name: pg-main}}",
                                   "{name: main, configMap: {name: elsewhere}}")
    manifest = manifest.replace(
        "{name: main, mountPath: /etc/postgresql/postgresql.conf, subPath: postgresql.conf}",
        "{name: main, mountPath: /etc/postgresql/main}").replace(
        "config_file=/etc/postgresql/postgresql.conf", "config_file=/etc/postgresql/main/pg.conf")
    server, problems = _scan(tmp_path, manifest)
    # not the first .conf key of another mounted ConfigMap taken for the server's file
    assert "max_connections" not in server.settings or \
        server.settings["max_connections"].source.default
    notice, *unused = problems
    assert ["(ConfigMap pg-confd) are mounted but not read" in unused[0].message,
            "(ConfigMap pg-extra) is mounted but not read" in unused[1].message] == [True, True]
    assert notice.message == (
        "postgres: the server reads /etc/postgresql/main/pg.conf (config_file), mounted from "
        "ConfigMap elsewhere, which is not in the repository: the settings it holds are "
        "unknown")


def test_without_config_file_the_mounted_file_is_not_the_servers(tmp_path):
    """The official image without -c config_file: the server reads
    $PGDATA/postgresql.conf (initdb's), not the file mounted in /etc/postgresql; the
    mounted files are said, never read as the server's."""
    manifest = _manifest(args="[]")
    server, problems = _scan(tmp_path, manifest)
    assert "max_connections" not in server.settings
    assert [(p.location.line, p.message) for p in problems] == [
        (_line(manifest, "  postgresql.conf: |"),
         "postgres: /etc/postgresql/postgresql.conf (ConfigMap pg-main) is mounted but not "
         "read (no -c config_file names it; the postgres image's server reads "
         "/var/lib/postgresql/data/postgresql.conf): the settings it holds are not applied"),
        (_line(manifest, "  .hidden.conf: |"),
         "postgres: /etc/postgresql/conf.d/.hidden.conf, /etc/postgresql/conf.d/10-conns.conf, "
         "/etc/postgresql/conf.d/20-mem.conf, ... (ConfigMap pg-confd) are mounted but not "
         "read (no -c config_file names it; the postgres image's server reads "
         "/var/lib/postgresql/data/postgresql.conf): the settings they hold are not applied"),
        (_line(manifest, "  tune.conf: |"),
         "postgres: /etc/postgresql/extra/tune.conf (ConfigMap pg-extra) is mounted but not "
         "read (no -c config_file names it; the postgres image's server reads "
         "/var/lib/postgresql/data/postgresql.conf): the settings it holds are not applied")]


def test_without_config_file_a_file_mounted_as_pgdata_postgresql_conf_is_read(tmp_path):
    """PGDATA's own postgresql.conf mounted (subPath) is the file the server reads."""
    manifest = _manifest(args="[]").replace(
        "mountPath: /etc/postgresql/postgresql.conf,",
        "mountPath: /var/lib/postgresql/data/pgdata/postgresql.conf,").replace(
        "          image: postgres:16.4\n",
        "          image: postgres:16.4\n          env: [{name: PGDATA, "
        "value: /var/lib/postgresql/data/pgdata}]\n")
    server, problems = _scan(tmp_path, manifest)
    # its include_dir 'conf.d' is /var/lib/postgresql/data/pgdata/conf.d: no volume there
    assert server.settings["max_connections"].value == 50
    assert server.settings["shared_buffers"].raw == "64MB"
    data = ("/var/lib/postgresql/data/pgdata) is mounted from volume data (emptyDir), whose "
            "files are not in the repository; settings it may hold are unknown")
    assert [p.message for p in problems[:2]] == [
        f'included directory "conf.d" ({data}'.replace("pgdata)", "pgdata/conf.d)"),
        f'included file "extra/tune.conf" ({data}'.replace("pgdata)", "pgdata/extra/tune.conf)")]
    assert [p.message[:44] for p in problems[2:]] == [
        "postgres: /etc/postgresql/conf.d/.hidden.con",
        "postgres: /etc/postgresql/extra/tune.conf (C"]


def test_a_command_line_max_connections_wins_over_the_mounted_file(tmp_path):
    manifest = _manifest(args='["-c", "config_file=/etc/postgresql/postgresql.conf", '
                              '"-c", "max_connections=42"]')
    server, problems = _scan(tmp_path, manifest)
    assert server.settings["max_connections"].value == 42
    assert server.settings["work_mem"].raw == "8MB"
    assert problems == []


def test_another_image_without_config_file_reads_each_mounted_configmap_once(tmp_path):
    """An image whose entrypoint is not known (it may point the server at the mounted
    file): the mounted file is read as the server's, its includes resolved in the
    container, and a ConfigMap they read is not read again as a main file of its own."""
    main = MAIN.replace("max_connections = 50\ninclude_dir = 'conf.d'\n",
                        "include_dir = 'conf.d'\nmax_connections = 50\n")
    manifest = _manifest(main, args="[]", image="ghcr.io/acme/postgres:16")
    server, problems = _scan(tmp_path, manifest)
    assert server.settings["max_connections"].value == 50
    assert server.settings["work_mem"].raw == "8MB"
    assert problems == []


@pytest.mark.postgres
def test_the_generic_layout_matches_postgres_on_kubelet_volumes(tmp_path):
    """The same files as the kubelet lays them out (each ConfigMap key a symlink into
    `..data`, a link to a dated folder; the subPath file a plain file), read by the real
    PostgreSQL 15 with `-c config_file=`: the values it prints are ours."""
    from tests.realpg import config_dir, have_postgres, postgres_C_result

    if not have_postgres():
        pytest.skip("no PostgreSQL 15 here")
    dated = "..2025_01_01_00_00_00.000000001"
    files: dict[str, str | bytes] = {"etc/postgresql/postgresql.conf": "", "PG_VERSION": "15\n"}
    volumes = {"conf.d": CONF_D, "extra": {"tune.conf": TUNE}}
    for folder, keys in volumes.items():
        files.update({f"etc/postgresql/{folder}/{dated}/{k}": v for k, v in keys.items()})
    with config_dir(files) as data:
        etc = data / "etc" / "postgresql"
        for folder, keys in volumes.items():
            os.symlink(dated, etc / folder / "..data")
            for key in keys:
                os.symlink(f"..data/{key}", etc / folder / key)
        # the absolute include_if_exists names this layout's own conf.d
        (etc / "postgresql.conf").write_text(MAIN.replace("/etc/postgresql", str(etc)))
        pg = postgres_C_result(data, ASKED, ["-c", f"config_file={etc}/postgresql.conf"])
        assert pg.ok, pg.stderr
        ours, problems = _scan(tmp_path, _manifest(MAIN.replace("/etc/postgresql", str(etc)),
                                                   etc=str(etc)))
    from advisor.facts import pg_guc as pgguc

    assert problems == []
    assert {n: pgguc.show(ours.settings[n].value) for n in ASKED} == pg.values
    assert (pg.values["max_connections"], pg.values["work_mem"]) == ("300", "8192")  # kB
