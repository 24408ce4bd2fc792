"""Oracle: the postgresql.conf reader agrees with the real PostgreSQL 15.

For every corpus case the files are copied into a bare data directory and
`postgres -C name -D dir` is asked for every parameter the files mention (plus a few
they do not). Valid cases: our value, printed as postgres prints it, is what postgres
printed. Invalid cases: postgres refuses, and our fatal problems are exactly the
LOG lines (with their HINTs) postgres wrote, paths shown relative to the data dir.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from advisor.facts import pg_guc as pgguc
from advisor.read.fs import Root
from advisor.read.sources.pgconf import read_pgconf
from tests.realpg import config_dir, postgres_C_result

pytestmark = pytest.mark.postgres

CORPUS = Path(__file__).parent / "pgconf_corpus"
VALID = sorted(p.name for p in (CORPUS / "valid").iterdir())
INVALID = sorted(p.name for p in (CORPUS / "invalid").iterdir())

# Always asked too: parameters the case may leave at their boot value.
UNSET = [
    "max_connections",
    "work_mem",
    "shared_buffers",
    "statement_timeout",
    "jit",
    "hash_mem_multiplier",
    "wal_level",
    "superuser_reserved_connections",
]

# String parameters whose check hooks canonicalise the text (guc.c check_datestyle,
# check_timezone...); the reader keeps them as written, so they are not compared.
CANONICALISED = {"datestyle", "timezone", "log_timezone"}

_NAME = re.compile(r"^\s*([A-Za-z_\x80-\uffff][A-Za-z_0-9.\x80-\uffff]*)", re.M)


def _files(case: Path) -> dict[str, str | bytes]:
    return {
        p.relative_to(case).as_posix(): p.read_bytes()
        for p in sorted(case.rglob("*"))
        if p.is_file()
    }


def _mentioned(files: dict[str, str | bytes]) -> set[str]:
    names: set[str] = set()
    for content in files.values():
        text = content.decode("utf-8", "replace") if isinstance(content, bytes) else content
        names.update(m.group(1).lower() for m in _NAME.finditer(text))
    return {n for n in names if pgguc.lookup(n) or "." in n} - {
        "include",
        "include_dir",
        "include_if_exists",
    }


def _expected_unset(name: str) -> str:
    param = pgguc.lookup(name)
    assert param is not None
    assert param.boot is not None
    return pgguc.show(param.boot)


def _pg_problems(stderr: str, datadir: Path) -> list[str]:
    """postgres's LOG lines, each with its HINT, paths relative to the data dir."""
    from tests.realpg import log_messages

    out: list[str] = []
    for level, message in log_messages(stderr):
        message = message.replace(f"{datadir}/", "")
        if level == "HINT" and out:
            out[-1] += f"; HINT: {message}"
        elif level == "LOG" and not message.startswith("skipping missing configuration"):
            out.append(message)
    return out


@pytest.mark.parametrize("case", VALID)
def test_valid_file_values_match_postgres(case: str) -> None:
    files = _files(CORPUS / "valid" / case)
    with config_dir(files) as data:
        conf = read_pgconf(Root.of(data), "postgresql.conf")
        names = sorted((_mentioned(files) | set(conf.settings) | set(UNSET)) - CANONICALISED)
        pg = postgres_C_result(data, names)
    assert pg.ok, pg.stderr
    assert [p.message for p in conf.problems] == []
    ours = {
        n: pgguc.show(conf.settings[n].value) if n in conf.settings else _expected_unset(n)
        for n in names
    }
    assert ours == pg.values


@pytest.mark.parametrize("case", INVALID)
def test_invalid_file_is_refused_with_postgres_messages(case: str) -> None:
    files = _files(CORPUS / "invalid" / case)
    with config_dir(files) as data:
        conf = read_pgconf(Root.of(data), "postgresql.conf")
        pg = postgres_C_result(data, ["max_connections"])
        expected = _pg_problems(pg.stderr, data)
    assert not pg.ok
    assert expected, pg.stderr
    fatal = [p for p in conf.problems if p.fatal]
    assert [p.message for p in fatal] == expected
    for p in fatal:
        assert p.location.path and p.program == "PostgreSQL"


def test_corpus_is_big_enough() -> None:
    assert len(VALID) >= 20 and len(INVALID) >= 20


def test_winning_line_is_reported() -> None:
    conf = read_pgconf(Root.of(CORPUS / "valid" / "12-auto-conf-wins"), "postgresql.conf")
    mc = conf.settings["max_connections"]
    assert (mc.value, mc.source.path, mc.source.line) == (500, "postgresql.auto.conf", 3)
    assert conf.files == ["postgresql.conf", "late.conf", "postgresql.auto.conf"]
    dup = read_pgconf(Root.of(CORPUS / "valid" / "07-duplicates-last-wins"), "postgresql.conf")
    assert dup.settings["max_connections"].source.line == 5
    assert dup.settings["shared_buffers"].source.line == 7
    assert dup.settings["work_mem"].raw == "4MB"
