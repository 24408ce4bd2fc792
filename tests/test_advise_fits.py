"""advise's proposals fit by the tool's own arithmetic, and are usable (audit 10d D2).

D2a: a PgBouncer pool shrunk to fit is given its steady pool first: the reserve, which
PgBouncer opens only for a client that has waited reserve_pool_timeout (src/objects.c
launch_new_connection), is given up before default_pool_size (was: 20 -> 2 with the
reserve of 5 kept, 2 steady connections per pool); the reason's count is the After
block's (was: "4 replicas x 23 = 92" over an After of 84).
D2b: when autovacuum's workers x maintenance_work_mem is most of the memory estimate,
autovacuum_work_mem is proposed (was: only max_connections 100 -> 30, still over by the
tool's own formula), PA301's fix names it, and a note says when nothing advise changes
fits.
The property: for every case here, the After budget fits (slots and memory) or advise
says it cannot."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from advisor.advise.plan import advise
from advisor.advise.records import AdviseOptions, ServerAdvice
from advisor.scan import load_with_settings
from tests.test_advise import FIXTURES, replace
from tests.tree_helpers import write

APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: app
          image: registry.example/{name}:1.0
          env:
            - {{name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://{host}/{db}"}}
            - {{name: SPRING_DATASOURCE_USERNAME, value: {user}}}
            - {{name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "{pool}"}}
"""
HPA = """\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: {name}}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: {name}}}
  minReplicas: 1
  maxReplicas: {most}
"""
DB = """\
apiVersion: v1
kind: ConfigMap
metadata: {{name: postgres-config}}
data:
  postgresql.conf: |
{conf}
---
apiVersion: v1
kind: Service
metadata: {{name: postgres}}
spec:
  selector: {{app: postgres}}
  ports: [{{port: 5432}}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: postgres}}
spec:
  serviceName: postgres
  replicas: 1
  selector: {{matchLabels: {{app: postgres}}}}
  template:
    metadata: {{labels: {{app: postgres}}}}
    spec:
      containers:
        - name: postgres
          image: postgres:{version}
          args: ["-c", "config_file=/etc/postgresql/postgresql.conf"]
          resources:
            limits: {{memory: {memory}}}
          volumeMounts: [{{name: config, mountPath: /etc/postgresql}}]
      volumes: [{{name: config, configMap: {{name: postgres-config}}}}]
"""
BOUNCER = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: pgbouncer-config}
data:
  pgbouncer.ini: |
    [databases]
    app = host=postgres port=5432 dbname=app
    audit = host=postgres port=5432 dbname=audit

    [pgbouncer]
    listen_port = 6432
    auth_type = scram-sha-256
    auth_file = /etc/pgbouncer/userlist.txt
    pool_mode = transaction
    max_client_conn = 2000
    default_pool_size = 20
    reserve_pool_size = 5
---
apiVersion: v1
kind: Service
metadata: {name: pgbouncer}
spec:
  selector: {app: pgbouncer}
  ports: [{port: 6432}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: pgbouncer}
spec:
  replicas: 2
  strategy: {type: Recreate}
  selector: {matchLabels: {app: pgbouncer}}
  template:
    metadata: {labels: {app: pgbouncer}}
    spec:
      containers:
        - name: pgbouncer
          image: bitnami/pgbouncer:1.18.0
          volumeMounts: [{name: config, mountPath: /etc/pgbouncer}]
      volumes: [{name: config, configMap: {name: pgbouncer-config}}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: pgbouncer}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: pgbouncer}
  minReplicas: 2
  maxReplicas: 4
