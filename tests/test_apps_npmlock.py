"""The version an npm app installs from its package-lock.json (advisor/read/apps/
npmlock.py), and pg-pool's default max cited at it (audit 6a D7: the default was named
at pg-pool 3.14 where the lock installs 3.6.1)."""

from __future__ import annotations

import pytest

from advisor.model import Container, EnvVar, Source
from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.apps.npmlock import npm_pin
from advisor.read.fs import Root

# our own lines in the shapes npm writes: lockfileVersion 3 (and 2) and 1
LOCK_V3 = """{
  "name": "results",
  "lockfileVersion": 3,
  "requires": true,
  "packages": {
    "": {
      "dependencies": {"pg": "^8.7.1"}
    },
    "node_modules/pg": {
      "version": "8.7.1",
      "dependencies": {"pg-pool": "^3.4.1"}
    },
    "node_modules/pg-pool": {
      "version": "3.4.1",
      "license": "MIT"
    },
    "node_modules/other/node_modules/pg-pool": {
      "version": "2.0.10"
    }
  }
}
"""

LOCK_V1 = """{
  "name": "results",
  "lockfileVersion": 1,
  "dependencies": {
    "pg-pool": {
      "version": "3.2.2",
      "resolved": "https://registry.npmjs.org/pg-pool/-/pg-pool-3.2.2.tgz"
    }
  }
}
"""

CASES = [
    (LOCK_V3, ("3.4.1", 14)),  # the top-level copy, not a nested one
    (LOCK_V1, ("3.2.2", 6)),
    (LOCK_V3.replace('"version": "3.4.1"', '"version": "3.5.0-beta.1"'), None),
    ('{"lockfileVersion": 3, "packages": {}}', None),
    ("{not json", None),
]


@pytest.mark.parametrize(("text", "want"), CASES)
def test_the_installed_version_is_read_with_its_line(tmp_path, text, want):
    (tmp_path / "package-lock.json").write_text(text)
    found = npm_pin(scan_app_dir(Root.of(tmp_path), ""), "pg-pool")
    assert ((found[0], found[1].line) if found else None) == want


SERVER = """const { Pool } = require('pg');
const pool = new Pool({ connectionString: process.env.DATABASE_URL });
module.exports = pool;
"""


def _default_label(tmp_path, lock: str | None) -> str:
    (tmp_path / "package.json").write_text('{"dependencies": {"pg": "^8.7.1"}}\n')
    (tmp_path / "server.js").write_text(SERVER)
    if lock is not None:
        (tmp_path / "package-lock.json").write_text(lock)
    app = scan_app_dir(Root.of(tmp_path), "")
    env = (EnvVar(name="DATABASE_URL", value="postgres://u@db:5432/d",
                  source=Source(path="k8s/app.yaml", line=9, key="DATABASE_URL")),)
    got = pools_for_container(Container(name="app", env=env,
                                        source=Source(path="k8s/app.yaml", line=5)), app)
    (pool,) = got.pools
    assert pool.size.value == 10 and pool.bound == "default"
    return pool.size.source.label()


def test_pg_pool_default_is_named_at_the_locked_version(tmp_path):
    assert _default_label(tmp_path, LOCK_V3) == (
        "default: pg-pool 3.4.1 default (max || poolSize || 10; package-lock.json:14 "
        "pins pg-pool 3.4.1)")


def test_pg_pool_default_without_a_lock_or_out_of_the_checked_range(tmp_path):
    assert _default_label(tmp_path, None) == \
        "default: pg-pool 3.14 default (max || poolSize || 10)"
    assert _default_label(tmp_path, LOCK_V3.replace('"3.4.1",\n      "license"',
                                                    '"2.0.10",\n      "license"')) == \
        "default: pg-pool 3.14 default (max || poolSize || 10)"
