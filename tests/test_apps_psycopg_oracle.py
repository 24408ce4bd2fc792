"""psycopg_pool sizes read statically equal the real pools' max_size (built with
open=False in a subprocess, so nothing connects)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container

HEAD = "import os\nfrom psycopg_pool import ConnectionPool, NullConnectionPool\n"
CASES = [
    (HEAD + "p = ConnectionPool('host=db', open=False)\n", {}),
    (HEAD + "p = ConnectionPool('host=db', min_size=2, max_size=20, open=False)\n", {}),
    (HEAD + "p = ConnectionPool('host=db', min_size=6, open=False)\n", {}),
    (HEAD + "p = ConnectionPool(os.environ['DATABASE_URL'], max_size=int(os.getenv('M', 5)),"
     " open=False)\n", {"DATABASE_URL": "host=inv", "M": "11"}),
    (HEAD + "p = NullConnectionPool('host=db', max_size=3, open=False)\n", {}),
]
MEASURE = r"""
import gc, json, runpy, sys
from psycopg_pool.base import BasePool
kept = runpy.run_path(sys.argv[1], run_name="app")  # keep the module alive
print(json.dumps(sorted(p.max_size for p in gc.get_objects() if isinstance(p, BasePool))))
"""


@pytest.mark.parametrize(("code", "env"), CASES)
def test_static_sizes_equal_real_pools(tmp_path, code, env):
    pytest.importorskip("psycopg_pool")
    (tmp_path / "app.py").write_text(code)
    out = subprocess.run([sys.executable, "-c", MEASURE, str(tmp_path / "app.py")],
                         capture_output=True, text=True, timeout=60, check=True,
                         env={"PATH": "/usr/bin:/bin", **env})
    real = json.loads(out.stdout)
    found = pools_for_container(container(env), scan_app_dir(Root.of(tmp_path), ""))
    assert sorted(int(p.size.value) for p in found.pools) == real


def test_null_pool_without_max_is_unbounded(tmp_path):
    (tmp_path / "app.py").write_text(HEAD + "p = NullConnectionPool('host=db', open=False)\n")
    (pool,) = pools_for_container(container(), scan_app_dir(Root.of(tmp_path), "")).pools
    assert pool.bound == "unbounded"
