"""What a Helm release's hook Jobs and Pods add to its pods at peak.

How Helm runs hooks (helm/helm v4.2.4, commit e9b85e4d; v3.21.4 the same, without the
wait strategies):
- The hooks of one event run one at a time: sorted by weight, then name
  (pkg/action/hooks.go:73-77, :168-177), each Job or Pod created (:102) and watched
  until it completes (:119-120; Jobs until their Complete condition, Pods until
  Succeeded: pkg/kube/wait.go:237-343, internal/statusreaders) before the next starts.
  Any other kind is not waited for (statuswait.go:89-92 takes it as ready): a hook
  Deployment keeps running, and is counted as any workload is.
- Upgrade (upgrade.go:456-512): pre-upgrade hooks (:460) run before the release's objects
  are applied (:469), beside the pods of the release being replaced, so without the
  rolling-update surge; then the objects are applied, and post-upgrade hooks (:508)
  start once Helm's wait returns, at once without --wait (the default `hookOnly`
  strategy waits for hooks only: pkg/kube/statuswait.go:289-291, pkg/cmd/flags.go:59-66),
  so during the rollout. Rollback is the same shape (pre-rollback, post-rollback).
- Install (install.go:506-559): pre-install hooks run before any object of the release
  exists; post-install hooks after the objects are created, beside its pods (a first
  rollout has no old pods, so no surge). Uninstall: pre-delete hooks beside the pods,
  post-delete hooks after they are deleted (counted as beside them: pods terminate for
  their grace period).

So, with S the release's pods at steady peak (without the surge) and U the surge,
both of the clients counted on the same server or pooler:
    peak = max(S + U + largest post-upgrade/post-rollback hook,
               S + largest pre-upgrade/pre-rollback/post-install/pre-delete/post-delete hook,
               largest pre-install hook)
and a hook counts in the worst phase of its events. The budget already counts S + U
for the release's clients; the release's hooks add peak - (S + U), never less than 0.

Not modelled: Argo CD renders charts and maps these hooks onto its own phases, where
hooks of one sync wave (helm.sh/hook-weight) are applied together and PostSync waits
for the resources to be healthy; a hook Job still running past Helm's --timeout (Helm
gives up on it, the Job goes on).
"""

from __future__ import annotations

from msgspec.structs import replace

from advisor.model import Client, Contribution, Location, Source, Term

# A hook's phase is the worst of its events: during a rollout (with the surge), beside
# the release's pods (without it), or before any pod of the release exists.
_DURING_ROLLOUT = frozenset({"post-upgrade", "post-rollback"})
_BESIDE_PODS = frozenset({"pre-upgrade", "pre-rollback", "post-install", "pre-delete",
                          "post-delete"})

HOOKS_NOTE = (
    "Helm runs a release's hooks one at a time, in weight then name order, each Job or Pod "
    "until it completes (helm v4.2.4 pkg/action/hooks.go:73-120): the largest counts, not "
    "their sum. pre-upgrade and pre-rollback hooks run before the release's objects are "
    "applied (upgrade.go:457-469), beside its pods without the surge, as post-install and "
    "delete hooks do; post-upgrade and post-rollback hooks start right after the objects "
    "are applied (upgrade.go:506-512), during the rollout unless --wait")


def _phase(hook_events: tuple[str, ...]) -> int:
    """0 during a rollout, 1 beside the release's pods, 2 before any pod exists."""
    if any(e in _DURING_ROLLOUT for e in hook_events):
        return 0
    if any(e in _BESIDE_PODS for e in hook_events):
        return 1
    return 2


def _surge_part(client: Client, c: Contribution) -> float:
    """The part of a client's contribution its rolling-update surge brings."""
    if client.surge is None or not client.surge.value or client.replicas_unknown:
        return 0.0
    pods = client.replicas.value + client.surge.value
    return c.total * client.surge.value / pods if pods > 0 else 0.0


