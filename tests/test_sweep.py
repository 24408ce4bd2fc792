from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from advisor.commands import register_all
from advisor.live.dsn import mask_dsn
from advisor.live.sweep import percentile, read_transaction_logs
from advisor.live.sweep_records import SweepError, parse_clients
from advisor.live.sweep_table import read_sweep
from tests.realpg import free_port, have_postgres, running_postgres
from tests.shared_data import shared_file


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def _root() -> None:  # keeps subcommand names when only one is registered
        pass

    register_all(app)
    return app


def invoke(*args: str):
    return CliRunner().invoke(_app(), list(args))


def test_parse_clients():
    assert parse_clients("1,2,4") == [1, 2, 4]
    assert parse_clients("1-64") == [1, 2, 4, 8, 16, 32, 64]
    assert parse_clients("1-20, 24") == [1, 2, 4, 8, 16, 20, 24]
    with pytest.raises(SweepError):
        parse_clients("0,2")
    with pytest.raises(SweepError):
        parse_clients("a")


def test_mask_dsn():
    assert mask_dsn("host=h password=s3cret user=u") == "host=h password=*** user=u"
    assert mask_dsn("host=h password='a b' user=u") == "host=h password=*** user=u"
    assert mask_dsn("postgresql://app:s3cret@127.0.0.1/db") == "postgresql://app:***@127.0.0.1/db"
    assert mask_dsn("postgresql://app@127.0.0.1/db") == "postgresql://app@127.0.0.1/db"


def test_percentiles_from_transaction_logs(tmp_path: Path):
    (tmp_path / "pgb.1").write_text(
        "".join(f"0 {i} {i * 1000} 0 1796224420 {i}\n" for i in range(1, 101))
        + "0 101 failed 0 1796224420 5\n"
    )
    (tmp_path / "pgb.1.1").write_text("1 1 500 0 1796224420 6\n")
    lat, failed = read_transaction_logs(sorted(tmp_path.glob("pgb.*")))
    assert failed == 1 and len(lat) == 101
    assert lat[0] == 0.5
    assert percentile(lat, 50) == 50.0
    assert percentile(lat, 99) == 99.0
    assert percentile(lat, 100) == 100.0


def test_input_table_fits_and_writes(tmp_path: Path):
    table = shared_file("pool-sweep-1-256.tsv")
    out = tmp_path / "fit"
    r = invoke("sweep", "--input", str(table), "-o", str(out), "--cores", "2", "--no-chart")
    assert r.exit_code == 0, r.output
    assert "N* = sqrt((1 - sigma) / kappa)" in r.output
    data = json.loads((tmp_path / "fit.json").read_text())
    assert 64 <= data["fit"]["n_star"] <= 256 and data["fit"]["r2"] > 0.9
    assert len(read_sweep(tmp_path / "fit.csv").points) == 9
    assert "Recommended active connections" in r.output


def test_no_dsn_is_a_clear_error():
    r = invoke("sweep")
    assert r.exit_code == 2
    assert "give the DSN" in r.output


@pytest.mark.postgres
def test_unreachable_server_is_a_clear_error(tmp_path: Path):
    if not have_postgres():
        pytest.skip("PostgreSQL 15 binaries not installed")
    dsn = f"host=127.0.0.1 port={free_port()} dbname=postgres connect_timeout=2"
    r = invoke("sweep", dsn, "-c", "1,2,4", "-T", "1", "-o", str(tmp_path / "x"), "--no-chart")
    assert r.exit_code == 2
    assert "failed" in r.output and "Traceback" not in r.output


