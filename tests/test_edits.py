from __future__ import annotations

from pathlib import Path

from advisor.advise import Edit
from advisor.edits import edit_line, plan, write

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
