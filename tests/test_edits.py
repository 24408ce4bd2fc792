from __future__ import annotations

from pathlib import Path

from advisor.advise.edits import edit_line, plan, write
from advisor.advise.records import Edit

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: checkout-config
data:
  # one pool per pod
  SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE: "20"   # keep in step with the HPA
  pgbouncer.ini: |
    [pgbouncer]
    ; comment kept
    default_pool_size = 20
    max_client_conn = 200
"""


def test_edit_line_forms():
    assert edit_line('  KEY: "20"  # c\n', "KEY", "20", "8") == '  KEY: "8"  # c\n'
    assert edit_line("max_connections = 200\n", "max_connections", "200", "120") == (
        "max_connections = 120\n"
    )
    # Only the whole token after the key: not the 20 inside 200, not the port before it.
    assert edit_line("a: 20 b: 200\n", "b", "200", "50") == "a: 20 b: 50\n"
    assert edit_line("x = 120\n", "x", "20", "5") is None
    assert edit_line("work_mem = '64MB'   # sorts\n", "work_mem", "64MB", "16MB") == (
        "work_mem = '16MB'   # sorts\n"
    )
    # Relaxed binding: the key in the file is the last dotted part.
    assert edit_line("maximum-pool-size: 30\n", "spring.datasource.hikari.maximum-pool-size",
                     "30", "9") == "maximum-pool-size: 9\n"


def test_plan_diff_and_write_keep_everything_else(tmp_path: Path):
    (tmp_path / "k8s").mkdir()
    f = tmp_path / "k8s" / "configmap.yaml"
    f.write_text(CONFIGMAP)
    edits = [
        Edit(path="k8s/configmap.yaml", line=7, key="SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE",
             old="20", new="2"),
        Edit(path="k8s/configmap.yaml", line=11, key="default_pool_size", old="20", new="10"),
        Edit(path="k8s/configmap.yaml", line=12, key="max_client_conn", old="999", new="1"),
    ]
    p = plan(edits, [tmp_path])
    assert len(p.changes) == 1 and len(p.changes[0].applied) == 2
    assert len(p.refused) == 1 and "not found on the line" in p.refused[0][1]
    diff = p.diff()
    assert '-  SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE: "20"   # keep in step with the HPA' in diff
    assert '+  SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE: "2"   # keep in step with the HPA' in diff
    assert "+    default_pool_size = 10" in diff
    assert f.read_text() == CONFIGMAP  # planning writes nothing
    assert write(p) == ["k8s/configmap.yaml"]
    expected = CONFIGMAP.replace('"20"', '"2"').replace("default_pool_size = 20",
                                                         "default_pool_size = 10")
    assert f.read_text() == expected


def test_plan_refuses_outside_root_and_broken_yaml(tmp_path: Path):
    (tmp_path / "a.yaml").write_text("a: 1\nb: [1, 2]\n")
    p = plan([Edit(path="../x.yaml", line=1, key="a", old="1", new="2")], [tmp_path])
    assert not p.changes and "not found" in p.refused[0][1]
    p = plan([Edit(path="a.yaml", line=2, key="b", old="2", new="2, ]]")], [tmp_path])
    assert not p.changes and "YAML invalid" in p.refused[0][1]


def test_conflicting_edits_for_one_line_are_refused(tmp_path: Path):
    (tmp_path / "c.conf").write_text("max_connections = 200\nwork_mem = 8MB\n")
    edits = [
        Edit(path="c.conf", line=1, key="max_connections", old="200", new="55"),
        Edit(path="c.conf", line=1, key="max_connections", old="200", new="20"),
        Edit(path="c.conf", line=2, key="work_mem", old="8MB", new="4MB"),
        Edit(path="c.conf", line=2, key="work_mem", old="8MB", new="4MB"),
    ]
    p = plan(edits, [tmp_path])
    assert [e.line for e, _ in p.refused] == [1, 1]
    assert "disagree" in p.refused[0][1] and "20, 55" in p.refused[0][1]
    assert p.changes[0].after == "max_connections = 200\nwork_mem = 4MB\n"


def test_writes_keep_bom_crlf_final_newline_and_mode(tmp_path: Path):
    import os

    f = tmp_path / "pgbouncer.ini"
    original = b"\xef\xbb\xbf[pgbouncer]\r\ndefault_pool_size = 20\r\nmax_client_conn = 100"
    f.write_bytes(original)
    os.chmod(f, 0o640)
    p = plan([Edit(path="pgbouncer.ini", line=2, key="default_pool_size", old="20",
                   new="10")], [tmp_path])
    assert write(p) == ["pgbouncer.ini"]
    assert f.read_bytes() == original.replace(b"= 20", b"= 10")
    assert os.stat(f).st_mode & 0o777 == 0o640
    assert [x.name for x in tmp_path.iterdir()] == ["pgbouncer.ini"]  # no temp file left


def test_a_form_feed_in_a_properties_comment_does_not_shift_the_edit(tmp_path: Path):
    f = tmp_path / "application.properties"
    f.write_text("# header \f page two\nspring.datasource.hikari.maximum-pool-size=20\n"
                 "other.max=20\n")
    p = plan([Edit(path="application.properties", line=2,
                   key="spring.datasource.hikari.maximum-pool-size", old="20", new="5")],
             [tmp_path])
    write(p)
    assert f.read_text() == (
        "# header \f page two\nspring.datasource.hikari.maximum-pool-size=5\nother.max=20\n")


def test_write_rechecks_the_file_and_refuses_symlinks(tmp_path: Path):
    import pytest

    from advisor.advise.edits import WriteRefused

    f = tmp_path / "postgresql.conf"
    f.write_text("max_connections = 100\n")
    p = plan([Edit(path="postgresql.conf", line=1, key="max_connections", old="100",
                   new="200")], [tmp_path])
    f.write_text("max_connections = 100\n# changed meanwhile\n")
    with pytest.raises(WriteRefused, match="changed since the diff"):
        write(p)
    assert f.read_text().endswith("# changed meanwhile\n")
    # a symlink (inside the repository) is never written through
    (tmp_path / "real.conf").write_text("max_connections = 100\n")
    (tmp_path / "link.conf").symlink_to(tmp_path / "real.conf")
    p = plan([Edit(path="link.conf", line=1, key="max_connections", old="100", new="200")],
             [tmp_path])
    assert not p.changes and "symlink" in p.refused[0][1]
    # swapped for a symlink between the diff and the write
    f.write_text("max_connections = 100\n")
    p = plan([Edit(path="postgresql.conf", line=1, key="max_connections", old="100",
                   new="200")], [tmp_path])
    f.unlink()
    f.symlink_to(tmp_path / "real.conf")
    with pytest.raises(WriteRefused, match="symlink"):
        write(p)
    assert (tmp_path / "real.conf").read_text() == "max_connections = 100\n"


def test_the_diff_never_shows_password_lines_as_context(tmp_path: Path):
    ini = tmp_path / "pgbouncer.ini"
    ini.write_text("[databases]\nshop = host=db password=hunter2 dbname=shop\n[pgbouncer]\n"
                   "auth_type = md5\ndefault_pool_size = 20\nstats_password = s3cret\n")
    secret = tmp_path / "secret.yaml"
    secret.write_text("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n"
                      "  DB_POOL: \"20\"\n  DB_PASS: topsecret\n  other: alsosecret\n")
    p = plan([Edit(path="pgbouncer.ini", line=5, key="default_pool_size", old="20", new="5"),
              Edit(path="secret.yaml", line=6, key="DB_POOL", old="20", new="5")], [tmp_path])
    diff = p.diff()
    for leaked in ("hunter2", "s3cret", "topsecret", "alsosecret"):
        assert leaked not in diff, diff
    assert "+default_pool_size = 5" in diff and "auth_type = md5" in diff


def test_an_edit_in_a_helm_helper_file_is_refused(tmp_path: Path):
    # a literal in a named template is written into every template including it: one
    # workload's proposal there would change the others too
    helpers = tmp_path / "chart" / "templates" / "_workloads.tpl"
    helpers.parent.mkdir(parents=True)
    helpers.write_text('{{- define "lib.strategy" -}}\nmaxSurge: 2\n{{- end }}\n')
    conf = tmp_path / "chart" / "templates" / "deploy.yaml"
    conf.write_text("replicas: 2\n")
    p = plan([Edit(path="chart/templates/_workloads.tpl", line=2, key="maxSurge", old="2",
                   new="1"),
              Edit(path="chart/templates/deploy.yaml", line=1, key="replicas", old="2",
                   new="3")], [tmp_path])
    assert [c.path for c in p.changes] == ["chart/templates/deploy.yaml"]
    assert len(p.refused) == 1 and "named template" in p.refused[0][1]
    assert helpers.read_text().count("maxSurge: 2") == 1
