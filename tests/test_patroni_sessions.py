"""Patroni's own superuser sessions on the servers it manages (audit 8b D1), and the
assumed PgBouncer version said where its defaults are cited (audit 8b D6).

Patroni holds `heartbeat` and `restapi` as the superuser on each instance (advisor.facts
.patroni); a superuser session takes an ordinary slot (PostgreSQL 15, max_connections 10,
reserved 3, 2 superuser sessions held: a plain role got 5, not 7). So a Zalando, PGO or
Percona server has 2 slots fewer for the applications: 96 connections against
max_connections 100 is OVER by 1 (96 > 95), not "fits" (96 <= 97)."""

from __future__ import annotations

from pathlib import Path

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.cli_helpers import run_cli
from tests.tree_helpers import write

ZALANDO = """\
apiVersion: acid.zalan.do/v1
kind: postgresql
metadata: {name: acid-main, namespace: default}
spec:
  teamId: acid
  numberOfInstances: INSTANCES
  users: {app: []}
  databases: {app: app}
  postgresql:
    version: "16"
    parameters: {max_connections: "100"}
"""

APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: flowsvc, namespace: default}
spec:
  replicas: 6
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: flowsvc
          image: example/flowsvc:1
          env:
            - {name: DATABASE_URL, value: "postgres://app@acid-main.default.svc:5432/app"}
"""

DECLARED = '[[workloads]]\nname = "flowsvc"\nconnections = 16\n'

PGO = """\
apiVersion: postgres-operator.crunchydata.com/v1beta1
kind: PostgresCluster
metadata: {name: hippo, namespace: zoo}
spec:
  postgresVersion: 16
  instances:
    - name: a
      replicas: 2
  proxy:
    pgBouncer:
      replicas: 1
IMAGE"""

PERCONA_PMM = """\
apiVersion: pgv2.percona.com/v2
kind: PerconaPGCluster
metadata: {name: ledger, namespace: pg}
spec:
  crVersion: 3.1.0
  postgresVersion: 17
  instances:
    - name: main
      replicas: 1
  proxy:
    pgBouncer:
      replicas: 1
      image: docker.io/percona/percona-pgbouncer:1.25.1-1
  pmm:
    enabled: true
    image: docker.io/percona/pmm-client:3.4.1
"""

SPILO = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: pg}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: postgres
          image: ghcr.io/zalando/spilo-16:3.3-p1
          resources: {limits: {memory: 1Gi}}
"""


def budgets(root: Path):
    result = run_check([str(root)], CheckOptions())
    return result, {b.server: b for b in result.budgets}


def test_zalando_96_against_100_is_over_by_one(tmp_path: Path):
    """The audit's repro-2: 6 pods x 16 = 96 against max_connections 100."""
    write(tmp_path, {"k8s/pg.yaml": ZALANDO.replace("INSTANCES", "1"), "k8s/app.yaml": APP,
                     ".pool-advisor.toml": DECLARED})
    _, found = budgets(tmp_path)
    b = found["acid-main"]
    assert (b.max_connections.value, b.usable, b.peak) == (100, 95, 96)
    held = [t for t in b.reserved if "Patroni" in t.label]
    assert [t.value for t in held] == [2]
    assert "patroni/postgresql/__init__.py:94-95" in held[0].source.label()
    assert "patroni/api.py:1583-1587" in held[0].source.label()
    out = run_cli("check", "-v", "--no-cache", str(tmp_path))
    assert out.returncode == 1, out.stdout + out.stderr
    assert "OVER by 1" in out.stdout and "peak: 96 > 95 usable" in out.stdout
    assert "- 2 (Patroni's superuser sessions, default: " in out.stdout


def test_each_standby_holds_them_too(tmp_path: Path):
    """Patroni runs on every instance: the replicas' per-instance budget loses 2 too."""
    write(tmp_path, {"k8s/pg.yaml": ZALANDO.replace("INSTANCES", "3")})
    _, found = budgets(tmp_path)
    assert found["acid-main"].usable == found["acid-main replicas"].usable == 95


def test_pgo_and_plain_spilo_hold_them(tmp_path: Path):
    write(tmp_path / "pgo", {"pg.yaml": PGO.replace("IMAGE", "")})
    _, found = budgets(tmp_path / "pgo")
    # no max_connections: Patroni's 100, - 3 reserved - 2 Patroni sessions
    assert found["hippo"].usable == found["hippo replicas"].usable == 95
    write(tmp_path / "spilo", {"k8s/pg.yaml": SPILO})
    _, found = budgets(tmp_path / "spilo")
    (b,) = found.values()
    assert any("Patroni" in t.label and t.value == 2 for t in b.reserved)