@pytest.mark.postgres
def test_real_sweep_against_postgres(tmp_path: Path):
    if not have_postgres():
        pytest.skip("PostgreSQL 15 binaries not installed")
    out = tmp_path / "sweep"
    with running_postgres("max_connections = 20") as pg:
        r = invoke(
            "sweep", pg.dsn(), "--init-scale", "1", "-S",
            "-c", "1,2,4", "-T", "2", "--max-total", "60",
            "-o", str(out), "--format", "json",
        )
        assert r.exit_code == 0, r.output
        # pgbench really ran: its tables exist and hold scale 1 (100000 accounts).
        assert pg.psql("select count(*) from pgbench_accounts").strip() == "100000"
    payload = json.loads(r.output[r.output.index("{"):])
    steps = payload["steps"]
    assert [s["clients"] for s in steps] == [1, 2, 4]
    for s in steps:
        assert s["tps"] > 0 and s["transactions"] > 0 and s["failed"] == 0
        # Every transaction's latency was logged (pgbench may log one in flight at -T's end).
        assert abs(s["logged"] - s["transactions"]) <= s["clients"]
        assert 0 < s["p50_ms"] <= s["p95_ms"] <= s["p99_ms"] <= s["max_ms"]
    assert payload["fit"] is not None and payload["fit"]["points"] == 3
    assert payload["pgbench_version"].startswith("pgbench (PostgreSQL) 15")
    table = read_sweep(out.with_suffix(".csv"))
    assert [p.n for p in table.points] == [1, 2, 4]
    assert all(p.p99_ms is not None for p in table.points)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert any("matplotlib is not installed" in n for n in payload["notices"])
    else:
        png = out.with_suffix(".png")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.postgres
def test_sweep_stops_at_the_time_budget_and_at_max_connections(tmp_path: Path):
    if not have_postgres():
        pytest.skip("PostgreSQL 15 binaries not installed")
    with running_postgres("max_connections = 8") as pg:
        pg.psql("select 1")
        # 1 and 2 clients fit; 12 cannot connect (8 - 3 reserved = 5 usable).
        r = invoke(
            "sweep", pg.dsn(), "-s", "1", "-c", "1,2,12,16", "-T", "1",
            "-o", str(tmp_path / "a"), "--no-chart",
        )
        assert r.exit_code == 0, r.output
        assert "skipped clients 12, 16" in r.output
        assert "too many clients" in r.output or "reserved" in r.output
        # A 3 s budget with 2 s steps leaves room for exactly one step.
        r = invoke(
            "sweep", pg.dsn(), "-S", "-c", "1,2,4", "-T", "2", "--max-total", "3",
            "-o", str(tmp_path / "b"), "--format", "json", "--no-chart",
        )
        assert r.exit_code == 0, r.output
        payload = json.loads(r.output[r.output.index("{"):])
        assert [s["clients"] for s in payload["steps"]] == [1]
        assert payload["skipped_clients"] == [2, 4]
        assert "time budget" in payload["stopped_reason"]
        assert payload["fit"] is None and "3 or more" in payload["fit_error"]


@pytest.mark.postgres
@pytest.mark.pgbouncer
def test_sweep_through_pgbouncer(tmp_path: Path):
    from tests.realbouncer import have_pgbouncer, running_pgbouncer

    if not have_postgres() or not have_pgbouncer():
        pytest.skip("PostgreSQL 15 or PgBouncer not installed")
    with running_postgres("max_connections = 20") as pg:
        pg.psql("create role bench login superuser")
        ini = f"[databases]\nbench = host=127.0.0.1 port={pg.port} dbname=postgres\n"
        extra = {"pool_mode": "transaction", "default_pool_size": "2", "max_client_conn": "40"}
        with running_pgbouncer(ini, users=["bench"], extra=extra) as bouncer:
            dsn = bouncer.dsn("bench", "bench")
            r = invoke(
                "sweep", dsn, "-s", "1", "-S", "-c", "1,4,8", "-T", "1",
                "-o", str(tmp_path / "b"), "--format", "json", "--no-chart",
            )
            assert r.exit_code == 0, r.output
            pools = [p for p in bouncer.admin_dicts("SHOW POOLS") if p["database"] == "bench"]
        # 8 clients through a pool of 2: PgBouncer never opened more than 2 server
        # connections, yet every client count ran.
        assert pools and int(pools[0]["sv_idle"]) + int(pools[0]["sv_active"]) <= 2
    payload = json.loads(r.output[r.output.index("{") :])
    assert [s["clients"] for s in payload["steps"]] == [1, 4, 8]
    assert all(s["tps"] > 0 and s["p99_ms"] > 0 for s in payload["steps"])
    # bench is not in admin_users/stats_users: PgBouncer is detected by its console's
    # `not allowed`, and the client counts are not fitted as if they were the server's N
    assert payload["target_kind"] == "pgbouncer" and "not allowed" in payload["target_detail"]
    assert payload["fit"] is None and "not the server's concurrency" in payload["fit_error"]
    assert all(s["server_active"] is None for s in payload["steps"])


