"""TypeORM's ormconfig, read only when the code asks TypeORM for it: createConnection()
/ createConnections() / getConnectionOptions() without options (typeorm 0.2/0.3
ConnectionOptionsReader: TYPEORM_* variables first, then ormconfig.{env,js,...,json,
yml,yaml,xml} at the app root). An ormconfig beside an explicit DataSource is not
counted again."""

from pathlib import Path

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container, product

_MAIN = 'import { createConnection } from "typeorm";\ncreateConnection().then(() => {});\n'


def _pkg(spec: str) -> str:
    return f'{{"dependencies": {{"typeorm": "{spec}", "pg": "8"}}}}\n'


def _found(tmp_path: Path, files: dict[str, str], env=None):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return pools_for_container(container(env or {}, command=("node", "dist/main.js")),
                               scan_app_dir(Root.of(tmp_path), ""))


def test_create_connection_reads_ormconfig_json(tmp_path):
    found = _found(tmp_path, {"src/main.ts": _MAIN, "package.json": _pkg("^0.2.45"),
                              "ormconfig.json": '{\n  "type": "postgres",\n  "extra": '
                              '{\n    "max": 7\n  }\n}\n'})
    (pool,) = found.pools
    assert product(found.pools) == "1 x 7 = 7" and pool.label == "TypeORM extra.max"
    assert pool.size.source.label() == "ormconfig.json:4"


def test_ormconfig_pool_size_follows_the_version_gate(tmp_path):
    files = {"src/main.ts": _MAIN,
             "ormconfig.yml": "type: postgres\nhost: db\npoolSize: 9\n"}
    old = _found(tmp_path, {**files, "package.json": _pkg("0.2.45")})
    assert product(old.pools) == "1 x 10 = 10" and old.pools[0].bound == "default"
    new = _found(tmp_path, {**files, "package.json": _pkg("0.3.12")})
    assert product(new.pools) == "1 x 9 = 9"
    assert new.pools[0].size.source.label() == "ormconfig.yml:3"


def test_ormconfig_js_list_by_connection_name(tmp_path):
    conf = ("module.exports = [\n  { type: 'postgres', extra: { max: 4 } },\n"
            "  { name: 'reports', type: 'postgres', extra: { max: 2 } },\n"
            "  { name: 'legacy', type: 'mysql', extra: { max: 50 } },\n];\n")
    one = _found(tmp_path, {"src/main.ts": _MAIN, "package.json": _pkg("^0.2.0"),
                            "ormconfig.js": conf})
    assert product(one.pools) == "1 x 4 = 4"
    every = _found(tmp_path, {"src/main.ts": 'import { createConnections } from "typeorm";\n'
                              "createConnections();\n"})
    assert product(every.pools) == "1 x 4 + 1 x 2 = 6"


def test_typeorm_variables_win_over_the_file(tmp_path):
    files = {"src/main.ts": _MAIN, "package.json": _pkg("^0.2.0"),
             "ormconfig.json": '{"type": "postgres", "extra": {"max": 7}}\n'}
    found = _found(tmp_path, files, {"TYPEORM_CONNECTION": "postgres",
                                     "TYPEORM_DRIVER_EXTRA": '{"max": 3}'})
    (pool,) = found.pools
    assert product(found.pools) == "1 x 3 = 3"
    assert pool.size.source.label() == "k8s/app.yaml:11"
    # no size in the variables: pg-pool's 10, not the file's 7
    found = _found(tmp_path, files, {"TYPEORM_URL": "postgres://u@orders-db/orders"})
    assert product(found.pools) == "1 x 10 = 10" and found.pools[0].route.host == "orders-db"


def test_ormconfig_env_and_the_container_env_over_it(tmp_path):
    files = {"src/main.ts": _MAIN, "package.json": _pkg("^0.2.0"),
             "ormconfig.env": "TYPEORM_CONNECTION=postgres\nTYPEORM_DRIVER_EXTRA="
                              '{"max": 4}\n'}
    found = _found(tmp_path, files)
    assert product(found.pools) == "1 x 4 = 4"
    assert found.pools[0].size.source.label() == "ormconfig.env:2"
    found = _found(tmp_path, files, {"TYPEORM_DRIVER_EXTRA": '{"max": 6}'})
    assert product(found.pools) == "1 x 6 = 6"


def test_hidden_typeorm_connection_is_unknown(tmp_path):
    found = _found(tmp_path, {"src/main.ts": _MAIN, "package.json": _pkg("^0.2.0"),
                              "ormconfig.json": '{"type": "postgres"}\n'},
                   {"TYPEORM_CONNECTION": None})
    assert not [p for p in found.pools if p.label.startswith("TypeORM")]
    assert any("TYPEORM_CONNECTION" in u for u in found.unknown)


def test_ormconfig_not_asked_for_is_not_counted(tmp_path):
    found = _found(tmp_path, {
        "src/data-source.ts": 'import { DataSource } from "typeorm";\nexport default new '
                              "DataSource({ type: 'postgres', extra: { max: 5 } });\n",
        "package.json": _pkg("^0.3.10"),
        "ormconfig.json": '{"type": "postgres", "extra": {"max": 7}}\n'})
    assert product(found.pools) == "1 x 5 = 5"


def test_no_ormconfig_from_typeorm_1_or_another_library(tmp_path):
    conf = {"ormconfig.json": '{"type": "postgres", "extra": {"max": 7}}\n'}
    v1 = _found(tmp_path, {"src/main.ts": _MAIN, "package.json": _pkg("^1.0.0"), **conf})
    assert not any("ormconfig" in p.size.source.label() for p in v1.pools)
    mysql = _found(tmp_path / "m", {
        "src/main.ts": 'import { createConnection } from "mysql2";\ncreateConnection();\n',
        "package.json": _pkg("^0.2.0"), **conf})
    assert not any("ormconfig" in p.size.source.label() for p in mysql.pools)
