"""The cache of source scans (issue 19 item 3): what the SQL scan finds in one file is
cached by the file's path, reader and content. A warm run gives the --no-cache answer on
every application stack and real-world app tree, scans again exactly the file that
changed, reads each file once, keeps suppression comments working, and takes a damaged
entry for a miss."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read import cache as cache_mod
from advisor.read.cache import CACHE_DIR, PACK
from advisor.read.sql import extract
from advisor.report.json import render
from advisor.rules import load_rules

REPO = Path(__file__).resolve().parent.parent
APPS = REPO / "tests" / "fixtures_apps"
REAL_APPS = REPO / "tests" / "realworld_apps"
REGISTRY = load_rules()
PGBOUNCER = REPO / "fixtures" / "acme-shop-pgbouncer" / "k8s" / "pgbouncer.yaml"


def _behind_pgbouncer(tmp_path: Path, tree: Path) -> Path:
    """A copy of `tree` with a PgBouncer beside it: the SQL scan runs (it is skipped
    without a pooler)."""
    repo = tmp_path / tree.name
    shutil.copytree(tree, repo, ignore=shutil.ignore_patterns("__pycache__", CACHE_DIR))
    (repo / "k8s").mkdir(exist_ok=True)
    shutil.copy(PGBOUNCER, repo / "k8s" / "pgbouncer-cache-test.yaml")
    (repo / ".git").mkdir()
    return repo


def _check(repo: Path, *, cache: bool = True) -> str:
    return render(run_check([str(repo)], CheckOptions(cache=cache), REGISTRY), REGISTRY)


@pytest.fixture
def scans(monkeypatch) -> list[str]:
    """The files the SQL scan scanned (not taken from the cache) during a run."""
    seen: list[str] = []
    real = extract.scan_text

    def counting(path, text, kind, **kw):
        seen.append(path)
        return real(path, text, kind, **kw)

    monkeypatch.setattr(extract, "scan_text", counting)
    return seen


TREES = [*sorted(p for p in APPS.iterdir() if p.is_dir()),
         *sorted(p for p in REAL_APPS.iterdir() if p.is_dir())]


@pytest.mark.parametrize("tree", TREES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_warm_runs_answer_as_without_cache_and_scan_nothing(tmp_path, scans, reads, tree):
    repo = _behind_pgbouncer(tmp_path, tree)
    uncached = _check(repo, cache=False)
    scanned, read = list(scans), dict(reads)
    scans.clear()
    assert _check(repo) == uncached  # cold: the cache written
    assert sorted(scans) == sorted(scanned)
    scans.clear()
    reads.clear()
    assert _check(repo) == uncached  # warm
    assert scans == []
    # the same reads as without the cache (once each, tests/test_read_once.py; the
    # settings lookup and the project name both read a root pyproject.toml, as before)
    assert reads == read


def test_one_edited_source_is_scanned_again_and_changes_only_its_result(tmp_path, scans):
    repo = _behind_pgbouncer(tmp_path, APPS / "django")
    # mysite through that PgBouncer (which serves its database): its hazards are judged
    # against it; a host that is not the pooler's puts them behind no pooler, and no
    # finding would show the edit
    manifest = repo / "k8s" / "deployment.yaml"
    manifest.write_text(manifest.read_text().replace(
        "value: mysite-db-rw", "value: pgbouncer.shop.svc.cluster.local"))
    ini = repo / "k8s" / "pgbouncer-cache-test.yaml"
    ini.write_text(ini.read_text().replace(
        "    shop = host=", "    mysite = host=postgres.shop.svc.cluster.local\n    shop = host="))
    _check(repo)
    before = run_check([str(repo)], CheckOptions(cache=True), REGISTRY)
    edited = repo / "mysite" / "settings" / "base.py"
    edited.write_text(edited.read_text() + '\nLISTEN_SQL = connection.cursor().execute('
                      '"LISTEN jobs")\n')
    scans.clear()
    after = run_check([str(repo)], CheckOptions(cache=True), REGISTRY)
    assert scans == ["mysite/settings/base.py"]
    assert render(after, REGISTRY) == _check(repo, cache=False)
    new = [(f.code, f.location.path) for f in after.findings if f not in before.findings]
    assert new == [("PA402", "mysite/settings/base.py")]  # LISTEN: the edit is in the answer
    assert [f for f in before.findings if f not in after.findings] == []


def test_a_suppression_added_to_a_cached_source_applies(tmp_path, reads):
    """The suppression comment is in the file's content, so in its entry's key: the
    edited file is scanned again, and its marks (ReadOnce.marks) still come from the one
    read, cold and warm."""
    repo = _behind_pgbouncer(tmp_path, APPS / "go_sql")
    before = run_check([str(repo)], CheckOptions(cache=True), REGISTRY)
    target = next(f for f in before.findings if f.location.path == "internal/db/db.go")
    source = repo / "internal" / "db" / "db.go"
    lines = source.read_text().splitlines()
    lines.insert(target.location.line - 1, f"// pool-advisor: ignore[{target.code}] cached")
    source.write_text("\n".join(lines) + "\n")
    expected = _check(repo, cache=False)
    for _ in range(2):  # cold for the edited file, then warm
        reads.clear()
        after = run_check([str(repo)], CheckOptions(cache=True), REGISTRY)
        assert (target.code, "internal/db/db.go", target.location.line + 1) in [
            (f.code, f.location.path, f.location.line) for f in after.suppressed]
        assert render(after, REGISTRY) == expected
        assert reads[str(source.resolve())] == 1


def test_the_same_source_with_rds_proxy_pinning_is_its_own_entry(tmp_path, scans):
    """RDS Proxy adds the pinning-only kinds: a scan without them is not reused."""
    files = ["app.sql"]
    (tmp_path / "app.sql").write_text("SET search_path = app;\nSELECT 1;\n")
    from advisor.read.cache import FileCache
    from advisor.read.fs import Root

    cache = FileCache(tmp_path / "cache", "k")
    root = Root.of(tmp_path)
    plain = extract.scan_sql_sources(root, files, cache=cache)
    pinned = extract.scan_sql_sources(root, files, pinning=True, cache=cache)
    assert len(scans) == 2
    assert pinned == extract.scan_sql_sources(root, files, pinning=True)
    assert plain == extract.scan_sql_sources(root, files)


@pytest.mark.parametrize("damage", ["not msgpack", "another type", "truncated"])
def test_a_damaged_entry_is_a_miss(tmp_path, scans, damage):
    repo = _behind_pgbouncer(tmp_path, APPS / "asyncpg")
    uncached = _check(repo, cache=False)
    _check(repo)
    pack_path = next((repo / CACHE_DIR).glob(f"*/{PACK}"))
    pack = msgspec.msgpack.decode(pack_path.read_bytes(), type=cache_mod._Pack)
    sql_keys = [k for k, raw in pack.entries.items()
                if _decodes(raw, extract.SqlEntry) and not _decodes(raw, cache_mod.ManifestEntry)]
    assert sql_keys
    for key in sql_keys:
        raw = pack.entries[key]
        pack.entries[key] = {"not msgpack": b"\xc1\xc1", "another type": msgspec.msgpack.encode(
            [1, 2, 3]), "truncated": raw[: len(raw) // 2]}[damage]
    pack_path.write_bytes(msgspec.msgpack.encode(pack))
    scans.clear()
    assert _check(repo) == uncached
    assert len(scans) == len(sql_keys)  # each damaged entry scanned again


def _decodes(raw: bytes, type_: type) -> bool:
    try:
        msgspec.msgpack.decode(raw, type=type_)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    return True
