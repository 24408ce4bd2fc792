"""postgresql.conf reader: ConfigMap text, siblings, bad input, units, command lines."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from advisor.facts import pg_guc as pgguc
from advisor.model import Source
from advisor.read.fs import Root
from advisor.read.sources.pgconf import (
    parse_postgres_args,
    parse_postgres_args_checked,
    read_pgconf,
    scanstr,
    tokenize_line,
)
from tests.realpg import config_dir, log_messages, postgres_C_result

CM = "k8s/postgres-configmap.yaml"


def _root(tmp_path: Path, files: dict[str, str | bytes]) -> Root:
    for name, content in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)
    return Root.of(tmp_path)


def test_configmap_text_lines_are_offset(tmp_path: Path) -> None:
    root = _root(tmp_path, {CM: "kind: ConfigMap\n"})
    text = "# tuned\nmax_connections = 250\nwork_mem = '16MB'  # pool-advisor: ignore[PA301]\n"
    conf = read_pgconf(root, CM, text=text, line_offset=7)
    mc = conf.settings["max_connections"]
    assert (mc.value, mc.source.path, mc.source.line, mc.source.key) == (
        250,
        CM,
        9,
        "max_connections",
    )
    wm = conf.settings["work_mem"]
    assert (wm.value, wm.unit, wm.raw, wm.source.line) == (16384, "kB", "16MB", 10)
    assert conf.suppressions == {CM: {10: ["PA301"]}}
    assert conf.files == [CM]
    assert conf.problems == []


def test_configmap_errors_name_the_yaml_line(tmp_path: Path) -> None:
    root = _root(tmp_path, {CM: ""})
    conf = read_pgconf(root, CM, text="work_mem = 4mb\nshared_buffers = 128 MB\n", line_offset=20)
    [problem] = conf.problems
    assert problem.fatal and problem.program == "PostgreSQL"
    assert problem.location.label() == f"{CM}:22"
    assert problem.message == f'syntax error in file "{CM}" line 22, near token "MB"'
    conf = read_pgconf(root, CM, text="work_mem = 4mb\n", line_offset=3)
    [problem] = conf.problems
    assert problem.location.label() == f"{CM}:4"
    assert problem.message.startswith('invalid value for parameter "work_mem": "4mb"; HINT: ')


def test_siblings_resolve_includes_first(tmp_path: Path) -> None:
    root = _root(tmp_path, {CM: "", "k8s/extra.conf": "max_connections = 1\n"})
    siblings = {
        "extra.conf": ("max_connections = 400\ninclude 'more.conf'\n", 30),
        "more.conf": ("work_mem = 2MB\n", 40),
        "postgresql.auto.conf": ("shared_buffers = 1GB\n", 50),
    }
    text = "include '/etc/postgresql/extra.conf'\nmax_connections = 100\ninclude 'extra.conf'\n"
    conf = read_pgconf(root, CM, text=text, line_offset=10, siblings=siblings)
    assert conf.problems == []
    mc = conf.settings["max_connections"]
    assert (mc.value, mc.source.line) == (400, 31)
    assert conf.settings["work_mem"].source.line == 41
    sb = conf.settings["shared_buffers"]
    assert (sb.value, sb.source.line) == (131072, 51)
    no_auto = read_pgconf(root, CM, text=text, siblings=siblings, auto_conf=False)
    assert "shared_buffers" not in no_auto.settings


def test_configmap_include_not_in_repo_is_a_notice(tmp_path: Path) -> None:
    root = _root(tmp_path, {CM: ""})
    text = "include '/etc/postgresql/conf.d/tuning.conf'\ninclude 'local.conf'\nwork_mem = 8MB\n"
    conf = read_pgconf(root, CM, text=text, line_offset=5)
    assert conf.settings["work_mem"].value == 8192
    assert [p.fatal for p in conf.problems] == [False, False]
    assert conf.problems[0].location.label() == f"{CM}:6"
    assert "outside the scanned root" in conf.problems[0].message
    assert conf.problems[1].location.label() == f"{CM}:7"
    assert "not in this ConfigMap or the repository" in conf.problems[1].message


def test_sibling_self_include_is_recursion(tmp_path: Path) -> None:
    root = _root(tmp_path, {CM: ""})
    siblings = {"a.conf": ("include 'a.conf'\n", 12)}
    conf = read_pgconf(root, CM, text="include 'a.conf'\n", siblings=siblings)
    [problem] = conf.problems
    assert problem.fatal
    assert problem.message == f'configuration file recursion in "{CM}"'
    assert problem.location.label() == f"{CM}:13"


def test_non_utf8_binary_and_missing_files_are_problems(tmp_path: Path) -> None:
    root = _root(
        tmp_path,
        {
            "bad.conf": b"work_mem = 1MB\napplication_name = '\xff'\n",
            "bin.conf": b"\x00\x01\x02",
            "main.conf": "include 'bad.conf'\ninclude 'bin.conf'\nmax_connections = 5\n",
        },
    )
    conf = read_pgconf(root, "bad.conf")
    [problem] = conf.problems
    assert problem.location.label() == "bad.conf:2"
    assert "not valid UTF-8" in problem.message
    assert conf.settings == {}
    conf = read_pgconf(root, "main.conf")
    assert conf.settings["max_connections"].value == 5
    assert [p.location.label() for p in conf.problems] == ["bad.conf:2", "bin.conf"]
    assert "binary" in conf.problems[1].message
    conf = read_pgconf(root, "nope.conf")
    assert [p.location.path for p in conf.problems] == ["nope.conf"]


def test_include_outside_root_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.conf"
    outside.write_text("max_connections = 9999\n")
    inner = tmp_path / "repo"
    root = _root(inner, {"postgresql.conf": "include '../outside.conf'\ninclude 'link.conf'\n"})
    os.symlink(outside, inner / "link.conf")
    conf = read_pgconf(root, "postgresql.conf")
    assert "max_connections" not in conf.settings
    assert len(conf.problems) == 2
    assert all(not p.fatal and "outside the scanned root" in p.message for p in conf.problems)


def test_include_loop_and_depth_are_fatal_with_location(tmp_path: Path) -> None:
    root = _root(
        tmp_path,
        {
            "postgresql.conf": "include 'a.conf'\n",
            "a.conf": "include 'b.conf'\n",
            "b.conf": "work_mem = 2MB\ninclude 'a.conf'\n",
        },
    )
    conf = read_pgconf(root, "postgresql.conf")
    [problem] = conf.problems
    assert problem.fatal
    assert (
        problem.message
        == 'could not open configuration file "a.conf": maximum nesting depth exceeded'
    )
    assert problem.location.label() == "b.conf:2"
    assert conf.settings["work_mem"].value == 2048  # what parsed is still known


def test_unknown_parameter_depends_on_version(tmp_path: Path) -> None:
    root = _root(
        tmp_path, {"postgresql.conf": "reserved_connections = 5\ntransaction_timeout = '1min'\n"}
    )
    pg15 = read_pgconf(root, "postgresql.conf", version=15)
    unknown = 'unrecognized configuration parameter "{}" in file "postgresql.conf" line {}'
    added = '"{}" was added in PostgreSQL {}: not a PostgreSQL 15 parameter'
    assert [(p.fatal, p.message) for p in pg15.problems] == [
        (True, unknown.format("reserved_connections", 1)),
        (False, added.format("reserved_connections", 16)),
        (True, unknown.format("transaction_timeout", 2)),
        (False, added.format("transaction_timeout", 17)),
    ]
    pg17 = read_pgconf(root, "postgresql.conf", version=17)
    assert pg17.problems == []
    assert pg17.settings["reserved_connections"].value == 5
    assert pg17.settings["transaction_timeout"].value == 60000
    # 18's own table: io_method is checked like any other parameter
    root = _root(tmp_path, {"postgresql.conf": "io_method = worker\nmax_connections = 0\n"})
    pg18 = read_pgconf(root, "postgresql.conf", version=18)
    assert pg18.settings["io_method"].value == "worker"
    assert [(p.fatal, p.location.line) for p in pg18.problems] == [(True, 2)]
    _, problems = parse_postgres_args_checked(["-c", "io_method=sync"], Source(path="x"), 18)
    assert problems == []
    _, problems = parse_postgres_args_checked(["-c", "io_method=sync"], Source(path="x"), 17)
    assert [(p.fatal, p.message) for p in problems] == [
        (True, 'unrecognized configuration parameter "io_method"'),
        (False, '"io_method" was added in PostgreSQL 18: not a PostgreSQL 17 parameter')]
    # a major without a table (after 18): the nearest table, unknown names unchecked
    _, problems = parse_postgres_args_checked(["-c", "new_in_19=1"], Source(path="x"), 19)
    assert [p.fatal for p in problems] == [False]


def test_lexer_longest_match_rules() -> None:
    kinds = [k for k, _ in tokenize_line("a.b = 0x1Fkb 1e3 .5 'x''y' a-b/c #c")]
    texts = [t for _, t in tokenize_line("a.b = 0x1Fkb 1e3 .5 'x''y' a-b/c #c")]
    assert texts == ["a.b", "=", "0x1Fkb", "1e", "3", ".5", "'x''y'", "a-b/c"]
    assert len(kinds) == len(texts)
    assert scanstr(r"'a\'b''c\n\101\x'") == "a'b'c\nAx"


@pytest.mark.parametrize(
    ("text", "unit", "expected"),
    [
        ("1GB", "8kB", 131072),
        ("12 MB", "8kB", 1536),
        ("1.5kB", "8kB", 0),
        ("010", "kB", 8),
        ("0x10", None, 16),
        ("1500us", "ms", 2),
        ("2500us", "ms", 2),
        ("1.0001min", "ms", 60000),  # rounded to whole seconds first
        ("1d", "min", 1440),
        ("90s", "min", 2),
        ("0x1.8p4", None, 24),
    ],
)
def test_parse_int_units(text: str, unit: str | None, expected: int) -> None:
    assert pgguc.parse_int(text, unit) == (expected, None)


@pytest.mark.parametrize(
    ("text", "unit", "hint"),
    [
        ("4mb", "kB", pgguc.MEMORY_UNITS_HINT),
        ("30 sec", "ms", pgguc.TIME_UNITS_HINT),
        ("08", "kB", pgguc.MEMORY_UNITS_HINT),
        ("10MB", None, None),
        ("", "kB", None),
        ("1e400", None, None),
        ("99999999999", None, pgguc.INT_RANGE_HINT),
    ],
)
def test_parse_int_errors(text: str, unit: str | None, hint: str | None) -> None:
    assert pgguc.parse_int(text, unit) == (None, hint)


def test_parse_bool_like_postgres() -> None:
    ok = {
        "on": True,
        "of": False,
        "OFF": False,
        "t": True,
        "tr": True,
        "YES": True,
        "n": False,
        "1": True,
        "0": False,
    }
    for text, value in ok.items():
        assert pgguc.parse_bool(text) is value, text
    for text in ("o", " on", "", "2", "truex", "10"):
        assert pgguc.parse_bool(text) is None, text


def test_postgres_args_are_parsed_with_sources() -> None:
    src = Source(path="k8s/statefulset.yaml", line=30)
    args = [
        "postgres",
        "-c",
        "max_connections=300",
        "--shared-buffers=1GB",
        "-N",
        "500",
        "-cwork_mem=8MB",
        "-D",
        "/var/lib/postgresql/data",
        "-c",
        "app.x=y",
        "-i",
    ]
    settings = parse_postgres_args(args, src)
    assert settings["max_connections"].value == 500  # -N comes later and wins
    assert settings["shared_buffers"].value == 131072
    assert settings["work_mem"].value == 8192
    assert settings["app.x"].value == "y"
    assert settings["listen_addresses"].value == "*"
    assert settings["work_mem"].source == Source(
        path="k8s/statefulset.yaml", line=30, key="work_mem"
    )


def test_postgres_args_problems() -> None:
    src = Source(path="k8s/deploy.yaml", line=12)
    _, problems = parse_postgres_args_checked(
        ["-c", "work_mem=4mb", "-c", "max_connections", "--bogus=1"], src
    )
    assert [p.message for p in problems] == [
        'invalid value for parameter "work_mem": "4mb"; HINT: ' + pgguc.MEMORY_UNITS_HINT,
        "-c max_connections requires a value",
        'unrecognized configuration parameter "bogus"',
    ]
    assert all(p.fatal and p.location.label() == "k8s/deploy.yaml:12" for p in problems)


@pytest.mark.postgres
@pytest.mark.parametrize(
    "args",
    [
        ["-c", "max_connections=300", "--shared-buffers=1GB", "-c", "work_mem=12 MB"],
        ["-N", "50", "-B", "2048", "-S", "1024", "-c", "statement_timeout=1.5min"],
        ["--max_connections=20", "-c", "max_connections=30", "-F"],
    ],
)
def test_postgres_args_match_real_postgres(args: list[str]) -> None:
    settings = parse_postgres_args(args, Source(path="x"))
    names = sorted(settings)
    with config_dir({"postgresql.conf": "max_connections = 7\nwork_mem = 1MB\n"}) as data:
        pg = postgres_C_result(data, names, args)
    assert pg.ok, pg.stderr
    assert {n: pgguc.show(settings[n].value) for n in names} == pg.values


@pytest.mark.postgres
def test_postgres_args_error_matches_real_postgres() -> None:
    args = ["-c", "work_mem=4mb"]
    _, problems = parse_postgres_args_checked(args, Source(path="x"))
    with config_dir({"postgresql.conf": ""}) as data:
        pg = postgres_C_result(data, ["work_mem"], args)
    assert not pg.ok
    msgs = [m for level, m in log_messages(pg.stderr) if level in ("FATAL", "HINT")]
    assert problems[0].message == f"{msgs[0]}; HINT: {msgs[1]}"
