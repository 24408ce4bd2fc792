"""Issue 13 item 4: Python 3.12+ sources are read on the interpreter running us (3.11)."""

from __future__ import annotations

import ast
import sys

import pytest

from advisor.read.apps.pycompat import rewrite_for_older_python
from advisor.read.apps.pyeval import parse
from advisor.read.apps.source import AppFile, AppSource
from advisor.read.apps.sqlalchemy import sqlalchemy_pools
from advisor.read.fs import Root
from tests.apphelpers import container

SOURCE = '''import os
from sqlalchemy import create_engine

type Url = str
type Pair[T] = tuple[T, T]


def pick[T](x: T) -> T:
    return x


names = {"a": 1}
label = f"{names["a"]} connections"
multi = f"pool {
    names["a"]  # a comment inside a replacement field
} done"
joined = f"{'\\n'.join(['a', 'b'])}"
engine = create_engine(os.environ["DATABASE_URL"], pool_size=int(os.getenv("POOL", "7")),
                       max_overflow=3)
'''


def test_rewrite_keeps_every_line_where_it_was():
    rewritten, notes = rewrite_for_older_python(SOURCE)
    assert len(rewritten.splitlines()) == len(SOURCE.splitlines())
    tree = ast.parse(rewritten)
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call)
                and getattr(n.func, "id", "") == "create_engine")
    assert call.lineno == 18  # as in the original file
    assert notes == ["3 f-string(s) read as text (fields not evaluated)",
                     "2 `type` statement(s) read as assignments",
                     "1 type parameter list(s) dropped"]


def test_plain_sources_are_left_alone():
    text = 'x = f"{a} and {{b}}"\ny = "#not a comment"  # comment\n'
    assert ast.dump(ast.parse(rewrite_for_older_python(text)[0])) != ""
    assert rewrite_for_older_python('y = "s"\n')[0] == 'y = "s"\n'


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.12 parses it natively")
def test_parse_falls_back_on_311():
    with pytest.raises(SyntaxError):
        ast.parse(SOURCE)
    tree, error, _ = parse(SOURCE, "app/db.py")
    assert tree is not None and error is None


def test_pool_read_from_a_312_module(tmp_path):
    # pool_size 7 (os.getenv default, line 18) + max_overflow 3 = 10 per process
    f = AppFile(path="app/db.py", rel="db.py", kind="python", text=SOURCE)
    app = AppSource(root=Root(tmp_path), directory="app", files=(f,))
    from advisor.read.apps.base import StackContext

    ctx = StackContext(container=container({"DATABASE_URL": "postgresql://u@db/x"}), app=app,
                       profile=None)
    (pool,) = sqlalchemy_pools(ctx)
    assert pool.size.value == 7 + 3
    assert not ctx.problems
