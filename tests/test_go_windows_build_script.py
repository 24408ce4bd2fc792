"""audit 35 (DeepakGiri2/GoConnect's shape): one Go module, two services built by a
Windows script, `docker build -t shop-auth:latest -f build\\docker\\Dockerfile.auth .`,
the Dockerfiles (variants only, no file named Dockerfile) running `go build
./cmd/auth/main.go`. No source was found (the .bat was not read, nor any script when no
file is named Dockerfile): both were a floor of 1 per pod, `cannot tell`, where auth
opens 25 a pod and the server is over. Once found, the gateway, whose packages import no
database driver, was an unbounded database/sql client because the module's go.mod
requires lib/pq. Written in our own words."""

from __future__ import annotations

from advisor.engine.check import CheckOptions, run_check
from tests.tree_helpers import POSTGRES_DB, deployment, write

DB = """package db

import (
\t"database/sql"

\t_ "github.com/lib/pq"
)

func Connect(dsn string) (*sql.DB, error) {
\td, err := sql.Open("postgres", dsn)
\tif err != nil {
\t\treturn nil, err
\t}
\td.SetMaxOpenConns(30)
\treturn d, nil
}
"""

BAT = ("@echo off\r\ncd /d %~dp0\\..\r\n"
       "docker build -t shop-auth:latest -f build\\docker\\Dockerfile.auth .\r\n"
       "docker build -t shop-gateway:latest -f build\\docker\\Dockerfile.gateway .\r\n")


def _dockerfile(name: str) -> str:
    return (f"FROM golang:1.23 AS b\nWORKDIR /app\nCOPY . .\n"
            f"RUN CGO_ENABLED=0 go build -a -installsuffix cgo -o {name} ./cmd/{name}/main.go\n"
            f"FROM alpine\nCOPY --from=b /app/{name} /{name}\nCMD [\"/{name}\"]\n")


TREE = {
    "go.mod": "module github.com/shop\n\ngo 1.23\n\nrequire github.com/lib/pq v1.10.9\n",
    "pkg/db/db.go": DB,
    "cmd/auth/main.go": "package main\n\nimport \"github.com/shop/pkg/db\"\n\n"
                        "func main() { db.Connect(\"\") }\n",
    "cmd/gateway/main.go": "package main\n\nimport \"net/http\"\n\n"
                           "func main() { http.ListenAndServe(\":8080\", nil) }\n",
    "build/docker/Dockerfile.auth": _dockerfile("auth"),
    "build/docker/Dockerfile.gateway": _dockerfile("gateway"),
    "scripts/build-images.bat": BAT,
    "k8s/db.yaml": POSTGRES_DB,
    "k8s/auth.yaml": deployment("auth-service", "shop-auth:latest",
                                {"DATABASE_URL": "postgres://app@db:5432/app"}, replicas=2),
    "k8s/gateway.yaml": deployment("gateway", "shop-gateway:latest",
                                   {"DATABASE_URL": "postgres://app@db:5432/app"}, replicas=3),
}


def test_a_windows_build_script_names_the_go_package_each_image_is_built_from(tmp_path):
    write(tmp_path, TREE)
    r = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = r.budgets
    assert any("auth-service: application source inferred as cmd/auth/" in n
               for n in r.notices)
    assert any(f.code == "PA101" for f in r.findings)  # 2 x 30 > 47 usable
    # the gateway imports no driver: not an unbounded database/sql client, and (audit 50)
    # not a floor of 1 a pod either: it opens none, said
    assert not any(f.code == "PA102" for f in r.findings)
    assert budget.peak == 2 * 30 and not budget.peak_is_floor
    assert any("gateway: names database host 'db'" in n and "opens no connection" in n
               for n in r.notices)
