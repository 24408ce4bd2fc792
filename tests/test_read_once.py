"""Each source file is read once in a run (issue 19): the app scan, the SQL scan, the
manifest reader and the check's look for suppression comments in the files its findings
point at share one read (advisor.read.fs.ReadOnce), for every application stack."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.sql.extract import is_sql_candidate
from advisor.rules import load_rules

REPO = Path(__file__).resolve().parent.parent
APPS = REPO / "tests" / "fixtures_apps"
REGISTRY = load_rules()


def _behind_pgbouncer(tmp_path: Path, app: str) -> Path:
    """The app fixture with a PgBouncer beside it: the SQL scan runs too."""
    repo = tmp_path / app
    shutil.copytree(APPS / app, repo,
                    ignore=shutil.ignore_patterns("__pycache__", ".pool-advisor*"))
    (repo / "k8s").mkdir(exist_ok=True)
    shutil.copy(REPO / "fixtures" / "acme-shop-pgbouncer" / "k8s" / "pgbouncer.yaml",
                repo / "k8s" / "pgbouncer-read-once.yaml")
    (repo / ".git").mkdir()
    return repo


@pytest.mark.parametrize("app", sorted(p.name for p in APPS.iterdir() if p.is_dir()))
def test_every_file_is_read_once(tmp_path, reads, app):
    repo = _behind_pgbouncer(tmp_path, app)
    run_check([str(repo)], CheckOptions(cache=False), REGISTRY)
    rel = {Path(p).relative_to(repo.resolve()).as_posix(): n for p, n in reads.items()}
    # the scans ran (C# is not scanned for SQL)
    assert any(is_sql_candidate(p) for p in rel) or app.startswith("npgsql")
    assert {p: n for p, n in rel.items() if n > 1} == {}


def test_a_suppression_in_a_source_the_scans_read_still_applies(tmp_path, reads):
    """The suppression comments of an app source a finding points at come from the
    scan's read, not a second one: the finding is still reported as suppressed."""
    repo = _behind_pgbouncer(tmp_path, "go_sql")
    before = run_check([str(repo)], CheckOptions(cache=False), REGISTRY)
    target = next(f for f in before.findings if f.location.path == "internal/db/db.go")
    source = repo / "internal" / "db" / "db.go"
    lines = source.read_text().splitlines()
    lines.insert(target.location.line - 1, f"// pool-advisor: ignore[{target.code}] read once")
    source.write_text("\n".join(lines) + "\n")
    reads.clear()
    after = run_check([str(repo)], CheckOptions(cache=False), REGISTRY)
    assert (target.code, "internal/db/db.go", target.location.line + 1) in [
        (f.code, f.location.path, f.location.line) for f in after.suppressed]
    assert target.code not in [f.code for f in after.findings
                               if f.location.path == "internal/db/db.go"]
    assert reads[str(source.resolve())] == 1
