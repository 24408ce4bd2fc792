"""Helm hook Jobs and Pods are budgeted as Helm runs them (audit s22 D6): the hooks of a
release one at a time, pre-upgrade ones before the rollout beside its pods without their
surge, post-upgrade ones during the rollout (helm/helm v4.2.4 pkg/action/hooks.go:73-120,
upgrade.go:456-512, install.go:506-559). The audit's charts, in their shapes: zitadel's
two pre-install,pre-upgrade Jobs (150 counted, 130 at peak), Prefect's post-install,
pre-upgrade migration (1920 counted, 1905), Mastodon's pre-upgrade and post-upgrade
migrations (73 counted, 72). A Job Helm does not run as a hook keeps running beside the
release: it still adds."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.budget.slots import client_contributions
from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.model import Client, HelmHook, Location, Pool, Source, Term
from tests.tree_helpers import POSTGRES_DB, write

pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")

DB = POSTGRES_DB.replace("max_connections=50", "max_connections=5000")
CHART = "apiVersion: v2\nname: app\nversion: 0.1.0\n"
URL = "jdbc:postgresql://db:5432/shop"


def pod_spec(name: str, pool: int, indent: int) -> str:
    """A HikariCP container whose pool is `pool` (SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE)."""
    pad = " " * indent
    return (f"{pad}containers:\n"
            f"{pad}  - name: {name}\n"
            f"{pad}    image: acme/{name}:1\n"
            f"{pad}    env:\n"
            f"{pad}      - {{name: SPRING_DATASOURCE_URL, value: \"{URL}\"}}\n"
            f"{pad}      - {{name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, "
            f"value: \"{pool}\"}}\n")


def deployment(name: str, pool: int, replicas: int, hpa_max: int | None = None) -> str:
    """A Deployment with the default RollingUpdate strategy (maxSurge 25%), and an HPA
    when `hpa_max` is given."""
    out = (f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}}}\nspec:\n"
           f"  replicas: {replicas}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n"
           f"    spec:\n{pod_spec(name, pool, 6)}")
    if hpa_max is not None:
        out += (f"---\napiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\n"
                f"metadata: {{name: {name}}}\nspec:\n  scaleTargetRef: {{apiVersion: apps/v1, "
                f"kind: Deployment, name: {name}}}\n  minReplicas: 1\n"
                f"  maxReplicas: {hpa_max}\n")
    return out


def job(name: str, pool: int, annotations: str = "", kind: str = "Job") -> str:
    """A Job (or a Pod, or a Deployment) whose metadata holds `annotations` as written
    (a template line, such as the values-file toYaml the zitadel chart uses)."""
    meta = f"metadata:\n  name: {name}\n" + (f"  annotations:\n{annotations}" if annotations
                                              else "")
    if kind == "Pod":
        return f"apiVersion: v1\nkind: Pod\n{meta}spec:\n  restartPolicy: Never\n" \
               f"{pod_spec(name, pool, 2)}"
    if kind == "Deployment":
        return (f"apiVersion: apps/v1\nkind: Deployment\n{meta}spec:\n  replicas: 1\n"
                f"  strategy: {{type: Recreate}}\n  template:\n    spec:\n"
                f"{pod_spec(name, pool, 6)}")
    return (f"apiVersion: batch/v1\nkind: Job\n{meta}spec:\n  template:\n    spec:\n"
            f"      restartPolicy: Never\n{pod_spec(name, pool, 6)}")


def hook(events: str, weight: int | None = None) -> str:
    out = f"    helm.sh/hook: {events}\n"
    return out + (f"    helm.sh/hook-weight: \"{weight}\"\n" if weight is not None else "")


def chart(root: Path, templates: dict[str, str], values: str = "") -> Path:
    """The chart app/ with `templates`, beside the server db/db.yaml (5000
    max_connections)."""
    files = {"db/db.yaml": DB, "app/Chart.yaml": CHART, "app/values.yaml": values}
    files.update({f"app/templates/{name}": text for name, text in templates.items()})
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def budget_of(root: Path):
    result = run_check([str(root)], CheckOptions())
    (budget,) = result.budgets
    return result, budget


def hooks_of(budget):
    (group,) = [c for c in budget.contributions if c.kind == "hooks"]
    return group


ZITADEL_VALUES = """\
initJob:
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-delete-policy: before-hook-creation
    helm.sh/hook-weight: "1"
