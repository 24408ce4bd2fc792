"""The per-major parameter tables (advisor/facts/data/pg_settings_<major>.json): each equals
the pg_settings of a real server of its major, and the config reader's verdict on a
name or value is what that major's `postgres -C` says.

Real servers: Debian's 15, and 10..18 from registry packages when
scripts/get_pg_binaries.py installed them (.tools/pg); tests of a major without its
binaries skip and say so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.facts import pg_guc as pgguc
from advisor.facts.pg_defaults import pg_default
from advisor.model import Source
from advisor.read.sources.pgconf import parse_postgres_args_checked, read_pgconf
from tests.realpg import pg_bin_for, postgres_C_files, running_postgres

DATA = Path(pgguc.__file__).with_name("data")
# Settings whose value is the point release (15.18, 150018), not a fact of the major.
MINOR_RELEASE_SETTINGS = {"server_version", "server_version_num"}
_QUERY = (
    "select json_agg(json_build_array(name, vartype, unit, boot_val, min_val, max_val,"
    " context, enumvals)) from pg_settings"
)


def _bin(major: int) -> Path:
    found = pg_bin_for(major)
    if found is None:
        pytest.skip(f"no PostgreSQL {major} here (scripts/get_pg_binaries.py {major})")
    return found


def _doc(major: int) -> dict:
    return json.loads((DATA / f"pg_settings_{major}.json").read_text())


def _minor(version: str) -> int:
    return int(version.split()[0].split(".")[1])


def test_one_table_per_major_and_each_names_its_source() -> None:
    files = sorted(int(p.stem.rsplit("_", 1)[1]) for p in DATA.glob("pg_settings_*.json"))
    assert tuple(files) == pgguc.TABLE_MAJORS
    for major in pgguc.TABLE_MAJORS:
        doc = _doc(major)
        assert doc["major"] == major
        assert doc["server_version"].split(".")[0] == str(major)
        assert doc["generator"] == f"scripts/gen_pg_settings.py {major}"
        # a real server of that major, from a named package
        assert doc["source"].startswith(f"pg_settings of PostgreSQL {major}.")
        assert "package" in doc["source"]
        assert pgguc.table_source(major) == doc["source"]


@pytest.mark.postgres
@pytest.mark.parametrize("major", pgguc.TABLE_MAJORS)
def test_table_equals_the_real_server(major: int) -> None:
    """Every row of the real server's pg_settings is in the table, the same; the table
    has nothing more but GUC_NO_SHOW_ALL parameters and, when it was generated from a
    later point release than the server here (Debian updates 15), what that release
    added."""
    bin_dir = _bin(major)
    with running_postgres(bin_dir=bin_dir) as pg:
        rows = json.loads(pg.psql(_QUERY))
        version = pg.psql("show server_version").strip()
    doc = _doc(major)
    params = pgguc.pg_params(major)
    for name, vartype, unit, boot, lo, hi, context, enumvals in rows:
        p = params.get(name.lower())
        assert p is not None, f"{name} of PostgreSQL {version} missing from the {major} table"
        assert (p.name, p.type, p.unit, p.context) == (name, vartype, unit, context)
        if name in MINOR_RELEASE_SETTINGS:
            # "15.20 (Debian ...)" and 150020: the major's two digits lead both
            assert pgguc.show(p.boot)[:2] == boot[:2] == str(major), name
            continue
        assert (None if p.boot is None else pgguc.show(p.boot)) == boot, name
        if vartype in ("integer", "real"):
            assert (pgguc.show(p.min), pgguc.show(p.max)) == (lo, hi), name
        if vartype == "enum":
            assert list(p.values) == enumvals, name
            assert {v.lower() for v in enumvals} <= set(p.spellings), name
    listed = {r[0].lower() for r in rows}
    hidden = {k for k, v in doc["params"].items() if v.get("hidden")}
    extra = set(params) - listed - hidden
    if _minor(doc["server_version"]) == _minor(version):
        assert extra == set()
    else:
        assert _minor(doc["server_version"]) > _minor(version), (doc["server_version"], version)
        # 15.19 added output_plugin_libraries (Debian changelog of postgresql-15 15.19)
        assert extra <= {"output_plugin_libraries", "composite_type_mismatch"}, extra


# (parameter, first major that has it, first major that no longer has it); from the
# release notes of each major, not from the tables.
LIFETIMES = [
    ("reserved_connections", 16, None),  # 16: "Add server variable reserved_connections"
    ("transaction_timeout", 17, None),
    ("sync_replication_slots", 17, None),
    ("summarize_wal", 17, None),
    ("idle_session_timeout", 14, None),
    ("hash_mem_multiplier", 13, None),
    ("wal_keep_size", 13, None),
    ("autovacuum_worker_slots", 18, None),
    ("io_method", 18, None),
    ("wal_keep_segments", 10, 13),  # 13: replaced by wal_keep_size
    ("vacuum_defer_cleanup_age", 10, 16),  # 16: removed
    ("old_snapshot_threshold", 10, 17),  # 17: removed
    ("promote_trigger_file", 12, 16),  # 16: removed (12: replaced trigger_file)
    ("operator_precedence_warning", 10, 14),  # 14: removed
    ("default_with_oids", 10, 12),  # 12: WITH OIDS removed; shown no longer
    ("stats_temp_directory", 10, 15),  # 15: statistics in shared memory
    ("max_connections", 10, None),
]


@pytest.mark.parametrize(("name", "since", "until"), LIFETIMES)
def test_parameters_exist_in_the_majors_the_release_notes_say(
    name: str, since: int, until: int | None
) -> None:
    having = [m for m in pgguc.TABLE_MAJORS if pgguc.lookup(name, m) is not None]
    expected = [m for m in pgguc.TABLE_MAJORS if m >= since and (until is None or m < until)]
    if name == "default_with_oids":
        # 12 keeps it as a GUC_NO_SHOW_ALL parameter that only accepts false
        having = [m for m in having if not _doc(m)["params"][name].get("hidden")]
    assert having == expected


def _conf_verdict(major: int, line: str) -> list[tuple[bool, str]]:
    root_files = {"postgresql.conf": line + "\n"}
    import tempfile

    from advisor.read.fs import Root

    with tempfile.TemporaryDirectory() as tmp:
        for name, text in root_files.items():
            (Path(tmp) / name).write_text(text)
        conf = read_pgconf(Root(Path(tmp)), "postgresql.conf", version=major)
    return [(p.fatal, p.message) for p in conf.problems]


CONF_LINES = [
    "reserved_connections = 5",
    "transaction_timeout = '1min'",
    "sync_replication_slots = on",
    "summarize_wal = on",
    "vacuum_defer_cleanup_age = 0",
    "old_snapshot_threshold = -1",
    "wal_keep_segments = 32",
    "wal_keep_size = '1GB'",
    "wal_compression = lz4",  # a bool before 15, an enum from 15
    "idle_session_timeout = '10min'",
    "max_connections = 0",
    "max_connections = 262144",  # over MAX_BACKENDS
    "work_mem = '1.5MB'",  # fractions of a unit are accepted from 12
    "shared_buffers = '128 MB'",
    "hash_mem_multiplier = 1000.5",
    "work_mem = '1024B'",  # "B" from 11; 10 and 11 name no unit in the range message
    "work_mem = '100000B'",  # 11 divides and truncates: 97 kB
    "statement_timeout = '100us'",  # "us" from 12
    "authentication_timeout = '1500ms'",  # 10/11 truncate to 1 s, 12+ round to 2
    "vacuum_cost_delay = '10ms'",  # an integer before 12, a real with a unit from 12
    "vacuum_cost_delay = '2.5'",
    "random_page_cost = 'NaN'",  # refused from 12
    "max_connections = 0x40",
    "work_mem = '64 kB'",
]


@pytest.mark.postgres
@pytest.mark.parametrize("major", pgguc.TABLE_MAJORS)
def test_conf_verdicts_are_what_that_majors_postgres_says(major: int) -> None:
    """Fatal problems (with PostgreSQL's words) exactly when that major's `postgres -C`
    refuses the line."""
    from tests.realpg import log_messages

    bin_dir = _bin(major)
    for line in CONF_LINES:
        name = line.split()[0]
        known = pgguc.lookup(name, major) is not None
        real = postgres_C_files({"postgresql.conf": line + "\n"},
                                [name if known else "max_connections"], bin_dir=bin_dir)
        ours = [msg for fatal, msg in _conf_verdict(major, line) if fatal]
        if real.ok:
            assert ours == [], (major, line, ours)
            if known:
                assert _value_shown(major, line) == real.values[name], (major, line)
            continue
        theirs = []
        for level, message in log_messages(real.stderr):
            message = message.replace('/data/postgresql.conf"', '/postgresql.conf"')
            if level == "HINT" and theirs:
                theirs[-1] += f"; HINT: {message}"
            elif level == "LOG" and "configuration file" not in message:
                theirs.append(message)
        assert ours, (major, line, real.stderr)
        # the first message is the same, up to the data dir's path
        assert _strip_path(theirs[0]) == _strip_path(ours[0]), (major, line)


def _value_shown(major: int, line: str) -> str:
    """What the reader made of the line, as `postgres -C` prints it (base units)."""
    import tempfile

    from advisor.read.fs import Root

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "postgresql.conf").write_text(line + "\n")
        conf = read_pgconf(Root(Path(tmp)), "postgresql.conf", version=major)
    (setting,) = conf.settings.values()
    return pgguc.show(setting.value)


def _strip_path(message: str) -> str:
    import re

    return re.sub(r'in file "[^"]*postgresql.conf"', 'in file "postgresql.conf"', message)


def test_removed_and_added_parameters_are_named_so() -> None:
    v16 = _conf_verdict(16, "vacuum_defer_cleanup_age = 0")
    assert v16 == [
        (True, 'unrecognized configuration parameter "vacuum_defer_cleanup_age" in file '
               '"postgresql.conf" line 1'),
        (False, '"vacuum_defer_cleanup_age" was removed in PostgreSQL 16 (a parameter up to '
                '15): not a PostgreSQL 16 parameter'),
    ]
    assert _conf_verdict(15, "vacuum_defer_cleanup_age = 0") == []
    assert _conf_verdict(17, "old_snapshot_threshold = -1")[1][1].startswith(
        '"old_snapshot_threshold" was removed in PostgreSQL 17')
    assert _conf_verdict(13, "wal_keep_segments = 8")[1][1].startswith(
        '"wal_keep_segments" was removed in PostgreSQL 13')
    assert _conf_verdict(15, "reserved_connections = 1")[1][1] == (
        '"reserved_connections" was added in PostgreSQL 16: not a PostgreSQL 15 parameter')
    for major in (17, 18):
        assert _conf_verdict(major, "transaction_timeout = '1min'") == []
        assert _conf_verdict(major, "summarize_wal = on") == []
        assert _conf_verdict(major, "sync_replication_slots = on") == []
    _, problems = parse_postgres_args_checked(["-c", "reserved_connections=2"],
                                              Source(path="x"), 14)
    assert [(p.fatal, p.message) for p in problems] == [
        (True, 'unrecognized configuration parameter "reserved_connections"'),
        (False, '"reserved_connections" was added in PostgreSQL 16: not a PostgreSQL 14 '
                'parameter'),
    ]


def test_versions_without_a_table_use_the_nearest_and_say_so() -> None:
    assert pgguc.table_major(9) == 10 and pgguc.table_major(19) == 18
    v19 = _conf_verdict(19, "a_parameter_of_19 = 1")
    assert v19 == [(False, '"a_parameter_of_19" is not a PostgreSQL 18 parameter; '
                           'pool-advisor has no parameter table of PostgreSQL 19 and keeps '
                           'it unchecked')]
    v96 = _conf_verdict(9, "max_wal_senders = 5")
    assert v96 == []


def test_defaults_come_from_each_majors_table() -> None:
    for major in pgguc.TABLE_MAJORS:
        mc = pg_default("max_connections", major)
        assert mc is not None and mc.value == 100
        assert mc.source == Source.default_of(f"PostgreSQL {major} default",
                                              key="max_connections")
        assert pg_default("superuser_reserved_connections", major).value == 3
        assert pg_default("max_wal_senders", major).value == 10
    assert pg_default("max_wal_senders", 9).value == 0  # 9.6 documentation: "zero"
    assert pg_default("superuser_reserved_connections", 9).value == 3
    assert pg_default("reserved_connections", 15) is None
    assert pg_default("reserved_connections", 16).value == 0
    assert pg_default("hash_mem_multiplier", 12) is None
    assert pg_default("hash_mem_multiplier", 13).value == 1.0
    assert pg_default("hash_mem_multiplier", 15).value == 2.0
    assert pg_default("autovacuum_worker_slots", 18).value == 16
    later = pg_default("max_connections", 19)
    assert later.source.label() == (
        "default: PostgreSQL 19 default, taken from PostgreSQL 18's table")
