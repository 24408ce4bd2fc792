"""`advise --diff` of a file whose hunk shows a secret as `***` (a Kubernetes Secret's
lines, a URL's password) says that the hunk does not apply as printed (audit 29 D2:
10srav/Quantum-...-Optimization's k8s/secrets.yaml, the DATABASE_URL host edited for the
proposed PgBouncer: `git apply` said "patch does not apply" and nothing said why)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from advisor.advise.edits import plan
from advisor.advise.records import Edit
from tests.test_advise import cli
from tests.tree_helpers import write

DB = """\
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
          args: ["-c", "max_connections=40"]
"""
WEB = """\
apiVersion: v1
kind: Secret
metadata: {name: web-db}
type: Opaque
stringData:
  SPRING_DATASOURCE_URL: "jdbc:postgresql://db:5432/shop"
  SPRING_DATASOURCE_PASSWORD: "s3cret-pw"
  SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE: "10"
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 4
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: app
          image: acme/web:1
          envFrom:
            - secretRef: {name: web-db}
"""


def test_a_masked_hunk_is_said_not_to_apply(tmp_path: Path) -> None:
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/web.yaml": WEB})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    r = cli("advise", "--root", str(tmp_path), str(tmp_path / "k8s"), "--diff")
    assert '+  SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE: "9"' in r.stdout, r.stdout + r.stderr
    assert "s3cret-pw" not in r.stdout
    assert "not applicable as printed: k8s/web.yaml: its secret values are shown as ***" \
        in r.stderr, r.stderr
    # --write, which writes the real values, says nothing of it
    w = cli("advise", "--root", str(tmp_path), str(tmp_path / "k8s"), "--write", "--yes")
    assert w.returncode == 0 and "not applicable" not in w.stderr, w.stderr
    assert 'MAXIMUMPOOLSIZE: "9"' in (tmp_path / "k8s/web.yaml").read_text()


def test_masks_only_when_a_secret_is_shown(tmp_path: Path) -> None:
    (tmp_path / "app.env").write_text("DB_URL=postgres://app:pw1@db/shop\nPOOL=10\n")
    (tmp_path / "pool.env").write_text("HOST=db\nPOOL=10\n")
    result = plan([Edit(path="app.env", line=2, key="POOL", old="10", new="5"),
                   Edit(path="pool.env", line=2, key="POOL", old="10", new="5")], [tmp_path])
    masks = {c.path: c.masks for c in result.changes}
    assert masks == {"app.env": True, "pool.env": False}


CONFIG_AND_SECRET = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
data:
  DB_HOST: "postgres"
  DB_PORT: "5432"
  DB_USER: "postgres"
---
apiVersion: v1
kind: Secret
metadata:
  name: app-secrets
stringData:
  DB_PASSWORD: "postgres"
  JWT_SECRET: "change-me"
"""


def test_only_the_secret_document_is_masked(tmp_path: Path) -> None:
    # audit 45 (Chandu00756/Taskflow's deployments/k8s/configmap.yaml shape): a ConfigMap
    # edit in a file that also holds a Secret showed the ConfigMap's lines as `***`
    # (`name: ***`, `DB_PORT: ***`) and `git apply` refused it
    (tmp_path / "config.yaml").write_text(CONFIG_AND_SECRET)
    result = plan([Edit(path="config.yaml", line=6, key="DB_HOST", old="postgres",
                        new="pgbouncer")], [tmp_path])
    change = result.changes[0]
    diff = change.diff()
    assert "  name: app-config\n" in diff and '  DB_PORT: "5432"\n' in diff, diff
    assert not change.masks
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "p.diff").write_text(diff)
    applied = subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, capture_output=True,
                             text=True)
    assert applied.returncode == 0, applied.stderr
    assert 'DB_HOST: "pgbouncer"' in (tmp_path / "config.yaml").read_text()


def test_the_secret_documents_lines_stay_masked(tmp_path: Path) -> None:
    # an edit near the Secret: its context lines are still hidden
    (tmp_path / "config.yaml").write_text(CONFIG_AND_SECRET)
    result = plan([Edit(path="config.yaml", line=8, key="DB_USER", old="postgres",
                        new="app")], [tmp_path])
    diff = result.changes[0].diff()
    assert " apiVersion: ***\n kind: ***\n" in diff, diff
    assert '   DB_HOST: "postgres"\n' in diff and result.changes[0].masks
