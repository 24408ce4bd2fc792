"""Hostile input against the recent readers (audit 44): what hung or crashed.

- a shell word of megabytes (an entrypoint holding a base64 blob) is quadratic in
  CPython's shlex: it is split plainly instead (advisor/read/shellwords.py);
- a manifest template with thousands of expressions on one line was searched again for
  each (read/sources/manifest_template.py);
- a composer.json nested past the JSON parser's recursion limit, or whose `require` is
  a number, crashed the Laravel reader (advisor/read/jsontext.py, apps/laravel.py).
"""

from __future__ import annotations

import json
import time

import pytest

from advisor.engine.check import internal_errors, run_check
from advisor.engine.options import CheckOptions
from advisor.read import jsontext
from advisor.read.apps.cmdline import _split_lines
from advisor.read.apps.locate import shell_words
from advisor.read.shellwords import MAX_WORD, bounded
from advisor.read.sources.manifest_template import read_as_written
from tests import test_apps_symfony as symfony
from tests.test_manifest_template_as_written import web
from tests.tree_helpers import write


def test_a_megabyte_shell_word_is_split_plainly_not_for_minutes():
    script = "#!/bin/sh\nBLOB=" + "Qk" * 300_000 + "\njava -jar app.jar server /srv/config.yml\n"
    start = time.monotonic()
    words = [w for w, _ in _split_lines(script)]
    assert time.monotonic() - start < 2  # shlex alone: 6 s on this one, 4x per doubling
    assert words[-4:] == ["-jar", "app.jar", "server", "/srv/config.yml"]
    assert shell_words("docker build -t x " + "a" * (MAX_WORD + 1)) is None


def test_bounded_keeps_ordinary_commands_and_refuses_one_long_word():
    text = 'exec gunicorn -w 4 "app:create_app()"\n' * 2000  # long, but short words
    assert bounded(text) == text
    with pytest.raises(ValueError):
        bounded("echo '" + "x y " * MAX_WORD + "'")  # one quoted word


def test_thousands_of_expressions_in_an_image_tag_are_read_once_each():
    text = web(tag="{{ a }}" * 50_000)
    start = time.monotonic()
    read = read_as_written(text, "deploy/tmpl/deploy.j2")
    assert time.monotonic() - start < 5  # was minutes: each expression searched the line
    assert read is not None
    _objects, places = read
    assert places == ["annotation (line 12)", "image tag (line 16)"]  # once each


def test_an_expression_in_a_comment_after_many_is_still_told_apart():
    text = web() + "# built by ci: {{ job }} {{ run }}\n"
    assert read_as_written(text, "t.j2") is not None
    assert read_as_written(text.replace("# built", "built"), "t.j2") is None


def test_json_nested_past_the_recursion_limit_is_a_decode_error():
    with pytest.raises(json.JSONDecodeError):
        jsontext.loads("[" * 200_000)


@pytest.mark.parametrize("composer", [
    "[" * 200_000,
    '{"require": ' * 5000 + "1" + "}" * 5000,
    '{"require": 3}',
    '{"require": ["doctrine/doctrine-bundle"]}',
    "42",
])
def test_a_hostile_composer_json_is_no_crash(tmp_path, composer):
    write(tmp_path, {"k8s/all.yaml": symfony.K8S, **symfony.APP, "composer.json": composer})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert not internal_errors(result), internal_errors(result)


def _handlers_module(n: int) -> str:
    out = ["from flask import Flask\nfrom sqlalchemy import create_engine\n"
           "app = Flask(__name__)\n"]
    for i in range(n):
        out.append(f'\n@app.route("/r{i}")\ndef handler{i}(request):\n'
                   f"    return helper{i}(request)\n\n\ndef helper{i}(x):\n"
                   '    engine = create_engine("postgresql://svc@pg/svc")\n'
                   "    with engine.connect() as c:\n        return c.execute('select 1')\n")
    return "".join(out)


def test_many_engines_in_a_large_module_are_read_in_linear_time(tmp_path):
    """300 per-request engines in one module: each engine walked the whole module
    several times (its function, class, callers' imports): 25 s, now under 1 s."""
    from advisor.read.apps import pools_for_container, scan_app_dir
    from advisor.read.fs import Root
    from tests.apphelpers import container
    from tests.test_apps_sqlalchemy_served import PYPROJECT, URL

    write(tmp_path, {"pyproject.toml": PYPROJECT, "src/svc/__init__.py": "",
                     "src/svc/main.py": _handlers_module(300)})
    start = time.monotonic()
    found = pools_for_container(container(URL, command=("python", "-m", "svc.main")),
                                scan_app_dir(Root.of(tmp_path), ""))
    assert time.monotonic() - start < 10
    assert len(found.pools) == 300 and all(p.bound == "unbounded" for p in found.pools)


def _go_pools(tmp_path, main: str):
    from advisor.read.apps import pools_for_container, scan_app_dir
    from advisor.read.fs import Root
    from tests.apphelpers import container

    write(tmp_path, {"go.mod": "module acme/api\n\ngo 1.22\n", "main.go": main})
    return pools_for_container(container({"DATABASE_URL": "postgres://u@pg/app"}),
                               scan_app_dir(Root.of(tmp_path), ""))


GO_OPEN = ('package main\n\nimport "database/sql"\n\nfunc main() {\n'
           '\tdb, _ := sql.Open("pgx", os.Getenv("DATABASE_URL"))\n')


def test_a_go_selector_of_thousands_of_names_is_walked_once(tmp_path):
    """`db.SetMaxOpenConns(cfg.Pool.X.X....)`: each name of the chain walked the chain
    back to its start: 40k tokens hung the check (go_sql._binds)."""
    main = GO_OPEN + "\tdb.SetMaxOpenConns(cfg.Pool" + ".X" * 20_000 + ")\n}\n"
    start = time.monotonic()
    found = _go_pools(tmp_path, main)
    assert time.monotonic() - start < 5  # was minutes
    assert len(found.pools) <= 1


def test_a_go_file_cut_after_a_name_is_no_index_error(tmp_path):
    found = _go_pools(tmp_path, GO_OPEN + "\tdb.SetMaxOpenConns(25)\n\tx := db")
    assert found is not None
