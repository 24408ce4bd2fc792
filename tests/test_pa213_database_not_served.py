"""PA213: a client naming a database its PgBouncer (pgbouncer.ini held here) has no
[databases] entry for and no `*` fallback. Said only when the whole [databases] is read
and the client's database name is read; the server budget then is not a bare "fits"."""

from __future__ import annotations

from pathlib import Path

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.report.text import budget_lines

APP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
data:
  POSTGRES_HOST: pgbouncer
  POSTGRES_PORT: "6432"
{db}  POSTGRES_USER: app
  DB_POOL_SIZE: "5"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: backend
spec:
  replicas: 2
  strategy:
    rollingUpdate:
      maxSurge: 0
  template:
    metadata:
      labels:
        app: backend
    spec:
      containers:
        - name: app
          image: acme/backend:1.0
          envFrom:
            - configMapRef:
                name: app-config
"""
BOUNCER = """\
apiVersion: v1
kind: Service
metadata:
  name: pgbouncer
spec:
  selector:
    app: pgbouncer
  ports:
    - port: 6432
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: pgbouncer-config
data:
  pgbouncer.ini: |
{ini}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: pgbouncer
spec:
  replicas: 2
  strategy:
    rollingUpdate:
      maxSurge: 0
  template:
    metadata:
      labels:
        app: pgbouncer
    spec:
      containers:
        - name: pgbouncer
          image: edoburu/pgbouncer:v1.24.1-p1
          volumeMounts:
            - name: config
              mountPath: /etc/pgbouncer
      volumes:
        - name: config
          configMap:
            name: pgbouncer-config
"""
DB = """\
apiVersion: v1
kind: Service
metadata:
  name: db
spec:
  selector:
    app: db
  ports:
    - port: 5432
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  replicas: 1
  template:
    metadata:
      labels:
        app: db
    spec:
      containers:
        - name: postgres
          image: postgres:16.4
          args: ["-c", "max_connections=200"]
"""
NAMED = """\
[databases]
payments = host=db port=5432 dbname=payments

[pgbouncer]
listen_port = 6432
pool_mode = transaction
default_pool_size = 20"""
DB_LINE = '  POSTGRES_DB: payment_processing\n'


def _check(tmp_path: Path, ini: str, db: str = DB_LINE, extra: dict[str, str] | None = None):
    files = {"k8s/app.yaml": APP.format(db=db),
             "k8s/pgbouncer.yaml": BOUNCER.format(
                 ini="\n".join("    " + ln if ln else "" for ln in ini.split("\n"))),
             "k8s/db.yaml": DB, **(extra or {})}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    result = run_check([str(tmp_path)], CheckOptions())
    return result, [f for f in result.findings if f.code == "PA213"]


def test_unserved_database_is_reported_at_its_setting_line(tmp_path: Path) -> None:
    result, found = _check(tmp_path, NAMED)
    (f,) = found
    assert (f.location.path, f.location.line) == ("k8s/app.yaml", 8)  # POSTGRES_DB
    assert "'payment_processing'" in f.message and "payments" in f.message
    assert "no such database: payment_processing" in f.message
    assert f.fix is not None and "payment_processing = host=db port=5432 " \
        "dbname=payment_processing" in f.fix.description
    assert "POSTGRES_DB at payments" in f.fix.description
    (budget,) = result.budgets
    head = budget_lines(budget, verbose=False, color=False)
    assert head[0].endswith("fits, but 1 client cannot connect (PA213)"), head[0]
    assert any("cannot connect: backend: database 'payment_processing'" in x for x in head)


def test_a_named_entry_or_star_fallback_serves_it(tmp_path: Path) -> None:
    served = NAMED.replace("[pgbouncer]", "payment_processing = host=db dbname=x\n\n"
                           "[pgbouncer]")
    result, found = _check(tmp_path / "a", served)
    assert found == []
    assert budget_lines(result.budgets[0], verbose=False, color=False)[0].endswith("fits")
    star = NAMED.replace("[pgbouncer]", "* = host=db port=5432\n\n[pgbouncer]")
    assert _check(tmp_path / "b", star)[1] == []


def test_the_admin_console_and_an_unread_name_are_not_reported(tmp_path: Path) -> None:
    assert _check(tmp_path / "a", NAMED, db="  POSTGRES_DB: pgbouncer\n")[1] == []
    # no database name: libpq would take the user name, a guess this rule does not make
    assert _check(tmp_path / "b", NAMED, db="")[1] == []


def test_an_include_not_read_may_hold_the_entry(tmp_path: Path) -> None:
    ini = NAMED.replace("[pgbouncer]", "%include /etc/pgbouncer/more.ini\n\n[pgbouncer]")
    assert _check(tmp_path / "a", ini)[1] == []
    # the included file held here (read as mounted at the path it names)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "more.ini").write_text("others = host=db dbname=others\n")
    assert len(_check(tmp_path / "b", ini)[1]) == 1


def test_a_stop_that_may_skip_entries_says_nothing(tmp_path: Path) -> None:
    # PgBouncer stops at the unknown key (PA209); a [databases] after it is not read
    later = NAMED + "\nserver_login_retry_time = 15\n\n[databases]\npayment_processing = host=db"
    result, found = _check(tmp_path / "a", later)
    assert found == [] and any(f.code == "PA209" for f in result.findings)
    # the stop in [pgbouncer] with no [databases] after it: fixed there, it still refuses
    after = NAMED + "\nserver_login_retry_time = 15"
    result, found = _check(tmp_path / "b", after)
    assert len(found) == 1 and any(f.code == "PA209" for f in result.findings)


def test_json_and_markdown_say_who_cannot_connect(tmp_path: Path) -> None:
    # the JSON said "fits": true with nothing about the refused client; the PR comment's
    # table said "✅ fits" (an expert's CI reads these, not the terminal)
    import json

    from advisor.report import json as json_report
    from advisor.report.compare import compare
    from advisor.report.markdown import budget_table, diff_table
    from advisor.rules import load_rules

    result, _ = _check(tmp_path, NAMED)
    doc = json.loads(json_report.render(result, load_rules()))
    (budget,) = doc["budgets"]
    assert budget["fits"] and budget["unserved"] == [
        "backend: database 'payment_processing' is not in pgbouncer's [databases] "
        "(no * fallback): PgBouncer refuses it (PA213)"]
    assert doc["summary"]["cannot_connect"] == 1
    assert json_report.load(json_report.render(result, load_rules())).budgets[0].unserved \
        == budget["unserved"]
    row = budget_table(result.budgets).splitlines()[-1]
    assert "⚠️ fits, but 1 client cannot connect (PA213)" in row and "✅" not in row
    diff_row = diff_table(compare(result, result)).splitlines()[-1]
    assert "fits, but 1 client cannot connect (PA213)" in diff_row
