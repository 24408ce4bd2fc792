"""Hostile and broken repositories (issue 14): a crash while reading one file is a
finding naming the file, the others are still read, and the run exits 2 with one line;
the CLI never prints a traceback or a usage banner."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from advisor import cli
from advisor.engine.check import internal_errors, run_check
from advisor.rules import load_rules

REPO = Path(__file__).resolve().parent.parent
ACME = REPO / "fixtures" / "acme-shop"


@pytest.fixture()
def acme(tmp_path: Path) -> Path:
    return Path(shutil.copytree(ACME, tmp_path / "acme"))


def _codes(result) -> list[str]:
    return [f.code for f in result.findings]


def test_a_crashing_reader_is_one_finding_and_the_other_files_still_count(acme, monkeypatch):
    from advisor.read.sources import pgbouncer_ini

    (acme / "pgbouncer.ini").write_text("[databases]\n* = host=postgres\n")

    def boom(*args, **kwargs):
        raise RuntimeError("simulated bug\nsecond line")

    monkeypatch.setattr(pgbouncer_ini, "read_pgbouncer_ini", boom)
    result = run_check([str(acme)])
    assert "PA101" in _codes(result)  # acme-shop's own finding is still there
    crash = [f for f in result.findings if f.code == "PA901"]
    assert [f.location.path for f in crash] == ["pgbouncer.ini"]
    assert crash[0].message.startswith("internal error while reading this file "
                                       "(RuntimeError: simulated bug)")
    assert internal_errors(result)


def test_a_crash_exits_2_with_one_line_naming_the_file(acme, monkeypatch, capsys):
    from advisor.read.sources import pgbouncer_ini

    (acme / "pgbouncer.ini").write_text("[databases]\n* = host=postgres\n")
    monkeypatch.setattr(pgbouncer_ini, "read_pgbouncer_ini",
                        lambda *a, **k: (_ for _ in ()).throw(KeyError("x")))
    assert cli.run(["check", str(acme)]) == 2
    out, err = capsys.readouterr()
    assert "PA101" in out and "pgbouncer.ini" in out
    assert err.count("\n") == 1 and err.startswith("pool-advisor: pgbouncer.ini: internal error")


def test_a_crashing_rule_leaves_the_others_and_exits_2(acme, capsys):
    registry = load_rules()
    rule = registry.rules["PA301"]

    def broken(topo, ctx):
        raise ZeroDivisionError("division by zero")
        yield

    from msgspec.structs import replace

    registry.rules["PA301"] = replace(rule, func=broken)
    result = run_check([str(acme)], registry=registry)
    assert "PA101" in _codes(result)
    assert any("internal error in rule PA301" in n for n in result.notices)
    assert internal_errors(result)


def test_wrong_typed_manifests_are_findings_not_crashes(acme):
    pg = acme / "k8s" / "postgres.yaml"
    pg.write_text(pg.read_text().replace("memory:", "memory: \"1.2.3Gi\"\n      x:", 1))
    result = run_check([str(acme)])
    assert not internal_errors(result), internal_errors(result)


@pytest.mark.parametrize("argv", [
    ["check", "--no-such-option"],
    ["check", "--format", "nope", "x"],
    ["no-such-command"],
    ["check", "--pg-version", "fifteen", "x"],
])
def test_cli_usage_errors_are_one_line_exit_2(argv, capsys):
    assert cli.run(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("pool-advisor: "), err


def test_an_unexpected_exception_in_a_command_is_one_line_exit_2(monkeypatch, capsys, acme):
    from advisor.engine import check

    monkeypatch.setattr(check, "scan", lambda *a, **k: 1 / 0)
    assert cli.run(["check", str(acme)]) == 2
    _out, err = capsys.readouterr()
    assert err == "pool-advisor: internal error: ZeroDivisionError: division by zero " \
        "(please report this)\n"


def test_fifos_sockets_and_devices_are_skipped_with_a_notice_never_opened(acme):
    import os
    import socket

    os.mkfifo(acme / "k8s" / "blocked.yaml")
    os.mkfifo(acme / "postgresql.conf")
    os.mkfifo(acme / ".gitignore")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(acme / "pgbouncer.ini"))
    os.symlink("/dev/zero", acme / "k8s" / "zero.yaml")  # escapes the root: not followed
    os.symlink("/dev/null", acme / "k8s" / "null.yaml")
    try:
        result = run_check([str(acme)])  # a FIFO opened for reading would hang here
    finally:
        sock.close()
    assert "PA101" in _codes(result)
    notices = "\n".join(result.notices)
    assert "k8s/blocked.yaml: a FIFO (named pipe), not a regular file; skipped" in notices
    assert "postgresql.conf: a FIFO" in notices
    assert "pgbouncer.ini: a socket" in notices
    assert not internal_errors(result)


def test_a_fifo_met_through_an_include_is_not_opened(tmp_path):
    import os

    from advisor.read.fs import Root
    from advisor.read.sources.pgconf import read_pgconf

    os.mkfifo(tmp_path / "extra.conf")
    (tmp_path / "postgresql.conf").write_text("include 'extra.conf'\nmax_connections = 50\n")
    conf = read_pgconf(Root.of(tmp_path), tmp_path / "postgresql.conf")
    text = " ".join(p.message for p in conf.problems)
    assert "a FIFO (named pipe), not a regular file" in text


def test_the_size_limit_is_checked_before_reading(tmp_path, monkeypatch):
    from advisor.read import fs

    big = tmp_path / "big.yaml"
    with big.open("wb") as f:  # sparse: 9 MiB that take no disk
        f.truncate(fs.MAX_FILE_BYTES + 1)
    read = []
    real_read = os_read = __import__("os").read

    def counting(fd, n):
        read.append(n)
        return real_read(fd, n)

    monkeypatch.setattr("os.read", counting)
    with pytest.raises(fs.InputError, match="larger than 8 MiB"):
        fs.Root.of(tmp_path).read_text("big.yaml")
    assert read == [] and os_read is real_read


BOMB = "".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 12))


@pytest.mark.parametrize("name", ["config/database.yml", "config/application.yml"])
def test_alias_bombs_are_refused_in_application_yaml_too(tmp_path, name):
    from advisor.read.apps import pools_for_container
    from advisor.read.apps.source import scan_app_dir
    from advisor.read.fs import Root
    from tests.apphelpers import container

    (tmp_path / "config").mkdir()
    if name.endswith("database.yml"):
        (tmp_path / "Gemfile").write_text("gem 'rails'\ngem 'pg'\n")
        body = "l0: &l0 [x]\n" + BOMB + "production:\n  adapter: postgresql\n  pool: 5\n"
        web = container(env={"RAILS_ENV": "production"}, command=("bundle", "exec", "puma"))
    else:
        (tmp_path / "pom.xml").write_text("<project><artifactId>x</artifactId>"
                                          "<dependency>spring-boot-starter-jdbc</dependency>"
                                          "</project>")
        body = "l0: &l0 [x]\n" + BOMB + "spring:\n  datasource:\n    hikari:\n" \
            "      maximum-pool-size: 5\n"
        web = container(command=("java", "-jar", "app.jar"))
    (tmp_path / name).write_text(body)
    app = scan_app_dir(Root.of(tmp_path), "")
    found = cpu = None
    import time

    start = time.process_time()
    found = pools_for_container(web, app)
    cpu = time.process_time() - start
    assert cpu < 2.0
    text = " ".join(p.message for p in found.problems)
    assert "alias" in text, (found.problems, found.notices)


def test_findings_are_capped_per_file_and_rule_with_a_count_of_the_rest(tmp_path):
    from advisor.engine.evaluate import MAX_PER_FILE_AND_RULE

    (tmp_path / "postgresql.conf").write_text("".join(f"no_such_setting_{i} = 1\n"
                                                      for i in range(300)))
    (tmp_path / "pgbouncer.ini").write_text("[databases]\n" + "".join(
        f"db{i} = host=x port=notaport{i}\n" for i in range(300)) + "[pgbouncer]\n")
    result = run_check([str(tmp_path)])
    by_file: dict[tuple[str, str], int] = {}
    for f in result.findings:
        by_file[(f.code, f.location.path)] = by_file.get((f.code, f.location.path), 0) + 1
    assert by_file and max(by_file.values()) <= MAX_PER_FILE_AND_RULE
    counted = [n for n in result.notices if "not shown (at most" in n]
    assert any(n.startswith("PA109: ") and "postgresql.conf" in n for n in counted), counted


EVIL = "x\n::error file=a.yaml::injected\r\n##[warning]legacy\x1b[2J\x07 @octocat \u2028::debug::y"


def _evil_repo(acme: Path) -> Path:
    checkout = acme / "k8s" / "checkout.yaml"
    quoted = EVIL.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r") \
        .replace("\x1b", "\\e").replace("\x07", "\\a").replace("\u2028", "\\L")
    checkout.write_text(checkout.read_text().replace("name: checkout\n",
                                                     f'name: "checkout{quoted}"\n', 1))
    # a file whose name is a workflow command, holding invalid YAML (a PA901 finding)
    (acme / "::error::file.yaml").write_text("kind: x\napiVersion: v1\nspec: [\n")
    (acme / "k8s" / "##[group]x.yaml").write_text("kind: x\napiVersion: v1\nspec: [\n")
    return acme


def _assert_inert(text: str) -> None:
    for line in text.splitlines():
        assert not line.lstrip().startswith("::"), line
        assert "##[" not in line, line
    assert not any(c in text for c in "\x1b\x07\r\u2028"), repr(text)


def test_the_text_report_cannot_inject_workflow_commands_or_terminal_escapes(acme, capsys,
                                                                           monkeypatch):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    _evil_repo(acme)
    code = cli.run(["check", str(acme)])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert "checkout" in out and "injected" in out  # shown, escaped
    assert ":\\:error::file.yaml:" in out  # the path is there, escaped at a line's start
    _assert_inert(out)
    _assert_inert(err)


def test_the_markdown_comment_does_not_ping_mentions(acme):
    from advisor.report.markdown import render

    result = run_check([str(_evil_repo(acme))])
    text = render(result, load_rules())
    assert "@octocat" not in text
    assert "@&#8203;octocat" in text or "octocat" not in text


@pytest.mark.parametrize("dsn, secret", [
    ("host=127.0.0.1 port=1 password=hunter2 user=u", "hunter2"),
    ("host=127.0.0.1 port=1 password='hunter2 unclosed", "hunter2"),
    ("host=127.0.0.1 port=1 password=hunter2 tail", "tail"),
    ("postgresql://u:hun@ter2@127.0.0.1:1/db", "ter2"),
    ("POSTGRESQL://u:hunter2@127.0.0.1:1/db", "hunter2"),
    ("postgresql://u:hunter%zz2@127.0.0.1:1/db", "hunter"),
    ("postgresql://u@127.0.0.1:1/db?password=hunter2&x", "hunter2"),
    ("  postgresql://u:hunter2@127.0.0.1:1/db", "hunter2"),
])
def test_inspect_never_echoes_a_dsn_password_even_malformed(dsn, secret, capsys):
    pytest.importorskip("psycopg")
    code = cli.run(["inspect", dsn])
    out, err = capsys.readouterr()
    assert code == 2
    assert secret not in out + err, err
    assert err.count("\n") == 1


class _StubGitHub:
    """advisor.ci.comment.GitHub with canned answers instead of HTTP."""

    @staticmethod
    def make(answer):
        from advisor.ci.comment import GitHub

        class Stub(GitHub):
            def __init__(self):
                super().__init__("https://api.github.test", "t0ken")
                self.gets = 0

            def request(self, method, url, body=None):
                self.gets += method == "GET"
                return answer(self, method, url)

        return Stub()


def test_the_comment_bot_stops_paging_after_a_bound():
    from advisor.ci.comment import MAX_PAGES, CommentError, Target

    def endless(stub, method, url):
        return [], {"Link": f'<https://api.github.test/next?page={stub.gets}>; rel="next"'}

    gh = _StubGitHub.make(endless)
    with pytest.raises(CommentError, match="pages of comments"):
        list(gh.comments(Target(owner="o", repo="r", number=1)))
    assert gh.gets == MAX_PAGES


@pytest.mark.parametrize("items", [[1], [{"id": "7"}], [{"body": "x"}], [{"id": True}], [None]])
def test_malformed_api_answers_are_one_line_errors(items):
    from advisor.ci.comment import CommentError, Target, upsert

    gh = _StubGitHub.make(lambda stub, method, url: (items, {}))
    with pytest.raises(CommentError) as exc:
        upsert(gh, Target(owner="o", repo="r", number=1), "<!-- pool-advisor -->")
    assert "\n" not in str(exc.value) and "malformed" in str(exc.value)


@pytest.mark.parametrize("directive", ["include 'a\x00b.conf'", "include 'a\\000b.conf'",
                                       "include_dir 'd\x00'", "include_if_exists 'x\x00'"])
def test_nul_in_include_names_is_a_problem_with_file_and_line(tmp_path, directive):
    from advisor.read.fs import Root
    from advisor.read.sources.pgconf import read_pgconf

    conf = read_pgconf(Root.of(tmp_path), "postgresql.conf", text=f"{directive}\n",
                       display_path="postgresql.conf")
    assert [(p.location.label(), "NUL" in p.message) for p in conf.problems] == [
        ("postgresql.conf:1", True)]


def test_1000_deep_directories_are_read(acme):
    deep = acme
    for _ in range(1000):  # one at a time: mkdir(parents=True) recurses per level
        deep = deep / "d"
        deep.mkdir()
    (deep / "postgresql.conf").write_text("max_connections = 7\n")
    try:
        result = run_check([str(acme)])
    finally:  # pytest's own clean-up of tmp_path recurses per level: undo it here
        (deep / "postgresql.conf").unlink()
        while deep != acme:
            deep.rmdir()
            deep = deep.parent
    assert not internal_errors(result)
    assert any(b.server.endswith("postgresql.conf") and b.max_connections.value == 7
               for b in result.budgets), [b.server for b in result.budgets]
