"""PA110 against a real PostgreSQL 15 primary and streaming standby: the standby that
pool-advisor flags is exactly the one PostgreSQL refuses to run."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from advisor.model import Location, Server, Source, Term, Topology
from advisor.read.fs import Root
from advisor.read.sources.pgconf import read_pgconf
from advisor.rule_context import RuleContext
from advisor.rules import load_rules
from tests.realpg import (
    PG_BIN,
    _as_server_user,
    _chown_tree,
    _mkdtemp,
    free_port,
    have_postgres,
    running_postgres,
)

pytestmark = [pytest.mark.postgres,
              pytest.mark.skipif(not have_postgres(), reason="PostgreSQL 15 not installed")]

PRIMARY = "wal_level = replica\nmax_connections = 30\nmax_worker_processes = 8\n"


def _standby_log(primary, standby_conf: str) -> tuple[bool, str]:
    """pg_basebackup the primary, append `standby_conf`, start it: (started, log)."""
    top = _mkdtemp("pa-sb-")
    try:
        data = top / "standby"
        subprocess.run(_as_server_user([
            str(PG_BIN / "pg_basebackup"), "-h", str(primary.socket_dir),
            "-p", str(primary.port), "-U", "postgres", "-D", str(data), "-R",
            "-X", "stream"]), check=True, capture_output=True, timeout=60)
        with (data / "postgresql.conf").open("a") as f:
            f.write("\n" + standby_conf)
        _chown_tree(top)
        log = top / "standby.log"
        port = free_port()
        started = subprocess.run(_as_server_user([
            str(PG_BIN / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "20",
            "-o", f"-p {port} -c listen_addresses=127.0.0.1 -k {top}", "start"]),
            capture_output=True, timeout=60).returncode == 0
        text = log.read_text(errors="replace")
        subprocess.run(_as_server_user([str(PG_BIN / "pg_ctl"), "-D", str(data), "-m",
                                        "immediate", "-w", "stop"]),
                       capture_output=True, timeout=60)
        return started, text
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _findings(primary_conf: str, standby_conf: str):
    def server(ident: str, text: str, role: str) -> Server:
        conf = read_pgconf(Root.of("/tmp"), f"{ident}.conf", text=text,
                           display_path=f"{ident}.conf", auto_conf=False)
        return Server(id=ident, name=ident, settings=conf.settings, role=role,
                      primary_id="primary" if role == "standby" else None,
                      version=Term(label="v", value=15, source=Source(default="test")),
                      instances=Term(label="n", value=1, source=Source(default="test")),
                      location=Location(path=f"{ident}.conf"))

    topo = Topology(servers=[server("primary", primary_conf, "primary"),
                             server("standby", primary_conf + standby_conf, "standby")])
    rule = load_rules().resolve("PA110")
    return list(rule.func(topo, RuleContext()))


@pytest.mark.parametrize(("standby_conf", "detail"), [
    ("max_connections = 20\n",
     "max_connections = 20 is a lower setting than on the primary server, where its value "
     "was 30."),
    ("max_worker_processes = 4\n",
     "max_worker_processes = 4 is a lower setting than on the primary server, where its "
     "value was 8."),
    ("max_connections = 30\n", None),  # equal: fine
    ("max_connections = 40\n", None),  # higher: fine
])
def test_standby_below_primary_matches_postgres(standby_conf, detail):
    with running_postgres(PRIMARY) as primary:
        started, log = _standby_log(primary, standby_conf)
    findings = _findings(PRIMARY, standby_conf)
    if detail is None:
        assert started, log
        assert findings == []
    else:
        assert not started
        assert "FATAL:  recovery aborted because of insufficient parameter settings" in log
        assert f"DETAIL:  {detail}" in log
        [f] = findings
        name = detail.split(" ", 1)[0]
        assert f.subject == f"standby|{name}"
        assert f.location.path == "standby.conf"
