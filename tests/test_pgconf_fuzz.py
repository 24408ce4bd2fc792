"""Random postgresql.conf texts (fixed seeds): the reader agrees with `postgres -C` on
every one, values and error messages alike. A few cases run by default; many more
under -m slow."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from advisor.facts import pg_guc as pgguc
from advisor.read.fs import Root
from advisor.read.sources.pgconf import read_pgconf
from tests.realpg import config_dir, log_messages, postgres_C_result

pytestmark = pytest.mark.postgres

PARAMS = ["work_mem", "shared_buffers", "max_connections", "statement_timeout",
          "log_rotation_age", "vacuum_cost_delay", "cursor_tuple_fraction", "jit",
          "wal_level", "synchronous_commit", "application_name", "Work_Mem"]  # fmt: skip
ASKED = sorted({p.lower() for p in PARAMS})
NUMBERS = ["0", "7", "64", "010", "08", "0x1F", "0x", "-1", "+5", "1.5", ".5", "5.", "1e3",
           "1e-2", "2.5", "99999999999", "1e400", "inf", "nan", "0x1.8p1", "  12",
           "0.0001"]  # fmt: skip
UNITS = ["", "B", "kB", "MB", "GB", "TB", "mb", "us", "ms", "s", "min", "h", "d", "sec",
         "MBx", " MB", " ms ", "\tkB"]  # fmt: skip
WORDS = ["on", "off", "yes", "NO", "t", "of", "o", "1", "true", "replica", "hot_standby",
         "LOGICAL", "remote_write", "x", "a-b", "\u00e9t\u00e9", "a.b", "TLSv1.2", ""]  # fmt: skip
NOISE = [*"aw_k=' \t#.-+0x1eE5/:\\\"\u00e9\x0b\r;,()",
         "work_mem", "jit", "max_connections", "''", "MB", "include", "\n"]  # fmt: skip


def _structured(rng: random.Random) -> str:
    def value() -> str:
        v = rng.choice(NUMBERS) + rng.choice(UNITS) if rng.random() < 0.5 else rng.choice(WORDS)
        q = rng.random()
        if q < 0.5:
            return "'" + v.replace("'", "''") + "'"
        if q < 0.6:
            return "'" + v + "\\''"
        return v

    lines = [
        rng.choice(PARAMS)
        + rng.choice([" = ", "=", " ", "\t=\t", " == "])
        + value()
        + rng.choice(["", " # c", "#", " x", "  "])
        for _ in range(rng.randint(1, 4))
    ]
    return "\n".join(lines) + rng.choice(["\n", ""])


def _noise(rng: random.Random) -> str:
    return "".join(rng.choice(NOISE) for _ in range(rng.randint(1, 30)))


def _pg_problems(stderr: str, datadir: Path) -> list[str]:
    out: list[str] = []
    for level, message in log_messages(stderr):
        message = message.replace(f"{datadir}/", "")
        if level == "HINT" and out:
            out[-1] += f"; HINT: {message}"
        elif level == "LOG" and not message.startswith("skipping missing configuration"):
            out.append(message)
    return out


def _check(text: str) -> None:
    with config_dir({"postgresql.conf": text}) as data:
        conf = read_pgconf(Root.of(data), "postgresql.conf")
        pg = postgres_C_result(data, ASKED)
        expected = _pg_problems(pg.stderr, data)
    fatal = [p.message for p in conf.problems if p.fatal]
    if not pg.ok:
        assert fatal == expected, repr(text)
        return
    assert fatal == [], repr(text)
    ours = {}
    for n in ASKED:
        if n in conf.settings:
            ours[n] = pgguc.show(conf.settings[n].value)
        else:
            boot = pgguc.lookup(n).boot  # type: ignore[union-attr]
            assert boot is not None
            ours[n] = pgguc.show(boot)
    assert ours == pg.values, repr(text)


def _cases(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return [(_structured if i % 2 else _noise)(rng) for i in range(count)]


@pytest.mark.parametrize("text", _cases(2026, 24))
def test_random_conf_matches_postgres(text: str) -> None:
    _check(text)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_many_random_confs_match_postgres(seed: int) -> None:
    for text in _cases(seed, 120):
        _check(text)
