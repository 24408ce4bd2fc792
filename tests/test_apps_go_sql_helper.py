"""Go database/sql opened through a helper whose driver name is a parameter or a
constant of another file (audit 7a D1: katib's `sql.Open(driverName, dsn)` in a
helper was dropped, and its server printed "fits, peak 0"), and a PostgreSQL URL in a
mounted config file that names no server here (audit 7a D8)."""

from pathlib import Path

from advisor.engine.check import CheckOptions, run_check
from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container, product
from tests.tree_helpers import POSTGRES_DB, write

GO_MOD = "module example.com/store\n\ngo 1.22\n\nrequire github.com/lib/pq v1.10.9\n"
HELPER = ('package dbutil\n\nimport "database/sql"\n\n'
          "// Connect opens the pool and returns it.\n"
          "func Connect(kind string, dsn string) (*sql.DB, error) {\n"
          "\tdb, err := sql.Open(kind, dsn)\n\treturn db, err\n}\n")
STORE = ('package store\n\nimport (\n\t_ "github.com/lib/pq"\n\n'
         '\t"example.com/store/internal/dbutil"\n)\n\n'
         'const engine = "postgres"\n\n'
         "func New(dsn string) {\n\tdb, _ := dbutil.Connect(engine, dsn)\n\t_ = db\n}\n")


def _found(tmp_path: Path, files: dict[str, str], env=None):
    for name, text in {"go.mod": GO_MOD, **files}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return pools_for_container(container(env or {}, command=("/store",)),
                               scan_app_dir(Root.of(tmp_path), ""))


def test_a_helper_s_driver_parameter_is_read_from_its_callers(tmp_path):
    found = _found(tmp_path, {"internal/dbutil/db.go": HELPER, "store/store.go": STORE},
                   env={"DATABASE_URL": "postgres://s@store-db/s"})
    (pool,) = found.pools
    assert pool.bound == "unbounded"
    assert 'driver "postgres" passed at store/store.go:12' in pool.note
    assert pool.route is not None and pool.route.host == "store-db"
    # callers passing only another database's driver: no pool
    mysql = STORE.replace('"postgres"', '"mysql"')
    found = _found(tmp_path, {"internal/dbutil/db.go": HELPER, "store/store.go": mysql})
    assert found.pools == []


def test_set_max_open_conns_at_the_caller_or_in_the_helper_is_read(tmp_path):
    at_caller = STORE.replace("\t_ = db\n", "\tdb.SetMaxOpenConns(12)\n")
    found = _found(tmp_path, {"internal/dbutil/db.go": HELPER, "store/store.go": at_caller})
    assert product(found.pools) == "1 x 12 = 12"
    in_helper = HELPER.replace("\treturn db", "\tdb.SetMaxOpenConns(9)\n\treturn db")
    found = _found(tmp_path, {"internal/dbutil/db.go": in_helper, "store/store.go": STORE})
    assert product(found.pools) == "1 x 9 = 9"


def test_a_driver_constant_of_another_file_of_the_package(tmp_path):
    opener = ('package store\n\nimport "database/sql"\n\n'
              "func Open(dsn string) (*sql.DB, error) {\n"
              "\treturn sqlx.Connect(driverName, dsn)\n}\n")
    found = _found(tmp_path, {"store/open.go": opener,
                              "store/consts.go": 'package store\n\nconst driverName = "pgx"\n'})
    (pool,) = found.pools
    assert pool.bound == "unbounded" and pool.size.source.path == "store/open.go"
    # qualified by the package that holds it
    opener = opener.replace("(driverName,", "(names.Driver,")
    found = _found(tmp_path, {"store/open.go": opener,
                              "store/consts.go": "package store\n",
                              "names/names.go": 'package names\n\nconst Driver = "postgres"\n'})
    assert len(found.pools) == 1


