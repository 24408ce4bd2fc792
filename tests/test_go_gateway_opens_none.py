"""A Go binary that imports no database driver or pool opens no connection, even when its
pod is given the database's Secret (audit 50, item 2; shapes of Chandu00756/Taskflow and
DeepakGiri2/GoConnect, written here in our own words). A gateway (gRPC, Redis, JWT) built
from gateway/ of a module at the root, given the Secret whose DB_PASSWORD the server's
pod takes by envFrom, was linked by that Secret alone and counted as 1 connection a pod,
so the server was "OVER by at least" a floor; with its host in a Secret the repository
does not hold, it "may connect to any server here". Its Go code (main package and the
module packages it imports) is read: it imports no database/sql, pgx, lib/pq, GORM.
Importing the module's database package keeps the floor."""

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.apps.identify import go_imports_no_database
from advisor.read.apps.source import AppFile
from tests.tree_helpers import write

MODULE = "github.com/acme/tasks"
SERVER = """
apiVersion: v1
kind: Secret
metadata: {name: app-secrets}
stringData: {DB_PASSWORD: pw, JWT_SECRET: s}
---
apiVersion: v1
kind: Service
metadata: {name: postgres}
spec:
  selector: {app: postgres}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: postgres}
spec:
  template:
    metadata: {labels: {app: postgres}}
    spec:
      containers:
        - name: postgres
          image: postgres:15-alpine
          env:
            - name: POSTGRES_PASSWORD
              valueFrom: {secretKeyRef: {name: app-secrets, key: DB_PASSWORD}}
"""
USERS = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: user-service}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: user-service
          image: tasks/user-service:latest
          env: [{name: DB_HOST, value: postgres}]
          envFrom: [{secretRef: {name: app-secrets}}]
"""
GATEWAY = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: gateway}
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: gateway
          image: tasks/gateway:latest
          env: [{name: GRPC_PORT, value: "50051"}]
          envFrom: [{secretRef: {name: app-secrets}}]
"""
GATEWAY_MAIN = f"""package main

import (
\t"log"
\t"net/http"

\t"google.golang.org/grpc/metadata"
\t"github.com/redis/go-redis/v9"
\t"{MODULE}/pkg/auth"
)

func main() {{
\t_ = metadata.MD{{}}
\t_ = redis.NewClient(&redis.Options{{}})
\t_ = auth.Check
\tlog.Fatal(http.ListenAndServe(":8080", nil))
}}
"""
DATABASE = """package database

import (
\t"database/sql"
\t"fmt"
\t"os"

\t_ "github.com/lib/pq"
)

func Connect() (*sql.DB, error) {
\tdb, err := sql.Open("postgres", fmt.Sprintf("host=%s dbname=tasks", os.Getenv("DB_HOST")))
\tif err != nil {
\t\treturn nil, err
\t}
\tdb.SetMaxOpenConns(20)
\treturn db, nil
}
"""
USER_MAIN = f"""package main

import "{MODULE}/pkg/database"

func main() {{
\tdb, _ := database.Connect()
\tdefer db.Close()
}}
"""


def _tree(gateway_main: str = GATEWAY_MAIN) -> dict[str, str]:
    return {
        "go.mod": f"module {MODULE}\n\ngo 1.22\n\nrequire (\n\tgithub.com/lib/pq v1.10.9\n"
                  "\tgorm.io/gorm v1.31.1\n\tgoogle.golang.org/grpc v1.60.0\n)\n",
        "gateway/main.go": gateway_main,
        "pkg/auth/jwt.go": "package auth\n\nimport \"strings\"\n\n"
                           "func Check(t string) bool { return strings.HasPrefix(t, \"B\") }\n",
        "pkg/database/postgres.go": DATABASE,
        "services/user-service/main.go": USER_MAIN,
        # the folders the images are built from, as Taskflow's Makefile names them
        ".pool-advisor.toml": '[[workloads]]\nname = "gateway"\nsource = "gateway"\n\n'
                              '[[workloads]]\nname = "user-service"\n'
                              'source = "services/user-service"\n',
        "k8s/postgres.yaml": SERVER, "k8s/users.yaml": USERS, "k8s/gateway.yaml": GATEWAY,
    }


