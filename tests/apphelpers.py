"""Test helpers: build a Container from a fixture Deployment the simple way (the real
manifest reader is the topology's job), keeping file:line for env vars."""

from __future__ import annotations

from pathlib import Path

from advisor.model import Container, EnvVar, Source


def containers_of(root: Path, manifest: str) -> list[Container]:
    from ruamel.yaml import YAML

    path = root / manifest
    out: list[Container] = []
    for doc in YAML(typ="rt").load_all(path.read_text()):
        if not doc or doc.get("kind") not in ("Deployment", "StatefulSet", "Job", "DaemonSet"):
            continue
        spec = doc["spec"]["template"]["spec"]
        for c in spec.get("containers", []):
            env = []
            for item in c.get("env", []) or []:
                line = item.lc.line + 1
                env.append(EnvVar(name=item["name"], value=item.get("value"),
                                  source=Source(path=manifest, line=line, key=item["name"]),
                                  secret="valueFrom" in item,
                                  from_ref="ref" if "valueFrom" in item else None))
            out.append(Container(
                name=c["name"], image=c.get("image", ""),
                command=tuple(c.get("command", []) or []), args=tuple(c.get("args", []) or []),
                env=tuple(env), source=Source(path=manifest, line=c.lc.line + 1)))
    return out


def container(env: dict[str, str] | None = None, args: tuple[str, ...] = (),
              command: tuple[str, ...] = ()) -> Container:
    return Container(
        name="app", command=command, args=args,
        env=tuple(EnvVar(name=k, value=v, source=Source(path="k8s/app.yaml", line=10 + i, key=k))
                  for i, (k, v) in enumerate((env or {}).items())),
        source=Source(path="k8s/app.yaml", line=5))


def product(pools) -> str:
    """'1 x 20 + 1 x 6 = 26': processes x size per pool, as the tests write it out."""
    parts = [f"{int(p.processes.value) if p.processes else 1} x {int(p.size.value)}"
             for p in pools]
    return " + ".join(parts) + f" = {int(sum(p.per_pod() for p in pools))}"