def test_a_driver_not_read_is_a_possible_postgresql_pool_when_the_module_has_a_driver(
        tmp_path):
    body = ('package main\n\nimport (\n\t"database/sql"\n\t_ "github.com/lib/pq"\n)\n\n'
            "func main() {\n\tdb, _ := sql.Open(cfg.Driver, cfg.DSN)\n\t_ = db\n}\n")
    found = _found(tmp_path, {"main.go": body})
    (pool,) = found.pools
    assert pool.bound == "unbounded"
    assert "not read statically" in pool.note and "github.com/lib/pq" in pool.note
    assert any("counted as a possible PostgreSQL pool" in n for n in found.notices)
    # no PostgreSQL driver anywhere in the module: not counted, and said
    found = _found(tmp_path, {"go.mod": "module example.com/store\n",
                              "main.go": body.replace('\t_ "github.com/lib/pq"\n', "")})
    assert found.pools == []
    assert any("imports no PostgreSQL driver" in n for n in found.notices), found.notices


def test_a_helper_no_code_calls_is_said_not_counted(tmp_path):
    # a generated client's Open, called only from a test-support package (enttest)
    enttest = ('package enttest\n\nimport "example.com/store/internal/dbutil"\n\n'
               "func Open(d, s string) { dbutil.Connect(d, s) }\n")
    found = _found(tmp_path, {"internal/dbutil/db.go": HELPER,
                              "internal/dbutil/enttest/enttest.go": enttest})
    assert found.pools == []
    assert any("no code in the module calls: not counted" in n for n in found.notices)
    # a function of the same name in another package is no caller of this one
    other = ('package other\n\nfunc Connect(kind, dsn string) {}\n\n'
             'func run() { Connect("postgres", "x") }\n')
    found = _found(tmp_path, {"internal/dbutil/db.go": HELPER, "other/other.go": other})
    assert found.pools == []


MOUNTED_API = """apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: api
          image: acme/api:1
          args: ["--config", "/etc/api/config.yaml"]
          volumeMounts:
            - {name: config, mountPath: /etc/api}
      volumes:
        - name: config
          configMap: {name: api-config}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: api-config}
data:
  config.yaml: |
    kafka:
      broker: kafka-headless:9092
    postgres:
      url: postgres://api:pw@other-postgres:5432/api
"""


def test_a_mounted_config_s_postgresql_url_to_no_server_here_is_that_host(tmp_path):
    """The host of a mounted config file's postgres:// URL names a server that is not
    here (a chart's DSN under another release name): the workload connects there
    (PA107), not "names no database host in its ... mounted configuration"."""
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/api.yaml": MOUNTED_API,
                     "api/package.json": '{"name": "api"}\n', "api/Dockerfile": "FROM node\n",
                     "api/db.js": "const { Pool } = require('pg');\n"
                                  "module.exports = new Pool({ max: 6 });\n"})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert not any("names no database host" in n for n in result.notices), result.notices
    pa107 = [f.message for f in result.findings if f.code == "PA107"]
    assert len(pa107) == 1 and "'other-postgres'" in pa107[0]


# audit 8b D2 (direktiv's shape): the service's pool in initDB with its own limit, and a
# gorm.Open in a non-_test.go file that only tests reach
INIT_DB = ('package main\n\nimport (\n\t"gorm.io/driver/postgres"\n\t"gorm.io/gorm"\n)\n\n'
           "func initDB(dsn string) *gorm.DB {\n"
           "\tdb, _ := gorm.Open(postgres.New(postgres.Config{DSN: dsn}), &gorm.Config{})\n"
           "\tsqlDB, _ := db.DB()\n\tsqlDB.SetMaxOpenConns(16)\n\treturn db\n}\n\n"
           'func main() { initDB("x") }\n')
SECOND = ('package store\n\nimport (\n{imports}\t"gorm.io/driver/postgres"\n'
          '\t"gorm.io/gorm"\n)\n\n'
          "func {outer}({param}) (*gorm.DB, error) {{ return open(dsn) }}\n\n"
          "func open(dsn string) (*gorm.DB, error) {{\n"
          "\treturn gorm.Open(postgres.New(postgres.Config{{DSN: dsn}}), &gorm.Config{{}})\n}}\n")


def _second(outer="Open", param="dsn string", imports=""):
    return SECOND.format(outer=outer, param=param, imports=imports)


