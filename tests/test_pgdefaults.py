"""Built-in defaults per version; PostgreSQL 15's checked against a real server."""

from __future__ import annotations

import json

import pytest

from advisor.facts import pg_guc as pgguc
from advisor.facts.pg_defaults import known_defaults, pg_default, setting_or_default
from advisor.model import Setting, Source
from tests.realpg import running_postgres


@pytest.mark.postgres
def test_pg15_defaults_are_the_real_boot_values() -> None:
    names = known_defaults()
    sql = (
        "select json_object_agg(name, boot_val) from pg_settings where name in ("
        + ", ".join(f"'{n}'" for n in names)
        + ")"
    )
    with running_postgres() as pg:
        boot = json.loads(pg.psql(sql))
    in_15 = {n for n in names if pg_default(n, 15) is not None}
    assert set(boot) == in_15  # same set of parameters exists in 15
    for name in in_15:
        setting = pg_default(name, 15)
        assert setting is not None
        assert pgguc.show(setting.value) == boot[name], name
        assert setting.unit == pgguc.lookup(name).unit, name


def test_version_differences() -> None:
    assert pg_default("reserved_connections", 15) is None
    assert pg_default("reserved_connections", 16).value == 0
    assert pg_default("hash_mem_multiplier", 12) is None
    assert pg_default("hash_mem_multiplier", 13).value == 1.0
    assert pg_default("hash_mem_multiplier", 14).value == 1.0
    assert pg_default("hash_mem_multiplier", 15).value == 2.0
    assert pg_default("hash_mem_multiplier", 18).value == 2.0
    assert pg_default("autovacuum_worker_slots", 17) is None
    assert pg_default("autovacuum_worker_slots", 18).value == 16
    assert pg_default("idle_session_timeout", 13) is None
    assert pg_default("idle_session_timeout", 14).value == 0
    assert pg_default("transaction_timeout", 16) is None
    assert pg_default("transaction_timeout", 17).unit == "ms"
    for version in range(12, 19):
        mc = pg_default("max_connections", version)
        assert mc is not None and mc.value == 100
        assert mc.source == Source.default_of(
            f"PostgreSQL {version} default", key="max_connections"
        )
        assert pg_default("shared_buffers", version).value == 16384
        assert pg_default("work_mem", version).value == 4096


def test_setting_or_default_prefers_the_file() -> None:
    mine = Setting(name="max_connections", raw="300", value=300, source=Source(path="p", line=1))
    assert setting_or_default({"max_connections": mine}, "max_connections", 15) is mine
    fallback = setting_or_default({}, "superuser_reserved_connections", 16)
    assert fallback is not None and fallback.value == 3
    assert fallback.source.label() == "default: PostgreSQL 16 default"
    assert setting_or_default({}, "reserved_connections", 14) is None
