"""Unit tests: pgbouncer.ini reading (ConfigMap text, siblings, bad input) and the pure
PgBouncer arithmetic (defaults per version, effective pools, server-side max)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.facts.pgbouncer import (
    UnknownSetting,
    bouncer_default,
    c_atoi,
    c_parse_time,
    c_strtol_full,
    effective_pool,
    server_side_max,
)
from advisor.model import BouncerVersion, Source, Term
from advisor.read.fs import Root
from advisor.read.sources.pgbouncer_ini import parse_connstr, pooler_from_ini, read_pgbouncer_ini

V118 = BouncerVersion(major=1, minor=18)


def _read(tmp_path: Path, text: str, **kw):
    return read_pgbouncer_ini(Root.of(tmp_path), "pgbouncer.ini", text=text, **kw)


def test_configmap_text_lines_are_shifted_by_line_offset(tmp_path: Path) -> None:
    text = "[databases]\nappdb = host=db pool_size=30\n[pgbouncer]\ndefault_pool_size = 12\n"
    ini = _read(tmp_path, text, line_offset=10, display_path="k8s/pgbouncer-cm.yaml")
    s = ini.settings["default_pool_size"]
    assert (s.value, s.source.path, s.source.line, s.source.key) == (
        12,
        "k8s/pgbouncer-cm.yaml",
        14,
        "default_pool_size",
    )
    db = ini.database("appdb")
    assert db is not None and db.pool_size is not None
    assert (db.pool_size.value, db.pool_size.source.line, db.location.line) == (30, 12, 12)
    assert ini.files == ["k8s/pgbouncer-cm.yaml"]


def test_inline_comment_is_fatal_with_pgbouncers_words(tmp_path: Path) -> None:
    ini = _read(tmp_path, "[pgbouncer]\ndefault_pool_size = 20 ; note\n", line_offset=4)
    [problem] = ini.problems
    assert problem.fatal and problem.program == "PgBouncer"
    assert problem.message == 'invalid value "20 ; note" for parameter default_pool_size'
    assert (problem.location.path, problem.location.line) == ("pgbouncer.ini", 6)


def test_siblings_include_follows_configmap_key(tmp_path: Path) -> None:
    main = "[pgbouncer]\n%include /etc/pgbouncer/pool.ini\nmax_client_conn = 300\n"
    siblings = {"pool.ini": ("default_pool_size = 7\nreserve_pool_size = 1\n", 20)}
    ini = _read(tmp_path, main, line_offset=5, display_path="cm.yaml", siblings=siblings)
    assert not ini.fatal
    assert ini.settings["default_pool_size"].source.line == 21
    assert ini.settings["default_pool_size"].source.path == "cm.yaml"
    assert ini.settings["max_client_conn"].source.line == 8
    assert any("ConfigMap key pool.ini" in p.message for p in ini.problems)


def test_include_relative_to_root_and_suppressions(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "extra.ini").write_text(
        "; pool-advisor: ignore[PA201] sized on purpose\ndefault_pool_size = 90\n"
    )
    (tmp_path / "pgbouncer.ini").write_text("[pgbouncer]\n%include conf/extra.ini\n")
    ini = read_pgbouncer_ini(Root.of(tmp_path), "pgbouncer.ini")
    assert ini.settings["default_pool_size"].source.path == "conf/extra.ini"
    assert ini.files == ["pgbouncer.ini", "conf/extra.ini"]
    assert ini.suppressions == {"conf/extra.ini": {1: ["PA201"]}}


def test_include_found_only_beside_the_including_file_says_so(tmp_path: Path) -> None:
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "users.ini").write_text("max_client_conn = 77\n")
    (tmp_path / "deploy" / "pgbouncer.ini").write_text("[pgbouncer]\n%include users.ini\n")
    ini = read_pgbouncer_ini(Root.of(tmp_path), "deploy/pgbouncer.ini")
    assert ini.settings["max_client_conn"].value == 77
    [note] = ini.problems
    assert not note.fatal and "working directory" in note.message
    assert note.location.label() == "deploy/pgbouncer.ini:2"


def test_include_outside_root_is_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (tmp_path / "secret.ini").write_text("max_client_conn = 1\n")
    (root / "pgbouncer.ini").write_text("[pgbouncer]\n%include ../secret.ini\n")
    ini = read_pgbouncer_ini(Root.of(root), "pgbouncer.ini")
    assert "max_client_conn" not in ini.settings
    [p] = ini.problems
    assert not p.fatal and "outside the scanned root" in p.message
    assert p.location.label() == "pgbouncer.ini:2"
    ini = _read(root, "[pgbouncer]\n%include /etc/pgbouncer/x.ini\n")
    assert [p.fatal for p in ini.problems] == [False]


def test_include_loop_is_fatal_like_pgbouncer(tmp_path: Path) -> None:
    (tmp_path / "a.ini").write_text("%include b.ini\n")
    (tmp_path / "b.ini").write_text("\n%include a.ini\n")
    (tmp_path / "pgbouncer.ini").write_text("[pgbouncer]\n%include a.ini\n")
    ini = read_pgbouncer_ini(Root.of(tmp_path), "pgbouncer.ini")
    [p] = [p for p in ini.problems if p.fatal]
    assert "include nesting level too deep" in p.message
    # main=level 0, a=1, b=2, ... b is level 10: PgBouncer stops at its include line
    assert ini.refusal[0] == "include nesting level too deep (b.ini:2), stopping loading"
    assert len(ini.refusal) == 11  # one line per include level, as PgBouncer logs


def test_binary_and_non_utf8_become_problems(tmp_path: Path) -> None:
    (tmp_path / "bin.ini").write_bytes(b"[pgbouncer]\x00\x01\x02")
    (tmp_path / "latin1.ini").write_bytes(b"[pgbouncer]\n; caf\xe9\nmax_client_conn = 5\n")
    for name, words, line in (("bin.ini", "binary", None), ("latin1.ini", "UTF-8", 2)):
        ini = read_pgbouncer_ini(Root.of(tmp_path), name)
        [p] = ini.problems
        assert words in p.message and p.location.path == name and p.location.line == line
    (tmp_path / "pgbouncer.ini").write_text("[pgbouncer]\n%include latin1.ini\n")
    ini = read_pgbouncer_ini(Root.of(tmp_path), "pgbouncer.ini")
    [p] = ini.problems
    assert "cannot read" in p.message and p.location.label() == "pgbouncer.ini:2"
    ini = _read(tmp_path, "[pgbouncer]\nmax_client_conn = 5\x00junk = 1\n")
    assert ini.settings["max_client_conn"].value == 5 and "junk" not in ini.settings


def test_missing_main_file_is_a_problem(tmp_path: Path) -> None:
    ini = read_pgbouncer_ini(Root.of(tmp_path), "nope.ini")
    assert [p.message for p in ini.problems] == ["file not found"]


def test_never_raises_on_garbage(tmp_path: Path) -> None:
    samples = ["[", "[pgbouncer", "=", "%include", "%include  \n", "[users]\n=x=\n", "\r\n" * 3]
    samples += ["[databases]\n* = host='x\n[pgbouncer]\n", "[pgbouncer]\n'quoted' = 1\n"]
    for text in samples:
        ini = _read(tmp_path, text)
        assert all(p.location.path == "pgbouncer.ini" for p in ini.problems)


def test_autodb_errors_are_not_fatal_at_start(tmp_path: Path) -> None:
    ini = _read(tmp_path, "[databases]\n* = host=x bogus=1\n[pgbouncer]\n")
    assert not ini.fatal and "bogus" in ini.problems[0].message


def test_connstr_grammar() -> None:
    assert parse_connstr("host=a  dbname='my ''db''' port=5") == (
        [("host", "a"), ("dbname", "my 'db'"), ("port", "5")],
        False,
    )
    pairs = [("dbname", "x"), ("pool_size", "4")]
    assert parse_connstr("dbname='x'y pool_size=4") == (pairs, False)  # the y is dropped
    assert parse_connstr("host=")[1] and parse_connstr("=a")[1] and parse_connstr("x='a")[1]


def test_c_number_parsing() -> None:
    assert c_strtol_full("0x10") == 16 and c_strtol_full("010") == 8 and c_strtol_full("-3") == -3
    assert c_strtol_full("20 ; note") is None and c_strtol_full("") is None
    assert c_atoi("12abc") == 12 and c_atoi("x") == 0 and c_atoi(" -4") == -4
    assert c_parse_time("1.5") == 1.5 and c_parse_time("1e3") == 1000
    assert c_parse_time("5s") is None and c_parse_time("-1") is None


def test_defaults_per_version() -> None:
    v = lambda minor: BouncerVersion(major=1, minor=minor)  # noqa: E731
    d = bouncer_default("default_pool_size", V118)
    # V118 is the model's fallback (no version read): its defaults say so (audit 8b D6)
    assert (d.value, d.source.label()) == (20, "default: PgBouncer 1.18 default (version "
                                               "assumed: Debian 12 PgBouncer 1.18)")
    read = BouncerVersion(major=1, minor=18, source=Source(path="Dockerfile", line=1))
    assert bouncer_default("default_pool_size", read).source.label() == \
        "default: PgBouncer 1.18 default"
    assert bouncer_default("default_pool_size", v(23)).source.label() == \
        "default: PgBouncer 1.23 default"
    assert bouncer_default("reserve_pool_timeout", V118).value == 5.0
    assert bouncer_default("pool_mode", V118).value == "session"
    assert bouncer_default("listen_port", V118).value == 6432
    with pytest.raises(UnknownSetting):
        bouncer_default("max_prepared_statements", V118)
    assert bouncer_default("max_prepared_statements", v(21)).value == 0
    assert bouncer_default("max_prepared_statements", v(24)).value == 200
    with pytest.raises(UnknownSetting):
        bouncer_default("transaction_timeout", v(24))
    assert bouncer_default("transaction_timeout", v(25)).value == 0.0
    assert bouncer_default("max_prepared_statements", v(30)).value == 200  # newest table


def _pooler(tmp_path: Path, text: str, version: BouncerVersion = V118, replicas: int = 1):
    ini = _read(tmp_path, text, version=version)
    assert not ini.fatal, ini.problems
    reps = Term(label="replicas", value=replicas, source=ini.settings["pool_mode"].source)
    return pooler_from_ini(ini, id="p", name="pgbouncer", replicas=reps)


POOLS = """\
[databases]
db1 = host=h max_db_connections=6
db2 = host=h pool_size=3 reserve_pool=0
fixed = host=h user=svc pool_size=4
* = host=h pool_size=2
[users]
u2 = max_user_connections=5 pool_mode=session
svc = pool_mode=statement
[pgbouncer]
pool_mode = transaction
default_pool_size = 5
reserve_pool_size = 2
"""


def test_effective_pool_overrides_and_fallback(tmp_path: Path) -> None:
    pooler = _pooler(tmp_path, POOLS)
    p = effective_pool(pooler, "db1", "u2")
    assert p is not None
    assert (p.pool_size.value, p.reserve_pool_size.value, p.max_db_connections.value) == (5, 2, 6)
    assert p.pool_size.source.label() == "pgbouncer.ini:11"
    assert p.max_db_connections.source.label() == "pgbouncer.ini:2"
    assert (p.pool_mode.value, p.pool_mode.source.line) == ("session", 7)
    assert p.max_user_connections.value == 5
    q = effective_pool(pooler, "db2", "u1")
    assert q is not None and (q.pool_size.value, q.reserve_pool_size.value) == (3, 0)
    assert q.pool_mode.source.line == 10
    auto = effective_pool(pooler, "other", "u1")
    assert auto is not None and (auto.database, auto.entry, auto.pool_size.value) == (
        "other",
        "*",
        2,
    )
    # 1.18: a forced user is a separate object, its [users] entry does not apply
    f = effective_pool(pooler, "fixed", "anyone")
    assert f is not None and f.user == "svc" and f.pool_mode.value == "transaction"
    assert any("does not apply" in n for n in f.notes)
    f23 = effective_pool(_pooler(tmp_path, POOLS, BouncerVersion(major=1, minor=23)), "fixed", "x")
    assert f23 is not None and f23.pool_mode.value == "statement"
    no_star = _pooler(tmp_path, POOLS.replace("* = host=h pool_size=2\n", ""))
    assert effective_pool(no_star, "other", "u1") is None
    assert effective_pool(no_star, "pgbouncer", "u1") is None


def test_the_pool_mode_alone_is_the_pools(tmp_path: Path) -> None:
    """effective_pool_mode (what the pool-mode rules ask per client) is effective_pool's
    pool_mode for every database and user, forced or not, before and after 1.23."""
    from advisor.facts.pgbouncer import effective_pool_mode

    for version in (V118, BouncerVersion(major=1, minor=23)):
        for text in (POOLS, POOLS.replace("* = host=h pool_size=2\n", ""),
                     POOLS.replace("pool_mode = transaction\n", "pool_mode = statement\n")):
            pooler = _pooler(tmp_path, text, version)
            for db in ("db1", "db2", "fixed", "other", "pgbouncer", "*"):
                for user in ("u1", "u2", "svc", "anyone"):
                    pool = effective_pool(pooler, db, user)
                    mode = effective_pool_mode(pooler, db, user)
                    assert mode == (pool.pool_mode if pool is not None else None), (db, user)


def test_server_side_max_caps_and_replicas(tmp_path: Path) -> None:
    pooler = _pooler(tmp_path, POOLS, replicas=3)
    c = server_side_max(pooler, [("db1", "u1"), ("db1", "u2"), ("db2", "u1"), ("db2", "u2")])
    # db1: 7 + 7 capped at 6; db2: 3 + 3 = 6 but u2 has at most 5 across db1 and db2.
    assert c.total == 3 * 12
    assert [f.value for f in c.factors] == [3, 12]
    db1 = next(p for p in c.parts if p.who == "db1")
    assert db1.total == 6 and "max_db_connections 6" in db1.note
    assert db1.factors[0].source.label() == "pgbouncer.ini:2"
    assert "cancel request" in c.note
    only_u2 = server_side_max(pooler, [("db1", "u2"), ("db2", "u2")])
    assert only_u2.total == 3 * 5 and "u2 max_user_connections 5" in only_u2.note


def test_server_side_max_declared_pairs_and_reserve_timeout(tmp_path: Path) -> None:
    text = POOLS + "reserve_pool_timeout = 0\n"
    pooler = _pooler(tmp_path, text)
    c = server_side_max(pooler, None)
    # db1 x {u2, svc}: 5 + 5 (no reserve: timeout 0) capped at 6; db2 x {u2, svc}: 3 + 3;
    # fixed/svc (forced, own counter in 1.18): 4. u2 <= 5 still fits (db1 1-2, db2 3).
    assert c.total == 6 + 6 + 4
    assert "pairs not given" in c.note and "* fallback is left out" in c.note
    assert "reserve_pool_timeout = 0" in c.note


def test_absolute_include_falls_back_to_file_beside_it(tmp_path: Path) -> None:
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "users.ini").write_text("max_client_conn = 66\n")
    (tmp_path / "deploy" / "pgbouncer.ini").write_text(
        "[pgbouncer]\n%include /etc/pgbouncer/users.ini\n"
    )
    ini = read_pgbouncer_ini(Root.of(tmp_path), "deploy/pgbouncer.ini")
    assert ini.settings["max_client_conn"].source.label() == "deploy/users.ini:1"
    [note] = ini.problems
    assert "assuming it is mounted at /etc/pgbouncer/users.ini" in note.message


def test_unknown_version_says_which_tables(tmp_path: Path) -> None:
    ini = _read(tmp_path, "[pgbouncer]\n", version=BouncerVersion(major=1, minor=12))
    [note] = ini.problems
    assert not note.fatal and "tables of 1.18" in note.message


def test_user_pool_size_from_123(tmp_path: Path) -> None:
    text = "[databases]\nappdb = host=h pool_size=9\n[users]\nu = pool_size=4\nv = pool_size=-1\n"
    text += "[pgbouncer]\npool_mode = transaction\n"
    assert _read(tmp_path, text).fatal  # 1.18: unrecognized user parameter: pool_size
    pooler = _pooler(tmp_path, text, BouncerVersion(major=1, minor=23))
    sizes = {u: effective_pool(pooler, "appdb", u).pool_size for u in ("u", "v", "w")}
    assert {u: t.value for u, t in sizes.items()} == {"u": 4, "v": 9, "w": 9}
    assert sizes["u"].source.line == 4


AUTH = """\
[databases]
app = host=h
other = host=h auth_user=entry_lookup
* = host=h pool_size=3
[users]
lookup = max_user_connections=4
[pgbouncer]
pool_mode = transaction
default_pool_size = 5
reserve_pool_size = 2
auth_user = lookup
auth_dbname = authdb
"""


def _auth(budget) -> dict[str, float]:
    return {p.who: p.total for d in budget.parts for p in d.parts if "auth_query" in p.note}


@pytest.mark.parametrize(
    ("minor", "expected", "total"),
    [
        # 1.18 has no auth_dbname: the lookups run in the client's database
        (18, {"app/lookup": 7, "other/entry_lookup": 7}, 7 + 7 + 4 + 7),
        # 1.19+: in auth_dbname, here through the * fallback (pool_size 3, reserve 2)
        (21, {"authdb/lookup": 5, "authdb/entry_lookup": 5}, 7 + 7 + 4 + 5),
    ],
)
def test_auth_query_pools(tmp_path: Path, minor: int, expected, total) -> None:
    text = AUTH if minor >= 19 else AUTH.replace("auth_dbname = authdb\n", "")
    pooler = _pooler(tmp_path, text, BouncerVersion(major=1, minor=minor))
    budget = server_side_max(pooler, [("app", "u1"), ("other", "u1")])
    assert _auth(budget) == expected
    # the global auth_user's [users] max_user_connections 4 caps its lookups
    assert budget.total == total, budget.note
    part = next(p for d in budget.parts for p in d.parts if p.who.endswith("/entry_lookup"))
    assert "auth_user entry_lookup (pgbouncer.ini:3)" in part.note
    if minor >= 19:
        assert "auth_dbname authdb (pgbouncer.ini:12)" in part.note


def test_auth_query_pools_absent_or_refused(tmp_path: Path) -> None:
    v21 = BouncerVersion(major=1, minor=21)
    # auth_type any / pam never look up
    for kind in ("any", "pam"):
        p = _pooler(tmp_path, AUTH + f"auth_type = {kind}\n", v21)
        assert _auth(server_side_max(p, [("app", "u1")])) == {}
    # no auth_user: no lookups
    p = _pooler(tmp_path, AUTH.replace("auth_user = lookup\n", ""), v21)
    assert _auth(server_side_max(p, [("app", "u1")])) == {}
    # the admin console cannot be the auth database
    p = _pooler(tmp_path, AUTH.replace("authdb", "pgbouncer"), v21)
    budget = server_side_max(p, [("app", "u1")])
    assert _auth(budget) == {} and "refuses" in budget.note
    # 1.20 finds auth_dbname among registered databases only: counted, and said
    p = _pooler(tmp_path, AUTH, BouncerVersion(major=1, minor=20))
    budget = server_side_max(p, [("app", "u1")])
    assert _auth(budget) == {"authdb/lookup": 5}
    assert "find_or_register_database from 1.21" in budget.note
    # an auth_dbname entry of its own is not taken for a client database
    p = _pooler(tmp_path, AUTH.replace("[users]", "authdb = host=h pool_size=1\n[users]"), v21)
    budget = server_side_max(p, None)
    assert "authdb: the auth_dbname, counted as the auth_query pool only" in budget.note
    assert _auth(budget) == {"authdb/lookup": 1 + 2, "authdb/entry_lookup": 1 + 2}
