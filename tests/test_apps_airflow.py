"""Apache Airflow 2 from its image, in the shape the official chart (apache/airflow
chart/) renders: each component's processes by its command, each with the SQLAlchemy
pool airflow.cfg or AIRFLOW__* env gives (advisor/read/apps/airflow.py). Audit K
finding 3: every component was unknown (PA106, a floor of 8)."""

from __future__ import annotations

from pathlib import Path

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

# Airflow 2.10.0 config.yml defaults; the chart's airflow.cfg sets worker_concurrency 16
POOL = 5 + 10  # sql_alchemy_pool_size + sql_alchemy_max_overflow
WORKERS = 4  # [webserver] workers
PARSING = 2  # [scheduler] parsing_processes

DB = POSTGRES_DB.replace("max_connections=50", "max_connections=500") + """---
apiVersion: v1
kind: Secret
metadata: {name: airflow-metadata}
type: Opaque
data:
  connection: "cG9zdGdyZXNxbDovL2FpcmZsb3c6cHdAZGI6NTQzMi9haXJmbG93P3NzbG1vZGU9ZGlzYWJsZQ=="
"""


def config(cfg: str) -> str:
    """configmaps/configmap.yaml: airflow.cfg under the key of that name."""
    body = "".join(f"    {line}\n" for line in cfg.strip().splitlines())
    return f"""
apiVersion: v1
kind: ConfigMap
metadata: {{name: airflow-config}}
data:
  airflow.cfg: |-
{body}"""


CFG = """
[celery]
worker_concurrency = 16

[core]
executor = CeleryExecutor

[scheduler]
standalone_dag_processor = False
"""


def component(kind: str, name: str, args: str, env: str = "", image: str = "2.10.0") -> str:
    """The chart's component: `bash -c "exec airflow ..."` as args, the connection from
    the metadata Secret, airflow.cfg mounted by subPath, Recreate/1 replica (no surge)."""
    strategy = "  strategy: {type: Recreate}\n" if kind == "Deployment" else ""
    return f"""
apiVersion: apps/v1
kind: {kind}
metadata: {{name: {name}}}
spec:
  replicas: 1
{strategy}  template:
    spec:
      containers:
        - name: {name}
          image: apache/airflow:{image}
          args: {args}
          env:
            - name: AIRFLOW__DATABASE__SQL_ALCHEMY_CONN
              valueFrom:
                secretKeyRef: {{name: airflow-metadata, key: connection}}
{env}          volumeMounts:
            - {{name: config, mountPath: /opt/airflow/airflow.cfg, subPath: airflow.cfg}}
        - name: {name}-log-groomer
          image: apache/airflow:{image}
          args: ["bash", "/clean-logs"]
      volumes:
        - name: config
          configMap: {{name: airflow-config}}
"""


def chart(tmp_path: Path, cfg: str = CFG, env: str = "", image: str = "2.10.0") -> Path:
    return write(tmp_path, {
        "k8s/db.yaml": DB, "k8s/config.yaml": config(cfg),
        "k8s/scheduler.yaml": component("Deployment", "scheduler",
                                        '["bash", "-c", "exec airflow scheduler"]', env, image),
        "k8s/webserver.yaml": component("Deployment", "webserver",
                                        '["bash", "-c", "exec airflow webserver"]', env, image),
        "k8s/triggerer.yaml": component("StatefulSet", "triggerer",
                                        '["bash", "-c", "exec airflow triggerer"]', env, image),
        "k8s/worker.yaml": component("StatefulSet", "worker",
                                     '["bash", "-c", "exec \\\\\\nairflow celery worker"]',
                                     env, image),
    })


def per_pod(root: Path) -> dict[str, float]:
    topo = scan([str(root)], CheckOptions()).topology
    return {c.name: sum(p.per_pod() for p in c.pools) for c in topo.clients}


