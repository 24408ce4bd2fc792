"""Zitadel from its image (audit of session 20 on zitadel/zitadel-charts: a
MaxOpenConns the chart writes in its --config file was not read, and the server, over
at 120 > 97, was "cannot tell"): Database.postgres.MaxOpenConns from
ZITADEL_DATABASE_POSTGRES_MAXOPENCONNS (viper: the env wins), then the `--config`
files, else Zitadel's default 10 (cmd/defaults.yaml)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

DB = POSTGRES_DB.replace("max_connections=50", "max_connections=500")
CONFIG = """
apiVersion: v1
kind: ConfigMap
metadata: {name: zitadel-config-yaml}
data:
  zitadel-config-yaml: |-
    Database:
      Postgres:
        Host: db
        MaxOpenConns: 20
"""


def zitadel(env: str = "") -> str:
    """The chart's deployment_zitadel.yaml shape: --config /config/zitadel-config-yaml,
    the ConfigMap mounted at /config."""
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: zitadel}}
spec:
  replicas: 3
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: zitadel
          image: ghcr.io/zitadel/zitadel:v4.3.0
          args: [start, --config, /config/zitadel-config-yaml, --masterkeyFromEnv]
          env:
            - {{name: ZITADEL_DATABASE_POSTGRES_HOST, value: db}}
{env}          volumeMounts:
            - {{name: zitadel-config-yaml, mountPath: /config}}
      volumes:
        - name: zitadel-config-yaml
          configMap: {{name: zitadel-config-yaml}}
"""


def peak(tmp_path) -> float:
    (budget,) = run_check([str(tmp_path)], CheckOptions()).budgets
    return budget.peak


def test_max_open_conns_from_the_config_file_then_the_env(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/zitadel.yaml": zitadel(), "k8s/cm.yaml": CONFIG})
    assert peak(tmp_path) == 3 * 20
    env = "            - {name: ZITADEL_DATABASE_POSTGRES_MAXOPENCONNS, value: \"30\"}\n"
    write(tmp_path, {"k8s/zitadel.yaml": zitadel(env)})
    assert peak(tmp_path) == 3 * 30  # the env wins over the config file


def test_default_without_config_or_env(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/zitadel.yaml": zitadel()})
    result = run_check([str(tmp_path)], CheckOptions())
    assert result.budgets[0].peak == 3 * 10
    assert any(f.code == "PA104" and "cmd/defaults.yaml" in f.message for f in result.findings)
