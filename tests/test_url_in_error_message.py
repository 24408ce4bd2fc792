"""Audit 36 N2: a URL written in an exception's message (an alembic env.py telling the
user what DATABASE_URL should look like) is not the URL an engine connects with."""

from __future__ import annotations

import pytest

from advisor.read.fs import Root
from advisor.read.sql.extract import scan_sql_sources
from tests.tree_helpers import write

pytest.importorskip("pglast")

ENV_PY = '''\
import os


def _get_database_url() -> str:
    url = os.environ.get("DATABASE_URL")
    if not url:
        raise RuntimeError(
            "DATABASE_URL environment variable is required to run svc-orders "
            "Alembic migrations.  Set it to the async PostgreSQL connection "
            "string (postgresql+asyncpg://...) before invoking alembic."
        )
    if url.startswith("postgres:"):
        raise ValueError(f"unsupported scheme in {url}: use postgresql+asyncpg://")
    return url


FALLBACK = "postgresql+asyncpg://app@pgbouncer:6432/orders"
'''


def test_urls_in_raised_messages_are_not_connection_strings(tmp_path):
    write(tmp_path, {"svc-orders/alembic/env.py": ENV_PY})
    hazards, _ = scan_sql_sources(Root.of(tmp_path), ["svc-orders/alembic/env.py"])
    # only the module-level URL the code may connect with is read
    assert [(h.kind, h.location.line) for h in hazards] == [("protocol-prepare", 17)]
