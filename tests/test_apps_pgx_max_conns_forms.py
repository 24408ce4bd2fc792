"""pgxpool's size written in forms other than `cfg.MaxConns = <literal>` or a URL
literal: a conversion (`cfg.MaxConns = int32(40)`: MaxConns is an int32, pgx v5
pgxpool/pool.go Config.MaxConns), an expression not read, and `pool_max_conns` in the
format string of fmt.Sprintf. Each read as the pgx v5 default max(4, runtime.NumCPU())
before: 4 per pod on the assumed 4-CPU node where the code asks for 40 or 50 (a
budget of 4 x 40 = 160 > 97 printed `fits`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container, product

GO_MOD = "module example.com/svc\n\ngo 1.22\n\nrequire github.com/jackc/pgx/v5 v5.5.5\n"
HEAD = ('package store\n\nimport (\n\t"context"\n\t"fmt"\n\t"os"\n\n'
        '\t"github.com/jackc/pgx/v5/pgxpool"\n)\n\n'
        "func Open(ctx context.Context) *pgxpool.Pool {\n")


def _found(tmp_path: Path, body: str):
    (tmp_path / "go.mod").write_text(GO_MOD)
    (tmp_path / "store.go").write_text(HEAD + body + "}\n")
    return pools_for_container(
        container({"DATABASE_URL": "postgres://app@db/app"}, command=("/app",)),
        scan_app_dir(Root.of(tmp_path), ""))


@pytest.mark.parametrize("value", ["int32(40)", "40"])
def test_max_conns_in_a_conversion_is_read(tmp_path, value):
    found = _found(tmp_path, "\tcfg, _ := pgxpool.ParseConfig(os.Getenv(\"DATABASE_URL\"))\n"
                             f"\tcfg.MaxConns = {value}\n"
                             "\tp, _ := pgxpool.NewWithConfig(ctx, cfg)\n\treturn p\n")
    (pool,) = found.pools
    assert product(found.pools) == "1 x 40 = 40"
    assert pool.size.source.label() == "store.go:13"


def test_max_conns_not_read_is_unknown_not_the_default(tmp_path):
    found = _found(tmp_path, "\tcfg, _ := pgxpool.ParseConfig(os.Getenv(\"DATABASE_URL\"))\n"
                             "\tcfg.MaxConns = int32(settings.Pool)\n"
                             "\tp, _ := pgxpool.NewWithConfig(ctx, cfg)\n\treturn p\n")
    assert found.pools == []
    assert found.unknown == ["pgxpool MaxConns at store.go:13 is set to an expression not "
                             "read statically"]


def test_pool_max_conns_in_a_sprintf_format_is_read(tmp_path):
    found = _found(tmp_path, (
        "\tcfg, _ := pgxpool.ParseConfig(fmt.Sprintf(\n"
        "\t\t\"host=%s user=%s sslmode=disable pool_max_conns=50\",\n"
        "\t\tos.Getenv(\"DB_HOST\"), os.Getenv(\"DB_USER\"),\n\t))\n"
        "\tp, _ := pgxpool.NewWithConfig(ctx, cfg)\n\treturn p\n"))
    (pool,) = found.pools
    assert product(found.pools) == "1 x 50 = 50"
    assert pool.size.source.label() == "store.go:13"


def test_pool_max_conns_from_a_format_verb_is_unknown(tmp_path):
    found = _found(tmp_path, (
        "\tcfg, _ := pgxpool.ParseConfig(fmt.Sprintf(\n"
        "\t\t\"postgres://%s@db/app?sslmode=disable&pool_max_conns=%d\", u, n))\n"
        "\tp, _ := pgxpool.NewWithConfig(ctx, cfg)\n\treturn p\n"))
    assert found.pools == []
    assert found.unknown == ["pgxpool MaxConns at store.go:13 is set to an "
                             "expression not read statically"]
