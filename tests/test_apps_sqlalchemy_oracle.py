"""SQLAlchemy pool limits read statically equal the real engines' (SQLAlchemy from the
`test` extra): the module runs in a subprocess with the container env (create_engine
does not connect), and every Engine's pool is measured: QueuePool size + overflow,
NullPool unbounded, StaticPool 1."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container

FIXTURE = (Path(__file__).parent / "fixtures_apps" / "sqlalchemy" / "app" / "db.py").read_text()
HEAD = ("import os\nimport sqlalchemy\nfrom sqlalchemy import create_engine\n"
        "from sqlalchemy.pool import NullPool, StaticPool\n"
        "URL = 'postgresql+psycopg://u@db/x'\n")
CASES = [
    (FIXTURE, {"DATABASE_URL": "postgresql+psycopg://o@pgb:6432/orders"}),
    (HEAD + "e = create_engine(URL)\n", {}),
    (HEAD + "e = create_engine(URL, pool_size=int(os.environ.get('P', '3')))\n", {}),
    (HEAD + "e = create_engine(URL, pool_size=int(os.environ.get('P', '3')))\n", {"P": "9"}),
    (HEAD + "e = create_engine(URL, pool_size=2, max_overflow=0)\n"
     "r = create_engine(URL, max_overflow=int(os.getenv('OVER') or 1))\n", {}),
    (HEAD + "N = 4\ne = create_engine(URL, pool_size=N * 2, max_overflow=N - 4)\n", {}),
    (HEAD + "e = create_engine(URL, poolclass=StaticPool)\n", {}),
    (HEAD + "e = create_engine(URL, poolclass=NullPool)\n", {}),
    (HEAD + "e = create_engine(URL, pool_size=3, max_overflow=-1)\n", {}),
]

MEASURE = r"""
import gc, json, runpy, sys
from sqlalchemy.engine import Engine
from sqlalchemy.pool import NullPool, QueuePool, StaticPool
kept = runpy.run_path(sys.argv[1], run_name="app")  # keep the module alive
out = []
for e in sorted((o for o in gc.get_objects() if isinstance(o, Engine)), key=id):
    p = e.pool
    if isinstance(p, NullPool):
        out.append(["unbounded", 0])
    elif isinstance(p, StaticPool):
        out.append(["fixed", 1])
    elif isinstance(p, QueuePool):
        over = p._max_overflow
        out.append(["unbounded" if over < 0 else "fixed", p.size() + max(over, 0)])
print(json.dumps(out))
"""


@pytest.mark.parametrize(("code", "env"), CASES)
def test_static_limits_equal_real_engines(tmp_path, code, env):
    pytest.importorskip("sqlalchemy")
    pytest.importorskip("psycopg")
    (tmp_path / "app.py").write_text(code)
    out = subprocess.run([sys.executable, "-c", MEASURE, str(tmp_path / "app.py")],
                         capture_output=True, text=True, timeout=60, check=True,
                         env={"PATH": "/usr/bin:/bin", **env})
    real = sorted(tuple(x) for x in json.loads(out.stdout))
    found = pools_for_container(container(env), scan_app_dir(Root.of(tmp_path), ""))
    ours = sorted(("unbounded" if p.bound == "unbounded" else "fixed", int(p.size.value))
                  for p in found.pools)
    assert ours == real
