"""envFrom sources whose keys the repository does not hold (a Secret or ConfigMap not in
it, an ExternalSecret whose keys are fetched when applied): workloads._env writes each
as a marker `<prefix>*` without a value. Pure helpers shared by the pool readers
(StackContext) and process detection (processes.py), which sits below them."""

from __future__ import annotations

from collections.abc import Iterable

from msgspec.structs import replace

from advisor.model import EnvVar


def env_from_hidden(env: Iterable[EnvVar], *names: str, fold_case: bool = False
                    ) -> EnvVar | None:
    """The marker of an envFrom source not held that may set one of `names` that `env`
    does not set (an explicit entry wins over every envFrom source); None when each name
    is set or no such source's prefix can form it. `fold_case`: the program reads the
    name in any case (.NET configuration keys)."""
    env = tuple(env)
    set_names = {e.name.lower() if fold_case else e.name for e in env
                 if not e.name.endswith("*")}
    unset = [n.lower() if fold_case else n for n in names]
    unset = [n for n in unset if n not in set_names]
    for var in env:
        if not var.name.endswith("*") or var.value is not None:
            continue
        prefix = var.name[:-1].lower() if fold_case else var.name[:-1]
        if any(n.startswith(prefix) for n in unset):
            return var
    return None


def may_set(env: Iterable[EnvVar], name: str) -> EnvVar | None:
    """`name` when an envFrom source not held may set it and nothing in `env` does: an
    entry without a value, cited at that source's marker (key `<prefix>*`), as the
    evaluators record a value not held; None otherwise (env_from_hidden)."""
    marker = env_from_hidden(env, name)
    if marker is None:
        return None
    return EnvVar(name=name, source=replace(marker.source, key=marker.name),
                  from_ref=marker.from_ref, secret=marker.secret)


def env_from_names(marker: EnvVar, names: Iterable[str]) -> list[str]:
    """Those of `names` the marker's prefix can form (what it may set)."""
    prefix = marker.name[:-1]
    return [n for n in names if n.startswith(prefix)]


def env_from_label(marker: EnvVar) -> str:
    """An envFrom source whose keys are not held, as a reader says it: `Secret
    sonarr-secret (envFrom, k8s/sonarr.yaml:14), not in the repository`."""
    ref = marker.from_ref or ""
    kind, _, rest = ref.partition(":")
    name, _, why = rest.partition(" ")
    title = {"secret": "Secret", "configmap": "ConfigMap"}.get(kind, kind or "a source")
    prefix = marker.name[:-1]
    where = f"envFrom{f' with prefix {prefix}' if prefix else ''}, {marker.source.label()}"
    if why.startswith("(remote: "):
        held = f"whose keys are fetched where it is applied ({why[9:-1]})"
    elif why.startswith("(elsewhere: "):
        held = why[12:-1]  # in the repository, not in the pod's namespace
    else:
        held = "not in the repository"
    return f"{title} {name} ({where}), {held}"
