"""audit 35 (Chandu00756/Taskflow's shape): services/<name> main packages of one module
share internal/db, which holds two openers: Open (gorm, SetMaxOpenConns 60), called by
every service, and Connect (database/sql, SetMaxOpenConns 40), called by billing only.
orders' binary never runs Connect, yet both pools were counted: 100 a pod where 60 are.
Written in our own words."""

from __future__ import annotations

from advisor.engine.check import CheckOptions, run_check
from tests.tree_helpers import POSTGRES_DB, deployment, write

DB = """package db

import (
\t"database/sql"

\t_ "github.com/lib/pq"
\t"gorm.io/driver/postgres"
\t"gorm.io/gorm"
)

func Open(dsn string) (*gorm.DB, error) {
\tg, err := gorm.Open(postgres.Open(dsn), &gorm.Config{})
\tif err != nil {
\t\treturn nil, err
\t}
\ts, _ := g.DB()
\ts.SetMaxOpenConns(60)
\treturn g, nil
}

func Connect(dsn string) (*sql.DB, error) {
\td, err := sql.Open("postgres", dsn)
\tif err != nil {
\t\treturn nil, err
\t}
\td.SetMaxOpenConns(40)
\treturn d, nil
}
"""

TREE = {
    "go.mod": "module example.com/shop\n\ngo 1.24\n\nrequire (\n\tgithub.com/lib/pq v1.10.9\n"
              "\tgorm.io/driver/postgres v1.6.0\n\tgorm.io/gorm v1.31.1\n)\n",
    "internal/db/db.go": DB,
    "services/orders/main.go": "package main\n\nimport \"example.com/shop/internal/db\"\n\n"
                               "func main() { db.Open(\"\") }\n",
    "services/billing/main.go": "package main\n\nimport \"example.com/shop/internal/db\"\n\n"
                                "func main() { db.Connect(\"\") }\n",
    "build/docker/Dockerfile.orders": ("FROM golang:1.24 AS b\nWORKDIR /src\nCOPY . .\n"
                                       "RUN go build -o /orders ./services/orders\n"
                                       "FROM alpine\nCOPY --from=b /orders /orders\n"),
    "docker-compose.yml": ("services:\n  orders:\n    image: shop/orders:latest\n    build:\n"
                           "      context: .\n      dockerfile: build/docker/Dockerfile.orders\n"),
    "k8s/db.yaml": POSTGRES_DB,
    "k8s/orders.yaml": deployment("orders", "shop/orders:latest",
                                  {"DATABASE_URL": "postgres://app@db:5432/app"}, replicas=2),
}


def test_a_pool_no_file_of_the_binary_references_is_not_counted(tmp_path):
    write(tmp_path, TREE)
    r = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = r.budgets
    assert budget.peak == 2 * 60  # 2 pods (the helper sets no surge) x 60, not x (60 + 40)
    assert any("func Connect" in n and "not counted" in n for n in r.notices)


def test_a_pool_the_binary_references_is_counted(tmp_path):
    tree = dict(TREE)
    tree["services/orders/main.go"] = ("package main\n\nimport \"example.com/shop/internal/db\"\n"
                                       "\nfunc main() { db.Open(\"\"); db.Connect(\"\") }\n")
    write(tmp_path, tree)
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.peak == 2 * (60 + 40)