"""


def _conf(*lines: str) -> str:
    return "\n".join(f"    {line}" for line in lines)


def _app(name: str, replicas: int, pool: int, *, host: str = "pgbouncer:6432",
         db: str = "app", user: str = "app") -> str:
    return APP.format(name=name, replicas=replicas, pool=pool, host=host, db=db, user=user)


def _pooled(root: Path) -> Path:
    """PostgreSQL 16 (95 usable), PgBouncer 1.18 on HPA 2..4 with pools of 20 + 5 reserve
    for app/app, app/worker and audit/audit: 4 x 75 = 300 > 95; a migrator of 4 direct."""
    return write(root, {
        "k8s/db.yaml": DB.format(conf=_conf("max_connections = 100",
                                            "reserved_connections = 2"),
                                 version="16.4", memory="8Gi"),
        "k8s/pgb.yaml": BOUNCER,
        "k8s/api.yaml": _app("api", 2, 10) + "---\n" + HPA.format(name="api", most=30),
        "k8s/worker.yaml": _app("worker", 2, 5, user="worker")
        + "---\n" + HPA.format(name="worker", most=10),
        "k8s/audit.yaml": _app("audit", 3, 5, db="audit", user="audit"),
        "k8s/migrator.yaml": _app("migrator", 1, 4, host="postgres:5432"),
    })


def _autovacuum(root: Path, version: str = "15.8") -> Path:
    """3 autovacuum workers x maintenance_work_mem 2GB = 6GB of a 9.76GB estimate, 8Gi
    limit: shared_buffers + autovacuum alone are the 8GB."""
    return write(root, {
        "k8s/db.yaml": DB.format(conf=_conf("max_connections = 100", "shared_buffers = 2GB",
                                            "work_mem = 4MB", "maintenance_work_mem = 2GB",
                                            "autovacuum_max_workers = 3"),
                                 version=version, memory="8Gi"),
        "k8s/app.yaml": _app("api", 2, 10, host="postgres:5432"),
    })


def _sorts(root: Path, maintenance: str) -> Path:
    """work_mem 64MB the largest term (30 x 64MB x 2 nodes x 2 = 3.75GB once
    max_connections is 30), 3 autovacuum workers x `maintenance` beside it, 8Gi."""
    return write(root, {
        "k8s/db.yaml": DB.format(conf=_conf("max_connections = 100", "shared_buffers = 2GB",
                                            "work_mem = 64MB",
                                            f"maintenance_work_mem = {maintenance}",
                                            "autovacuum_max_workers = 3"),
                                 version="16.4", memory="8Gi"),
        "k8s/app.yaml": _app("api", 2, 10, host="postgres:5432"),
    })


def _crowded(root: Path) -> Path:
    """200 direct connections on a 512Mi server: 128MB shared_buffers + 96MB of
    autovacuum + 225 backends x 2MB overhead are over before any work_mem."""
    return write(root, {
        "k8s/db.yaml": DB.format(conf=_conf("max_connections = 250", "work_mem = 4MB",
                                            "maintenance_work_mem = 32MB"),
                                 version="16.4", memory="512Mi"),
        "k8s/app.yaml": _app("api", 20, 10, host="postgres:5432"),
    })


def _advise(root: Path) -> list[ServerAdvice]:
    loaded = load_with_settings([str(root)], root=root)
    return advise(loaded.topology, loaded.budgets, AdviseOptions(memory=loaded.memory))


def test_the_reserve_is_given_up_before_the_steady_pool(tmp_path: Path):
    """Each process's share is 23 (92 of 95 usable over 4 replicas, the migrator's 1
    aside), 7 per pool: default_pool_size 7 with no reserve (was 2 + 5 reserve)."""
    (advice,) = _advise(_pooled(tmp_path))
    keys = {p.key: p for p in advice.proposals if p.kind == "pooler"}
    assert keys["reserve_pool_size"].new == "0"
    assert keys["default_pool_size"].new == "7"
    assert "app/app: 7 (default_pool_size, k8s/pgb.yaml:16) = 7" in [
        line.strip() for line in advice.after]
    assert advice.fits_after and advice.peak_after == 85  # 1 + 4 x 3 x 7
    # the reason's count is the After block's, not the share it was sized to
    for p in (keys["reserve_pool_size"], keys["default_pool_size"]):
        assert p.reason.startswith("4 replicas x 21 = 84 server connections (was 260)")
    assert "reserve_pool_timeout" in keys["reserve_pool_size"].reason


@pytest.mark.parametrize("version", ["15.8", "17.2"])
def test_autovacuum_work_mem_when_autovacuum_is_most_of_the_estimate(tmp_path: Path,
                                                                     version: str):
    (advice,) = _advise(_autovacuum(tmp_path, version))
    keys = {p.key: p for p in advice.proposals}
    av = keys["autovacuum_work_mem"]
    assert av.new == "512MB"  # pgtune: 8GB / 16, for each of the 3 workers
    assert av.old.startswith("-1 (") and "maintenance_work_mem 2GB (k8s/db.yaml:9)" in av.old
    assert av.reason.startswith("3 autovacuum workers x 512MB = 1.5GB (was 6GB")
    assert av.edit is not None and av.edit.insert and av.edit.new == "autovacuum_work_mem = 512MB"
    assert advice.memory_after.endswith(": fits")
    assert "3 (autovacuum_max_workers, k8s/db.yaml:10) x autovacuum_work_mem 512MB" in \
        advice.memory_after
    assert not any("nothing advise changes fits" in n for n in advice.notes)


def test_autovacuum_kept_when_work_mem_is_the_largest_term_and_makes_it_fit(tmp_path: Path):
    """2GB + 3.75GB + 60MB + 3 x 1GB = 8.81GB > 8GB: work_mem (the largest term) makes up
    the difference, (8GB - 5.06GB) / 120 = 25MB; autovacuum's 1GB per worker (above
    8GB / 16) is left alone."""
    (advice,) = _advise(_sorts(tmp_path, "1GB"))
    keys = {p.key: p for p in advice.proposals}
    assert "autovacuum_work_mem" not in keys and keys["work_mem"].new == "25MB"
    assert advice.memory_after.endswith(": fits")


def test_autovacuum_lowered_when_work_mem_alone_cannot_fit(tmp_path: Path):
    """shared_buffers 2GB + autovacuum 3 x 2GB are the 8GB already: no work_mem fits, so
    autovacuum_work_mem 512MB, then work_mem (8GB - 3.56GB) / 120 = 37MB."""
    (advice,) = _advise(_sorts(tmp_path, "2GB"))
    keys = {p.key: p for p in advice.proposals}
    assert keys["autovacuum_work_mem"].new == "512MB" and keys["work_mem"].new == "37MB"
    assert advice.memory_after.endswith(": fits")
    assert not any("nothing advise changes fits" in n for n in advice.notes)


def test_a_note_when_nothing_advise_changes_fits(tmp_path: Path):
    (advice,) = _advise(_crowded(tmp_path))
    assert advice.memory_after.endswith(": over")
    (note,) = [n for n in advice.notes if "nothing advise changes fits" in n]
    assert "below PostgreSQL's minimum of 64kB" in note and "raise the memory limit" in note


def test_pa301_fix_names_autovacuum_work_mem_when_it_is_the_largest_term(tmp_path: Path):
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions

    def fix(root: Path) -> str:
        result = run_check([str(root)], CheckOptions(root=root))
        (found,) = [f for f in result.findings if f.code == "PA301"]
        assert found.fix is not None
        return found.fix.description

    text = fix(_autovacuum(tmp_path / "a"))
    assert text.startswith("set autovacuum_work_mem lower: autovacuum is the largest term, 6GB")
    crowded = fix(_crowded(tmp_path / "b"))
    assert "autovacuum_work_mem" not in crowded
    assert crowded.startswith("lower work_mem or max_connections")


def _variants(tmp_path: Path) -> list[Path]:
    """The fixtures advise is tested on, the changed copies tests/test_advise.py
    advises, and the shapes above."""
    import shutil

    out = [FIXTURES / name for name in sorted(p.name for p in FIXTURES.iterdir()
                                              if p.is_dir())]

    def copy(name: str, edits: list[tuple[str, str, str]]) -> Path:
        target = tmp_path / f"{name}-{len(out)}"
        shutil.copytree(FIXTURES / name, target)
        for rel, old, new in edits:
            replace(target / rel, old, new)
        return target

    conf, ini = "k8s/postgres-config.yaml", "k8s/pgbouncer.yaml"
    out.append(copy("acme-shop-pgbouncer", [
        (conf, "max_connections = 100", "max_connections = 300"),
        (ini, "default_pool_size = 20", "default_pool_size = 150"),
        (ini, "max_db_connections = 40", "max_db_connections = 0")]))
    out.append(copy("acme-shop-pgbouncer", [
        (conf, "max_connections = 100", "max_connections = 400"),
        (conf, "work_mem = 8MB", "work_mem = 64MB")]))
    out.append(copy("acme-shop-pgbouncer", [
        (ini, "default_pool_size = 20", "default_pool_size = 60"),
        (ini, "max_db_connections = 40", "max_db_connections = 50")]))
    out += [_pooled(tmp_path / "pooled"), _autovacuum(tmp_path / "av15"),
            _autovacuum(tmp_path / "av17", "17.2"), _crowded(tmp_path / "crowded"),
            _sorts(tmp_path / "sorts1", "1GB"), _sorts(tmp_path / "sorts2", "2GB")]
    return out


# "4 replicas x 21 = 84 server connections[, 60 of them what its clients can ask for]"
_COUNT = re.compile(r"[\d.]+ replicas x [\d.]+ = (\d+) server connections"
                    r"(?:, (\d+) of them what its clients can ask for)?")


def test_every_proposal_fits_by_the_tools_own_arithmetic_or_says_it_cannot(tmp_path: Path):
    """advise's After is the budget run again on the topology with its proposals applied
    (plan._advise_server): it fits, slots and memory, or a note says why it cannot; a
    PgBouncer proposal's count is the one its After block shows."""
    checked = 0
    for root in _variants(tmp_path):
        loaded = load_with_settings([str(root)], root=root)
        for a in advise(loaded.topology, loaded.budgets, AdviseOptions(memory=loaded.memory)):
            if a.unknown:
                continue  # withheld: nothing proposed
            checked += 1
            said = " ".join(a.notes)
            where = f"{root.name}/{a.server}"
            assert a.fits_after or "cannot make" in said, where
            # a standby's memory is fitted through its primary's settings (one resource)
            assert (not a.memory_after or a.memory_after.endswith(": fits")
                    or "nothing advise changes fits" in said
                    or "memory is fitted through" in said), where
            for p in a.proposals:
                count = _COUNT.match(p.reason) if p.kind == "pooler" else None
                if count is None:
                    continue
                total = count.group(2) or count.group(1)
                name = p.subject.split()[0]
                shown = [line for line in a.after if line.strip().startswith(f"{name}: ")]
                assert shown and shown[0].endswith(f"= {total}"), (where, p.reason, shown)
    assert checked >= 15
