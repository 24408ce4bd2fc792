"""The real-PostgreSQL helpers work: a server starts, answers, honours conf, stops."""

from __future__ import annotations

import socket

import pytest

from tests.realpg import postgres_C, postgres_C_files, running_postgres

pytestmark = pytest.mark.postgres


def test_running_postgres_applies_conf_and_files_and_cleans_up():
    with running_postgres(
        "max_connections = 12\ninclude 'extra.conf'\n", files={"extra.conf": "work_mem = 8MB\n"}
    ) as pg:
        assert pg.psql("show max_connections").strip() == "12"
        assert pg.psql("show work_mem").strip() == "8MB"
        assert postgres_C(pg.datadir, ["max_connections"]) == {"max_connections": "12"}
        with socket.create_connection((pg.host, pg.port), timeout=5):
            pass
        top = pg.socket_dir
    assert not top.exists()
    with pytest.raises(OSError), socket.create_connection((pg.host, pg.port), timeout=1):
        pass


def test_psql_raises_with_stderr():
    with running_postgres() as pg, pytest.raises(RuntimeError, match="does_not_exist"):
        pg.psql("select * from does_not_exist")


def test_password_auth_over_tcp():
    psycopg = pytest.importorskip("psycopg")
    with running_postgres(auth="scram-sha-256") as pg:
        pg.psql("create role app login password 'secret'")
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(pg.dsn(user="app"), connect_timeout=5).close()
        with psycopg.connect(pg.dsn(user="app") + " password=secret", connect_timeout=5) as c:
            assert c.execute("select current_user").fetchone() == ("app",)


def test_postgres_C_files_values_and_refusal():
    ok = postgres_C_files({"postgresql.conf": "shared_buffers = '12 MB'\n"}, ["shared_buffers"])
    assert ok.ok and ok.values == {"shared_buffers": "1536"}
    bad = postgres_C_files({"postgresql.conf": "work_mem = 4mb\n"}, ["work_mem"])
    assert not bad.ok
    assert ("LOG", 'invalid value for parameter "work_mem": "4mb"') in bad.messages


def test_server_left_open_is_stopped_at_interpreter_exit():
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "from tests.realpg import running_postgres\n"
        "pg = running_postgres().__enter__()\n"  # never exited, like an unfinalised fixture
        "print(pg.port, pg.socket_dir)\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"},
    )
    assert out.returncode == 0, out.stderr
    port, top = out.stdout.split()
    assert not Path(top).exists()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", int(port)), timeout=1):
        pass
