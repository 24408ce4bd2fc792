"""AWS RDS Proxy: its declaration, its place in the topology and the budget, and PA411.

AWS facts used (RDS User Guide, "RDS Proxy connection considerations" and "Avoiding
pinning an RDS Proxy"; RDS API ConnectionPoolConfiguration):
- the proxy's pool maximum is MaxConnectionsPercent (default 100 for PostgreSQL) of
  the target's max_connections parameter: 75% of 1,000 is 750;
- MaxIdleConnectionsPercent defaults to half of MaxConnectionsPercent, at most it;
- PostgreSQL pinning: SET, the extended protocol's prepared statements, temporary
  sequences/tables/views, cursors, DISCARD, LISTEN, LOAD, nextval/setval, advisory
  lock functions, prepared statements; all engines: statements over 16 KB.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from advisor.budget.slots import proxy_contribution
from advisor.config.settings import load_settings
from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.model import (
    BouncerVersion,
    Client,
    Location,
    Pool,
    Pooler,
    Route,
    Server,
    Setting,
    Source,
    SqlHazard,
    Term,
    Topology,
)
from advisor.read.fs import InputError
from advisor.rule_context import RuleContext
from advisor.rules import load_rules
from tests.deploy_helpers import FIXTURES, line_no

pytest.importorskip("pglast")

RULES = load_rules()
FIXTURE = FIXTURES / "rds-proxy"
PA4XX_BOUNCER = {f"PA4{n:02d}" for n in range(1, 11)}

CONFIG = """\
[[servers]]
name = "orders-rds"
hosts = ["orders-rds.abc.eu-west-1.rds.amazonaws.com"]
max_connections = 200

[[proxies]]
name = "orders-proxy"
kind = "rds-proxy"
hosts = ["orders-proxy.proxy-abc.eu-west-1.rds.amazonaws.com"]
target = "orders-rds"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / ".pool-advisor.toml"
    path.write_text(text)
    return path


# --- configuration --------------------------------------------------------------------


def test_declaration_defaults_are_aws_defaults(tmp_path: Path) -> None:
    (proxy,) = load_settings(write(tmp_path, CONFIG)).proxies
    assert (proxy.max_connections_percent, proxy.max_idle_connections_percent) == (100, None)
    assert proxy.line_of("target") == 10 and proxy.line_of("") == 6


@pytest.mark.parametrize(
    ("extra", "message", "line"),
    [
        ("max_connections_percent = 0\n", "greater than or equal to 1", 11),
        ("max_connections_percent = 101\n", "less than or equal to 100", 11),
        ("max_connections_percent = 40\nmax_idle_connections_percent = 50\n",
         "at most max_connections_percent (40)", 12),
        ("pool_mode = \"transaction\"\n", "unknown key", 11),
    ],
)
def test_bad_declarations_name_their_line(tmp_path: Path, extra: str, message: str,
                                          line: int) -> None:
    with pytest.raises(InputError) as err:
        load_settings(write(tmp_path, CONFIG + extra))
    assert message in err.value.message and err.value.line == line


def test_an_error_in_the_second_proxy_points_into_its_block(tmp_path: Path) -> None:
    second = CONFIG.replace("orders-proxy", "other-proxy").split("[[proxies]]")[1]
    text = CONFIG + "\n[[proxies]]" + second + "kind_of = 1\n"
    with pytest.raises(InputError) as err:
        load_settings(write(tmp_path, text))
    assert err.value.line == text.splitlines().index("kind_of = 1") + 1


def test_unknown_kind_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        load_settings(write(tmp_path, CONFIG.replace('"rds-proxy"', '"pgcat"')))
    assert err.value.line == 8 and "rds-proxy" in err.value.message


# --- the fixture, end to end: the budget worked out by hand ---------------------------


def test_fixture_budget_by_hand() -> None:
    r = run_check([FIXTURE])
    (b,) = r.budgets
    # usable = 200 max_connections (declared) - 3 superuser_reserved_connections
    # (PostgreSQL 15 default) = 197
    assert (b.max_connections.value, b.usable) == (200, 197)
    by = {c.who: c for c in b.contributions}
    assert set(by) == {"billing", "orders-proxy"}
    # billing, direct: 2 replicas (maxSurge 0) x 10 HikariCP maximumPoolSize = 20
    assert by["billing"].total == 20
    proxy = by["orders-proxy"]
    # pool maximum = floor(200 x 90 / 100) = 180
    (cap,) = proxy.factors
    toml = FIXTURE / ".pool-advisor.toml"
    assert (cap.value, cap.source.line) == (180, line_no(toml, "max_connections_percent"))
    # clients through the proxy: orders-api (12 HPA maxReplicas + ceil(12 x 25%) = 3
    # surge) x 10 = 150; orders-worker 2 (maxSurge 0) x 20 = 40; min(190, 180) = 180
    assert (proxy.op, [(p.who, p.total) for p in proxy.parts]) == (
        "min", [("orders-api", 150), ("orders-worker", 40)])
    assert proxy.total == 180
    # peak = 20 + 180 = 200 > 197
    assert b.peak == 200 and not b.fits
    codes = {f.code for f in r.findings}
    assert "PA101" in codes
    assert not codes & ({"PA105", "PA201"} | PA4XX_BOUNCER)