setupJob:
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
    helm.sh/hook-delete-policy: before-hook-creation
    helm.sh/hook-weight: "2"
"""


def zitadel_job(name: str, key: str) -> str:
    """zitadel-charts' job_init.yaml shape: the hook annotations from values.yaml."""
    return job(name, 10, f"    {{{{- toYaml .Values.{key}.annotations | nindent 4 }}}}\n")


def test_zitadel_shape_two_pre_upgrade_jobs_run_before_the_rollout(tmp_path):
    """HPA 10 x 10 + 25% surge (3 pods) = 130; the two pre-install,pre-upgrade Jobs of 10
    run one at a time beside the 10 old pods: 100 + 10 = 110 < 130. It was 150."""
    chart(tmp_path, {"deployment.yaml": deployment("idp", 10, 1, hpa_max=10),
                     "job_init.yaml": zitadel_job("idp-init", "initJob"),
                     "job_setup.yaml": zitadel_job("idp-setup", "setupJob")},
          ZITADEL_VALUES)
    result, budget = budget_of(tmp_path)
    assert budget.peak == 130, [c.who for c in budget.contributions]
    group = hooks_of(budget)
    assert group.total == 0 and group.op == "max"
    assert group.factors[0].value == 130  # the release's pods with their surge
    during, before = group.parts
    assert (during.total, before.total) == (130, 110)
    assert [t.value for t in before.factors] == [100, 10]
    # the largest hook's term is cited where its helm.sh/hook annotation is written
    largest = before.factors[1]
    assert (largest.source.path, largest.source.line) == ("app/values.yaml", 3)
    assert "run one at a time" in largest.label and "idp-init" in largest.label
    # each hook with its events, weight and annotation line
    assert [p.who for p in before.parts] == [
        "idp-init (helm.sh/hook pre-install,pre-upgrade, weight 1, app/values.yaml:3)",
        "idp-setup (helm.sh/hook pre-install,pre-upgrade, weight 2, app/values.yaml:8)"]
    (pa101,) = [f for f in result.findings if f.code == "PA101"] or [None]
    assert pa101 is None  # 130 fits in 4997
    from advisor.budget.arith import derivation

    text = "\n".join(derivation(budget))
    assert ("Helm hooks [app]: max(130 (during a rollout, no post-upgrade or post-rollback "
            "hook), 110 (before a rollout)) - 130 (its pods with their surge") in text
    assert "one at a time" in text and "hooks.go:73-120" in text
    assert "peak: 130 (idp) + 0 (Helm hooks [app]) = 130" in text


def test_a_pre_upgrade_hook_larger_than_the_surge_adds_the_difference(tmp_path):
    """100 steady + 3 x 10 surge; a pre-upgrade Job of 50: 100 + 50 = 150 > 130."""
    chart(tmp_path, {"deployment.yaml": deployment("web", 10, 1, hpa_max=10),
                     "migrate.yaml": job("migrate", 50, hook("pre-upgrade")),
                     "seed.yaml": job("seed", 40, hook("pre-install,pre-upgrade", 5))})
    _, budget = budget_of(tmp_path)
    assert budget.peak == 150
    assert hooks_of(budget).total == 20


def test_prefect_shape_post_install_pre_upgrade_migration(tmp_path):
    """prefect-helm's pre-upgrade-hook.yaml: `post-install,pre-upgrade`, weight -5. Server
    (100 + 25) x 15 = 1875, background services (1 + 1) x 15 = 30; the migration's 15
    runs before the rollout (1515 + 15) or after the first install: 1905, not 1920."""
    chart(tmp_path, {"deployment.yaml": deployment("api", 15, 1, hpa_max=100),
                     "background.yaml": deployment("services", 15, 1),
                     "pre-upgrade-hook.yaml": job("db-migrations", 15,
                                                  hook("post-install,pre-upgrade", -5))})
    _, budget = budget_of(tmp_path)
    assert budget.peak == 1905
    group = hooks_of(budget)
    assert group.total == 0
    assert [p.total for p in group.parts] == [1905, 1515 + 15]
    (migration,) = group.parts[1].parts
    assert "post-install,pre-upgrade, weight -5, app/templates/pre-upgrade-hook.yaml:6" \
        in migration.who