def test_a_second_pool_never_takes_another_function_s_limit(tmp_path):
    """The second *sql.DB sets no SetMaxOpenConns: database/sql's default, no limit, not
    initDB's 16 (it printed 2 pools of 16 each, both citing initDB's line)."""
    caller = 'package api\n\nimport "example.com/store/store"\n\nfunc Run() { store.Open("x") }\n'
    found = _found(tmp_path, {"main.go": INIT_DB, "store/store.go": _second(),
                              "api/api.go": caller})
    by_bound = {p.bound: p for p in found.pools}
    assert set(by_bound) == {"fixed", "unbounded"}, found.pools
    assert by_bound["fixed"].size.value == 16
    assert by_bound["fixed"].size.source.line == 11
    assert by_bound["unbounded"].size.source.path == "store/store.go"


def test_a_pool_only_tests_reach_is_not_counted(tmp_path):
    """direktiv pkg/database: NewTestDB(t *testing.T) starts a testcontainers PostgreSQL and
    calls newTestPostgres, whose gorm.Open only tests reach."""
    used_by_tests = ('package store_test\n\nimport "testing"\n\n'
                     'func TestX(t *testing.T) { store.Setup("x") }\n')
    for files, why in [
        ({"store/store.go": _second(imports='\t"github.com/testcontainers/testcontainers-go"\n')},
         "imports testcontainers-go"),
        ({"store/store.go": _second("NewDB", "t *testing.T, dsn string", '\t"testing"\n')},
         "open is referenced only from tests"),
        ({"store/store.go": _second("newTestStore")}, "open is referenced only from tests"),
        ({"store/store.go": _second("Setup"), "store/store_test.go": used_by_tests},
         "open is referenced only from tests"),
    ]:
        for old in tmp_path.glob("store/*"):
            old.unlink()
        found = _found(tmp_path, {"main.go": INIT_DB, **files})
        assert [(p.size.value, p.bound) for p in found.pools] == [(16, "fixed")], files
        assert any("in test support" in n and why in n for n in found.notices), found.notices
    # also called by the service: counted (and unbounded: it sets no limit)
    run = 'package api\n\nimport "example.com/store/store"\n\nfunc Run() { store.Setup("x") }\n'
    found = _found(tmp_path, {"main.go": INIT_DB, "store/store.go": _second("Setup"),
                              "store/store_test.go": used_by_tests, "api/api.go": run})
    assert sorted(p.bound for p in found.pools) == ["fixed", "unbounded"]


def test_a_limit_set_in_a_method_applies_to_the_module_s_one_pool(tmp_path):
    """The pool kept in a struct field and configured in another function: with one opener
    in the module there is no other pool it could be on."""
    store = ('package store\n\nimport (\n\t"database/sql"\n\t_ "github.com/lib/pq"\n)\n\n'
             "type S struct{ db *sql.DB }\n\n"
             'func New(dsn string) *S {\n\tdb, _ := sql.Open("postgres", dsn)\n'
             "\treturn &S{db: db}\n}\n\n"
             "func (s *S) Tune() { s.db.SetMaxOpenConns(7) }\n")
    found = _found(tmp_path, {"store/store.go": store})
    assert product(found.pools) == "1 x 7 = 7"


# review1 F1/F2: two pools, main's and run's, each with its own limit
TWO_POOLS = ('package main\n\nimport (\n\t"database/sql"\n\t"flag"\n\t"os"\n\n'
             '\t_ "github.com/lib/pq"\n)\n\n'
             "func main() {\n\tflag.Parse()\n"
             '\tmeta, _ := sql.Open("postgres", os.Getenv("DATABASE_URL"))\n'
             "\tmeta.SetMaxOpenConns(30)\n\tdefer meta.Close()\n\trun()\n}\n\n"
             'func run() {\n\tdb, _ := sql.Open("postgres", os.Getenv("DATABASE_URL"))\n'
             "\tdb.SetMaxOpenConns(5)\n\tdefer db.Close()\n\tselect {}\n}\n")


def _sizes(found):
    return sorted((p.size.value, p.bound, p.size.source.line) for p in found.pools)


