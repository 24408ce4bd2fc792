"""The per-file parse cache (advisor.read.cache): hits give the same answer as parsing, any
change of a file's content or of the tool invalidates, a bad cache is a miss, concurrent
runs and read-only roots are safe, --no-cache writes nothing."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from advisor.engine import repository
from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read import cache as cache_mod
from advisor.read.cache import CACHE_DIR, PACK, decode_tree, encode_tree
from advisor.report.json import render
from advisor.rules import load_rules
from tests.cli_helpers import REPO, run_cli

REGISTRY = load_rules()

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
spec:
  replicas: {replicas}
  template:
    spec:
      containers:
        - name: api
          image: example/api:1
          env:
            - name: DATABASE_URL
              value: postgresql://app@db:5432/app
            - name: DB_POOL_SIZE
              value: "20"
"""
DATABASE = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: postgres
          image: postgres:15
          args: ["-c", "max_connections=30"]
---
apiVersion: v1
kind: Service
metadata:
  name: db
spec:
  ports:
    - port: 5432
"""


def _repo(tmp_path: Path, replicas: int = 2) -> Path:
    repo = tmp_path / "repo"
    (repo / "k8s").mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / "k8s" / "api.yaml").write_text(DEPLOYMENT.format(replicas=replicas))
    (repo / "k8s" / "db.yaml").write_text(DATABASE)
    return repo


def _check(path: Path, *, cache: bool = True) -> str:
    result = run_check([str(path)], CheckOptions(cache=cache), REGISTRY)
    return render(result, REGISTRY)


@pytest.fixture
def parses(monkeypatch) -> list[str]:
    """The manifests parsed (not taken from the cache) during a run."""
    seen: list[str] = []
    real = repository.k8s_objects

    def counting(text, shown, **kw):
        seen.append(shown)
        return real(text, shown, **kw)

    monkeypatch.setattr(repository, "k8s_objects", counting)
    return seen


def test_warm_run_parses_nothing_and_answers_the_same(tmp_path, parses):
    repo = _repo(tmp_path)
    cold = _check(repo)
    assert sorted(parses) == ["k8s/api.yaml", "k8s/db.yaml"]
    assert (repo / CACHE_DIR / ".gitignore").read_text().splitlines()[-1] == "*"
    parses.clear()
    warm = _check(repo)
    assert parses == []
    assert warm == cold
    assert _check(repo, cache=False) == cold


def test_a_changed_file_is_parsed_again_and_changes_the_answer(tmp_path, parses):
    repo = _repo(tmp_path, replicas=1)
    before = json.loads(_check(repo))
    (repo / "k8s" / "api.yaml").write_text(DEPLOYMENT.format(replicas=3))
    parses.clear()
    after = _check(repo)
    assert parses == ["k8s/api.yaml"]  # db.yaml came from the cache
    assert json.loads(after) != before
    assert after == _check(repo, cache=False)


def test_the_same_content_at_another_path_is_its_own_entry(tmp_path, parses):
    repo = _repo(tmp_path)
    _check(repo)
    shutil.copy(repo / "k8s" / "db.yaml", repo / "k8s" / "db2.yaml")
    (repo / "k8s" / "db.yaml").unlink()
    parses.clear()
    warm = _check(repo)
    assert parses == ["k8s/db2.yaml"]
    assert "k8s/db2.yaml" in warm and '"k8s/db.yaml"' not in warm


def test_another_tool_version_does_not_reuse_entries(tmp_path, parses, monkeypatch):
    repo = _repo(tmp_path)
    _check(repo)
    monkeypatch.setattr(cache_mod, "__version__", "999.0.0")
    parses.clear()
    _check(repo)
    assert sorted(parses) == ["k8s/api.yaml", "k8s/db.yaml"]
    assert any(p.name.startswith("999.0.0-") for p in (repo / CACHE_DIR).iterdir())


def test_an_edited_advisor_source_does_not_reuse_entries(monkeypatch):
    before = cache_mod.code_fingerprint()
    real_stat = os.stat

    def later(path, *a, **kw):
        st = real_stat(path, *a, **kw)
        if str(path).endswith(os.path.join("sources", "k8s.py")):
            return os.stat_result((*st[:8], st.st_mtime + 1, st.st_ctime))
        return st

    monkeypatch.setattr(cache_mod.os, "stat", later)
    assert cache_mod.code_fingerprint() != before


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "foreign", "entry",
                                    "tree", "body", "extract"])
def test_a_damaged_cache_is_a_miss_never_a_crash(tmp_path, parses, damage):
    repo = _repo(tmp_path)
    cold = _check(repo)
    [pack] = (repo / CACHE_DIR).glob(f"*/{PACK}")
    data = pack.read_bytes()
    if damage == "truncated":
        pack.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        pack.write_bytes(os.urandom(len(data)))
    elif damage == "empty":
        pack.write_bytes(b"")
    elif damage == "foreign":  # a valid pack written under another key
        old = msgspec.msgpack.decode(data, type=cache_mod._Pack)
        pack.write_bytes(msgspec.msgpack.encode(cache_mod._Pack("other", old.entries)))
    elif damage == "entry":  # a valid pack whose entries are not what they claim
        old = msgspec.msgpack.decode(data, type=cache_mod._Pack)
        entry = [[["Deployment", 1, [9, "x"]]], [], {}]
        bad = {k: msgspec.msgpack.encode(entry) for k in old.entries}
        pack.write_bytes(msgspec.msgpack.encode(cache_mod._Pack(old.key, bad)))
    else:  # valid entries whose objects' trees are not: each file read again when one
        # of its bodies is needed (bodies are decoded when a reader first asks)
        old = msgspec.msgpack.decode(data, type=cache_mod._Pack)
        bad = {}
        for k, raw in old.entries.items():
            try:
                entry = msgspec.msgpack.decode(raw, type=cache_mod.ManifestEntry)
            except msgspec.ValidationError:  # another kind's entry (a container's pools)
                bad[k] = raw
                continue
            for o in entry.objects:
                if damage == "extract":  # what a reader takes: the body answers instead
                    o.extract = msgspec.Raw(msgspec.msgpack.encode([1, "x"]))
                else:  # a body is a bin value holding the tree's msgpack bytes
                    o.body = msgspec.Raw(msgspec.msgpack.encode(
                        msgspec.msgpack.encode([0, 1, 1, ["a"], [], []]) if damage == "tree"
                        else b"\xc1"))
            bad[k] = msgspec.msgpack.encode(entry)
        pack.write_bytes(msgspec.msgpack.encode(cache_mod._Pack(old.key, bad, old.stats)))
    parses.clear()
    assert _check(repo) == cold
    # a damaged tree is parsed again when a reader needs it: the server's (its reader
    # reads the body), not the client Deployment's (what linking reads of it is kept)
    assert sorted(parses) == {"tree": ["k8s/db.yaml"], "body": ["k8s/db.yaml"],
                              "extract": []}.get(damage, ["k8s/api.yaml", "k8s/db.yaml"])
    parses.clear()
    assert _check(repo) == cold  # rewritten: warm again
    assert parses == []


def test_malformed_trees_are_rejected():
    for bad in ([0, 1, 1, ["a"], [], ["a"], bytes(16)], [1, 0, 0, [1, 2], bytes(8)], [7],
                [0, 1, 1, [["x"]], [1], [["x"]], bytes(16)], {"a": 1},
                [0, 1, 1, ["a"], [1], ["a"], bytes(8)], [1, 0, 0, [1], [0, 0]],
                [0, 1, 1, ["a"], [{"x": 1}], ["a"], bytes(16)], [1, 0, 0, [b"x"], bytes(8)],
                [1, 0, 0, [msgspec.msgpack.Ext(1, b"")], bytes(8)]):
        with pytest.raises((ValueError, TypeError)):
            decode_tree(bad)


def test_tree_round_trip_keeps_positions_and_block_scalars():
    from advisor.read.yamlpos import load

    text = ("base: &b {x: 1}\na: 1\nb:\n  - x\n  - {c: true}\nd: |\n  line\ne: null\n"
            "7: 1.5\na: 2\nm:\n  <<: *b\n  y: 2\n")
    tree = load(text)
    back = decode_tree(msgspec.msgpack.decode(msgspec.msgpack.encode(encode_tree(tree))))
    assert list(back) == list(tree) and list(back["m"]) == list(tree["m"])
    assert [back.lc.key(k) for k in back] == [tree.lc.key(k) for k in tree]
    assert [back["m"].lc.value(k) for k in ("y",)] == [tree["m"].lc.value(k) for k in ("y",)]
    assert back == tree
    assert back.lc.data == tree.lc.data and back["b"].lc.data == tree["b"].lc.data
    assert back["b"][1].lc.line == tree["b"][1].lc.line
    assert back["d"].style == "|"


def test_no_cache_writes_nothing(tmp_path):
    repo = _repo(tmp_path)
    before = sorted(p.relative_to(repo) for p in repo.rglob("*"))
    proc = run_cli("check", str(repo), "--no-cache", "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    assert sorted(p.relative_to(repo) for p in repo.rglob("*")) == before
    proc = run_cli("check", str(repo), "--format", "json",
                   env={"POOL_ADVISOR_NO_CACHE": "1"})
    assert proc.returncode in (0, 1), proc.stderr
    assert sorted(p.relative_to(repo) for p in repo.rglob("*")) == before
    proc = run_cli("check", str(repo), "--format", "json")
    assert (repo / CACHE_DIR).is_dir()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only folders")
def test_a_read_only_root_runs_without_cache(tmp_path):
    repo = _repo(tmp_path)
    cold = _check(repo, cache=False)
    modes = {}
    for p in [repo, *repo.rglob("*")]:
        if p.is_dir():
            modes[p] = p.stat().st_mode
            p.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        assert _check(repo) == cold
        assert not (repo / CACHE_DIR).exists()
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


def test_a_read_only_file_system_runs_without_cache(tmp_path, monkeypatch):
    """(As root, chmod does not stop writes: EROFS is simulated.)"""
    repo = _repo(tmp_path)
    cold = _check(repo, cache=False)

    def read_only(self, *a, **kw):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(cache_mod.Path, "mkdir", read_only)
    assert _check(repo) == cold
    assert not (repo / CACHE_DIR).exists()


def test_an_unwritable_cache_folder_runs_without_cache(tmp_path, monkeypatch):
    """(As root, chmod does not stop writes: the failure is simulated.)"""
    repo = _repo(tmp_path)
    cold = _check(repo, cache=False)

    real_open = os.open

    def refuse(path, *a, **kw):
        if ".tmp-" in os.fspath(path):
            raise PermissionError(13, "Permission denied")
        return real_open(path, *a, **kw)

    monkeypatch.setattr(cache_mod.os, "open", refuse)
    assert _check(repo) == cold
    assert not list((repo / CACHE_DIR).glob(f"*/{PACK}")) if (repo / CACHE_DIR).exists() \
        else True


def test_a_symlinked_cache_folder_is_not_written_through(tmp_path):
    repo = _repo(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / CACHE_DIR).symlink_to(elsewhere)
    cold = _check(repo, cache=False)
    assert _check(repo) == cold
    assert list(elsewhere.iterdir()) == []


CONCURRENT = """
import sys
from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.report.json import render
from advisor.rules import load_rules
reg = load_rules()
for _ in range(int(sys.argv[2])):
    print(render(run_check([sys.argv[1]], CheckOptions(cache=True), reg), reg))