def test_fixture_pinning_findings() -> None:
    r = run_check([FIXTURE], CheckOptions(select=["PA411"], root=FIXTURE))
    api = FIXTURE / "services/orders-api/sql/queries.sql"
    jobs = FIXTURE / "services/orders-worker/sql/jobs.sql"
    found = {(f.location.path, f.location.line) for f in r.findings}
    assert found == {
        # pgjdbc's default prepareThreshold 5: named prepared statements
        ("k8s/orders-api.yaml", line_no(FIXTURE / "k8s/orders-api.yaml", "jdbc:postgresql:")),
        ("services/orders-api/sql/queries.sql", line_no(api, "SET search_path")),
        ("services/orders-api/sql/queries.sql", line_no(api, "nextval")),
        ("services/orders-worker/sql/jobs.sql", line_no(jobs, "SET LOCAL")),
        ("services/orders-worker/sql/jobs.sql", line_no(jobs, "pg_advisory_xact_lock")),
        ("services/orders-worker/sql/jobs.sql", line_no(jobs, "DISCARD ALL")),
    }
    assert all(f.severity.value == "warning" for f in r.findings)
    nextval = next(f for f in r.findings if "nextval" in f.message)
    assert "Manipulating sequences using functions such as nextval" in nextval.message
    assert "orders-api's 150 client connections may then hold 150 of the proxy's 180" in (
        nextval.message)


def test_include_scoped_set_option(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo)
    toml = repo / ".pool-advisor.toml"
    toml.write_text(toml.read_text() + "\n[rules.PA411]\ninclude_scoped_set = false\n")
    r = run_check([repo], CheckOptions(select=["PA411"]))
    assert not [f for f in r.findings if "SET LOCAL" in f.message]
    assert len(r.findings) == 5


def test_unknown_target_is_a_problem_with_its_line(tmp_path: Path) -> None:
    write(tmp_path, CONFIG.replace('target = "orders-rds"', 'target = "nope"'))
    r = run_check([tmp_path])
    assert any("target 'nope' is no declared server" in f.message
               and f.location.line == 10 for f in r.findings)


# --- budget arithmetic ------------------------------------------------------------------


def _server(max_connections: int = 200) -> Server:
    src = Source(path="c.toml", line=3)
    return Server(
        id="declared/db", name="db", kind="external",
        version=Term(label="v", value=15, source=src),
        settings={"max_connections": Setting(name="max_connections", raw=str(max_connections),
                                             value=max_connections, source=src)},
        instances=Term(label="instances", value=1, source=src), location=Location(path="c.toml"))


def _proxy(percent: float = 90) -> Pooler:
    return Pooler(
        id="declared-proxy/p", name="p", kind="rds-proxy",
        replicas=Term(label="RDS Proxy", value=1, source=Source(default="x")),
        version=BouncerVersion(), server_id="declared/db",
        max_connections_percent=Term(label="MaxConnectionsPercent", value=percent,
                                     source=Source(path="c.toml", line=9)),
        location=Location(path="c.toml", line=6), hosts=["proxy.example"])


def _client(pods: int, size: int, bound: str = "fixed", name: str = "app") -> Client:
    src = Source(path="k.yaml", line=1)
    return Client(
        id=f"Deployment/{name}", name=name, replicas=Term(label="replicas", value=pods, source=src),
        pools=[Pool(label="HikariCP", size=Term(label="size", value=size, source=src),
                    bound=bound,  # type: ignore[arg-type]
                    route=Route(host="proxy.example", source=src))],
        target_kind="pooler", target_id="declared-proxy/p", location=Location(path="k.yaml"))


@pytest.mark.parametrize(
    ("max_connections", "percent", "clients", "total"),
    [
        (1000, 75, [], 750),  # AWS's own example, no client known: the whole pool
        (200, 90, [(4, 10)], 40),  # fewer clients than the pool maximum
        (200, 90, [(20, 10)], 180),  # capped
        (101, 33, [(100, 10)], 33),  # floor(33.33)
    ],
)
def test_proxy_contribution(max_connections: int, percent: int, clients: list, total: int
                            ) -> None:
    topo = Topology(servers=[_server(max_connections)], poolers=[_proxy(percent)],
                    clients=[_client(p, s, name=f"c{i}") for i, (p, s) in enumerate(clients)])
    assert proxy_contribution(topo.poolers[0], topo).total == total


def test_an_unbounded_client_counts_the_whole_pool() -> None:
    topo = Topology(servers=[_server()], poolers=[_proxy()], clients=[_client(2, 0, "unbounded")])
    assert proxy_contribution(topo.poolers[0], topo).total == 180


def _run(code: str, topo: Topology) -> list:
    from advisor.budget.slots import budgets

    return list(RULES.rules[code].func(topo, RuleContext(budgets=budgets(topo))))