def test_a_server_without_patroni_holds_none(tmp_path: Path):
    write(tmp_path, {"k8s/pg.yaml": SPILO.replace("ghcr.io/zalando/spilo-16:3.3-p1",
                                                   "postgres:16")})
    _, found = budgets(tmp_path)
    (b,) = found.values()
    assert b.usable == 97 and not any("Patroni" in t.label for t in b.reserved)


TIMESCALE = """\
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ts}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: timescaledb
          image: timescale/timescaledb-ha:pg16.2-ts2.14.2
COMMAND"""


def test_other_servers_patroni_runs_hold_them(tmp_path: Path):
    """Review s25 F10: not only Spilo and the operators run Patroni: timescaledb-single's
    `command: patroni ...` on timescaledb-ha, a shell script that execs patroni, or
    patroni as the command of another image. Such a container was no server at all
    ("no PostgreSQL server found"); it is one, and 100 - 3 - 2 = 95."""
    cases = {
        "chart": '          command: ["patroni", "/etc/timescaledb/patroni.yaml"]\n',
        "shell": '          command: ["/bin/sh", "-c", "setup; exec /usr/bin/patroni '
                 '/etc/p.yaml"]\n',
        "custom": '          command: ["/usr/local/bin/patroni", "/p.yaml"]\n',
    }
    for name, command in cases.items():
        text = TIMESCALE.replace("COMMAND", command)
        if name == "custom":
            text = text.replace("timescale/timescaledb-ha:pg16.2-ts2.14.2", "postgres:16.2")
        write(tmp_path / name, {"k8s/pg.yaml": text})
        _, found = budgets(tmp_path / name)
        (b,) = found.values()
        held = [t for t in b.reserved if "Patroni" in t.label]
        assert (b.usable, [t.value for t in held]) == (95, [2]), name
        assert "Patroni runs: " in held[0].source.label(), name
        assert "up to 2" in held[0].source.label(), name


def test_timescale_running_postgres_itself_holds_none(tmp_path: Path):
    """timescaledb-ha's default command is postgres: no Patroni there."""
    write(tmp_path, {"k8s/pg.yaml": TIMESCALE.replace("COMMAND", "")})
    _, found = budgets(tmp_path)
    (b,) = found.values()
    assert b.usable == 97 and not any("Patroni" in t.label for t in b.reserved)


def test_percona_pmm_agent_is_said_not_counted(tmp_path: Path):
    """pmm.enabled: the PMM agent connects as `monitor`, a SUPERUSER; how many sessions
    it holds is not read, so a notice, never a silent 0."""
    write(tmp_path, {"pg.yaml": PERCONA_PMM})
    result, found = budgets(tmp_path)
    assert found["ledger"].usable == 95  # Patroni's, not the agent's
    (notice,) = [n for n in result.notices if "pmm.enabled" in n]
    assert "SUPERUSER" in notice and "not read" in notice and "pg.yaml:15" in notice
    write(tmp_path / "off", {"pg.yaml": PERCONA_PMM.replace("enabled: true", "enabled: false")})
    result, _ = budgets(tmp_path / "off")
    assert not [n for n in result.notices if "pmm.enabled" in n]


def test_an_assumed_pgbouncer_version_is_said_where_its_defaults_are_cited(tmp_path: Path):
    """PGO's default pgBouncer image names no version: its defaults are the model's
    fallback 1.18's, and the citation says the version is assumed (audit 8b D6)."""
    write(tmp_path / "default", {"pg.yaml": PGO.replace("IMAGE", "")})
    text = run_cli("check", "-v", "--no-cache", str(tmp_path / "default")).stdout
    assert "(default_pool_size, default: PgBouncer 1.18 default (version assumed: " in text
    assert "PgBouncer 1.18 default)" not in text  # never without the word
    image = "      image: registry.developers.crunchydata.com/crunchydata/" \
            "crunchy-pgbouncer:ubi8-1.23-0\n"
    write(tmp_path / "tagged", {"pg.yaml": PGO.replace("IMAGE", image)})
    text = run_cli("check", "-v", "--no-cache", str(tmp_path / "tagged")).stdout
    assert "(default_pool_size, default: PgBouncer 1.23 default)" in text
    assert "version assumed" not in text