"""


def test_two_processes_writing_at_once(tmp_path):
    repo = _repo(tmp_path)
    for i in range(40):  # enough entries that the writes take a while
        (repo / "k8s" / f"svc-{i}.yaml").write_text(
            DEPLOYMENT.format(replicas=1).replace("name: api", f"name: api-{i}"))
    expected = _check(repo, cache=False)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", CONCURRENT, str(repo), "4"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        reports = [r for r in out.split("\n}\n") if r.strip()]
        assert len(reports) == 4
        for r in reports:
            assert json.loads(r + "\n}") == json.loads(expected)
    assert not list((repo / CACHE_DIR).glob("*/.tmp-*"))  # no temporary file left
    assert _check(repo) == expected


def _fixture_dirs() -> list[Path]:
    return [p for base in (REPO / "fixtures", REPO / "tests" / "realworld")
            for p in sorted(base.iterdir()) if p.is_dir()]


@pytest.mark.parametrize("fixture", _fixture_dirs(), ids=lambda p: p.name)
def test_fixture_reports_are_the_same_cold_warm_and_without_cache(tmp_path, fixture):
    repo = tmp_path / fixture.name
    # (other tests' runs leave a cache in the fixture folders)
    shutil.copytree(fixture, repo, ignore=shutil.ignore_patterns("__pycache__", CACHE_DIR))
    (repo / ".git").mkdir()
    uncached = _check(repo, cache=False)
    assert not (repo / CACHE_DIR).exists()
    cold = _check(repo)
    warm = _check(repo)
    assert cold == uncached
    assert warm == uncached


# --- each source file read once ------------------------------------------------------


def test_app_sources_are_read_once_by_the_app_and_sql_scans(tmp_path, reads):
    """A Django app behind PgBouncer: the app scan reads its sources for the pool
    settings and the SQL scan for queries, from one read."""
    repo = tmp_path / "django"
    shutil.copytree(REPO / "tests" / "fixtures_apps" / "django", repo,
                    ignore=shutil.ignore_patterns("__pycache__", CACHE_DIR))
    shutil.copy(REPO / "fixtures" / "acme-shop-pgbouncer" / "k8s" / "pgbouncer.yaml",
                repo / "k8s" / "pgbouncer.yaml")
    (repo / ".git").mkdir()
    _check(repo, cache=False)
    sources = [p for p in reads if p.endswith(".py")]
    assert any(p.endswith("settings/production.py") for p in sources)  # the scans ran
    assert {p: n for p, n in reads.items() if n > 1} == {}


# Charts and kustomize overlays are read by their renderers (several times, per overlay
# and per chart): not part of this check yet.
READ_ONCE = ["acme-shop", "acme-shop-pgbouncer", "cnpg", "crunchy", "keda", "sidecar-pgbouncer",
             "zalando"]


@pytest.mark.parametrize("fixture", READ_ONCE)
def test_fixture_files_are_read_once(tmp_path, reads, fixture):
    repo = tmp_path / fixture
    shutil.copytree(REPO / "fixtures" / fixture, repo, ignore=shutil.ignore_patterns(CACHE_DIR))
    (repo / ".git").mkdir()
    for cache in (False, True, True):  # without the cache, cold, warm
        reads.clear()
        _check(repo, cache=cache)
        assert reads and {p: n for p, n in reads.items() if n > 1} == {}


# --- warm runs after one file changed: the whole repository's answer, as without cache ----


def _first_manifest(repo: Path) -> Path | None:
    from advisor.read.discover import discover_paths

    return next(iter(discover_paths(repo, [repo]).manifests), None)


@pytest.mark.parametrize("fixture", _fixture_dirs(), ids=lambda p: p.name)
def test_fixture_reports_after_one_file_changed_are_the_same_as_without_cache(tmp_path,
                                                                             fixture):
    repo = tmp_path / fixture.name
    shutil.copytree(fixture, repo, ignore=shutil.ignore_patterns("__pycache__", CACHE_DIR))
    (repo / ".git").mkdir()
    _check(repo)  # the cache written
    edited = _first_manifest(repo)
    if edited is None:
        pytest.skip("no manifest")
    # a line moved down: every position below it changes, and a cached tree would show it
    edited.write_bytes(b"# edited\n" + edited.read_bytes())
    assert _check(repo) == _check(repo, cache=False)


def test_generated_tree_warm_and_one_changed_are_the_same_as_without_cache(tmp_path, parses):
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from scale import generate_manifests
    finally:
        sys.path.remove(str(REPO / "bench"))
    repo = tmp_path / "repo"
    generate_manifests(repo, 300)
    (repo / ".git").mkdir()
    uncached = _check(repo, cache=False)
    assert _check(repo) == uncached  # cold: the cache written
    parses.clear()
    assert _check(repo) == uncached  # warm
    assert parses == []
    target = repo / "team-000" / "svc-001" / "configmap.yaml"  # its pool size
    text = target.read_text()
    assert 'MAXIMUMPOOLSIZE: "6"\n' in text
    target.write_text(text.replace('MAXIMUMPOOLSIZE: "6"\n', 'MAXIMUMPOOLSIZE: "60"\n'))
    parses.clear()
    changed = _check(repo)
    assert parses == ["team-000/svc-001/configmap.yaml"]
    assert changed == _check(repo, cache=False)
    assert changed != uncached  # the edit is in the answer


def test_decoding_a_tree_leaves_nothing_to_the_cycle_collector():
    import gc

    from advisor.read.yamlpos import load

    encoded = msgspec.msgpack.decode(msgspec.msgpack.encode(encode_tree(
        load("a: 1\nb:\n  - x\n  - {c: true}\nd: |\n  line\n"))))
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(10):
            decode_tree(encoded)
        assert gc.collect() == 0
    finally:
        if enabled:
            gc.enable()


# --- unchanged files known by their stat, not read ------------------------------------


def _times_old(monkeypatch) -> None:
    """Every file counts as written long before the run (as in a repository checked out
    earlier): its stat signature is recorded."""
    monkeypatch.setattr(cache_mod, "RACY_NS", -10**15)


def _manifest_reads(reads: dict[str, int]) -> list[str]:
    return sorted(p for p in reads if p.endswith(".yaml"))


def test_a_file_whose_stat_is_unchanged_is_not_read(tmp_path, reads, parses, monkeypatch):
    _times_old(monkeypatch)
    repo = _repo(tmp_path)
    cold = _check(repo)
    reads.clear()
    parses.clear()
    assert _check(repo) == cold
    assert _manifest_reads(reads) == [] and parses == []
    assert cold == _check(repo, cache=False)


def test_a_file_rewritten_with_the_same_size_and_mtime_is_read(tmp_path, reads, parses,
                                                                monkeypatch):
    """Same size, mtime set back (as a tool preserving times does): the ctime moved."""
    _times_old(monkeypatch)
    repo = _repo(tmp_path, replicas=1)
    before = _check(repo)
    api = repo / "k8s" / "api.yaml"
    st = api.stat()
    api.write_text(DEPLOYMENT.format(replicas=3))
    os.utime(api, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (api.stat().st_size, api.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    reads.clear()
    parses.clear()
    after = _check(repo)
    assert parses == ["k8s/api.yaml"]
    assert _manifest_reads(reads) == [str(api)]
    assert after != before
    assert after == _check(repo, cache=False)


def test_a_file_replaced_by_another_of_the_same_size_and_mtime_is_read(tmp_path, parses,
                                                                        monkeypatch):
    """Moved over the old one (an editor's save, a checkout): another inode."""
    _times_old(monkeypatch)
    repo = _repo(tmp_path, replicas=1)
    before = _check(repo)
    api = repo / "k8s" / "api.yaml"
    st = api.stat()
    new = repo / "k8s" / "api.yaml.new"
    new.write_text(DEPLOYMENT.format(replicas=3))
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(new, api)
    parses.clear()
    after = _check(repo)
    assert parses == ["k8s/api.yaml"]
    assert after != before
    assert after == _check(repo, cache=False)


def test_a_file_edited_within_the_clock_tick_it_was_read_in_is_read_again(tmp_path, parses):
    """Racily clean: a file written as recently as a run looks at it may change again
    without its signature changing (same size, times within one tick of the clock): its
    signature is not recorded, so the next run reads it whatever its stat says."""
    repo = _repo(tmp_path, replicas=1)
    api = repo / "k8s" / "api.yaml"
    _check(repo)  # the files were just written: not trusted
    st = api.stat()
    pack = msgspec.msgpack.decode(next((repo / CACHE_DIR).glob(f"*/{PACK}")).read_bytes(),
                                  type=cache_mod._Pack)
    assert pack.stats == {}
    parses.clear()
    api.write_text(DEPLOYMENT.format(replicas=3))
    os.utime(api, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = _check(repo)
    assert parses == ["k8s/api.yaml"]
    assert after == _check(repo, cache=False)


def test_a_signature_is_trusted_only_when_the_file_is_older_than_the_run():
    from types import SimpleNamespace

    started = 10**18
    tick = cache_mod.RACY_NS

    def st(mtime: int, ctime: int) -> SimpleNamespace:
        return SimpleNamespace(st_size=10, st_mtime_ns=mtime, st_ctime_ns=ctime, st_ino=1,
                               st_dev=2)

    assert cache_mod.trusted(st(started - 2 * tick, started - 2 * tick), started)
    assert not cache_mod.trusted(st(started - 2 * tick, started - tick // 2), started)
    assert not cache_mod.trusted(st(started - tick // 2, started - 2 * tick), started)
    assert not cache_mod.trusted(st(started + tick, started + tick), started)  # clock skew
    # recorded only when trusted; a racy file's old record is dropped
    cache = cache_mod.FileCache(Path("/nonexistent"), "k", started)
    cache.put("k8s", "a.yaml", "text", [1], st(started - tick // 2, started - tick // 2))
    assert cache.unchanged("k8s", "a.yaml", st(started - tick // 2, started - tick // 2),
                           list) is None
    old = st(started - 2 * tick, started - 2 * tick)
    cache.put("k8s", "a.yaml", "text", [1], old)
    assert cache.unchanged("k8s", "a.yaml", old, list) == [1]
    assert cache.unchanged("k8s", "b.yaml", old, list) is None  # another path
    moved = st(started - 2 * tick, started - 2 * tick + 1)
    assert cache.unchanged("k8s", "a.yaml", moved, list) is None
    cache.get("k8s", "a.yaml", "text", list, st(started, started))  # read again: racy now
    assert cache.unchanged("k8s", "a.yaml", old, list) is None


def test_a_new_and_a_removed_file_are_seen(tmp_path, parses, monkeypatch):
    _times_old(monkeypatch)
    repo = _repo(tmp_path)
    _check(repo)
    (repo / "k8s" / "api2.yaml").write_text(DEPLOYMENT.format(replicas=4).replace(
        "name: api", "name: api2"))
    parses.clear()
    added = _check(repo)
    assert parses == ["k8s/api2.yaml"]
    assert "k8s/api2.yaml" in added and added == _check(repo, cache=False)
    (repo / "k8s" / "api.yaml").unlink()
    parses.clear()
    removed = _check(repo)
    assert parses == []
    assert '"k8s/api.yaml' not in removed and removed == _check(repo, cache=False)


def test_fixture_reports_with_every_file_known_by_its_stat(tmp_path, monkeypatch):
    """Each fixture, its files taken by their stat on the warm run: the same answer."""
    _times_old(monkeypatch)
    for fixture in _fixture_dirs():
        repo = tmp_path / fixture.name
        shutil.copytree(fixture, repo, ignore=shutil.ignore_patterns("__pycache__", CACHE_DIR))
        (repo / ".git").mkdir()
        uncached = _check(repo, cache=False)
        assert _check(repo) == uncached, fixture.name
        assert _check(repo) == uncached, fixture.name


def test_old_key_folders_are_pruned_when_a_new_one_is_made(tmp_path):
    """Each change of pool-advisor's sources (or version) makes a new key folder of a few
    MB: the newest few are kept, the rest removed when another is made; a folder without
    a pack is not ours and stays."""
    base = tmp_path / CACHE_DIR
    for i in range(6):
        folder = base / f"old-{i}"
        folder.mkdir(parents=True)
        (folder / PACK).write_bytes(b"x")
        os.utime(folder / PACK, ns=(10**18 + i, 10**18 + i))
    (base / "not-ours").mkdir()
    cache = cache_mod.FileCache(base / "current", "current")
    cache.put("k8s", "a.yaml", "text", [1])
    cache.save()
    kept = sorted(p.name for p in base.iterdir() if p.is_dir())
    assert kept == ["current", "not-ours", "old-3", "old-4", "old-5"]
    cache.put("k8s", "b.yaml", "text", [2])
    cache.save()  # the folder is there: nothing looked at again
    (base / "old-0").mkdir()
    (base / "old-0" / PACK).write_bytes(b"x")
    cache.put("k8s", "c.yaml", "text", [3])
    cache.save()
    assert (base / "old-0").is_dir()


def _folder(repo: Path) -> Path:
    [pack] = (repo / CACHE_DIR).glob(f"*/{PACK}")
    return pack.parent


def test_one_changed_file_writes_a_delta_not_the_pack(tmp_path, parses, reads, monkeypatch):
    """After a run wrote the pack, a run that adds little writes only what it added
    (cache_mod.DELTA, for that pack's token); the next run reads both and parses nothing.
    (A two-file repository's pack is small: any addition is more than DELTA_SHARE of it.)"""
    _times_old(monkeypatch)
    monkeypatch.setattr(cache_mod, "DELTA_SHARE", 10.0)
    repo = _repo(tmp_path, replicas=1)
    _check(repo)
    folder = _folder(repo)
    pack_bytes = (folder / PACK).read_bytes()
    api = repo / "k8s" / "api.yaml"
    api.write_text(DEPLOYMENT.format(replicas=3))
    parses.clear()
    edited = _check(repo)
    assert parses == ["k8s/api.yaml"] and edited == _check(repo, cache=False)
    assert (folder / PACK).read_bytes() == pack_bytes  # not written again
    delta = msgspec.msgpack.decode((folder / cache_mod.DELTA).read_bytes(),
                                   type=cache_mod._Delta)
    token = msgspec.msgpack.decode(pack_bytes, type=cache_mod._Pack).token
    assert delta.token == token and len(delta.entries) == 1
    assert list(delta.stats) == ["k8s\0k8s/api.yaml"]
    parses.clear()
    reads.clear()
    assert _check(repo) == edited
    assert parses == [] and _manifest_reads(reads) == []  # known from pack + delta
    api.write_text(DEPLOYMENT.format(replicas=4))  # the next delta keeps the first's
    _check(repo)
    delta = msgspec.msgpack.decode((folder / cache_mod.DELTA).read_bytes(),
                                   type=cache_mod._Delta)
    assert len(delta.entries) == 2 and (folder / PACK).read_bytes() == pack_bytes


def test_a_delta_of_another_pack_or_damaged_is_ignored(tmp_path, parses, monkeypatch):
    _times_old(monkeypatch)
    monkeypatch.setattr(cache_mod, "DELTA_SHARE", 10.0)
    repo = _repo(tmp_path, replicas=1)
    _check(repo)
    folder = _folder(repo)
    api = repo / "k8s" / "api.yaml"
    api.write_text(DEPLOYMENT.format(replicas=3))
    edited = _check(repo)
    delta_path = folder / cache_mod.DELTA
    good = delta_path.read_bytes()
    for bad in (msgspec.msgpack.encode(cache_mod._Delta(
                    msgspec.msgpack.decode(good, type=cache_mod._Delta).key, "another-token",
                    msgspec.msgpack.decode(good, type=cache_mod._Delta).entries,
                    msgspec.msgpack.decode(good, type=cache_mod._Delta).stats)),
                good[: len(good) // 2], b"\xc1"):
        delta_path.write_bytes(bad)
        parses.clear()
        assert _check(repo) == edited
        assert parses == ["k8s/api.yaml"]  # what only the delta knew is parsed again


def test_a_delta_that_grew_is_folded_into_the_pack(tmp_path, parses, monkeypatch):
    _times_old(monkeypatch)
    monkeypatch.setattr(cache_mod, "DELTA_SHARE", 0.0)  # any addition is too much
    repo = _repo(tmp_path, replicas=1)
    _check(repo)
    folder = _folder(repo)
    before = (folder / PACK).read_bytes()
    (repo / "k8s" / "api.yaml").write_text(DEPLOYMENT.format(replicas=3))
    edited = _check(repo)
    assert (folder / PACK).read_bytes() != before
    assert not (folder / cache_mod.DELTA).exists()
    parses.clear()
    assert _check(repo) == edited and parses == []
