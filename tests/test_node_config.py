"""node-config (`config.get("db.poolMax")`) resolved for the container, as node-config
resolves it: an env variable mapped in custom-environment-variables.json and set in the
container, then {NODE_ENV}.json / local.json, then default.json (audit 8b D4: COMS's
Knex pool.max was "cannot tell"); an unread member of a literal options object is said
where it is (D7)."""

from pathlib import Path

from advisor.model import Container, EnvVar, Source
from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container, product

KNEXFILE = (
    "const config = require('config');\n"
    "\n"
    "module.exports = {\n"
    "  client: 'pg',\n"
    "  connection: { host: config.get('db.host'), database: config.get('db.database') },\n"
    "  pool: {\n"
    "    min: parseInt(config.get('db.poolMin')),\n"
    "    max: parseInt(config.get('db.poolMax'))\n"
    "  }\n"
    "};\n")
MAPPING = '{\n  "db": {\n    "host": "DB_HOST",\n    "poolMax": "DB_POOL_MAX"\n  }\n}\n'
DEFAULT = ('{\n  "db": {\n    "host": "localhost",\n    "poolMin": "2",\n'
           '    "poolMax": "10"\n  }\n}\n')


def _found(tmp_path: Path, files: dict[str, str], env=None, c: Container | None = None):
    base = {"knexfile.js": KNEXFILE, "config/custom-environment-variables.json": MAPPING,
            "config/default.json": DEFAULT}
    for name, text in {**base, **files}.items():
        path = tmp_path / name
        if text is None:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    c = c or container({"DB_HOST": "db", **(env or {})}, command=("node", "app.js"))
    return pools_for_container(c, scan_app_dir(Root.of(tmp_path), ""))


def _size(found) -> tuple[str, str]:
    assert found.unknown == [], found.unknown
    (pool,) = found.pools
    return product(found.pools), pool.size.source.label()


def test_default_json_when_the_env_variable_is_not_set(tmp_path):
    assert _size(_found(tmp_path, {})) == ("1 x 10 = 10", "config/default.json:5")


def test_the_mapped_env_variable_wins(tmp_path):
    assert _size(_found(tmp_path, {}, {"DB_POOL_MAX": "25"})) == ("1 x 25 = 25",
                                                                  "k8s/app.yaml:11")
    # set empty: node-config skips it (substituteDeep), default.json's applies
    assert _size(_found(tmp_path, {}, {"DB_POOL_MAX": ""}))[0] == "1 x 10 = 10"


def test_the_node_env_file_then_local_win_over_default(tmp_path):
    prod = '{ "db": {\n  "poolMax": 30 } }\n'
    for case in ("a", "b", "c", "d"):
        (tmp_path / case).mkdir()
    assert _size(_found(tmp_path, {"config/production.json": prod},
                        {"NODE_ENV": "production"})) == ("1 x 30 = 30",
                                                         "config/production.json:2")
    # COMS's production.json is {}: default.json's value
    assert _size(_found(tmp_path / "a", {"config/production.json": "{}"},
                        {"NODE_ENV": "production"}))[0] == "1 x 10 = 10"
    # no NODE_ENV: development
    assert _size(_found(tmp_path / "b", {"config/development.json": prod}))[0] == "1 x 30 = 30"
    assert _size(_found(tmp_path / "c", {"config/development.json": prod,
                                         "config/local.yaml": "db:\n  poolMax: 40\n"}))[0] \
        == "1 x 40 = 40"
    # NODE_CONFIG_ENV wins over NODE_ENV
    assert _size(_found(tmp_path / "d", {"config/staging.json": prod},
                        {"NODE_ENV": "production", "NODE_CONFIG_ENV": "staging"}))[0] \
        == "1 x 30 = 30"