def test_mastodon_shape_pre_and_post_upgrade_migrations(tmp_path):
    """mastodon/chart's _db-migrate.tpl: db-pre-migrate (pre-upgrade) and db-post-migrate
    (post-install,post-upgrade), one connection each. The post-upgrade one runs during
    the rollout (without --wait), so it adds its 1; the pre-upgrade one is within the
    surge: 20 + 20 + 1 = 41 (it was 42)."""
    chart(tmp_path, {"web.yaml": deployment("web", 10, 1),
                     "streaming.yaml": deployment("streaming", 10, 1),
                     "pre.yaml": job("db-pre-migrate", 1, hook("pre-upgrade", -2)),
                     "post.yaml": job("db-post-migrate", 1,
                                      hook("post-install,post-upgrade", -2))})
    _, budget = budget_of(tmp_path)
    assert budget.peak == 2 * 10 + 2 * 10 + 1
    group = hooks_of(budget)
    assert group.total == 1
    during, before = group.parts
    assert (during.total, before.total) == (41, 21)
    assert during.factors[1].label == "hook db-post-migrate"
    assert (during.factors[1].source.path, during.factors[1].source.line) == (
        "app/templates/post.yaml", 6)


def test_a_hook_of_test_and_an_install_event_runs_at_install(tmp_path):
    """`pre-install,test`: Helm runs it at pre-install too (manifest_sorter.go:188-196
    appends every event); it was dropped as a test hook."""
    chart(tmp_path, {"deployment.yaml": deployment("web", 10, 1, hpa_max=10),
                     "seed.yaml": job("seed", 150, hook("pre-install,test"))})
    _, budget = budget_of(tmp_path)
    assert budget.peak == 150  # alone, before the first install: more than 130
    (seed,) = hooks_of(budget).parts[1].parts
    assert seed.who.startswith("seed (helm.sh/hook pre-install, weight 0, ")


def test_a_plain_migration_job_still_adds(tmp_path):
    """A Job without helm.sh/hook is applied with the release and runs beside its pods
    (and during a rollout): added, as before."""
    chart(tmp_path, {"deployment.yaml": deployment("web", 10, 1, hpa_max=10),
                     "migrate.yaml": job("migrate", 10)})
    _, budget = budget_of(tmp_path)
    assert budget.peak == 130 + 10
    assert not [c for c in budget.contributions if c.kind == "hooks"]


def test_a_hook_job_in_a_plain_manifest_still_adds(tmp_path):
    """kubectl apply ignores helm.sh/hook: only a chart Helm installs runs hooks."""
    write(tmp_path, {"db/db.yaml": DB, "k8s/web.yaml": deployment("web", 10, 1, hpa_max=10),
                     "k8s/migrate.yaml": job("migrate", 10, hook("pre-upgrade"))})
    _, budget = budget_of(tmp_path)
    assert budget.peak == 140


def test_a_hook_deployment_is_not_waited_for_and_adds(tmp_path):
    """Helm waits for hook Jobs and Pods only (pkg/kube/wait.go:237-243): a hook
    Deployment is created and keeps running beside the hooks after it. A hook Pod is
    waited for as a Job is."""
    chart(tmp_path, {"deployment.yaml": deployment("web", 10, 1, hpa_max=10),
                     "side.yaml": job("side", 7, hook("pre-upgrade"), kind="Deployment"),
                     "check.yaml": job("check", 20, hook("pre-upgrade", 1), kind="Pod"),
                     "migrate.yaml": job("migrate", 35, hook("pre-upgrade", 2))})
    _, budget = budget_of(tmp_path)
    # 130 + 7 (the Deployment) + max(0, 35 - 30) (the largest of the Pod and the Job)
    assert budget.peak == 130 + 7 + 5
    group = hooks_of(budget)
    assert [p.who.split(" (")[0] for p in group.parts[1].parts] == ["check", "migrate"]


