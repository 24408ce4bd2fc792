"""The cache of the JS/TS and Go pool readers' per-file extracts (issue 19): which of the
identifiers the readers look for a source file holds, by the file's path and content
(kinds app-js and app-go). A warm run gives the --no-cache answer and tokenizes only the
files holding one, an edited file is read again, a damaged entry is a miss."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read import cache as cache_mod
from advisor.read.apps import gosource, jssource
from advisor.read.cache import CACHE_DIR, PACK
from advisor.report.json import render
from advisor.rules import load_rules

REPO = Path(__file__).resolve().parent.parent
APPS = REPO / "tests" / "fixtures_apps"
REAL_APPS = REPO / "tests" / "realworld_apps"
REGISTRY = load_rules()
TREES = [APPS / n for n in ("knex", "node_pg", "sequelize", "typeorm", "prisma", "go_sql",
                            "pgx")] + \
    [REAL_APPS / n for n in ("outline", "miniflux", "supabase-auth", "umami", "graphile-worker")]


def _copy(tmp_path: Path, tree: Path) -> Path:
    repo = tmp_path / tree.name
    shutil.copytree(tree, repo, ignore=shutil.ignore_patterns("__pycache__", CACHE_DIR))
    (repo / ".git").mkdir()
    return repo


def _check(repo: Path, *, cache: bool = True) -> str:
    return render(run_check([str(repo)], CheckOptions(cache=cache), REGISTRY), REGISTRY)


@pytest.fixture
def tokenized(monkeypatch) -> list[str]:
    """The texts the JS and Go readers tokenized during a run (their first lines)."""
    seen: list[str] = []
    for module in (jssource, gosource):
        real = module.tokenize

        def counting(text, real=real):
            seen.append(text[:80])
            return real(text)

        monkeypatch.setattr(module, "tokenize", counting)
    return seen


@pytest.mark.parametrize("tree", TREES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_warm_runs_answer_as_without_cache(tmp_path, tokenized, tree):
    repo = _copy(tmp_path, tree)
    uncached = _check(repo, cache=False)
    cold = list(tokenized)
    tokenized.clear()
    assert _check(repo) == uncached  # cold: the entries written
    assert sorted(tokenized) == sorted(cold)
    tokenized.clear()
    assert _check(repo) == uncached  # warm
    assert len(tokenized) <= len(cold)


def test_a_warm_run_tokenizes_only_the_files_that_open_pools(tmp_path, tokenized):
    """Files whose text names Pool (a comment, a string, another name) but that call no
    reader's function: tokenized cold to know it, not warm."""
    repo = _copy(tmp_path, APPS / "node_pg")
    for n in range(20):
        (repo / "src" / f"worker{n}.js").write_text(
            f"// a Pool of workers\nconst label = 'Pool {n}';\n"
            f"module.exports = {{ WorkerPool: {n} }};\n")
    uncached = _check(repo, cache=False)
    tokenized.clear()
    _check(repo)
    cold = len(tokenized)
    tokenized.clear()
    assert _check(repo) == uncached
    assert cold >= 21  # every file naming Pool, to know which call it
    assert len(tokenized) == cold - 20  # none of the 20 that do not


def test_an_edited_source_is_read_again(tmp_path):
    repo = _copy(tmp_path, APPS / "go_sql")
    before = _check(repo)
    source = repo / "internal" / "db" / "db.go"
    source.write_text(source.read_text().replace("db.SetMaxIdleConns(5)",
                                                 "db.SetMaxIdleConns(5)\n\tdb.SetMaxOpenConns(7)"))
    after = _check(repo)
    assert after == _check(repo, cache=False)
    assert after != before
    assert '"PA102"' in before and '"PA102"' not in after  # unbounded no more: read again


def _app_keys(pack) -> list[str]:
    def decodes(raw: bytes) -> bool:
        try:
            msgspec.msgpack.decode(raw, type=list[str])
        except (msgspec.DecodeError, msgspec.ValidationError):
            return False
        return True

    return [k for k, raw in pack.entries.items() if decodes(raw)]


@pytest.mark.parametrize("damage", ["not msgpack", "another type", "truncated"])
def test_a_damaged_entry_is_a_miss(tmp_path, tokenized, damage):
    repo = _copy(tmp_path, APPS / "node_pg")
    uncached = _check(repo, cache=False)
    _check(repo)
    pack_path = next((repo / CACHE_DIR).glob(f"*/{PACK}"))
    pack = msgspec.msgpack.decode(pack_path.read_bytes(), type=cache_mod._Pack)
    keys = _app_keys(pack)
    assert keys
    for key in keys:
        raw = pack.entries[key]
        pack.entries[key] = {"not msgpack": b"\xc1\xc1", "another type": msgspec.msgpack.encode(
            [1, 2, 3]), "truncated": raw[: len(raw) // 2]}[damage]
    pack_path.write_bytes(msgspec.msgpack.encode(pack))
    tokenized.clear()
    assert _check(repo) == uncached
    assert len(tokenized) >= len(keys)  # each damaged entry's file tokenized again