def test_a_call_after_a_closing_paren_is_a_use_not_a_declaration(tmp_path):
    """`defer meta.Close()` then `run()` tokenizes as `) run (`: a call, not run's
    declaration. With a test calling run too, run was taken for test support and its
    pool dropped (fits 40 <= 47, true total 50)."""
    test = 'package main\n\nimport "testing"\n\nfunc TestRun(t *testing.T) { go run() }\n'
    found = _found(tmp_path, {"main.go": TWO_POOLS, "main_test.go": test})
    assert _sizes(found) == [(5, "fixed", 21), (30, "fixed", 14)]
    assert not any("test support" in n for n in found.notices), found.notices
    # resolve: a helper's only caller right after a `)` is still its caller
    helper = TWO_POOLS.replace("\trun()\n", '\tconnect("postgres")\n').replace(
        "func run() {\n", "func connect(kind string) {\n").replace(
        'sql.Open("postgres", os.Getenv("DATABASE_URL"))\n\tdb.', 'sql.Open(kind, "x")\n\tdb.')
    found = _found(tmp_path, {"main.go": helper, "main_test.go": "package main\n"})
    assert _sizes(found) == [(5, "fixed", 21), (30, "fixed", 14)], found.notices


def test_each_limit_is_on_the_pool_its_receiver_holds(tmp_path):
    """main's meta.SetMaxOpenConns(30) and run's db.SetMaxOpenConns(5): 30 + 5, not the
    last limit in the file (5) for both pools."""
    found = _found(tmp_path, {"main.go": TWO_POOLS})
    assert _sizes(found) == [(5, "fixed", 21), (30, "fixed", 14)]
    # a second pool of the same function without a limit of its own: no limit
    one_func = ('package main\n\nimport (\n\t"database/sql"\n\t_ "github.com/lib/pq"\n)\n\n'
                'func main() {\n\ta, _ := sql.Open("postgres", "x")\n\ta.SetMaxOpenConns(5)\n'
                '\tb, _ := sql.Open("postgres", "y")\n\t_, _ = a, b\n}\n')
    found = _found(tmp_path, {"main.go": one_func})
    assert _sizes(found) == [(0, "unbounded", 11), (5, "fixed", 10)]


def test_a_returned_pool_takes_the_limit_its_caller_sets_on_it(tmp_path):
    """`db := openDB(); db.SetMaxOpenConns(30)`: the caller's variable holds the pool
    openDB returns; the other pool (run's, no limit) stays unbounded."""
    main = ('package main\n\nimport (\n\t"database/sql"\n\t_ "github.com/lib/pq"\n)\n\n'
            'func openDB() *sql.DB {\n\tdb, _ := sql.Open("postgres", "x")\n\treturn db\n}\n\n'
            "func main() {\n\tdb := openDB()\n\tdb.SetMaxOpenConns(30)\n\trun()\n}\n\n"
            'func run() {\n\tother, _ := sql.Open("postgres", "y")\n\t_ = other\n}\n')
    found = _found(tmp_path, {"main.go": main})
    assert _sizes(found) == [(0, "unbounded", 20), (30, "fixed", 15)]
    # a limit on something that is none of the pools' names, in a function that reaches
    # both: whether it bounds either is not known; neither pool borrows it
    found = _found(tmp_path, {"main.go": main.replace("\tdb.SetMaxOpenConns(30)\n",
                                                      "\tpool().SetMaxOpenConns(30)\n")})
    assert found.pools == []
    assert len([u for u in found.unknown if "is not tied to it" in u]) == 2, found.unknown


def test_test_references_are_read_once_per_source_tree(tmp_path, monkeypatch):
    """review1 F8: which functions only tests reach is worked out from the files alone,
    so a second container reading the same source tokenizes no file again (it re-read
    every _test.go naming the function, about 4 s per container on 1,500 of them)."""
    from advisor.read.apps import gosource

    files = {"main.go": TWO_POOLS}
    for k in range(5):
        files[f"p{k}/a_test.go"] = (f"package p{k}\n\nimport \"testing\"\n\n"
                                    "func TestA(t *testing.T) { run() }\n")
    for name, text in {"go.mod": GO_MOD, **files}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    app = scan_app_dir(Root.of(tmp_path), "")
    calls: list[int] = []
    real = gosource.tokenize
    monkeypatch.setattr(gosource, "tokenize", lambda text: calls.append(1) or real(text))
    first = pools_for_container(container({}, command=("/a",)), app)
    assert len(first.pools) == 2 and calls
    calls.clear()
    second = pools_for_container(container({"X": "1"}, command=("/b",)), app)
    assert len(second.pools) == 2
    assert calls == []