@pytest.mark.postgres
@pytest.mark.pgbouncer
@pytest.mark.slow
def test_sweep_through_pgbouncer_fits_server_side_active(tmp_path: Path):
    """Through PgBouncer with a pool of 3, N is what the server ran (SHOW POOLS
    sv_active), not pgbench's 1..16 clients."""
    from tests.realbouncer import ADMIN_USER, have_pgbouncer, running_pgbouncer

    if not have_postgres() or not have_pgbouncer():
        pytest.skip("PostgreSQL 15 or PgBouncer not installed")
    with running_postgres("max_connections = 20") as pg:
        pg.psql("create role bench login superuser")
        ini = f"[databases]\nbench = host=127.0.0.1 port={pg.port} dbname=postgres\n"
        extra = {"pool_mode": "transaction", "default_pool_size": "3", "max_client_conn": "40"}
        with running_pgbouncer(ini, users=["bench"], extra=extra) as bouncer:
            out = tmp_path / "b"
            r = invoke(
                "sweep", bouncer.dsn("bench", "bench"), "-s", "1", "-c", "1,2,4,8,16",
                "-T", "2", "-o", str(out), "--format", "json", "--no-chart",
                "--pooler-admin", bouncer.dsn("pgbouncer", ADMIN_USER),
            )
            assert r.exit_code == 0, r.output
            text = invoke("sweep", "--input", str(out.with_suffix(".csv")), "--no-chart",
                          "-o", str(tmp_path / "again"))
        # the direct server: PostgreSQL itself, not a pooler
        direct = invoke("sweep", pg.dsn(), "-S", "-c", "1,2", "-T", "1", "--no-chart",
                        "-o", str(tmp_path / "d"), "--format", "json")
    payload = json.loads(r.output[r.output.index("{"):])
    assert payload["target_kind"] == "pgbouncer" and payload["target_detail"].startswith(
        "PgBouncer 1.")
    assert payload["n_basis"].startswith("server-side active connections")
    steps = payload["steps"]
    assert [s["clients"] for s in steps] == [1, 2, 4, 8, 16]
    # never more server connections than the pool, whatever the client count
    assert all(0 < s["server_active"] <= s["server_active_max"] <= 3 for s in steps)
    # 16 clients fill the pool of 3: its peak sample is the pool. The mean is only asked to
    # exceed one client's worth: on a loaded machine pgbench's clients starve for CPU and
    # leave server connections idle between transactions (a mean of 2-3, not 3).
    assert steps[-1]["server_active_max"] == 3
    assert steps[-1]["server_active"] > 1
    # the fit is over what the server ran: the CSV's `active` column, read back as N
    assert payload["fit"] is None or payload["fit"]["points"] == 5
    table = read_sweep(out.with_suffix(".csv"))
    assert [p.n for p in table.points] == [s["server_active"] for s in steps]
    assert text.exit_code == 0, text.output
    d = json.loads(direct.output[direct.output.index("{"):])
    assert d["target_kind"] == "postgresql" and d["n_basis"] == "pgbench clients"