def with_release_hooks(clients: list[Client], contributions: list[Contribution]
                       ) -> list[Contribution]:
    """`contributions` (one per client, in order) with the hook Jobs and Pods of each
    Helm release replaced by one contribution (kind "hooks", at the place of its first
    hook): what they add to the release's clients among `clients` at peak."""
    hooks: dict[str, list[int]] = {}
    for i, client in enumerate(clients):
        if client.hook is not None and client.release:
            hooks.setdefault(client.release, []).append(i)
    if not hooks:
        return contributions
    out: list[Contribution] = []
    for i, (client, c) in enumerate(zip(clients, contributions, strict=True)):
        if client.hook is None or not client.release:
            out.append(c)
        elif hooks[client.release][0] == i:
            members = [(m, mc) for m, mc in zip(clients, contributions, strict=True)
                       if m.release == client.release and m.hook is None]
            out.append(release_hooks(client.release, members,
                                     [(clients[j], contributions[j])
                                      for j in hooks[client.release]]))
    return out


def release_hooks(release: str, members: list[tuple[Client, Contribution]],
                  hooks: list[tuple[Client, Contribution]]) -> Contribution:
    """The "hooks" contribution of one release: max over its phases, less the pods
    already counted (S + U)."""
    chart = release.removeprefix("helm:")
    surge = sum(_surge_part(m, mc) for m, mc in members)
    counted = sum(mc.total for _m, mc in members)
    steady = counted - surge
    by_phase: dict[int, list[tuple[Client, Contribution]]] = {}
    for h, hc in hooks:
        assert h.hook is not None
        by_phase.setdefault(_phase(h.hook.events), []).append((h, hc))
    where = hooks[0][0].location
    from_members = Source.default_of("the sum of the release's clients above")
    with_surge = Term(label="its pods with their surge", value=counted, source=from_members)
    phases = [_phase_contribution(
        "during a rollout", [with_surge], by_phase.get(0, []),
        "no post-upgrade or post-rollback hook", where)]
    if 1 in by_phase:
        phases.append(_phase_contribution(
            "before a rollout",
            [Term(label="its pods without their surge", value=steady,
                  source=from_members)], by_phase[1], "", where))
    if 2 in by_phase:
        phases.append(_phase_contribution(
            "before its first install, no pod of it yet", [], by_phase[2], "", where))
    peak = max(p.total for p in phases)
    return Contribution(
        who=f"Helm hooks [{chart}]", kind="hooks", op="max", factors=[with_surge],
        parts=phases, total=max(peak - counted, 0.0), location=where, note=HOOKS_NOTE,
        # a hook of unknown connections is counted at its floor: so is what they add
        unknown=any(p.unknown for p in phases))


def _phase_contribution(who: str, pods: list[Term], hooks: list[tuple[Client, Contribution]],
                        none: str, location: Location) -> Contribution:
    """One phase: the release's pods then (`pods`), plus its largest hook, whose own
    arithmetic is listed below it."""
    factors = list(pods)
    if hooks:
        largest, lc = max(hooks, key=lambda x: x[1].total)
        assert largest.hook is not None
        n = len(hooks)
        many = f"the largest of {n} hooks, run one at a time: " if n > 1 else "hook "
        factors.append(Term(label=f"{many}{largest.name}", value=lc.total,
                            source=largest.hook.source))
    elif none:
        who = f"{who}, {none}"
    total = sum(t.value for t in factors)
    return Contribution(who=who, kind="hooks", op="+", factors=factors,
                        parts=[_cited(h, hc) for h, hc in hooks], total=total,
                        location=hooks[0][0].location if hooks else location,
                        unknown=any(hc.unknown for _h, hc in hooks))


def hook_room(c: Contribution) -> float:
    """The connections to keep for a release's "hooks" contribution when its pools are
    to shrink: its largest hook Job or Pod (a phase's parts), or what the hooks add today
    if more. What they add grows as the pools shrink (a pre-upgrade hook within today's
    surge adds more beside a smaller one), up to the largest hook: keeping that much
    fits every phase whatever the new pool sizes."""
    return max([c.total, *(h.total for phase in c.parts for h in phase.parts)])


def _cited(hook: Client, c: Contribution) -> Contribution:
    """A hook's own contribution, named with its events, weight and where its
    helm.sh/hook annotation is written."""
    assert hook.hook is not None
    h = hook.hook
    return replace(c, who=f"{c.who} (helm.sh/hook {','.join(h.events)}, weight {h.weight}, "
                          f"{h.source.label()})")