def test_each_component_by_its_command_with_the_default_pool(tmp_path):
    chart(tmp_path)
    assert per_pod(tmp_path) == {
        "scheduler": (1 + 1 + PARSING) * POOL,  # scheduler, manager, parsers
        "webserver": (WORKERS + 1) * POOL,  # gunicorn workers + the --preload master
        "triggerer": POOL,
        # NullPool: main + (supervisor + raw task) per slot; + the result backend's one
        "worker": 1 + 16 * 2 + 16,
    }
    result = run_check([str(tmp_path)], CheckOptions())
    assert not [f for f in result.findings if f.code == "PA106"]
    topo = scan([str(tmp_path)], CheckOptions()).topology
    (worker,) = [c for c in topo.clients if c.name == "worker"]
    slots = next(p for p in worker.pools if p.processes and p.processes.value == 16)
    assert slots.processes is not None and slots.processes.source.path == "k8s/config.yaml"


def test_pool_options_from_env_over_airflow_cfg_and_the_core_names(tmp_path):
    cfg = CFG + "\n[database]\nsql_alchemy_pool_size = 3\nsql_alchemy_max_overflow = 2\n"
    chart(tmp_path, cfg)
    assert per_pod(tmp_path)["triggerer"] == 3 + 2
    env = ("            - {name: AIRFLOW__DATABASE__SQL_ALCHEMY_POOL_SIZE, value: \"4\"}\n"
           "            - {name: AIRFLOW__CORE__SQL_ALCHEMY_MAX_OVERFLOW, value: \"0\"}\n")
    chart(tmp_path, cfg, env)
    # the [database] env, then the deprecated [core] env, both before airflow.cfg
    assert per_pod(tmp_path)["triggerer"] == 4 + 0
    env = "            - {name: AIRFLOW__WEBSERVER__WORKERS, value: \"2\"}\n"
    chart(tmp_path, CFG.replace("standalone_dag_processor = False",
                                "standalone_dag_processor = True\nparsing_processes = 8"), env)
    pods = per_pod(tmp_path)
    assert pods["webserver"] == (2 + 1) * POOL and pods["scheduler"] == POOL


def test_null_pool_and_a_secret_pool_size(tmp_path):
    chart(tmp_path, CFG + "\n[database]\nsql_alchemy_pool_enabled = False\n")
    assert per_pod(tmp_path)["webserver"] == WORKERS + 1
    env = ("            - name: AIRFLOW__DATABASE__SQL_ALCHEMY_POOL_SIZE\n"
           "              valueFrom: {secretKeyRef: {name: tuning, key: size}}\n")
    chart(tmp_path, CFG, env)
    result = run_check([str(tmp_path)], CheckOptions())
    assert {f.message.split(":")[0] for f in result.findings if f.code == "PA106"} >= {
        "scheduler", "webserver", "triggerer"}


def test_airflow_3_is_left_unknown(tmp_path):
    chart(tmp_path, image="3.0.2")
    result = run_check([str(tmp_path)], CheckOptions())
    unknown = [f for f in result.findings if f.code == "PA106"]
    assert len(unknown) == 4 and all("Airflow 3" in f.message or "3.0.2" in f.message
                                      for f in unknown)


def test_the_migration_job_holds_two_connections(tmp_path):
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/config.yaml": config(CFG),
                     "k8s/migrate.yaml": component("Job", "run-airflow-migrations",
                                                   '["bash", "-c", "exec airflow db migrate"]')
                     .replace("  replicas: 1\n", "")})
    assert per_pod(tmp_path) == {"run-airflow-migrations": 2}


def test_kubernetes_executor_task_pods_are_named_not_silently_left_out(tmp_path):
    chart(tmp_path, CFG.replace("CeleryExecutor", "KubernetesExecutor"))
    result = run_check([str(tmp_path)], CheckOptions())
    assert any("KubernetesExecutor" in n and "not counted" in n for n in result.notices)