def test_yaml_default_and_member_form(tmp_path):
    knexfile = ("import config from 'config';\n"
                "export default { client: 'pg', pool: { max: Number(config.db.poolMax) } };\n")
    found = _found(tmp_path, {"knexfile.js": knexfile, "config/default.json": None,
                              "config/default.yml": "db:\n  poolMax: 15\n"})
    assert _size(found) == ("1 x 15 = 15", "config/default.yml:2")


def test_a_js_config_file_that_may_set_it_is_unknown(tmp_path):
    found = _found(tmp_path, {"config/production.js": "module.exports = require('./x');\n"},
                   {"NODE_ENV": "production"})
    assert found.pools == []
    assert found.unknown == [
        "Knex pool.max: pool.max = parseInt(config.get('db.poolMax')) at knexfile.js:8 is "
        "not read (node-config's config.get('db.poolMax'): config/production.js, which may "
        "set db.poolMax, is not read), so pool.max is not known"]


def test_a_mapped_variable_from_a_secret_is_unknown(tmp_path):
    c = Container(name="app", command=("node", "app.js"), source=Source(path="k8s/app.yaml"),
                  env=(EnvVar(name="DB_POOL_MAX", source=Source(path="k8s/app.yaml", line=12),
                              secret=True, from_ref="secret:app/pool"),))
    found = _found(tmp_path, {}, c=c)
    assert found.pools == []
    assert len(found.unknown) == 1 and "DB_POOL_MAX (k8s/app.yaml:12)" in found.unknown[0]


def test_without_node_config_the_call_is_not_read_and_said_where(tmp_path):
    # audit 8b D7: not "the options at knexfile.js:3 ... from another module"
    found = _found(tmp_path, {"knexfile.js": KNEXFILE.replace("require('config')",
                                                              "require('./settings')")})
    assert found.pools == []
    assert found.unknown == [
        "Knex pool.max: pool.max = parseInt(config.get('db.poolMax')) at knexfile.js:8 is "
        "not read, so pool.max is not known"]


PROD = '{ "db": {\n  "poolMax": 30 } }\n'
MARKER = EnvVar(name="*", source=Source(path="k8s/app.yaml", line=14),
                from_ref="configmap:app-env (not in repository)")


def _with_marker(env: dict[str, str]) -> Container:
    c = container(env, command=("node", "app.js"))
    return Container(name=c.name, command=c.command, source=c.source, env=(*c.env, MARKER))


def test_the_dockerfile_env_sets_node_env_below_the_manifest(tmp_path):
    """`ENV NODE_ENV=production` in the image: production.json, not development's
    default.json (review1 F4); the manifest's NODE_ENV wins over the image's."""
    files = {"config/production.json": PROD, "config/staging.json": PROD.replace("30", "7"),
             "Dockerfile": "FROM node:20\nENV PORT=3000 NODE_ENV=production\n"
                           "CMD [\"node\", \"app.js\"]\n"}
    (tmp_path / "a").mkdir()
    assert _size(_found(tmp_path, files)) == ("1 x 30 = 30", "config/production.json:2")
    assert _size(_found(tmp_path / "a", files, {"NODE_ENV": "staging"}))[0] == "1 x 7 = 7"


