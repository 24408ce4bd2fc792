"""An application source that is a shared build context (the repository root, built by
docker-compose with several Dockerfiles) is read as what the workload's Dockerfile copies
into its image. FCFColin/backtest-platform: Dockerfile.backend copies packages/shared and
packages/backend from the root; the Go data-fetcher/ beside them is another image's, and
its two pgxpool pools were charged to the api pods (35 a pod, not node-postgres's 20)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, deployment, write

URL = "postgresql://app:pw@db:5432/app"
TREE = {
    "package.json": '{"name": "shop", "private": true, "dependencies": {"pg": "8.11.3"}}\n',
    "docker-compose.yml": """
        services:
          api:
            build: {context: ., dockerfile: Dockerfile.api}
          fetcher:
            build: {context: ., dockerfile: fetcher/Dockerfile}
        """,
    "packages/api/package.json": '{"name": "api", "dependencies": {"pg": "8.11.3"}}\n',
    "packages/api/src/db.js": """
        const { Pool } = require('pg');
        module.exports = new Pool({ connectionString: process.env.DATABASE_URL, max: 20 });
        """,
    "fetcher/go.mod": "module example.com/fetcher\n\ngo 1.22\n",
    "fetcher/Dockerfile": "FROM golang:1.22\nCOPY fetcher ./fetcher\nCMD [\"/fetcher\"]\n",
    "fetcher/db.go": """
        package main

        import "github.com/jackc/pgx/v5/pgxpool"

        func open(url string) {
            cfg, _ := pgxpool.ParseConfig(url)
            cfg.MaxConns = 15
            pgxpool.NewWithConfig(nil, cfg)
        }
        """,
    "k8s/db.yaml": POSTGRES_DB,
    "k8s/api.yaml": deployment("api", "acme/api:1", {"DATABASE_URL": URL}),
}


def _run(tmp_path, dockerfile: str):
    root = write(tmp_path, {**TREE, "Dockerfile.api": dockerfile})
    result = run_check([str(root)], CheckOptions(cache=False))
    return result, next(b for b in result.budgets if b.server == "db")


def test_a_folder_the_dockerfile_does_not_copy_is_not_the_image_s(tmp_path):
    result, db = _run(tmp_path, "FROM node:20\nCOPY package.json ./\n"
                      "COPY packages/api/ packages/api/\n"
                      "CMD [\"node\", \"packages/api/src/db.js\"]\n")
    assert [(c.who, c.total) for c in db.contributions] == [("api", 2 * 20)]
    assert any("read as what Dockerfile.api copies into its image (packages/api)" in n
               for n in result.notices)


def test_copying_the_whole_context_reads_it_all(tmp_path):
    _, db = _run(tmp_path, "FROM node:20\nCOPY . .\nCMD [\"node\", \"packages/api/src/db.js\"]\n")
    assert [(c.who, c.total) for c in db.contributions] == [("api", 2 * (20 + 15))]
