"""A Go DSN whose default is written in the code (audit 9b D7: heilrake/go-microservice's
driver-service, `getenv("DATABASE_URL", "postgres://...@driver-postgres...")`, printed as
a client that names no database host). When the container does not set the variable,
the code's default names the server, cited at its .go line."""

from pathlib import Path

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container

GO_MOD = "module example.com/shop\n\ngo 1.22\n\nrequire github.com/jackc/pgx/v5 v5.7.1\n"
HELPER = ('package main\n\nimport (\n\t"database/sql"\n\t"os"\n\n'
          '\t_ "github.com/jackc/pgx/v5/stdlib"\n)\n\n'
          "func getenv(key, fallback string) string {\n"
          "\tif v, ok := os.LookupEnv(key); ok {\n\t\treturn v\n\t}\n\treturn fallback\n}\n\n"
          "func main() {\n"
          '\tdsn := getenv("DATABASE_URL", "postgres://o:o@orders-db:5432/orders")\n'
          '\tdb, _ := sql.Open("pgx", dsn)\n\tdb.SetMaxOpenConns(40)\n}\n')
EMPTY_CHECK = ('package main\n\nimport (\n\t"database/sql"\n\t"os"\n\n'
               '\t_ "github.com/lib/pq"\n)\n\n'
               "func main() {\n"
               '\tdsn := os.Getenv("ORDERS_DSN")\n'
               '\tif dsn == "" {\n\t\tdsn = "postgres://o@orders-db/orders"\n\t}\n'
               '\tdb, _ := sql.Open("postgres", dsn)\n\tdb.SetMaxOpenConns(7)\n}\n')


def _found(tmp_path: Path, main: str, env=None):
    for name, text in {"go.mod": GO_MOD, "cmd/main.go": main}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return pools_for_container(container(env or {}, command=("/orders",)),
                               scan_app_dir(Root.of(tmp_path), ""))


def test_a_getenv_helper_s_fallback_names_the_server_when_the_variable_is_unset(tmp_path):
    (pool,) = _found(tmp_path, HELPER).pools
    assert pool.size.value == 40
    assert pool.route is not None and pool.route.host == "orders-db"
    assert pool.route.source.path == "cmd/main.go" and pool.route.source.line == 18
    # the container sets the variable: the code's default is not what runs
    (pool,) = _found(tmp_path, HELPER, env={"DATABASE_URL": "postgres://o@other-db/o"}).pools
    assert pool.route is not None and pool.route.host == "other-db"


def test_an_empty_check_after_os_getenv_gives_the_default(tmp_path):
    (pool,) = _found(tmp_path, EMPTY_CHECK).pools
    assert pool.size.value == 7
    assert pool.route is not None and pool.route.host == "orders-db"
    assert pool.route.source.line == 13
    # the container sets the variable: its value, not the literal the code assigns
    (pool,) = _found(tmp_path, EMPTY_CHECK, env={"ORDERS_DSN": "postgres://o@main-db/o"}).pools
    assert pool.route is not None and pool.route.host == "main-db"
