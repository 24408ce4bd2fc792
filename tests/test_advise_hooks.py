"""advise and PA101 on a Helm release with hook Jobs: every number they print is the
budget's (advisor.budget.hooks: Helm runs a release's hooks one at a time, pre-upgrade
and post-install ones beside its pods without the surge, post-upgrade ones during the
rollout), and the sizes they suggest keep room for the largest hook."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.advise.plan import advise
from advisor.advise.records import AdviseOptions
from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.scan import load_with_settings
from tests.test_helm_hooks import CHART, deployment, hook, job, pod_spec
from tests.tree_helpers import POSTGRES_DB

pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")


def surging(name: str, pool: int, replicas: int) -> str:
    """A Deployment of `replicas` pods whose rolling update adds one pod (maxSurge 1)."""
    return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}}}\nspec:\n"
            f"  replicas: {replicas}\n  strategy:\n"
            "    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}\n"
            f"  template:\n    metadata: {{labels: {{app: {name}}}}}\n"
            f"    spec:\n{pod_spec(name, pool, 6)}")


def release(root: Path, max_connections: int, *, cpu: str = "",
            hooks: dict[str, str] | None = None) -> Path:
    """The chart app/ (web and worker: 3 replicas, maxSurge 1, HikariCP pool 10) with
    `hooks` (file -> Job), beside the server db/db.yaml."""
    db = POSTGRES_DB.replace("max_connections=50", f"max_connections={max_connections}")
    if cpu:
        db += f"          resources: {{limits: {{cpu: \"{cpu}\"}}}}\n"
    hooks = {"migrate.yaml": job("migrate", 5, hook("pre-upgrade")),
             "seed.yaml": job("seed", 2, hook("post-install"))} if hooks is None else hooks
    files = {"db/db.yaml": db, "app/Chart.yaml": CHART, "app/values.yaml": "",
             "app/templates/web.yaml": surging("web", 10, 3),
             "app/templates/worker.yaml": surging("worker", 10, 3)}
    files.update({f"app/templates/{name}": text for name, text in hooks.items()})
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _advise(root: Path, options: AdviseOptions | None = None):
    topo, budgets, *_ = load_with_settings([str(root)])
    (budget,) = budgets
    (advice,) = advise(topo, budgets, options)
    return budget, advice


def _pa101_lines(root: Path) -> list[str]:
    result = run_check([str(root)], CheckOptions())
    (pa101,) = [f for f in result.findings if f.code == "PA101"]
    return [line for line in pa101.detail.splitlines() if "exceeds its share" in line]


def test_advise_and_pa101_on_a_release_with_hooks(tmp_path):
    """By hand:
    usable = 60 max_connections - 3 superuser_reserved_connections (PostgreSQL 16
    default; reserved_connections 0) = 57.
    web, worker: (3 replicas + 1 surge) x 10 = 40 each; S = 2 x 3 x 10 = 60 without the
    surge, U = 2 x 1 x 10 = 20.
    Hooks, one at a time: migrate (pre-upgrade, 5) and seed (post-install, 2) both run
    beside the pods without the surge: S + max(5, 2) = 65; no post-upgrade hook, so
    during a rollout S + U = 80. peak = max(80, 65) = 80 (the hooks add 0), not
    80 + 5 + 2 = 87. PA101: 80 > 57, over by 23.
    Sizes: the largest hook's 5 is kept (it adds more as the surge shrinks); the other
    52 are shared by what each asks: 52 x 40 / 80 = 26 each, over 4 pods = 6.5 -> 6
    per pod. advise: water-filling 57 over 40, 40 and the hooks' 5 (their minimum) ->
    5 fixed, 26 each, pool 6: 4 x 6 = 24 each. After: during a rollout 48, before a
    rollout 2 x 3 x 6 + 5 = 41; peak 48 <= 57: fits. PA101 says the same 6 (it said
    7, from 57 x 40 / 80 = 28.5: the hook's room not kept, unlike advise)."""
    release(tmp_path, 60)
    budget, advice = _advise(tmp_path)
    assert (budget.usable, budget.peak) == (57, 80)
    (hooks,) = [c for c in budget.contributions if c.kind == "hooks"]
    assert hooks.total == 0 and [p.total for p in hooks.parts] == [80, 65]
    assert (advice.usable_before, advice.peak_before) == (57, 80)
    sizes = {(p.subject, p.new) for p in advice.proposals}
    assert sizes == {("web HikariCP maximumPoolSize", "6"),
                     ("worker HikariCP maximumPoolSize", "6")}
    assert all(p.reason == "4 pods x 6 = 24 connections (was 40), within its share of 26"
               for p in advice.proposals)
    assert advice.fits_after and advice.peak_after == 48
    assert ("Helm hooks [app]: max(48 (during a rollout, no post-upgrade or post-rollback "
            "hook), 41 (before a rollout)) - 48 (its pods with their surge") in "\n".join(
                advice.after)
    assert advice.notes == [
        "Helm hooks [app]: 5 connections kept for its largest hook, which runs beside the "
        "release's pods whatever their pools (it adds 0 to them now)"]
    assert _pa101_lines(tmp_path) == [
        f"{name}'s HikariCP maximumPoolSize of 10 (app/templates/{name}.yaml:16) exceeds "
        "its share: 26 of 57 usable (5 kept for the largest hook of Helm hooks [app]) over "
        "4 pods allows 6 per process" for name in ("web", "worker")]


def test_pa101_keeps_room_for_a_pre_upgrade_hook_within_the_surge(tmp_path):
    """HPA 6 x 10 + 25% surge (2 pods) = 80 in 47 usable; a pre-upgrade Job of 20 adds
    0 today (60 + 20 = 80). PA101 allowed 47 x 80 / 80 / 8 pods = 5 per process, which
    fits only without the Job: 6 x 5 + 20 = 50 > 47. With its 20 kept: 27 / 8 = 3:
    8 x 3 = 24 during a rollout, 6 x 3 + 20 = 38 before it: fits, as advise's 3."""
    files = {"db/db.yaml": POSTGRES_DB, "app/Chart.yaml": CHART, "app/values.yaml": "",
             "app/templates/deployment.yaml": deployment("web", 10, 1, hpa_max=6),
             "app/templates/migrate.yaml": job("migrate", 20, hook("pre-upgrade"))}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (line,) = _pa101_lines(tmp_path)
    assert line.endswith("exceeds its share: 27 of 47 usable (20 kept for the largest hook "
                         "of Helm hooks [app]) over 8 pods allows 3 per process"), line


def test_the_proposed_pgbouncer_holds_the_budgets_peak_of_clients(tmp_path):
    """The same release on a 2-core server. By hand: the hooks (migrate, pre-upgrade, 5;
    seed, post-install, 2) keep connecting to the server: a migration's session advisory
    lock and DDL break in a transaction-mode pool; they stay in its budget, one at a
    time: 5 at peak. CPU knee 2 x 12 = 24 < floor(90% of 57 - 5) = 46, so the server
    should run 24 at once; web and worker open 80 at the budget's peak (40 + 40 with the
    surge) > 2 x 24, so a PgBouncer is proposed. Its own rollout (maxSurge 1,
    maxUnavailable 0) runs 3 PgBouncer processes: default_pool_size 24 / 3 = 8, 16 server
    connections, 24 during its rollout. max_client_conn ceil(80 / (2 - 1) x 1.2) = 96 per
    replica: the clients of a replica that stops reconnect to the other. After: 24 + 5 =
    29 <= 57. It was pool 12 (a surge pod's third pool, 36, not counted), max_client_conn
    48 (the survivor of a rollout with maxUnavailable 1 refused 32 of 80), and the hooks'
    hosts pointed at the transaction-mode PgBouncer."""
    release(tmp_path, 60, cpu="2")
    budget, advice = _advise(tmp_path)
    assert budget.peak == 80
    new = next(p for p in advice.proposals if p.key == "PgBouncer (new)")
    assert new.new_file is not None
    assert "default_pool_size = 8\n" in new.new_file.text
    assert "max_client_conn = 96\n" in new.new_file.text
    assert "maxSurge: 1\n      maxUnavailable: 0\n" in new.new_file.text
    assert new.reason.startswith("2 client(s) ask for 80 connections at peak (the budget's")
    assert ("2 replicas x 1 pool(s) x default_pool_size 8 = 16 server connections, 24 "
            "during its own rollout (maxSurge 1, maxUnavailable 0") in new.reason
    assert "max_client_conn 96 per replica (80 clients / (2 replicas - 1), +20%)" in new.reason
    assert "no more connections allowed (max_client_conn)" in new.reason
    assert ("left connecting to the server itself: migrate (Helm hook pre-upgrade, "
            "app/templates/migrate.yaml:6), seed (Helm hook post-install, "
            "app/templates/seed.yaml:6): migrations") in new.reason
    assert "(5 at peak, hooks one at a time)" in new.reason
    moved = {p.subject for p in advice.proposals if p.key == "database host"}
    assert moved == {"web", "worker"}
    assert "migrate, seed keep connecting to db itself" in advice.notes[0]
    assert advice.fits_after and advice.peak_after == 29
    pooler = next(line for line in advice.after if line.startswith("  pgbouncer-db:"))
    assert pooler.startswith("  pgbouncer-db: (2 (PgBouncer replicas (proposed), "
                             "db/pgbouncer-db.yaml) + 1 (rolling-update surge (maxSurge 1, "
                             "proposed), db/pgbouncer-db.yaml)) x 8")


def test_the_pooler_alternative_keeps_hooks_on_the_server(tmp_path):
    """40 max_connections: 37 usable. A post-upgrade Job of 5 runs during the rollout:
    peak 40 + 40 + 5 = 85 > 2 x 37, so the alternative is noted. The hook stays on the
    server (a migration breaks in a transaction-mode pool): the PgBouncer's clients are
    web and worker, 80, and each replica must hold them all (the other's clients
    reconnect to it): max_client_conn >= 80 on each (it said >= 85 over all replicas)."""
    release(tmp_path, 40, hooks={"after.yaml": job("after", 5, hook("post-upgrade"))})
    budget, advice = _advise(tmp_path, AdviseOptions(new_pooler=False))
    assert budget.peak == 85
    (alternative,) = [n for n in advice.notes if n.startswith("alternative:")]
    assert "web, worker ask for 80 connections" in alternative
    assert "max_client_conn >= 80 on each PgBouncer replica" in alternative
    assert "after keep connecting to db itself" in alternative