def test_node_env_from_an_envfrom_source_not_held_is_unknown(tmp_path):
    """NODE_ENV may be set by an envFrom ConfigMap the repository does not hold: the
    environments' files disagree, so the size is unknown, never default.json's; when
    no environment's file sets the key, every environment gives default.json's."""
    found = _found(tmp_path, {"config/production.json": PROD,
                              "config/custom-environment-variables.json": None},
                   c=_with_marker({"DB_HOST": "db"}))
    assert found.pools == []
    assert found.unknown == [
        "Knex pool.max: pool.max = parseInt(config.get('db.poolMax')) at knexfile.js:8 is "
        "not read (node-config's config.get('db.poolMax'): NODE_CONFIG_ENV may be set by "
        "ConfigMap app-env (envFrom, k8s/app.yaml:14), not in the repository, and what it "
        "loads decides db.poolMax (config/default.json:5 sets 10; config/production.json:2 "
        "sets 30)), so pool.max is not known"]
    (tmp_path / "b").mkdir()
    found = _found(tmp_path / "b", {"config/production.json": '{"log": 1}\n'},
                   c=_with_marker({"DB_HOST": "db", "DB_POOL_MAX": "12"}))
    assert _size(found)[0] == "1 x 12 = 12"  # the manifest's own variable wins
    (tmp_path / "c").mkdir()
    found = _found(tmp_path / "c", {"config/production.json": '{"log": 1}\n'},
                   c=_with_marker({"DB_HOST": "db"}))
    # DB_POOL_MAX, mapped, may be set by the ConfigMap too
    assert found.pools == [] and found.unknown == [
        "Knex pool.max: DB_POOL_MAX may be set by ConfigMap app-env (envFrom, "
        "k8s/app.yaml:14), not in the repository"]
    (tmp_path / "d").mkdir()
    found = _found(tmp_path / "d", {"config/production.json": '{"log": 1}\n',
                                    "config/custom-environment-variables.json": None},
                   c=_with_marker({"DB_HOST": "db"}))
    assert _size(found) == ("1 x 10 = 10", "config/default.json:5")


def test_the_load_order_is_node_config_s(tmp_path):
    """node-config v4 (b4dfbd2 lib/util.js:350-361): name, then {name, name-instance},
    then extension: with NODE_APP_INSTANCE=1, default.yaml loads before default-1.json,
    so default-1.json wins; v3 (v3.3.9 lib/config.js:638-645, a lock at 3.x) loads
    default-1.json before default.yaml. With NODE_ENV=a,b the second `local` takes its
    later place: local-a, local, local-b."""
    from advisor.read.apps.nodeconfig import load_order
    from advisor.read.apps.source import AppFile

    names = ["default.yaml", "default-1.json", "a.json", "b.json", "local.json",
             "local-a.json", "local-b.json", "web.json", "web-a.json"]
    here = {n: AppFile(path=f"config/{n}", rel=f"config/{n}", kind="node-config", text="")
            for n in names}

    def order(envs, instance, host, v3):
        return [f.rel.removeprefix("config/")
                for f in load_order(here, envs, instance, host, v3)]

    assert order(["a"], "1", None, False) == ["default.yaml", "default-1.json", "a.json",
                                               "local.json", "local-a.json"]
    assert order(["a"], "1", None, True) == ["default-1.json", "default.yaml", "a.json",
                                              "local.json", "local-a.json"]
    assert order(["a", "b"], None, None, False) == [
        "default.yaml", "a.json", "b.json", "local-a.json", "local.json", "local-b.json"]
    # HOST=web.example: its first label and each env's (util.js:328-340), before local
    assert order(["a"], None, "web.example", False) == [
        "default.yaml", "a.json", "web.json", "web-a.json", "local.json", "local-a.json"]
    # through the reader: the instance file wins in v4's order
    files = {"config/default.json": None, "config/default.yaml": "db:\n  poolMax: 4\n",
             "config/default-1.json": '{"db": {"poolMax": 9}}\n',
             "package-lock.json": '{"packages": {"node_modules/config": '
                                  '{"version": "4.1.1"}}}\n'}
    assert _size(_found(tmp_path, files, {"NODE_APP_INSTANCE": "1"}))[0] == "1 x 9 = 9"


def test_a_deeply_nested_json_file_is_not_read(tmp_path):
    """A JSON file nested past the parser's stack: not read (the size unknown), never an
    internal error (review1 F12)."""
    deep = '{"db": {"poolMax": 30}, "x": ' + "[" * 3000 + "]" * 3000 + "}\n"
    found = _found(tmp_path, {"config/production.json": deep}, {"NODE_ENV": "production"})
    assert found.pools == [] and found.problems == []
    assert "config/production.json, which may set db.poolMax, is not read" in found.unknown[0]
