"""Helm hook annotations as Helm reads them (helm/helm v4.2.4, commit e9b85e4d;
the same code in v3.21.4): which objects it installs as hooks of which events, and in
what order it runs them. Light: linking imports it for every workload of a chart.

- pkg/release/v1/util/manifest_sorter.go:54-66 `events`: the hook events; `test-success`
  is Helm 2's spelling of `test`. :187-201: each comma-separated value is trimmed and
  lowercased; an object naming any other value is skipped ("skipping unknown hooks"),
  neither installed nor run (Helm 2's `test-failure`, `crd-install`).
- manifest_sorter.go:227-234 calculateHookWeight: `helm.sh/hook-weight` through
  strconv.Atoi, 0 when absent or not an integer.
- pkg/action/hooks.go:73-77 and :168-177: the hooks of one event are sorted by weight,
  then by name, and run one after the other: each is created (:102) and, for a Job or a
  Pod, watched until it completes (:119-120, pkg/kube/wait.go:237-243 and :299-343; the
  Helm 4 default waiter, statuswait.go:78-99, reads Jobs and Pods the same way and takes
  any other kind as ready at once) before the next starts.
"""

from __future__ import annotations

from advisor.model import HelmHook
from advisor.read.sources.k8s import K8sObject

HOOK_ANNOTATION = "helm.sh/hook"
WEIGHT_ANNOTATION = "helm.sh/hook-weight"
HOOK_EVENTS = frozenset({"pre-install", "post-install", "pre-delete", "post-delete",
                         "pre-upgrade", "post-upgrade", "pre-rollback", "post-rollback"})
TEST_EVENTS = frozenset({"test", "test-success"})
# the kinds Helm waits for until they complete (hooks.go:119-120 WatchUntilReady):
# any other hook kind (a Deployment) is created and left running
WAITED_KINDS = ("Job", "Pod")


def hook_events(hook: str) -> list[str]:
    """The events of a helm.sh/hook value, as Helm reads them."""
    return [h.strip().lower() for h in hook.split(",")]


def hook_weight(text: str | None) -> int:
    """helm.sh/hook-weight as calculateHookWeight reads it: what Go's strconv.Atoi takes
    (an optional sign, then ASCII digits only), else 0."""
    text = text or ""
    digits = text[1:] if text[:1] in ("+", "-") else text
    return int(text) if digits.isascii() and digits.isdigit() else 0


def helm_hook(obj: K8sObject) -> HelmHook | None:
    """The hook Helm runs `obj` as, for a Job or Pod of a chart render whose
    helm.sh/hook names install, upgrade, rollback or delete events; None for anything
    else (test hooks and unknown events are not rendered into the deployment:
    advisor.read.render.helm)."""
    if obj.kind not in WAITED_KINDS or not obj.origin.startswith("helm:"):
        return None
    annotations = obj.annotations
    written = annotations.get(HOOK_ANNOTATION)
    if written is None:
        return None
    events = hook_events(written)
    if any(e not in HOOK_EVENTS | TEST_EVENTS for e in events):
        return None  # Helm skips it (not rendered into the deployment)
    # `helm test` runs its test events apart: the others are the release's
    events = [e for e in events if e in HOOK_EVENTS]
    if not events:
        return None
    return HelmHook(events=tuple(dict.fromkeys(events)),
                    weight=hook_weight(annotations.get(WEIGHT_ANNOTATION)),
                    source=obj.source("metadata", "annotations", HOOK_ANNOTATION,
                                      key=HOOK_ANNOTATION))