def test_a_hook_of_unknown_connections_is_a_floor(tmp_path):
    """A hook Job whose pool is unknown counts as 1 per pod and leaves the peak a floor."""
    unknown = job("migrate", 1, hook("post-upgrade")).replace(
        "      - {name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: \"1\"}\n", "").replace(
        "acme/migrate:1", "busybox:1").replace("SPRING_DATASOURCE_URL", "DATABASE_URL").replace(
        URL, "postgresql://db:5432/shop")
    chart(tmp_path, {"deployment.yaml": deployment("web", 10, 1, hpa_max=10),
                     "migrate.yaml": unknown})
    _, budget = budget_of(tmp_path)
    assert budget.peak_is_floor and "migrate" in budget.unknown_clients
    assert budget.peak == 131


def test_advise_keeps_room_for_the_largest_hook(tmp_path):
    """advise shrinks the release's pools and keeps the hooks whole: what they add grows
    as the surge shrinks (a pre-upgrade Job of 20 beside 6 x 10 pods adds 0 while the
    surge is 2 x 10, and 14 once the pool is 3), so the largest hook's 20 is kept for
    them, and the advised sizes fit (keeping 0 gave pool 5: 30 + 20 = 50 > 47). Smaller
    pools, not a PgBouncer (--no-new-pooler): with the hook's 20 kept on the server, 80
    asked is past twice the 22 left for one (floor(90% of 47 - 20)), which proposes it."""
    from advisor.advise.plan import advise
    from advisor.advise.records import AdviseOptions
    from advisor.scan import load_with_settings

    chart(tmp_path, {"deployment.yaml": deployment("web", 10, 1, hpa_max=6),
                     "migrate.yaml": job("migrate", 20, hook("pre-upgrade"))})
    (tmp_path / "db/db.yaml").write_text(POSTGRES_DB)  # 50 max_connections: 47 usable
    topo, budgets, *_ = load_with_settings([str(tmp_path)])
    assert budgets[0].peak == 80
    (advice,) = advise(topo, budgets, AdviseOptions(new_pooler=False))
    (proposal,) = [p for p in advice.proposals if p.kind == "client-pool"]
    assert (proposal.subject, proposal.new) == ("web HikariCP maximumPoolSize", "3")
    assert advice.fits_after and advice.peak_after == 24 + 14
    assert any("20 connections kept for its largest hook" in n for n in advice.notes)


# --- the arithmetic on its own: every phase ---------------------------------------------


def _client(name: str, pods: int, size: int, surge: int = 0, events: str = "",
            release: str = "helm:app") -> Client:
    src = Source(path="app/values.yaml", line=1)
    return Client(
        id=name, name=name, replicas=Term(label="replicas", value=pods, source=src),
        surge=Term(label="rolling-update surge", value=surge, source=src) if surge else None,
        pools=[Pool(label="HikariCP", size=Term(label="maximumPoolSize", value=size,
                                                source=src))],
        location=Location(path="app/templates/x.yaml", line=1), release=release,
        hook=HelmHook(events=tuple(events.split(",")), source=src) if events else None)


def _total(clients: list[Client]) -> float:
    return sum(c.total for c in client_contributions(clients))


@pytest.mark.parametrize(("events", "size", "peak"), [
    ("post-upgrade", 5, 130 + 5),  # during the rollout
    ("post-rollback", 5, 130 + 5),
    ("pre-upgrade", 25, 130),  # 100 + 25 < 130
    ("pre-rollback", 45, 145),  # 100 + 45
    ("post-install", 45, 145),  # beside the pods, no surge at a first install
    ("pre-delete", 45, 145),
    ("post-delete", 45, 145),
    ("pre-install", 120, 130),  # alone: no pod of the release yet
    ("pre-install", 150, 150),
    ("pre-install,post-upgrade", 5, 135),  # the worst of its events
])
def test_each_event_counts_in_its_phase(events, size, peak):
    web = _client("web", 10, 10, surge=3)
    assert _total([web, _client("hook", 1, size, events=events)]) == peak


def test_hooks_of_other_releases_are_each_their_own():
    a, b = _client("a", 10, 10, surge=3), _client("b", 2, 10, release="helm:other")
    hooks = [_client("ha", 1, 50, events="pre-upgrade"),
             _client("hb", 1, 4, events="post-upgrade", release="helm:other")]
    # a: max(130, 100 + 50) = 150; b: 20 + 4
    assert _total([a, b, *hooks]) == 150 + 24
    # a hook with no release (a manifest) is any client's
    assert _total([a, _client("m", 1, 50, events="pre-upgrade", release="")]) == 180
