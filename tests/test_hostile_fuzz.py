"""Fuzzing every reader (issue 14 item 7): random and structured texts for postgresql.conf,
pgbouncer.ini, YAML with positions, the Spring/Rails/Django/JS/Go/Ruby app readers and
SQL extraction, and whole repositories with wrong-typed manifests. Properties: no reader
raises (bad input is a problem with a location), no run has an internal error.

CI budget: derandomized (a fixed seed), bounded examples, the whole file in well under
60 s. A bigger campaign runs locally, not in CI:
    FUZZ_EXAMPLES=2000 FUZZ_RANDOM=1 pytest tests/test_hostile_fuzz.py --hypothesis-show-statistics
Crashes found so far are pinned as regression cases at the end of this file."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from advisor.read.fs import Root  # noqa: E402

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "40"))
# FUZZ_RANDOM=1 (local campaigns only): a new random seed each run instead of the fixed one
FUZZ = settings(max_examples=EXAMPLES, derandomize=not os.environ.get("FUZZ_RANDOM"),
                deadline=None, database=None, suppress_health_check=list(HealthCheck),
                print_blob=True)
REPO = Path(__file__).resolve().parent.parent


def texts(fragments: list[str], max_parts: int = 30) -> st.SearchStrategy[str]:
    """Concatenations of meaningful fragments and random characters."""
    part = st.one_of(st.sampled_from(fragments), st.text(max_size=6),
                     st.sampled_from(["\n", "\r\n", "\r", "\x00", "\f", "\u2028", " ", "\t"]))
    return st.lists(part, max_size=max_parts).map("".join)


NUMBERS = ["0", "-1", "1e308", "9" * 400, "0x1F", "1.5", "inf", "nan", "1.2.3", "٣", "_1"]
PGCONF = ["max_connections", " = ", "=", "'", "''", "\\'", "#", "include ", "include_dir ",
          "include_if_exists ", "'x.conf'", "work_mem", "MB", "kB", "shared_buffers", ".",
          "custom.x", *NUMBERS]
INI = ["[databases]", "[pgbouncer]", "[users]", "%include ", "x.ini", "* = ", "db = ",
       "host=", "port=", "dbname=", "pool_size=", "pool_mode=", "transaction", "session",
       "max_client_conn", "default_pool_size", "=", ";", "#", "'", "\"", "\\", *NUMBERS]
YAML = ["a: ", "- ", "  ", "&x ", "*x", "<<: ", "{", "}", "[", "]", ",", ": ", "? ", "!!str ",
        "|", ">", "'", "\"", "#", "---\n", "kind: ", "apiVersion: v1", "Deployment",
        "metadata:\n  name: x\n", "replicas: ", "containers:", *NUMBERS]


@FUZZ
@given(texts(PGCONF))
def test_postgresql_conf_reader_never_raises(text):
    from advisor.read.sources.pgconf import read_pgconf

    conf = read_pgconf(Root.of(tempfile.gettempdir()), "postgresql.conf", text=text,
                       display_path="postgresql.conf")
    assert all(p.location.path for p in conf.problems)


@FUZZ
@given(texts(INI))
def test_pgbouncer_ini_reader_never_raises(text):
    from advisor.read.sources.pgbouncer_ini import read_pgbouncer_ini

    read_pgbouncer_ini(Root.of(tempfile.gettempdir()), "pgbouncer.ini", text=text,
                       display_path="pgbouncer.ini")


@FUZZ
@given(texts(YAML))
def test_yaml_with_positions_and_manifests_never_raise(text):
    from advisor.read.apps.yamlflat import YamlError, load_documents
    from advisor.read.sources.k8s import k8s_objects

    k8s_objects(text, "x.yaml")
    with contextlib.suppress(YamlError):
        load_documents(text)


APP_FILES = {
    "spring-yml": ("src/main/resources/application.yml", "pom.xml",
                   "<dependency>spring-boot-starter-jdbc</dependency>",
                   ("java", "-jar", "app.jar"),
                   ["spring:\n  datasource:\n    hikari:\n      maximum-pool-size: ", "${X:5}",
                    "url: jdbc:postgresql://h/db", *YAML]),
    "spring-props": ("src/main/resources/application.properties", "pom.xml",
                     "<dependency>spring-boot-starter-jdbc</dependency>",
                     ("java", "-jar", "app.jar"),
                     ["spring.datasource.hikari.maximum-pool-size=", "\\\n", "\\u00", "${X}",
                      "=", ":", "#", "!", *NUMBERS]),
    "rails": ("config/database.yml", "Gemfile", "gem 'rails'\ngem 'pg'\n",
              ("bundle", "exec", "puma"),
              ["production:\n  adapter: postgresql\n  pool: ", "<%= ", " %>", "<% ",
               "ENV.fetch(\"X\") { 5 }", "ENV['X'] || ", ".to_i", "(", ")", *YAML]),
    "puma": ("config/puma.rb", "Gemfile", "gem 'rails'\ngem 'pg'\ngem 'puma'\n",
             ("bundle", "exec", "puma"),
             ["workers ", "threads ", ", ", "ENV.fetch(\"WEB_CONCURRENCY\") { 2 }", "(", ")",
              "Integer(", "||", "Concurrent.processor_count", ":auto", "x = ", *NUMBERS]),
    "django": ("settings.py", "requirements.txt", "django\npsycopg\n",
               ("gunicorn", "app.wsgi"),
               ["DATABASES = {'default': {", "'ENGINE': 'django.db.backends.postgresql'",
                "'CONN_MAX_AGE': ", "'OPTIONS': {'pool': {'max_size': ", "}", "]", "[",
                "os.environ.get('X', ", ")", "int(", "import os\n", *NUMBERS]),
    "node": ("db.js", "package.json", '{"dependencies": {"pg": "8"}}',
             ("node", "db.js"),
             ["const { Pool } = require('pg')\n", "new Pool({", "max: ", "}", ")", "(", "[",
              "process.env.X", "||", "??", "parseInt(", "`", "${", "/*", "*/", "//",
              "os.cpus().length", *NUMBERS]),
    "go": ("main.go", "go.mod", "module x\nrequire github.com/jackc/pgx/v5 v5.5.0\n",
           ("/app",),
           ["pgxpool.ParseConfig(", "config.MaxConns = ", "db.SetMaxOpenConns(", ")", "(",
            "\"", "`", "os.Getenv(\"X\")", "strconv.Atoi(", "runtime.NumCPU()", *NUMBERS]),
}


@pytest.mark.parametrize("stack", list(APP_FILES))
def test_app_readers_never_raise(stack):
    from advisor.read.apps import pools_for_container
    from advisor.read.apps.source import scan_app_dir
    from tests.apphelpers import container

    rel, marker, marker_text, command, fragments = APP_FILES[stack]

    @FUZZ
    @given(texts(fragments))
    def check(text):
        with tempfile.TemporaryDirectory() as d:
            base = Path(d)
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            (base / marker).write_text(marker_text)
            (base / rel).write_text(text, encoding="utf-8", errors="surrogatepass")
            app = scan_app_dir(Root.of(base), "")
            pools_for_container(container(env={"RAILS_ENV": "production"}, command=command),
                                app)

    check()


SQL = ["SELECT ", "SET ", "LISTEN x", "PREPARE p AS ", "BEGIN;", "COMMIT;", "'", "\"", "$$",
       "$x$", "--", "/*", "*/", ";", "pg_advisory_lock(1)", "CREATE TEMP TABLE t", "WITH HOLD",
       "db.query(`", "`)", "cursor.execute(\"", "\")", *NUMBERS]


@pytest.mark.parametrize("name", ["schema.sql", "repo.py", "db.js", "store.go", "Repo.java"])
def test_sql_extraction_never_raises(name):
    pytest.importorskip("pglast")
    from advisor.read.sql.extract import classify, scan_text

    kind = classify(name)
    if kind is None:
        pytest.skip(f"{name} is not scanned")

    @FUZZ
    @given(texts(SQL))
    def check(text):
        scan_text(name, text, kind, pinning=True)

    check()


FIXTURES = ["acme-shop", "acme-shop-pgbouncer", "cnpg", "zalando", "crunchy", "keda",
            "sidecar-pgbouncer", "rds-proxy"]


@FUZZ
@given(st.sampled_from(FIXTURES), st.integers(0, 2**32 - 1))
def test_whole_repositories_with_wrong_typed_manifests_have_no_internal_errors(fixture, seed):
    from advisor.engine.check import internal_errors, run_check
    from tests.mutate import mutants

    with tempfile.TemporaryDirectory() as d:
        repo = Path(shutil.copytree(REPO / "fixtures" / fixture, Path(d) / "r"))
        for f, text in mutants(repo, random.Random(seed), 1):
            f.write_text(text)
        result = run_check([str(repo)])
        assert not internal_errors(result), internal_errors(result)


# --- regression cases: every crash the fuzzing found -------------------------------


@pytest.mark.parametrize("text", [
    "const a = " + "[" * 3000,           # RecursionError in the JS evaluator
    "new Pool({ max: \"\\u12\" })",      # invalid escape: UnicodeDecodeError
    "/* " * 100,                        # unclosed comments: quadratic
])
def test_js_regressions(text):
    from tests.test_hostile_bounds import _js

    _js(text)


@pytest.mark.parametrize("expr", ["(" * 3000, "9" * 400, "1e400.to_i"])
def test_ruby_regressions(expr):
    from advisor.read.apps.rubyeval import RubyScope, ruby_eval

    ruby_eval(expr, RubyScope("config/puma.rb", 1, {}, 4))


@pytest.mark.parametrize("path, old, new", [
    ("k8s/postgres.yaml", "limits:\n              memory: 8Gi",
     'limits:\n              memory: "1.2.3Gi"'),  # ValueError in the quantity parser
    ("k8s/postgres.yaml", "          env:\n", "          env: true\n          x:\n"),
    ("k8s/hpa.yaml", "maxReplicas: 40", "maxReplicas: " + "9" * 400),  # OverflowError
    ("k8s/checkout.yaml", "replicas: 4", "replicas: 1e308"),
    ("k8s/checkout.yaml", "replicas: 4", "replicas: -3"),
    ("k8s/checkout.yaml", "containers:", "containers: 3\n      x:"),
])
def test_wrong_typed_manifest_regressions(tmp_path, path, old, new):
    from advisor.engine.check import internal_errors, run_check

    repo = Path(shutil.copytree(REPO / "fixtures" / "acme-shop", tmp_path / "r"))
    f = repo / path
    assert old in f.read_text(), (path, old)
    f.write_text(f.read_text().replace(old, new, 1))
    result = run_check([str(repo)])
    assert not internal_errors(result), internal_errors(result)
    assert any(x.code == "PA901" and x.location.path == path for x in result.findings), \
        [x.message for x in result.findings]
