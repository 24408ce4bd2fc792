"""node-postgres pool sizes as node computes them: the app's own module runs under node
with a `pg` whose Pool is the real pg-pool (with a dummy Client, so nothing connects);
every pool's effective options.max must equal what pool-advisor read statically."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_DB = (Path(__file__).parent / "fixtures_apps" / "node_pg" / "src" / "db.js").read_text()

CASES = [
    (FIXTURE_DB, {"PG_POOL_MAX": "15"}),
    (FIXTURE_DB, {}),
    (FIXTURE_DB, {"PG_POOL_MAX": "abc"}),
    ("const { Pool } = require('pg');\nnew Pool({ max: parseInt(process.env.M || '7', 10) });",
     {}),
    ("const { Pool } = require('pg');\nnew Pool({ max: parseInt(process.env.M || '7', 10) });",
     {"M": "3"}),
    ("const { Pool } = require('pg');\nnew Pool({ max: +process.env.M || 9 });", {"M": "0"}),
    ("const { Pool } = require('pg');\nnew Pool({ max: process.env.M ?? 4 });", {}),
    ("const pg = require('pg');\nconst N = 6;\nnew pg.Pool({ max: N * 2 });", {}),
    ("const { Pool } = require('pg');\nnew Pool({ poolSize: 8 });", {}),
    ("const { Pool } = require('pg');\nnew Pool({ max: 0 });", {}),
    ("const { Pool } = require('pg');\nnew Pool();\nnew Pool({ max: 2, ...{ idle: 1 } });", {}),
]

STUB = """
const RealPool = require(process.env.PG_POOL_PATH);
function Client() {}
class Pool extends RealPool {
  constructor(options) {
    super(Object.assign({}, options, { Client }));
    (globalThis.__maxes = globalThis.__maxes || []).push(this.options.max);
  }
}
module.exports = { Pool };
"""


def _pg_pool() -> Path:
    found = ROOT / ".tools" / "node_modules" / "pg-pool"
    if shutil.which("node") is None or not found.is_dir():
        pytest.skip("node or .tools/node_modules/pg-pool missing (scripts/test installs it)")
    return found


@pytest.mark.parametrize(("code", "env"), CASES)
def test_static_sizes_equal_node(tmp_path, code, env):
    pg_pool = _pg_pool()
    (tmp_path / "node_modules" / "pg").mkdir(parents=True)
    (tmp_path / "node_modules" / "pg" / "index.js").write_text(STUB)
    (tmp_path / "index.js").write_text(code)
    run = ("require('./index.js');"
           "console.log(JSON.stringify(globalThis.__maxes || []));")
    out = subprocess.run(["node", "-e", run], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60, check=True, env={"PATH": "/usr/bin:/bin",
                                                      "PG_POOL_PATH": str(pg_pool), **env})
    real = json.loads(out.stdout)
    found = pools_for_container(container(env), scan_app_dir(Root.of(tmp_path), ""))
    assert [int(p.size.value) for p in found.pools] == real
