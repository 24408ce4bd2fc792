"""A bare image name pulled Never (audit21 D3, 13SOAT-andromeda/tech-challenge-s1's local
overlay: tech-challenge-api:latest, imagePullPolicy: Never, beside the repository's one
Dockerfile and its go.mod, whose module is named otherwise): the kubelet never pulls it
(Kubernetes: imagePullPolicy Never uses the image already on the node), so it is no
official library image but one built there, from this repository. It was taken for a
published program: 'no application source folder found' (PA106, >= 7 cannot tell), while
its database/sql pool has no SetMaxOpenConns: unbounded (PA102)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

MAIN = """\
package main

import (
\t"database/sql"
\t"fmt"
\t"os"

\t_ "github.com/lib/pq"
)

func main() {
\tdb, _ := sql.Open("postgres", fmt.Sprintf("host=%s dbname=shop", os.Getenv("DB_HOST")))
\tdefer db.Close()
}
"""

K8S = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop-api}
spec:
  replicas: 2
  selector: {matchLabels: {app: shop-api}}
  template:
    metadata: {labels: {app: shop-api}}
    spec:
      containers:
        - name: api
          image: shop-api:latest
          imagePullPolicy: POLICY
          env:
            - {name: DB_HOST, value: postgres-svc}
            - {name: DB_PORT, value: "5432"}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: postgres}
spec:
  template:
    metadata: {labels: {app: postgres}}
    spec:
      containers: [{name: postgres, image: "postgres:15"}]
---
apiVersion: v1
kind: Service
metadata: {name: postgres-svc}
spec: {selector: {app: postgres}}
"""


def _run(tmp_path, policy: str):
    write(tmp_path, {
        "go.mod": "module github.com/acme/tech-challenge-s1\n\ngo 1.22\n\n"
                  "require github.com/lib/pq v1.10.9\n",
        "cmd/api/main.go": MAIN,
        "Dockerfile": 'FROM golang:1.22\nCOPY . .\nRUN go build -o /app/main ./cmd/api\n'
                      'CMD ["/app/main"]\n',
        "k8s/all.yaml": K8S.replace("POLICY", policy)})
    return run_check([str(tmp_path)], CheckOptions(cache=False, root=tmp_path))


def test_a_bare_image_pulled_never_is_built_from_the_repository(tmp_path):
    result = _run(tmp_path, "Never")
    codes = sorted(f.code for f in result.findings)
    assert "PA102" in codes and "PA106" not in codes, codes
    assert any("application source inferred as ./" in n and "pulled Never" in n
               for n in result.notices), result.notices


def test_a_bare_image_pulled_if_not_present_is_still_taken_as_published(tmp_path):
    result = _run(tmp_path, "IfNotPresent")
    codes = sorted(f.code for f in result.findings)
    assert "PA106" in codes and "PA102" not in codes, codes


def test_a_bare_image_pulled_never_named_otherwise_takes_the_only_dockerfile(tmp_path):
    """Audit 25 D4 (TSI-Projects/group-project: simple_go_server:latest of Deployment
    release-go-server, pulled Never, built from backend/Dockerfile by a Python script):
    named like neither the workload nor a folder, it is still built on the node, from the
    repository's only Dockerfile; its unbounded database/sql pool is read (PA102)."""
    write(tmp_path, {
        "backend/go.mod": "module github.com/acme/group\n\ngo 1.22\n\n"
                          "require github.com/lib/pq v1.10.9\n",
        "backend/cmd/app/main.go": MAIN,
        "backend/Dockerfile": 'FROM golang:1.22\nCOPY . .\nRUN go build -o /app ./cmd/app\n'
                              'ENTRYPOINT ["/app"]\n',
        "tools/build.py": "import subprocess\n",
        "k8s/all.yaml": K8S.replace("POLICY", "Never")
                           .replace("image: shop-api:latest", "image: simple_go_server:latest")})
    result = run_check([str(tmp_path)], CheckOptions(cache=False, root=tmp_path))
    codes = sorted(f.code for f in result.findings)
    assert "PA102" in codes and "PA106" not in codes, codes
    assert any("application source inferred as backend/" in n and "only Dockerfile" in n
               for n in result.notices), result.notices
