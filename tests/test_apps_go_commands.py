"""A Go module with one main package per service (backend/cmd/<service>, built by one
Dockerfile as `go build ./cmd/$SERVICE_NAME`): a workload whose image is named like a
command is read from that command and the module's packages it imports, transitively,
and no others. openreplay/openreplay's sink, db, ender, http... open their pgx v4 pool
in backend/pkg/db/postgres/pool and were clients of unknown size (a floor of 1 per pod)."""

from __future__ import annotations

from advisor.engine.check import CheckOptions, run_check, scan
from advisor.read.apps.source import go_imports, scan_app_dir
from advisor.read.fs import Root
from tests.tree_helpers import POSTGRES_DB, deployment, write

GO_MOD = "module acme/backend\n\ngo 1.22\n\nrequire github.com/jackc/pgx/v4 v4.18.3\n"


def _pool_package(max_conns: int | None) -> str:
    setting = f"\tcfg.MaxConns = {max_conns}\n" if max_conns is not None else ""
    return ("package db\n\nimport (\n\t\"context\"\n\n"
            "\t\"github.com/jackc/pgx/v4/pgxpool\"\n)\n\n"
            "func Open(ctx context.Context, url string) (*pgxpool.Pool, error) {\n"
            "\tcfg, err := pgxpool.ParseConfig(url)\n"
            "\tif err != nil {\n\t\treturn nil, err\n\t}\n"
            f"{setting}"
            "\treturn pgxpool.ConnectConfig(ctx, cfg)\n}\n")


MODULE = {
    "backend/go.mod": GO_MOD,
    "backend/Dockerfile": ("FROM golang:1.22 AS build\nARG SERVICE_NAME\nCOPY . .\n"
                           "RUN go build -o service ./cmd/$SERVICE_NAME\n"),
    # sink -> internal/app (aliased import) -> pkg/db: 7 per pod
    "backend/cmd/sink/main.go": ("package main\n\nimport (\n\t\"os\"\n\n"
                                 "\tapp \"acme/backend/internal/app\"\n)\n\n"
                                 "func main() { app.Run(os.Getenv(\"DATABASE_URL\")) }\n"),
    "backend/internal/app/app.go": ("package app\n\nimport \"acme/backend/pkg/db\"\n\n"
                                    "func Run(url string) { db.Open(nil, url) }\n"),
    "backend/pkg/db/db.go": _pool_package(7),
    "backend/pkg/db/db_test.go": "package db\n\nfunc init() { cfg.MaxConns = 99 }\n",
    # reports opens its own pool of 30, which sink never imports
    "backend/cmd/reports/main.go": ("package main\n\nimport \"acme/backend/pkg/reports\"\n\n"
                                    "func main() { reports.Open(nil, \"\") }\n"),
    "backend/pkg/reports/reports.go": _pool_package(30).replace("package db", "package reports"),
    # a second application folder: no "only application folder" fallback
    "ui/package.json": '{"name": "ui", "dependencies": {"react": "18"}}\n',
    "ui/Dockerfile": "FROM node:20\n",
}


def _deployment(name: str, image: str, replicas: int) -> str:
    return deployment(name, image, {"DATABASE_URL": "postgres://app@db:5432/app"},
                      replicas=replicas)


def test_go_imports_both_forms():
    text = ('package main\n\nimport "fmt"\nimport x "acme/a"\n\nimport (\n\t"os"\n'
            '\t_ "acme/b"\n\tc "acme/c" // why\n)\n\nfunc main() {}\n')
    assert go_imports(text) == {"fmt", "acme/a", "os", "acme/b", "acme/c"}


def test_a_command_folder_reads_the_module_packages_it_imports_only(tmp_path):
    write(tmp_path, MODULE)
    app = scan_app_dir(Root.of(tmp_path), "backend/cmd/sink")
    shown = sorted(f.path for f in app.files)
    assert shown == ["backend/cmd/sink/main.go", "backend/go.mod",
                     "backend/internal/app/app.go", "backend/pkg/db/db.go"]
    # a module of its own is read whole, as before: nothing added twice
    whole = scan_app_dir(Root.of(tmp_path), "backend")
    assert len({f.path for f in whole.files}) == len(whole.files)


def test_a_package_below_the_command_folder_is_read_once(tmp_path):
    """A service folder without go.mod of its own (go/app/bi of a module at go/) importing
    its own internal/ package: that package is walked with the folder, not added again
    (its sql.Open was read twice: two pools, PA102 twice)."""
    write(tmp_path, {"backend/go.mod": GO_MOD,
                     "backend/app/bi/main.go": (
                         "package main\n\nimport \"acme/backend/app/bi/internal/data\"\n\n"
                         "func main() { data.Open(nil, \"\") }\n"),
                     "backend/app/bi/internal/data/db.go": _pool_package(7)})
    app = scan_app_dir(Root.of(tmp_path), "backend/app/bi")
    shown = [f.path for f in app.files]
    assert sorted(shown) == ["backend/app/bi/internal/data/db.go", "backend/app/bi/main.go",
                             "backend/go.mod"]


def test_each_service_counts_the_pool_of_the_command_its_image_names(tmp_path):
    write(tmp_path, {**MODULE, "k8s/db.yaml": POSTGRES_DB,
                     "k8s/sink.yaml": _deployment("sink", "ghcr.io/acme/sink:1.4", 3),
                     "k8s/reports.yaml": _deployment("reports-api", "ghcr.io/acme/reports:1.4", 1)})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.peak == 3 * 7 + 1 * 30, result.notices
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    (pool,) = next(c for c in topo.clients if c.name == "sink").pools
    assert pool.size.source.label() == "backend/pkg/db/db.go:14"
    assert any("backend/cmd/sink/" in n for n in topo.notices)


def test_an_unset_max_conns_is_the_pgx_default_of_the_version_go_mod_requires(tmp_path):
    write(tmp_path, {**MODULE, "backend/pkg/db/db.go": _pool_package(None),
                     "k8s/db.yaml": POSTGRES_DB,
                     "k8s/sink.yaml": _deployment("sink", "ghcr.io/acme/sink:1.4", 2)})
    topo = scan([str(tmp_path)], CheckOptions(cache=False)).topology
    (client,) = topo.clients
    (pool,) = client.pools
    assert "pgx v4 default: max(4, runtime.NumCPU())" in pool.size.source.label()
    assert pool.size.value >= 4


def test_an_image_no_command_is_named_like_stays_unknown(tmp_path):
    write(tmp_path, {**MODULE, "k8s/db.yaml": POSTGRES_DB,
                     "k8s/web.yaml": _deployment("web", "ghcr.io/acme/web:1", 2)})
    (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
    assert budget.unknown_clients == ["web"]