def test_pa105_on_a_proxy_suggests_max_connections_percent() -> None:
    topo = Topology(servers=[_server()], poolers=[_proxy(100)], clients=[_client(30, 10)])
    (f,) = _run("PA105", topo)  # min(300, 200) = 200 > 197 usable
    assert f.fix is not None and "MaxConnectionsPercent to at most 98" in f.fix.description
    assert _run("PA201", topo) == []  # no max_client_conn on RDS Proxy


def test_pgbouncer_rules_ignore_proxy_routes() -> None:
    loc = Location(path="q.sql", line=1)
    hazards = [SqlHazard(kind=k, detail=cid or "unmapped", location=loc, client_id=cid)
               for k in ("session-set", "listen", "advisory-lock", "sql-prepare",
                         "protocol-prepare", "temp-table", "with-hold-cursor", "load",
                         "transaction-block", "startup-parameter")
               for cid in ("Deployment/app", None)]
    topo = Topology(servers=[_server()], poolers=[_proxy()], clients=[_client(2, 5)],
                    sql_hazards=hazards)
    for code in sorted(PA4XX_BOUNCER):
        assert _run(code, topo) == [], code
    pinned = _run("PA411", topo)
    # everything but transaction-block and startup-parameter, mapped and unmapped
    assert len(pinned) == 2 * 8
    assert sum("not mapped to a workload" in f.message for f in pinned) == 8


# --- pinning-only SQL kinds ---------------------------------------------------------------


def test_pinning_kinds_are_added_only_when_asked() -> None:
    from advisor.read.sql.hazards import PINNING_ONLY_KINDS, find_sql_hazards

    sql = """\
SET LOCAL work_mem = '1MB';
SET TRANSACTION ISOLATION LEVEL SERIALIZABLE;
SELECT set_config('a.b', 'c', true), set_config('a.b', 'c', $1);
DECLARE d CURSOR FOR SELECT 1;
CREATE TEMP TABLE u (a int) ON COMMIT DROP;
CREATE TEMP SEQUENCE s;
CREATE TEMP VIEW v AS SELECT 1;
CREATE SEQUENCE plain;
DISCARD ALL;
SELECT nextval('s');
SELECT pg_try_advisory_xact_lock(1);
SELECT 1;
"""
    loc = Location(path="x.sql", line=1)
    assert find_sql_hazards(sql, loc) == []
    found = [(h.location.line, h.kind) for h in find_sql_hazards(sql, loc, pinning=True)]
    assert found == [
        (1, "scoped-set"), (2, "scoped-set"), (3, "scoped-set"), (4, "cursor"),
        (5, "temp-object"), (6, "temp-object"), (7, "temp-object"), (9, "discard"),
        (10, "sequence-function"), (11, "xact-advisory-lock"),
    ]
    assert {k for _, k in found} <= PINNING_ONLY_KINDS


def test_statements_over_16_kb() -> None:
    from advisor.read.sql.hazards import LONG_STATEMENT_BYTES, find_sql_hazards

    def statement(size: int) -> str:
        head = "SELECT '"
        return head + "x" * (size - len(head) - 1) + "'"

    loc = Location(path="x.sql", line=1)
    at = find_sql_hazards(statement(LONG_STATEMENT_BYTES) + ";", loc, pinning=True)
    over = find_sql_hazards(statement(LONG_STATEMENT_BYTES + 1) + ";\nSELECT 1;", loc,
                            pinning=True)
    assert at == []
    assert [(h.kind, h.detail.split(":")[0]) for h in over] == [
        ("long-statement", f"statement of {LONG_STATEMENT_BYTES + 1} bytes")]
    assert find_sql_hazards(statement(LONG_STATEMENT_BYTES + 1), loc) == []


def test_advise_lowers_max_connections_percent_and_write_makes_it_fit(tmp_path: Path) -> None:
    import json
    import os
    import subprocess
    import sys

    from tests.deploy_helpers import REPO

    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo)
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "advisor", *args], env=env,
                              capture_output=True, text=True, cwd=tmp_path)

    out = cli("advise", str(repo), "--format", "json")
    (server,) = json.loads(out.stdout)["servers"]
    (proxy,) = [p for p in server["proposals"] if p["key"] == "max_connections_percent"]
    # 197 usable split by current demand: billing 197 x 20/200 = 19.7 -> 9 per pod x 2
    # = 18; the proxy 197 x 180/200 = 177.3 -> floor(177.3 x 100 / 200) = 88% ->
    # floor(200 x 88 / 100) = 176 server connections
    assert proxy["new"] == "88" and proxy["edit"]["path"] == ".pool-advisor.toml"
    assert server["fits_after"] and server["peak_after"] == 18 + 176
    written = cli("advise", str(repo), "--write", "--yes")
    # The budget fits after the edit; the fixture's SQL pins sessions (PA411 x6), which no
    # value advise edits fixes: advise says so and exits 1 (it ends where check passes)
    assert written.returncode == 1, written.stderr
    assert "Still reported by check after these edits (6)" in written.stderr  # PA411 x6
    assert "PA411" in written.stderr
    assert "max_connections_percent = 88" in (repo / ".pool-advisor.toml").read_text()
    assert "PA101" not in cli("check", str(repo)).stdout
