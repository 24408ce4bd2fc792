"""advise knows the one-value fixes of the timeout and single-PgBouncer rules (issue 18
item 6): an edit where the value is written at a line, a manual step where it is a
default, and the replicas of a single PgBouncer only where the server still fits."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_advise import PA301, advise_json, cli, copy_fixture, replace


def test_timeout_fixes_are_proposed_and_written(tmp_path: Path):
    repo = copy_fixture("acme-shop-pgbouncer", tmp_path)
    ini = repo / "k8s/pgbouncer.yaml"
    replace(ini, "query_wait_timeout = 25", "query_wait_timeout = 120")
    replace(repo / "k8s/postgres-config.yaml", "idle_in_transaction_session_timeout = 60s",
            "# idle_in_transaction_session_timeout off")
    before = cli("check", str(repo))
    assert "PA501" in before.stdout and "PA504" in before.stdout

    (server,) = advise_json(str(repo))
    assert server["fits_before"]  # listed for its rule fixes although it fits
    by_key = {p["key"]: p for p in server["proposals"]}
    wait = by_key["query_wait_timeout"]
    assert (wait["old"], wait["new"]) == ("120", "25")
    assert wait["edit"]["path"] == "k8s/pgbouncer.yaml"
    assert wait["reason"].startswith("PA501 ")
    idle = by_key["idle_in_transaction_session_timeout"]
    assert idle["edit"] is None and "idle_in_transaction_session_timeout" in idle["manual"]

    r = cli("advise", str(repo), "--write", "--yes")
    # the setting to add by hand is what check still reports: exit 1, and it is named
    assert r.returncode == 1, r.stderr
    assert "Still reported by check after these edits (1)" in r.stderr and "PA504" in r.stderr
    assert "query_wait_timeout = 25" in ini.read_text()
    after = cli("check", str(repo))
    assert "PA501" not in after.stdout
    assert "PA504" in after.stdout  # a setting to add by hand: advise said so, not wrote it


def test_second_pgbouncer_replica_only_when_it_fits(tmp_path: Path):
    repo = copy_fixture("acme-shop-pgbouncer", tmp_path)
    deploy = repo / "k8s/pgbouncer.yaml"
    text = deploy.read_text()
    assert text.count("replicas: 2") == 1
    deploy.write_text(text.replace("replicas: 2", "replicas: 1"))
    (server,) = advise_json(str(repo))
    replicas = [p for p in server["proposals"] if p["key"] == "replicas"]
    # 2 x min(25, 40) = 50 server connections <= 97 usable: the second replica fits
    assert [(p["old"], p["new"]) for p in replicas] == [("1", "2")]
    assert server["peak_after"] == 50

    # With max_connections 40, one replica's 25 fit but two replicas' 50 do not.
    replace(repo / "k8s/postgres-config.yaml", "max_connections = 100", "max_connections = 40")
    (server,) = advise_json(str(repo))
    assert not [p for p in server["proposals"] if p["key"] == "replicas"]
    assert any(n.startswith("PA210: a second pgbouncer replica") for n in server["notes"])


def test_advise_exits_1_listing_what_check_would_still_report(tmp_path: Path):
    """advise ends where check passes: what its edits cannot fix is listed, exit 1."""
    repo = copy_fixture("acme-shop-pgbouncer", tmp_path)
    replace(repo / "k8s/postgres-config.yaml", "idle_in_transaction_session_timeout = 60s",
            "# idle_in_transaction_session_timeout off")
    r = cli("advise", str(repo))
    assert r.returncode == 1
    assert "Still reported by check after these edits (1)" in r.stderr
    assert "PA504 transaction-pool-without-idle-timeout" in r.stderr
    # and where every finding has an edit, check passes after --write: exit 0
    clean = copy_fixture("acme-shop", tmp_path / "second")
    assert cli("advise", str(clean)).returncode == 0


def test_proposals_withheld_when_a_client_is_unknown(tmp_path: Path):
    repo = copy_fixture("acme-shop", tmp_path)
    (repo / "k8s/mystery.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: mystery\n  namespace: shop\n"
        "spec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n"
        "        - name: app\n          image: example/mystery:1\n          env:\n"
        "            - name: DATABASE_URL\n"
        "              value: postgres://app@postgres.shop.svc.cluster.local:5432/shop\n")
    servers = advise_json(str(repo))
    (server,) = servers
    assert server["proposals"] == [] and not server["fits_after"]
    assert any(n.startswith("proposals withheld for postgres") and "mystery" in n
               for n in server["notes"])


@pytest.mark.parametrize("config", [".pool-advisor.toml", "pyproject.toml"])
def test_the_withheld_note_names_a_table_the_configuration_takes(tmp_path: Path,
                                                                 config: str):
    # audit 13d: the note said [[tool.pool-advisor.read.workloads]], which both files
    # refuse (exit 2, "unknown key"); declaring the client as it says now advises
    import re

    repo = copy_fixture("acme-shop", tmp_path)
    (repo / "k8s/mystery.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: mystery\n  namespace: shop\n"
        "spec:\n  replicas: 3\n  template:\n    spec:\n      containers:\n"
        "        - name: app\n          image: example/mystery:1\n          env:\n"
        "            - name: DATABASE_URL\n"
        "              value: postgres://app@postgres.shop.svc.cluster.local:5432/shop\n")
    (server,) = advise_json(str(repo))
    note = next(n for n in server["notes"] if n.startswith("proposals withheld"))
    tables = re.findall(r"\[\[([\w.-]+)\]\] in ([\w.-]+)", note)
    table = dict((f, t) for t, f in tables)[config]
    body = f"[[{table}]]\nname = \"mystery\"\nconnections = 2\n"
    (repo / config).write_text(("[tool.pool-advisor]\n" if config == "pyproject.toml" else "")
                               + body)
    (server,) = advise_json(str(repo))
    assert not any(n.startswith("proposals withheld") for n in server["notes"])


def test_a_client_counted_at_zero_does_not_withhold_proposals(tmp_path: Path):
    # a worker scaled to 0 is counted at 0, which is known: the server is still advised
    # (GitLab's idle toolbox and Dify's beat withheld every proposal before)
    repo = copy_fixture("acme-shop", tmp_path)
    (repo / "k8s/idle.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: idle\n  namespace: shop\n"
        "spec:\n  replicas: 0\n  template:\n    spec:\n      containers:\n"
        "        - name: app\n          image: example/mystery:1\n          env:\n"
        "            - name: DATABASE_URL\n"
        "              value: postgres://app@postgres.shop.svc.cluster.local:5432/shop\n")
    (server,) = advise_json(str(repo))
    assert server["proposals"] and server["fits_after"]
    assert not any(n.startswith("proposals withheld") for n in server["notes"])


def test_proposals_withheld_when_a_clients_server_is_not_known(tmp_path: Path):
    repo = copy_fixture("acme-shop", tmp_path)
    (repo / "k8s/elsewhere.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: elsewhere\n"
        "  namespace: shop\nspec:\n  replicas: 3\n  template:\n    spec:\n"
        "      containers:\n        - name: app\n          image: example/mystery:1\n"
        "          env:\n            - name: DATABASE_URL\n              valueFrom:\n"
        "                secretKeyRef: {name: not-here, key: url}\n")
    (server,) = advise_json(str(repo))
    assert server["proposals"] == [] and not server["fits_after"]
    assert any(n.startswith("proposals withheld for postgres: elsewhere may connect to it")
               for n in server["notes"]), server["notes"]


def test_memory_proposals_cache_settings_and_kb_work_mem(tmp_path: Path):
    """shared_buffers and effective_cache_size to the pgtune 25% / 75% of the RAM the
    server has; work_mem in kB when it falls below 4MB; check passes after --write."""
    repo = copy_fixture("acme-shop", tmp_path)
    conf = repo / "k8s/postgres-config.yaml"
    replace(conf, "max_connections = 100", "max_connections = 1000")
    replace(conf, "shared_buffers = 1GB", "shared_buffers = 4GB")
    replace(conf, "effective_cache_size = 3GB", "effective_cache_size = 12GB")
    replace(repo / "k8s/hpa.yaml", "maxReplicas: 40", "maxReplicas: 4")
    replace(repo / "k8s/configmap.yaml", 'MAXIMUMPOOLSIZE: "20"', 'MAXIMUMPOOLSIZE: "200"')
    (server,) = advise_json(str(repo), "--no-new-pooler")
    keys = {p["key"]: p for p in server["proposals"]}
    # 4 pods x 200 = 800 + 3 reserved + 80 headroom = 883, up to 5s
    assert keys["max_connections"]["new"] == "885"
    assert keys["shared_buffers"]["new"] == "2GB"  # 25% of 8Gi
    assert keys["effective_cache_size"]["new"] == "6GB"  # 75% of 8Gi
    work_mem = keys["work_mem"]["new"]
    assert work_mem.endswith("kB") and 64 <= int(work_mem[:-2]) < 4096
    r = cli("advise", str(repo), "--write", "--yes", "--no-new-pooler")
    # memory fits now; 800 connections on 8 cores is past the knee, which no one value
    # fixes: advise says so and exits 1
    assert r.returncode == 1, r.stderr
    assert "Still reported by check after these edits (1)" in r.stderr and "PA111" in r.stderr
    assert f"work_mem = {work_mem}" in conf.read_text()
    assert not PA301.search(cli("check", str(repo)).stdout)
