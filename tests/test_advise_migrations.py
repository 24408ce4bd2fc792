"""advise's proposed transaction-mode PgBouncer leaves schema migrations on the server:
a migration takes a session advisory lock and runs DDL in a session (Flyway, Rails'
migrator, golang-migrate...), which transaction pooling breaks; Mastodon's chart asks
for a "direct" host for them (values.yaml postgresql.direct). Before, advise pointed
every direct client's host at the PgBouncer, the migration Job's too."""

from __future__ import annotations

from pathlib import Path

from advisor.advise.plan import advise
from advisor.scan import load_with_settings
from tests.tree_helpers import POSTGRES_DB, write

ENV = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: app-env}
data:
  SPRING_DATASOURCE_URL: jdbc:postgresql://db:5432/shop
  SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE: "30"
"""
WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 4
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: web
          image: acme/web:1
          envFrom: [{configMapRef: {name: app-env}}]
"""
MIGRATE = """\
apiVersion: batch/v1
kind: Job
metadata: {name: migrate}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: acme/web:1
          command: [flyway, migrate]
"""


def _advise(root: Path, migrate_env: str):
    write(root, {"k8s/db.yaml": POSTGRES_DB, "k8s/env.yaml": ENV, "k8s/web.yaml": WEB,
                 "k8s/migrate.yaml": MIGRATE + migrate_env})
    topo, budgets, *_ = load_with_settings([str(root)])
    (advice,) = advise(topo, budgets, None)
    new = next(p for p in advice.proposals if p.key == "PgBouncer (new)")
    return advice, new


def test_a_migration_job_keeps_its_direct_host(tmp_path):
    """By hand: 47 usable; web 4 x 30 = 120 > 2 x 41, so a PgBouncer is proposed for web.
    The Flyway Job (1 connection) stays on db: 90% of 47 less its 1 = 41 for the pool,
    41 / 3 processes (2 replicas + the surge pod of its rollout) = 13."""
    advice, new = _advise(tmp_path, "          env: [{name: SPRING_DATASOURCE_URL, "
                                    "value: \"jdbc:postgresql://db:5432/shop\"}]\n")
    assert {p.subject for p in advice.proposals if p.key == "database host"} == {"web"}
    assert ("left connecting to the server itself: migrate (schema migration: migration "
            "(flyway migrate))") in new.reason
    assert "(90% of its 47 usable slots less 1 kept for the clients left on it)" in new.reason
    assert "default_pool_size 13 = 26 server connections, 39 during its own rollout" in \
        new.reason
    assert "migrate keep connecting to db itself" in advice.notes[0]
    assert advice.fits_after and advice.peak_after == 40


def test_a_migration_whose_host_is_written_with_the_apps_is_said(tmp_path):
    """Both read the ConfigMap's SPRING_DATASOURCE_URL: the one edit there would move the
    migration too, so the proposal says it needs a host of its own first."""
    _advice, new = _advise(tmp_path, "          envFrom: [{configMapRef: {name: app-env}}]\n")
    assert new.reason.endswith(
        "migrate's host is written at k8s/env.yaml:5 with web's: that edit moves it to the "
        "PgBouncer too; give it its own host for the server (a \"direct\" host setting) "
        "first")
