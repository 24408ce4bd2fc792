"""SetMaxOpenConns(cfg.MaxConn) where `cfg := config.Load()` builds the struct with a
composite literal (abbassmortazavi/go-microservice's pkg/config: `MaxConn: 10`; the
size was unknown, PA106, 1 per pod as a floor): the literal, cited at its line, or an
env helper's variable (`env.GetInt("DB_MAX_CONNS", 25)`): the container's value, else
the code's default; anything else stays not read (never database/sql's unlimited)."""

from pathlib import Path

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container

GO_MOD = "module example.com/shop\n\ngo 1.22\n\nrequire github.com/lib/pq v1.10.9\n"
CONNECT = ('package database\n\nimport (\n\t"database/sql"\n\t"fmt"\n\n'
           '\t"example.com/shop/pkg/config"\n\t_ "github.com/lib/pq"\n)\n\n'
           "func Connect() *sql.DB {\n"
           "\tcfg := config.Load()\n"
           '\tdb, _ := sql.Open("postgres", fmt.Sprintf("host=%s", cfg.Host))\n'
           "\tdb.SetMaxIdleConns(cfg.MaxIdle)\n"
           "\tdb.SetMaxOpenConns(cfg.MaxConn)\n"
           "\treturn db\n}\n")
MAIN = ('package main\n\nimport "example.com/shop/pkg/database"\n\n'
        "func main() {\n\tdatabase.Connect()\n}\n")


def _config(max_conn: str) -> str:
    return ('package config\n\nimport "example.com/shop/pkg/env"\n\n'
            "type Config struct {\n\tHost string\n\tMaxIdle int\n"
            '\tMaxConn int `config:"DB_MAX_CONN"`\n}\n\n'
            "func Load() *Config {\n\treturn &Config{\n"
            '\t\tHost:    env.GetString("DB_HOST", "orders-db"),\n'
            "\t\tMaxIdle: 5,\n"
            f"\t\tMaxConn: {max_conn},\n\t}}\n}}\n")


def _found(tmp_path: Path, max_conn: str, env=None):
    files = {"go.mod": GO_MOD, "cmd/api/main.go": MAIN, "pkg/database/connect.go": CONNECT,
             "pkg/config/config.go": _config(max_conn)}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return pools_for_container(container(env or {"DB_HOST": "orders-db"},
                                         command=("/api",)),
                               scan_app_dir(Root.of(tmp_path), ""))


def test_the_literal_the_loader_sets_is_the_limit(tmp_path):
    found = _found(tmp_path, "10", env={"DB_HOST": "orders-db", "DB_MAX_CONN": "50"})
    (pool,) = found.pools
    # the struct tag names DB_MAX_CONN, but Load() sets 10 and reads no tag
    assert pool.size.value == 10 and pool.bound == "fixed"
    assert (pool.size.source.path, pool.size.source.line) == ("pkg/config/config.go", 15)
    assert "cfg.MaxConn from config.Load() (pkg/config/config.go:15)" in pool.note
    assert not found.unknown


def test_an_env_helper_gives_the_container_s_value_else_the_code_s_default(tmp_path):
    helper = 'env.GetInt("DB_MAX_CONNS", 25)'
    (pool,) = _found(tmp_path, helper).pools
    assert pool.size.value == 25 and pool.bound == "default"
    assert "DB_MAX_CONNS default 25 in code" in (pool.size.source.default or "")
    (pool,) = _found(tmp_path, helper, env={"DB_HOST": "orders-db",
                                            "DB_MAX_CONNS": "40"}).pools
    assert pool.size.value == 40 and pool.bound == "fixed"
    assert pool.size.source.key == "DB_MAX_CONNS"


def test_a_field_set_from_an_expression_not_read_stays_unknown(tmp_path):
    found = _found(tmp_path, "runtime.NumCPU() * 4")
    assert not found.pools  # not database/sql's unlimited default either
    assert any("SetMaxOpenConns" in why for why in found.unknown)