def test_registered_in_the_real_cli(tmp_path: Path):
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(repo)}
    table = shared_file("pool-sweep-1-256.tsv")
    r = subprocess.run(
        [sys.executable, "-m", "advisor", "sweep", "--input", str(table), "--no-chart",
         "-o", str(tmp_path / "t"), "--cores", "2"],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert "Recommended active connections: 118 (USL fit)" in r.stdout
    for command in ("sweep", "inspect", "advise"):
        h = subprocess.run([sys.executable, "-m", "advisor", command, "--help"],
                           capture_output=True, text=True, env=env, timeout=60)
        assert h.returncode == 0 and "Usage" in h.stdout


@pytest.mark.postgres
def test_sweep_runs_the_users_script(tmp_path: Path):
    if not have_postgres():
        pytest.skip("PostgreSQL 15 binaries not installed")
    script = tmp_path / "sleep.sql"
    script.write_text("SELECT pg_sleep(0.005);\n")
    with running_postgres("max_connections = 20") as pg:
        r = invoke(
            "sweep", pg.dsn(), "-f", str(script), "-c", "1,2,4", "-T", "1",
            "-o", str(tmp_path / "u"), "--format", "json", "--no-chart",
        )
    assert r.exit_code == 0, r.output
    payload = json.loads(r.output[r.output.index("{") :])
    assert payload["workload"] == f"script {script}"
    for s in payload["steps"]:
        # The script really ran: every transaction slept 5 ms, so no faster than that,
        # and each client managed at most 200 per second.
        assert s["p50_ms"] >= 5.0
        assert 0 < s["tps"] <= 200 * s["clients"]
    missing = invoke("sweep", "host=127.0.0.1", "-f", str(tmp_path / "nope.sql"))
    assert missing.exit_code == 2 and "script file not found" in missing.output


@pytest.mark.postgres
def test_relative_script_ctrl_c_and_one_line_per_step(tmp_path: Path, monkeypatch):
    """-f relative to the working directory; Ctrl-C keeps the steps measured (CSV and
    JSON written); without a TTY, one progress line per step."""
    import advisor.live.sweep as sweep_module

    if not have_postgres():
        pytest.skip("PostgreSQL 15 binaries not installed")
    (tmp_path / "q.sql").write_text("SELECT 1;\n")
    monkeypatch.chdir(tmp_path)
    real_step = sweep_module.run_step
    calls: list[int] = []

    def interrupted_after_one(plan, pgbench, clients, workdir, report):
        calls.append(clients)
        if len(calls) > 1:
            raise KeyboardInterrupt
        return real_step(plan, pgbench, clients, workdir, report)

    monkeypatch.setattr(sweep_module, "run_step", interrupted_after_one)
    with running_postgres("max_connections = 20") as pg:
        r = invoke("sweep", pg.dsn(), "-f", "q.sql", "-c", "1,2,4", "-T", "1",
                   "-o", "part", "--format", "json", "--no-chart")
    assert r.exit_code == 0, r.output
    payload = json.loads(r.output[r.output.index("{"):])
    assert payload["workload"] == f"script {tmp_path / 'q.sql'}"
    assert [s["clients"] for s in payload["steps"]] == [1]
    assert payload["skipped_clients"] == [2, 4]
    assert payload["stopped_reason"] == "interrupted (Ctrl-C)"
    assert (tmp_path / "part.csv").is_file() and (tmp_path / "part.json").is_file()
    assert "step 1/3: 1 clients:" in r.output  # CliRunner is no TTY: the plain lines


def test_chart_marks_peak_and_recommendation(tmp_path: Path, monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib.figure

    from advisor.live.sweep_output import write_chart
    from advisor.live.sweep_records import run_from_table

    seen = {}
    savefig = matplotlib.figure.Figure.savefig

    def inspecting_savefig(fig, path, *args, **kwargs):
        ax = fig.axes[0]
        legend = ax.get_legend()
        renderer = fig.canvas.get_renderer()
        seen["labels"] = [t.get_text() for t in legend.get_texts()]
        # the legend sits below the axes, where it covers no data
        seen["below"] = (legend.get_window_extent(renderer).y1
                         <= ax.get_window_extent(renderer).y0)
        return savefig(fig, path, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", inspecting_savefig)
    run = run_from_table(read_sweep(shared_file("pool-sweep-1-256.tsv")), tool_version="t")
    write_chart(run, tmp_path / "c.png", run.usl(), 118)
    assert (tmp_path / "c.png").stat().st_size > 0
    assert "recommended N = 118" in seen["labels"]
    assert any(t.startswith("measured peak: 128 clients") for t in seen["labels"])
    assert seen["below"]