def test_a_go_gateway_given_the_db_secret_opens_no_connection(tmp_path):
    write(tmp_path, _tree())
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert [c.who for c in budget.contributions] == ["user-service"], budget
    assert budget.peak == (2 + 1) * 20 and not budget.peak_is_floor, budget
    assert not [f for f in result.findings if f.code == "PA106"], result.findings
    assert any("gateway" in n and "imports no database driver or pool" in n
               and "not counted as its client" in n for n in result.notices), result.notices


def test_a_gateway_importing_the_database_package_stays_a_client(tmp_path):
    main = GATEWAY_MAIN.replace(f'\t"{MODULE}/pkg/auth"\n',
                                f'\t"{MODULE}/pkg/auth"\n\t"{MODULE}/pkg/database"\n')
    main = main.replace("\t_ = auth.Check\n", "\t_ = auth.Check\n\t_, _ = database.Connect()\n")
    write(tmp_path, _tree(main))
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert sorted(c.who for c in budget.contributions) == ["gateway", "user-service"], budget


def test_a_host_in_an_absent_secret_is_not_a_floor_for_a_go_binary_without_driver(tmp_path):
    # GoConnect: DATABASE_HOST from a Secret the repository does not hold
    gateway = GATEWAY.replace(
        '          envFrom: [{secretRef: {name: app-secrets}}]\n',
        "          - {name: DATABASE_HOST, valueFrom: {secretKeyRef: {name: goconnect-secrets,"
        " key: database-host}}}\n").replace(
        'env: [{name: GRPC_PORT, value: "50051"}]', 'env:\n          - {name: GRPC_PORT, '
        'value: "50051"}')
    write(tmp_path, {**_tree(), "k8s/gateway.yaml": gateway})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert [c.who for c in budget.contributions] == ["user-service"], budget
    assert budget.peak == (2 + 1) * 20 and not budget.peak_is_floor, budget
    assert budget.unplaced_clients == [], budget


def _go(path: str, text: str) -> AppFile:
    return AppFile(path=path, rel=path, kind="go", text=text)


def test_go_imports_no_database_is_pure():
    mod = AppFile(path="go.mod", rel="../go.mod", kind="go-mod", text=f"module {MODULE}\n")
    auth = _go("pkg/auth/jwt.go", "package auth\n")
    assert go_imports_no_database([_go("gateway/main.go", GATEWAY_MAIN), auth, mod])
    # the module package it imports was not read: it may open one
    assert go_imports_no_database([_go("gateway/main.go", GATEWAY_MAIN), mod]) is None
    for driver in ("database/sql", "github.com/jackc/pgx/v5/pgxpool", "gorm.io/gorm",
                   "github.com/jmoiron/sqlx", "github.com/lib/pq", "entgo.io/ent"):
        text = GATEWAY_MAIN.replace('\t"log"\n', f'\t"log"\n\t"{driver}"\n')
        assert go_imports_no_database([_go("gateway/main.go", text), auth, mod]) is None
    assert go_imports_no_database([_go("gateway/main.go", GATEWAY_MAIN), auth]) is None
    # the owner's other module, a kit whose name says nothing of the driver it may wrap
    kit = GATEWAY_MAIN.replace('\t"log"\n', '\t"log"\n\t"github.com/acme/platform/kit"\n')
    assert kit != GATEWAY_MAIN
    assert go_imports_no_database([_go("gateway/main.go", kit), auth, mod]) is None
    other = GATEWAY_MAIN.replace('\t"log"\n', '\t"log"\n\t"github.com/redis/go-redis/v9"\n')
    assert go_imports_no_database([_go("gateway/main.go", other), auth, mod])


def test_a_go_gateway_given_the_db_host_in_its_env_opens_no_connection(tmp_path):
    # DATABASE_HOST=postgres written in the gateway's env, as beside the services using it
    gateway = GATEWAY.replace('env: [{name: GRPC_PORT, value: "50051"}]',
                              'env: [{name: GRPC_PORT, value: "50051"}, '
                              '{name: DB_HOST, value: postgres}]')
    write(tmp_path, {**_tree(), "k8s/gateway.yaml": gateway})
    result = run_check([str(tmp_path)], CheckOptions())
    (budget,) = result.budgets
    assert [c.who for c in budget.contributions] == ["user-service"], budget
    assert budget.peak == (2 + 1) * 20 and not budget.peak_is_floor, budget
    assert any("gateway: names database host 'postgres'" in n and "opens no connection" in n
               for n in result.notices), result.notices
