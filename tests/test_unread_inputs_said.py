"""Inputs a run cannot read are said, never a silent zero or a crash (audit 10a): a
compose-only repository (D3), a folder that cannot be listed (D5), a symlink loop (D6),
a file name that is not UTF-8 in the machine formats (D7), a .gitignore line git takes
as matching nothing (D8), a pgbouncer.ini with a byte-order mark (D9)."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from advisor.cli import app
from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

SERVER = """
apiVersion: v1
kind: Service
metadata: {name: pg}
spec:
  selector: {app: pg}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: pg}
spec:
  selector: {matchLabels: {app: pg}}
  template:
    metadata: {labels: {app: pg}}
    spec:
      containers:
        - name: pg
          image: postgres:16.4
          args: ["-c", "max_connections=50"]
"""


def client(name: str, replicas: int, pool: int) -> str:
    return f"""
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  strategy: {{rollingUpdate: {{maxSurge: 0}}}}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
        - name: {name}
          image: example/{name}:1.0
          env:
            - {{name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://pg:5432/{name}"}}
            - {{name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE, value: "{pool}"}}
"""


def check(*args: str):
    return CliRunner().invoke(app, ["check", "--no-cache", *args])


def codes(result) -> list[tuple[str, str, int | None]]:
    return [(f.code, f.location.path, f.location.line) for f in result.findings]


# --- D3: docker compose ---------------------------------------------------------------

COMPOSE = """
services:
  plausible_db:
    image: postgres:14-alpine
  plausible:
    image: ghcr.io/plausible/community-edition:v2
    environment:
      DATABASE_URL: postgres://postgres:postgres@plausible_db:5432/plausible_db
"""


def test_a_compose_only_repository_is_a_pa901_warning_not_no_server_found(tmp_path):
    """plausible/community-edition's shape: before, a notice then `no findings (no
    PostgreSQL server found)`, exit 0. A server the repository runs where this tool does
    not read it is a PA901 warning, as an operator's cluster it does not read is."""
    write(tmp_path, {"docker-compose.yml": COMPOSE})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert codes(result) == [("PA901", "docker-compose.yml", 3)]
    (finding,) = result.findings
    assert finding.severity.value == "warning"
    assert "plausible_db (postgres:14-alpine)" in finding.message
    assert "no budget" in finding.message
    assert not [n for n in result.notices if n.startswith("docker compose:")]
    out = check(str(tmp_path))
    assert out.exit_code == 1, out.output
    last = out.output.strip().splitlines()[-1]
    assert "no PostgreSQL server found" not in out.output
    assert last == ("1 warning (no server budgeted: 1 PostgreSQL server found in docker "
                    "compose, which is not read: plausible_db (docker-compose.yml))")
    # with PA901 ignored, the last line still says it
    out = check(str(tmp_path), "--ignore", "PA901")
    assert out.exit_code == 0, out.output
    assert out.output.strip().splitlines()[-1].startswith(
        "no findings (no server budgeted: 1 PostgreSQL server found in docker compose")


def test_many_compose_servers_are_counted_and_three_named(tmp_path):
    """sema's shape (24 compose files each with a db): the last line stays readable."""
    write(tmp_path, {f"app{i}/docker-compose.yml": COMPOSE for i in range(4)})
    out = check(str(tmp_path))
    assert out.output.strip().splitlines()[-1] == (
        "4 warnings (no server budgeted: 4 PostgreSQL servers found in docker compose, "
        "which is not read: plausible_db (app0/docker-compose.yml), plausible_db "
        "(app1/docker-compose.yml), plausible_db (app2/docker-compose.yml) and 1 more)")


def test_compose_beside_a_budgeted_server_stays_a_notice(tmp_path):
    """A compose file for local development beside the Kubernetes deployment: the
    server is budgeted from the manifests, compose is named in a notice only."""
    write(tmp_path, {"docker-compose.yml": COMPOSE, "k8s/db.yaml": SERVER})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert [b.server for b in result.budgets] == ["pg"]
    assert not [f for f in result.findings if f.code == "PA901"]
    assert [n for n in result.notices if n.startswith("docker compose: docker-compose.yml")]


def test_compose_running_only_pgbouncer_is_a_notice(tmp_path):
    """No PostgreSQL server in compose: nothing is claimed about servers."""
    write(tmp_path, {"compose.yaml": "services:\n  pgb:\n    image: edoburu/pgbouncer:1.22\n"})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert not result.findings and not result.unbudgeted
    assert [n for n in result.notices if n.startswith("docker compose: compose.yaml")]


# --- D5: a folder that cannot be listed -------------------------------------------------

def test_a_folder_that_cannot_be_listed_is_a_pa901_error_and_a_floor(tmp_path, monkeypatch):
    """repro-12: k8s/reports (mode 000 for a normal user) holds a 4 x 10 client. It was
    skipped unsaid: 'fits', exit 0. Now a PA901 error at the folder, the peak a floor."""
    write(tmp_path, {"k8s/db.yaml": SERVER, "k8s/app.yaml": client("orders", 2, 20),
                     "k8s/reports/deploy.yaml": client("reports", 4, 10)})
    hidden = str(tmp_path / "k8s" / "reports")
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path) == hidden:  # what os.scandir does for a mode-000 folder
            raise PermissionError(13, "Permission denied", hidden)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.peak == 40 and budget.unread_files == ["k8s/reports"]
    assert not budget.fits
    (finding,) = [f for f in result.findings if f.code == "PA901"]
    assert finding.location.path == "k8s/reports"
    assert finding.severity.value == "error"
    assert "cannot list this folder: Permission denied" in finding.message


# --- D6: a symlink loop ---------------------------------------------------------------

def test_a_symlink_loop_is_a_pa901_for_its_files_and_the_rest_is_read(tmp_path):
    """repro-10-fileloop: a.yaml -> b.yaml -> a.yaml raised RuntimeError on Python 3.11
    (pathlib's resolve) and the run exited 2 with nothing else."""
    write(tmp_path, {"k8s/db.yaml": SERVER, "k8s/app.yaml": client("orders", 5, 20)})
    (tmp_path / "k8s" / "a.yaml").symlink_to("b.yaml")
    (tmp_path / "k8s" / "b.yaml").symlink_to("a.yaml")
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert sorted(codes(result)) == [("PA101", "k8s/db.yaml", 20),
                                     ("PA901", "k8s/a.yaml", None),
                                     ("PA901", "k8s/b.yaml", None)]
    loop = next(f for f in result.findings if f.location.path == "k8s/a.yaml")
    assert "symlink loop" in loop.message and loop.severity.value == "error"
    out = check(str(tmp_path))
    assert out.exit_code == 1, out.output
    assert "internal error" not in out.output


# --- D7: a file name that is not UTF-8 --------------------------------------------------

@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "gitlab", "rdjson", "github",
                                 "markdown"])
def test_a_non_utf8_file_name_is_escaped_alike_in_every_format(tmp_path, fmt):
    """repro-23: `base-donn\\xe9es.yaml` (Latin-1 bytes) made json/sarif/gitlab stop with
    UnicodeEncodeError, exit 2 and nothing printed. Every format shows it escaped."""
    write(tmp_path, {"k8s/app.yaml": client("orders", 5, 20)})
    name = os.fsdecode(b"base-donn\xe9es.yaml")
    (tmp_path / "k8s" / name).write_text(SERVER)
    out = check(str(tmp_path), "--format", fmt)
    assert out.exit_code == 1, out.output
    assert "internal error" not in out.output
    text = out.output
    if fmt in ("json", "sarif", "gitlab", "rdjson"):
        data = json.loads(text)
        text = json.dumps(data, ensure_ascii=False)
        assert "k8s/base-donn\\\\xe9es.yaml" in text  # the JSON text of `\xe9`
    elif fmt == "markdown":
        assert "base-donn\\xe9es.yaml" in text
    else:
        assert "k8s/base-donn\\xe9es.yaml:20" in text
    assert "\udce9" not in text and "\xe9" not in text


def test_a_fingerprint_of_a_non_utf8_name_is_the_escaped_names():
    from advisor.model import Finding, Location, Severity

    raw = Finding(code="PA101", name="x", severity=Severity.error, message="m",
                  location=Location(path=os.fsdecode(b"k8s/donn\xe9es.yaml")))
    shown = Finding(code="PA101", name="x", severity=Severity.error, message="m",
                    location=Location(path="k8s/donn\\xe9es.yaml"))
    assert raw.fingerprint == shown.fingerprint


# --- D8: .gitignore lines git takes as matching nothing ----------------------------------

def test_gitignore_lines_git_ignores_do_not_stop_the_run(tmp_path):
    """repro-25: a lone `!` (or a pattern ending in a backslash) raised pathspec's
    GitIgnorePatternError, exit 2. git 2.39 accepts the file: `git check-ignore -v
    build/x` -> `.gitignore:5:build/`; `foo`, `foo\\` and `\\` are not ignored by those
    lines. The other lines still apply: build/ is left out."""
    write(tmp_path, {".gitignore": "node_modules/\n!\n\\\nfoo\\\n**/\\\nbuild/\n",
                     "k8s/db.yaml": SERVER, "k8s/app.yaml": client("orders", 2, 20),
                     "build/app.yaml": client("built", 9, 20)})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.peak == 40 and budget.fits
    assert not result.findings


def test_an_exclude_glob_pathspec_refuses_is_a_usage_error(tmp_path):
    write(tmp_path, {"k8s/db.yaml": SERVER})
    out = check(str(tmp_path), "--exclude", "!")
    assert out.exit_code == 2
    assert "internal error" not in out.output and "exclude" in out.output


# --- D9: pgbouncer.ini with a byte-order mark --------------------------------------------

INI = ("[databases]\r\napp = host=10.0.0.5 dbname=app\r\n[pgbouncer]\r\n"
       "default_pool_size = 30\r\nmax_db_connections = 40\r\n")


def test_a_pgbouncer_ini_with_a_bom_is_refused_at_line_1(tmp_path):
    """PgBouncer 1.18.0 (/usr/sbin/pgbouncer, run on this file): `ERROR syntax error in
    configuration (pgbouncer.ini:1), stopping loading` / `FATAL cannot load config
    file`; without the BOM (CRLF kept) it starts. Before, the file was accepted."""
    (tmp_path / "pgb").mkdir()
    (tmp_path / "pgb" / "pgbouncer.ini").write_bytes(b"\xef\xbb\xbf" + INI.encode())
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert codes(result) == [("PA209", "pgb/pgbouncer.ini", 1)]
    (finding,) = result.findings
    assert finding.severity.value == "error"
    assert "byte-order mark" in finding.message
    (tmp_path / "pgb" / "pgbouncer.ini").write_bytes(INI.encode())
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert not [f for f in result.findings if f.code == "PA209"]


def test_an_included_file_with_a_bom_is_refused_too(tmp_path):
    """PgBouncer 1.18.0: `syntax error in configuration (.../extra.ini:1)` then `error
    processing include file in configuration (pgbouncer.ini:N)`."""
    (tmp_path / "pgbouncer.ini").write_text(INI + "%include extra.ini\n")
    (tmp_path / "extra.ini").write_bytes(b"\xef\xbb\xbfmax_client_conn = 50\n")
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    assert ("PA209", "extra.ini", 1) in codes(result)


def test_other_readers_still_take_a_bom_off(tmp_path):
    """A manifest saved with a BOM is read as before (kubectl takes it off)."""
    write(tmp_path, {"k8s/app.yaml": client("orders", 2, 20)})
    (tmp_path / "k8s" / "db.yaml").write_bytes(b"\xef\xbb\xbf" + SERVER.encode())
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.peak == 40 and budget.fits


def test_a_named_symlink_loop_is_a_usage_error_that_says_so(tmp_path):
    """`check k8s/a.yaml` with a.yaml in a loop: a path given that cannot be read is a
    usage error (exit 2), worded for what it is (it said 'no such file or directory')."""
    (tmp_path / "a.yaml").symlink_to("b.yaml")
    (tmp_path / "b.yaml").symlink_to("a.yaml")
    out = check(str(tmp_path / "a.yaml"))
    assert out.exit_code == 2
    assert "symlink to nothing (dangling, or a loop)" in out.output
