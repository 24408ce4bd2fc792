"""Test helpers: a repository tree written from a dict of files, and the plain PostgreSQL
server (a Service `db` selecting a StatefulSet `db` with max_connections=50) that many
linking tests point their clients at."""

from __future__ import annotations

import textwrap
from pathlib import Path

POSTGRES_DB = """
apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: postgres
          image: postgres:16.2
          args: ["-c", "max_connections=50"]
"""


def write(root: Path, files: dict[str, str]) -> Path:
    """Each file of `files` (path relative to `root` -> text, dedented) written below
    `root`, its folders made; `root`."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root


def deployment(name: str, image: str, env: dict[str, str | None], *, replicas: int = 2,
               command: str = "", secret: str = "s") -> str:
    """A Deployment of one container named `name` running `image`, Recreate (no surge
    pod), with `env` as its last block (a None value is set from Secret `secret`) and
    `command` as written when given."""
    lines = "".join(
        f"            - {{name: {k}, valueFrom: {{secretKeyRef: {{name: {secret}, key: {k}}}}}}}\n"
        if v is None else f"            - {{name: {k}, value: \"{v}\"}}\n"
        for k, v in env.items())
    cmd = f"          command: {command}\n" if command else ""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: {name}
          image: {image}
{cmd}          env:
{lines}"""


def postgres_conf_and_api(conf: str, image: str = "postgres:15.8", *, args: str = "",
                          pool: int = 1) -> str:
    """A PostgreSQL server `postgres` (Service and StatefulSet) started with `conf` as its
    postgresql.conf (mounted from ConfigMap pg-conf; `args`: more `, "-c", "..."` words),
    and a Spring Deployment `api` of 2 replicas with a Hikari pool of `pool` on it."""
    text = "\n".join(f"    {line}" for line in conf.splitlines())
    return f"""\
apiVersion: v1
kind: ConfigMap
metadata: {{name: pg-conf}}
data:
  postgresql.conf: |
{text}
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
          image: {image}
          args: ["-c", "config_file=/etc/postgresql/postgresql.conf"{args}]
          volumeMounts: [{{name: conf, mountPath: /etc/postgresql}}]
      volumes: [{{name: conf, configMap: {{name: pg-conf}}}}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: api}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: api}}}}
  template:
    metadata: {{labels: {{app: api}}}}
    spec:
      containers:
        - name: app
          image: registry.example/api:1.0
          env:
            - {{name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://postgres:5432/app"}}
            - {{name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "{pool}"}}
"""
