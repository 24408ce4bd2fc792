"""advise does not cut max_connections down to a peak that leaves clients out (audit 29 D1).

serker72/test-payment-processing-service-ca's shape: the app connects through a PgBouncer
whose [databases] has no entry for the database it names (PA213), so the server's peak is
0 and its memory is over the limit: advise proposed `max_connections 100 -> 10`. Once the
entry is added PgBouncer opens 3 x (20 + 5) = 75 server connections: 10 leaves 7 usable.
A peak that is a floor (here: the server exposed by a LoadBalancer) is no base either.
With every client counted, the cut is still proposed (75 + 3 + 8 = 86 -> 90)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from advisor.advise.plan import advise
from advisor.advise.records import AdviseOptions, ServerAdvice
from advisor.advise.text import render_text
from advisor.scan import load_with_settings
from tests.test_advise import cli
from tests.tree_helpers import write

APP = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: shop-config}
data:
  PGHOST: bouncer
  PGPORT: "6432"
  PGDATABASE: orders_main
  PGUSER: shop
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop}
spec:
  replicas: 3
  strategy: {rollingUpdate: {maxSurge: 0}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      containers:
        - name: app
          image: acme/shop:2.0
          envFrom: [{configMapRef: {name: shop-config}}]
"""
BOUNCER = """\
apiVersion: v1
kind: Service
metadata: {name: bouncer}
spec:
  selector: {app: bouncer}
  ports: [{port: 6432}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: bouncer-ini}
data:
  pgbouncer.ini: |
    [databases]
    orders = host=pg port=5432 dbname=orders
%s
    [pgbouncer]
    listen_port = 6432
    pool_mode = transaction
    default_pool_size = 20
    reserve_pool_size = 5
    idle_transaction_timeout = 60
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: bouncer}
spec:
  replicas: 2
  strategy: {rollingUpdate: {maxSurge: 1}}
  template:
    metadata: {labels: {app: bouncer}}
    spec:
      containers:
        - name: pgbouncer
          image: edoburu/pgbouncer:v1.24.1-p1
          volumeMounts: [{name: ini, mountPath: /etc/pgbouncer}]
      volumes: [{name: ini, configMap: {name: bouncer-ini}}]
"""
PG = """\
apiVersion: v1
kind: Service
metadata: {name: pg}
spec:
%s  selector: {app: pg}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: pg}
spec:
  replicas: 1
  template:
    metadata: {labels: {app: pg}}
    spec:
      containers:
        - name: postgres
          image: postgres:17.5
          resources: {limits: {memory: 1Gi, cpu: 500m}}
"""
SERVED = "    orders_main = host=pg port=5432 dbname=orders_main\n"


def _advise(root: Path, *, served: str = "", service: str = "") -> ServerAdvice:
    write(root, {"k8s/app.yaml": APP, "k8s/bouncer.yaml": BOUNCER % served,
                 "k8s/pg.yaml": PG % service})
    loaded = load_with_settings([str(root)], root=root)
    (advice,) = advise(loaded.topology, loaded.budgets, AdviseOptions(memory=loaded.memory))
    return advice


def _max_connections(advice: ServerAdvice) -> str | None:
    return next((p.new for p in advice.proposals if p.key == "max_connections"), None)


def test_clients_pgbouncer_refuses_are_served_before_max_connections(tmp_path: Path) -> None:
    # advise first adds the [databases] entry PgBouncer lacks (PA213), then sizes the
    # server with the pools it opens: 90, never the 10 the 0 at peak gave
    advice = _advise(tmp_path)
    assert advice.peak_before == 0 and advice.unserved == 1
    first = advice.proposals[0]
    assert first.key == "[databases] orders_main"
    assert first.new == "orders_main = host=pg port=5432 dbname=orders_main"
    assert first.edit is not None and first.edit.insert
    assert (first.edit.path, first.edit.line) == ("k8s/bouncer.yaml", 14)  # the last entry
    assert _max_connections(advice) == "90"
    assert advice.peak_after == 75 and advice.fits_after
    text = render_text([advice])
    assert text.startswith("== pg: fits, but 1 client cannot connect (PA213) (0 at peak")
    before = text[text.index("Before:"):text.index("Proposals:")]
    assert "  fits, but 1 client cannot connect (PA213)\n" in before


def test_the_served_entry_applies_and_check_counts_the_clients(tmp_path: Path) -> None:
    write(tmp_path, {"k8s/app.yaml": APP, "k8s/bouncer.yaml": BOUNCER % "",
                     "k8s/pg.yaml": PG % ""})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    diff = cli("advise", "--root", str(tmp_path), str(tmp_path / "k8s"), "--diff")
    # exit 1: the memory settings are defaults, set by hand (no line to edit)
    assert diff.returncode == 1 and "Still reported" in diff.stderr, diff.stderr
    assert "PA213" not in diff.stderr
    assert "+    orders_main = host=pg port=5432 dbname=orders_main\n" in diff.stdout
    applied = subprocess.run(["git", "apply", "-"], input=diff.stdout, text=True,
                             cwd=tmp_path, capture_output=True)
    assert applied.returncode == 0, applied.stderr
    check = cli("check", "--no-cache", "--root", str(tmp_path), str(tmp_path / "k8s"))
    assert "PA213" not in check.stdout
    # the entry in place, PgBouncer's pools count (max_connections 90 is by hand)
    assert "  peak: 75 <= 97 usable\n" in check.stdout, check.stdout


def test_a_floor_peak_keeps_max_connections(tmp_path: Path) -> None:
    advice = _advise(tmp_path, served=SERVED, service="  type: LoadBalancer\n")
    assert advice.peak_before == 75 and advice.floor_before
    assert _max_connections(advice) is None  # was "90"
    assert any("the peak is a floor (exposed outside the cluster by" in n
               for n in advice.notes)


def test_all_clients_counted_still_cuts(tmp_path: Path) -> None:
    advice = _advise(tmp_path, served=SERVED)
    assert advice.peak_before == 75  # 3 PgBouncer pods x (20 + 5)
    assert _max_connections(advice) == "90"
