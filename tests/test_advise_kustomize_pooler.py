"""A PgBouncer advise adds in a kustomize folder is listed in that folder's
kustomization `resources:` (audit 45, andarpratama/banking-api's prod overlay: the
manifest went into k8s/base/ unlisted, so kustomize never built it; check after `git
apply` found no PgBouncer, the client pointed at it in no budget, and the server "fits,
peak 0" where advise had promised 33)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from advisor.advise.pooler import resources_end
from tests.test_advise import cli
from tests.tree_helpers import write

needs_kustomize = pytest.mark.skipif(
    not (shutil.which("kubectl") or shutil.which("kustomize")),
    reason="kubectl (kustomize) not installed")

BASE_K = """apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: bank
resources:
  - app.yaml
  - db.yaml
  # the cache is added later

labels:
  - pairs: {part-of: bank}
"""
PROD_K = """apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: bank-prod
resources:
  - ../../base
replicas:
  - name: api
    count: 8
"""
APP = """apiVersion: v1
kind: ConfigMap
metadata: {name: api-config}
data:
  SPRING_DATASOURCE_URL: jdbc:postgresql://db:5432/bank
  SPRING_DATASOURCE_USERNAME: bank
  SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE: "20"
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  strategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
        - name: api
          image: acme/bank-api:1
          envFrom:
            - configMapRef: {name: api-config}
"""
DB = """apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: postgres
          image: postgres:17.2
"""


def test_resources_end() -> None:
    assert resources_end(BASE_K) == 6  # the last item, past a comment and a blank line
    assert resources_end("resources: [a.yaml]\n") is None
    assert resources_end("kind: Kustomization\n") is None
    assert resources_end("resources:\n- a.yaml\n- b.yaml\nimages: []\n") == 3


@needs_kustomize
def test_the_new_pgbouncer_is_listed_in_the_base_kustomization(tmp_path: Path) -> None:
    write(tmp_path, {"k8s/base/kustomization.yaml": BASE_K, "k8s/base/app.yaml": APP,
                     "k8s/base/db.yaml": DB, "k8s/overlays/prod/kustomization.yaml": PROD_K})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    overlay = str(tmp_path / "k8s/overlays/prod")
    r = cli("advise", "--root", str(tmp_path), overlay, "--diff")
    assert "+++ b/k8s/base/pgbouncer-db.yaml" in r.stdout, r.stdout + r.stderr
    assert "+  - pgbouncer-db.yaml\n" in r.stdout, r.stdout
    # the overlay puts the base in bank-prod: the file pins no namespace of its own
    assert "namespace:" not in r.stdout.split("+++ b/k8s/base/pgbouncer-db.yaml")[1]
    (tmp_path / "p.diff").write_text(r.stdout)
    applied = subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, capture_output=True,
                             text=True)
    assert applied.returncode == 0, applied.stderr
    assert "  - db.yaml\n  - pgbouncer-db.yaml\n  # the cache" in \
        (tmp_path / "k8s/base/kustomization.yaml").read_text()
    c = cli("check", "--no-cache", "--root", str(tmp_path), overlay)
    assert "PA107" not in c.stdout and "peak: 0" not in c.stdout, c.stdout
    assert "pgbouncer-db" in c.stdout, c.stdout


def test_the_new_pgbouncer_waits_less_than_its_clients(tmp_path: Path) -> None:
    # audit 45 (banking-api: HikariCP connectionTimeout 20 s): the PgBouncer advise wrote
    # said query_wait_timeout = 25, and advise then proposed editing its own, unwritten
    # file to 15 ("not found under ..."); check after the diff reported PA501
    app = APP.replace('  SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE: "20"\n',
                      '  SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE: "20"\n'
                      '  SPRING_DATASOURCE_HIKARI_CONNECTION_TIMEOUT: "20000"\n') \
        .replace("replicas: 2", "replicas: 9")
    write(tmp_path, {"k8s/app.yaml": app, "k8s/db.yaml": DB})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    r = cli("advise", "--root", str(tmp_path), str(tmp_path / "k8s"), "--diff")
    assert "+    query_wait_timeout = 15\n" in r.stdout, r.stdout + r.stderr
    assert "not found under" not in r.stdout + r.stderr
    (tmp_path / "p.diff").write_text(r.stdout)
    subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True)
    c = cli("check", "--no-cache", "--root", str(tmp_path), str(tmp_path / "k8s"))
    assert "PA501" not in c.stdout and "pgbouncer-db" in c.stdout, c.stdout
