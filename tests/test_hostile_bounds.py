"""Hostile inputs stay cheap (issue 14 item 2): the cases the red team found quadratic
or exponential each take well under a second. Measured in CPU time with generous
bounds (the machine is shared); before the fixes they took from 1.3 s to hours."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from advisor.read.fs import Root

BOUND_S = 2.0  # CPU seconds; each case takes a small fraction of this on an idle machine


def cpu_seconds(fn: Callable[[], object]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def _pgconf(tmp: Path, text: str, extra: dict[str, str] | None = None):
    from advisor.read.sources.pgconf import read_pgconf

    (tmp / "postgresql.conf").write_text(text)
    for name, body in (extra or {}).items():
        (tmp / name).write_text(body)
    return read_pgconf(Root.of(tmp), tmp / "postgresql.conf")


def _ini(tmp: Path, text: str):
    from advisor.read.sources.pgbouncer_ini import read_pgbouncer_ini

    (tmp / "pgbouncer.ini").write_text(text)
    return read_pgbouncer_ini(Root.of(tmp), tmp / "pgbouncer.ini")


LINE = 100_000
PGCONF_LINES = {
    "quoted value": "work_mem = '" + "a" * LINE + "'\n",
    "escapes": "work_mem = '" + "\\'" * (LINE // 2) + "'\n",
    "equals signs": "=" * LINE + "\n",
    "unterminated quote": "work_mem = '" + "a b " * (LINE // 4) + "\n",
    "tokens": "x = " + "a 'b' = " * (LINE // 8) + "\n",
}


@pytest.mark.parametrize("shape", list(PGCONF_LINES))
def test_a_100kb_postgresql_conf_line(tmp_path, shape):
    assert cpu_seconds(lambda: _pgconf(tmp_path, PGCONF_LINES[shape])) < BOUND_S


def test_40000_duplicate_settings_are_linear(tmp_path):
    conf = None

    def read():
        nonlocal conf
        conf = _pgconf(tmp_path, "work_mem = 1MB\n" * 39_999 + "work_mem = 2MB\n")

    assert cpu_seconds(read) < BOUND_S
    assert conf.settings["work_mem"].source.line == 40_000  # the last one still wins


def test_includes_that_fan_out_stop_at_a_bound(tmp_path):
    # 30 files, each including the next ten: 10^9 reads if followed as written.
    files = {f"f{i}.conf": "".join(f"include 'f{j}.conf'\n" for j in range(i + 1, min(i + 11, 30)))
             + "work_mem = 1MB\n" for i in range(30)}
    conf = None

    def read():
        nonlocal conf
        conf = _pgconf(tmp_path, "include 'f0.conf'\n", files)

    assert cpu_seconds(read) < BOUND_S
    (bound,) = [p for p in conf.problems if "configuration files included" in p.message]
    # pool-advisor's bound, not a PostgreSQL refusal: the server's budget is not "will
    # not start" for it (advisor.read.sources.pgconf.start_errors)
    assert bound.program == "pool-advisor"


def test_2000_pgbouncer_databases(tmp_path):
    text = "[databases]\n" + "".join(f"db{i} = host=h{i} port=5432 dbname=d{i} pool_size=5\n"
                                     for i in range(2000)) + "[pgbouncer]\nmax_client_conn=100\n"
    ini = None

    def read():
        nonlocal ini
        ini = _ini(tmp_path, text)

    assert cpu_seconds(read) < BOUND_S
    assert len(ini.databases) == 2000


def test_40000_duplicate_pgbouncer_settings(tmp_path):
    assert cpu_seconds(lambda: _ini(
        tmp_path, "[pgbouncer]\n" + "default_pool_size = 5\n" * 40_000)) < BOUND_S


def _js(text: str) -> None:
    """What the Node readers do with a file: tokens, module constants, each pool call's
    arguments."""
    from advisor.read.apps.jsparse import JsParser, JsScope, call_args, find_calls, module_consts
    from advisor.read.apps.jsparse import tokenize as js_tokens

    toks = js_tokens(text)
    scope = JsScope(path="db.js", env={}, cpus=4, names={})
    module_consts(toks, scope)
    parser = JsParser(toks, scope)
    for _name, paren in find_calls(toks, {"Pool", "knex", "Sequelize"}):
        call_args(parser, paren)


JS_80KB = {
    "unclosed calls": "new Pool(" * 9_000,
    "unclosed comments": "/* " * 27_000,
    "unclosed templates": "x = `${" * 11_000,
    "nested arrays": "const a = " + "[" * 40_000,
    "nested calls": "new Pool(" + "(" * 80_000,
    "nested objects": "new Pool(" + "{a:" * 26_000,
    "big module": "".join(f"const x{i} = {{ max: {i}, min: [1, 2, 3] }};\n"
                          for i in range(2_000)) + "new Pool({ max: x1.max });\n",
}


@pytest.mark.parametrize("shape", list(JS_80KB))
def test_an_80kb_js_file(shape):
    assert cpu_seconds(lambda: _js(JS_80KB[shape])) < BOUND_S


RUBY_44KB = {
    "alternatives": "ENV['X'] || " * 3_600 + "5",
    "parentheses": "(" * 44_000,
    "method chain": "5" + ".to_i" * 8_800,
    "blank tail": "5 " + " " * 44_000,
}


@pytest.mark.parametrize("shape", list(RUBY_44KB))
def test_a_44kb_ruby_expression(shape):
    from advisor.read.apps.rubyeval import RubyScope, ruby_eval

    scope = RubyScope("config/puma.rb", 1, {}, 4)
    assert cpu_seconds(lambda: ruby_eval(RUBY_44KB[shape], scope)) < BOUND_S


def test_a_44kb_line_of_unclosed_erb_tags(tmp_path):
    from advisor.read.apps import pools_for_container
    from advisor.read.apps.source import scan_app_dir
    from tests.apphelpers import container

    (tmp_path / "config").mkdir()
    (tmp_path / "Gemfile").write_text("gem 'rails'\ngem 'pg'\ngem 'puma'\n")
    (tmp_path / "config" / "database.yml").write_text(
        "production:\n  adapter: postgresql\n  pool: <%= 7 %>" + "<% " * 7_000 + "<%= " * 7_000
        + "\n")
    (tmp_path / "config" / "puma.rb").write_text("workers " + "ENV['X'] || " * 3_600 + "2\n")
    app = scan_app_dir(Root.of(tmp_path), "")
    web = container(env={"RAILS_ENV": "production"}, command=("bundle", "exec", "puma"))
    found = None

    def read():
        nonlocal found
        found = pools_for_container(web, app)

    assert cpu_seconds(read) < BOUND_S
    # the pool line is read and not understood: unknown, said where (not a default)
    assert found.unknown == ["Rails production pool at config/database.yml:3 is set to an "
                             "expression not read statically"], found
