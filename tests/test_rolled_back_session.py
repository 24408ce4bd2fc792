"""Audit 13f D7: a SET or a temporary table run in a SQLAlchemy session that `finally:`
always rolls back is undone with the transaction (a SQL sandbox endpoint's shape); one
that is committed, or run outside such a try, is not."""

from __future__ import annotations

import pytest

from advisor.read.fs import Root
from advisor.read.sql.extract import scan_sql_sources
from tests.tree_helpers import write

pytest.importorskip("pglast")

SANDBOX = '''\
import re

from sqlalchemy import text


async def run_sandbox(session, schema_sql: str, query: str):
    try:
        conn = await session.connection()
        ddl = re.sub(r"(?i)CREATE\\\\s+TABLE", "CREATE TEMPORARY TABLE", schema_sql)
        await conn.execute(text(ddl))
        await conn.execute(text("SET work_mem = '64MB'"))
        return (await conn.execute(text(query))).fetchall()
    finally:
        await conn.execute(text("SET search_path TO public"))
        await session.rollback()


async def committed(session):
    try:
        await session.execute(text("SET search_path TO tenant"))
        await session.commit()
    finally:
        await session.rollback()


async def no_rollback(session):
    await session.execute(text("SET search_path TO other"))
'''


def test_what_finally_rolls_back_is_no_hazard(tmp_path):
    write(tmp_path, {"backend/app/routers/sandbox.py": SANDBOX})
    hazards, _ = scan_sql_sources(Root.of(tmp_path), ["backend/app/routers/sandbox.py"])
    assert sorted((h.kind, h.location.line) for h in hazards) == [
        ("session-set", 20), ("session-set", 27)]


def test_a_connection_in_autocommit_mode_rolls_nothing_back(tmp_path):
    text = SANDBOX.replace("    try:\n        conn = await session.connection()",
                           "    try:\n        conn = await session.connection()\n"
                           "        await conn.execution_options(isolation_level=\"AUTOCOMMIT\")",
                           1)
    write(tmp_path, {"backend/app/routers/sandbox.py": text})
    hazards, _ = scan_sql_sources(Root.of(tmp_path), ["backend/app/routers/sandbox.py"])
    assert ("session-set", 12) in [(h.kind, h.location.line) for h in hazards]
