"""One finding for the same line in several kustomize overlays.

Each alternative overlay (dev, staging, production) is linked apart, its entities named
"name [overlay]", so a base file every overlay builds gives one finding per overlay
about the same line, with the same fix (IsraelIyonsi/eaas: three PA504 on
k8s/pgbouncer/configmap.yaml:26, audit 13f N5). Those that differ only by the overlay
are reported once, naming the overlays, as a server outside the overlays is ("the
clients of all of them count")."""

from __future__ import annotations

from typing import Any

import msgspec

from advisor.model import Finding


def merged_across_overlays(findings: list[Finding], overlays: list[str]) -> list[Finding]:
    """`findings` with each group that is the same finding in two or more overlays
    (same rule, severity, location, message, fix and subject once the overlay is taken
    out of them) replaced by one, in the place of the group's first. Its subject is the
    overlay-free one, so its fingerprint does not change when an overlay is added or
    removed (--base, --new-only)."""
    if len(overlays) < 2:
        return findings
    groups: dict[str, list[tuple[str, Finding]]] = {}
    keys: list[str | None] = []
    for f in findings:
        label = _only_overlay(f, overlays)
        if label is None:
            keys.append(None)
            continue
        key = msgspec.json.encode(_stripped(msgspec.to_builtins(f), label)).decode()
        groups.setdefault(key, []).append((label, f))
        keys.append(key)
    out: list[Finding] = []
    done: set[str] = set()
    for f, key in zip(findings, keys, strict=True):
        if key is None or len(groups[key]) < 2:
            out.append(f)
        elif key not in done:
            done.add(key)
            out.append(_one(groups[key], overlays))
    return out


def _only_overlay(f: Finding, overlays: list[str]) -> str | None:
    """The one overlay whose entities the finding names, or None (none, or several: a
    finding across overlays is about them together)."""
    text = f"{f.subject}\n{f.message}"
    named = [o for o in overlays if f" [{o}]" in text or f.subject.startswith(f"{o}|")
             or f"|{o}|" in f.subject]
    return named[0] if len(named) == 1 else None


def _stripped(value: Any, label: str) -> Any:
    """Every string in plain data without the overlay's qualifier: " [label]" after a
    name, "label|" before an id."""
    if isinstance(value, str):
        out = value.replace(f" [{label}]", "")
        if out.startswith(f"{label}|"):
            out = out[len(label) + 1:]
        return out.replace(f"|{label}|", "|")
    if isinstance(value, dict):
        return {k: _stripped(v, label) for k, v in value.items()}
    if isinstance(value, list | tuple):  # to_builtins keeps a tuple (related)
        return [_stripped(v, label) for v in value]
    return value


def _one(group: list[tuple[str, Finding]], overlays: list[str]) -> Finding:
    labels = sorted({label for label, _ in group}, key=overlays.index)
    label, first = group[0]
    data = _stripped(msgspec.to_builtins(first), label)
    data["message"] += f" (the same in the overlays {', '.join(labels)})"
    return msgspec.convert(data, Finding)
