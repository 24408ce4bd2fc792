"""advise on the image readers whose pool is the sum of two settings (QueuePool
pool_size + max_overflow): Redash, Airflow, Superset and Prefect give the settings as
Pool.parts, so advise moves them, each at its own line, to the sum it proposes. Audit
13d (D2, not fixed there): they cited the sum at one setting's line, so advise edited
that setting to the whole proposed size (the other added on top), or its edit was
refused ("'30' not found on the line") when the setting read 20. Numbers as before:
only how advise edits changed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.test_advise import advise_json, cli
from tests.tree_helpers import POSTGRES_DB, write


def deployment(image: str, args: str, env: dict[str, str], replicas: int = 1) -> str:
    lines = "".join(f'            - name: {k}\n              value: "{v}"\n'
                    for k, v in env.items())
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: app}}
spec:
  replicas: {replicas}
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: app
          image: {image}
          args: {args}
          env:
{lines}"""


URL = "postgresql://u@db:5432/app"
CASES = {
    # 2 replicas x 1 gunicorn worker x (20 + 10) = 60 > 47 usable
    "redash": deployment("redash/redash:25.8.0", "[server]", {
        "REDASH_DATABASE_URL": URL, "REDASH_WEB_WORKERS": "1",
        "SQLALCHEMY_POOL_SIZE": "20", "SQLALCHEMY_MAX_OVERFLOW": "10"}, replicas=2),
    # 2 replicas x 1 triggerer x (20 + 10) = 60
    "airflow": deployment("apache/airflow:2.10.0", '["bash", "-c", "exec airflow triggerer"]', {
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": URL,
        "AIRFLOW__DATABASE__SQL_ALCHEMY_POOL_SIZE": "20",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_MAX_OVERFLOW": "10"}, replicas=2),
    # 2 replicas x 1 `prefect server start` process x (20 + 10) = 60
    "prefect": deployment("prefecthq/prefect:3.4.10-python3.11",
                          "[prefect, server, start]", {
                              "PREFECT_API_DATABASE_CONNECTION_URL":
                                  "postgresql+asyncpg://u@db:5432/app",
                              "PREFECT_SERVER_DATABASE_SQLALCHEMY_POOL_SIZE": "20",
                              "PREFECT_SERVER_DATABASE_SQLALCHEMY_MAX_OVERFLOW": "10"},
                          replicas=2),
}
EDITED = {"redash": "SQLALCHEMY_MAX_OVERFLOW",
          "airflow": "AIRFLOW__DATABASE__SQL_ALCHEMY_MAX_OVERFLOW",
          "prefect": "PREFECT_SERVER_DATABASE_SQLALCHEMY_MAX_OVERFLOW"}


@pytest.mark.parametrize("app", sorted(CASES))
def test_written_settings_are_edited_so_the_sum_fits(tmp_path: Path, app: str):
    # 47 usable / 2 pods: 23 per process, so the written overflow 10 -> 3 at its line
    # (the overflow before pool_size, both written), pool_size 20 kept; git apply, and
    # check fits. Before: the sum's edit "30 -> 23" at pool_size's line was refused.
    repo = write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/app.yaml": CASES[app]})
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (server,) = advise_json(str(repo), "--no-new-pooler")
    (p,) = server["proposals"]
    assert (p["key"], p["old"].split(" ")[0], p["new"]) == (EDITED[app], "10", "3"), p
    assert p["edit"] is not None and p["edit"]["old"] == "10"
    diff = cli("advise", str(repo), "--no-new-pooler", "--diff")
    assert "not edited" not in diff.stderr, diff.stderr
    patch = diff.stdout[diff.stdout.index("--- a/"):]
    applied = subprocess.run(["git", "apply", "-"], input=patch, text=True, cwd=repo,
                             capture_output=True)
    assert applied.returncode == 0, applied.stderr
    assert 'value: "3"' in (repo / "k8s/app.yaml").read_text()
    after = cli("check", str(repo))
    assert after.returncode == 0, after.stdout


# a ConfigMap: the chart's Secret works the same for check, but advise's diff masks a
# Secret's lines (its context would not apply)
SUPERSET = """
apiVersion: v1
kind: ConfigMap
metadata: {name: superset-config}
data:
  superset_config.py: |
    SQLALCHEMY_DATABASE_URI = "postgresql+psycopg2://u@db:5432/superset"
    SQLALCHEMY_ENGINE_OPTIONS = {
        "pool_size": 20,
        "max_overflow": 10,
    }
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: superset}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: superset
          image: apache/superset:4.1.1
          command: [/bin/sh, -c, /usr/bin/run-server.sh]
          volumeMounts:
            - {name: superset-config, mountPath: /app/pythonpath, readOnly: true}
      volumes:
        - name: superset-config
          configMap: {name: superset-config}
"""


@pytest.mark.parametrize(("options", "key", "edited"), [
    # SQLALCHEMY_ENGINE_OPTIONS written: max_overflow 10 -> 3 at its line
    (None, "max_overflow", True),
    # no SQLALCHEMY_ENGINE_OPTIONS: QueuePool's defaults, 4 x (5 + 10) = 60 > 47: 11 per
    # process, one setting by hand (max_overflow 10 -> 6), not the sum at one key
    ("", "max_overflow", False),
])
def test_superset_engine_options_are_moved_not_their_sum(tmp_path: Path, options: str | None,
                                                         key: str, edited: bool):
    text = SUPERSET if options is None else SUPERSET.replace(
        SUPERSET[SUPERSET.index("    SQLALCHEMY_ENGINE_OPTIONS"):SUPERSET.index("---")], "") \
        .replace("replicas: 2", "replicas: 4")
    repo = write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/superset.yaml": text})
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (server,) = advise_json(str(repo), "--no-new-pooler")
    (p,) = server["proposals"]
    assert p["key"] == key
    assert (p["edit"] is not None) == edited, p
    if not edited:
        assert f"set it to {p['new']}" in p["manual"]
        return
    diff = cli("advise", str(repo), "--no-new-pooler", "--diff")
    assert "not edited" not in diff.stderr, diff.stderr
    patch = diff.stdout[diff.stdout.index("--- a/"):]
    applied = subprocess.run(["git", "apply", "-"], input=patch, text=True, cwd=repo,
                             capture_output=True)
    assert applied.returncode == 0, applied.stderr
    assert '"max_overflow": 3,' in (repo / "k8s/superset.yaml").read_text()
    after = cli("check", str(repo))
    assert after.returncode == 0, after.stdout
