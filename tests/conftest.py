"""Shared pytest setup: skip tests marked `postgres` when PostgreSQL 15 is absent."""

from __future__ import annotations

import pytest

from tests.realpg import PG_BIN, have_postgres

# Application code written as test data for bench/hazards.py, not tests to run.
collect_ignore = ["hazard_corpus"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if have_postgres():
        return
    skip = pytest.mark.skip(reason=f"PostgreSQL 15 binaries not found in {PG_BIN}")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def pg_template():
    """The session's initdb'd template data dir (made on first use, removed at exit)."""
    from tests.realpg import template_datadir

    return template_datadir()


@pytest.fixture
def reads(monkeypatch) -> dict[str, int]:
    """How many times each file was read during a test (every reader goes through
    advisor.read.fs.read_regular): the read-once and cache tests count with it."""
    from advisor.read import fs

    counts: dict[str, int] = {}
    real = fs.read_regular

    def counting(path, *a, **kw):
        counts[str(path)] = counts.get(str(path), 0) + 1
        return real(path, *a, **kw)

    monkeypatch.setattr(fs, "read_regular", counting)
    return counts
