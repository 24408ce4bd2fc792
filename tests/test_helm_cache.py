"""Rendered Helm charts in the parse cache (advisor.read.render.helm_cache): a warm run
gives the --no-cache answer without loading or starting the Helm engine; a change of
any input of a render (a template, a values file, a subchart, --set, --values and their
order, the release, the engine) renders the chart again; a damaged entry is a miss; a
render that is not deterministic (tracing cut short) is not kept."""

from __future__ import annotations

import io
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

import msgspec
import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.cache import CACHE_DIR, PACK
from advisor.read.render import helm as helm_mod
from advisor.read.render import helm_cache, render_cache
from advisor.read.render.helm_process import EngineProcess
from advisor.report.json import render
from advisor.rules import load_rules
from tests.cli_helpers import REPO

pytest.importorskip("helm_python")

REGISTRY = load_rules()
CHART_FIXTURES = [REPO / "fixtures" / "helm-chart-prod", REPO / "fixtures" / "bitnami-values",
                  REPO / "tests" / "realworld" / "bitnami-chart",
                  REPO / "tests" / "realworld" / "airflow-chart"]


def _copy(fixture: Path, tmp_path: Path) -> Path:
    repo = tmp_path / fixture.name
    shutil.copytree(fixture, repo, ignore=shutil.ignore_patterns("__pycache__", CACHE_DIR))
    (repo / ".git").mkdir()
    return repo


def _check(paths: list[Path], *, cache: bool = True, **options) -> str:
    result = run_check([str(p) for p in paths], CheckOptions(cache=cache, **options), REGISTRY)
    return render(result, REGISTRY)


@pytest.fixture
def renders(monkeypatch) -> list[str]:
    """The charts the engine rendered (not taken from the cache) during a run."""
    seen: list[str] = []
    real = helm_mod._render_with_engine

    def counting(helm, root, chart_path, chart_rel, *args, **kw):
        seen.append(chart_rel)
        return real(helm, root, chart_path, chart_rel, *args, **kw)

    monkeypatch.setattr(helm_mod, "_render_with_engine", counting)
    return seen


def _without_engine(monkeypatch) -> None:
    """No Helm engine from here on: helm_python cannot be imported in this process and
    no engine process can start."""
    def refuse(self):
        raise AssertionError("the Helm engine was started")

    monkeypatch.setitem(sys.modules, "helm_python", None)
    monkeypatch.setattr(EngineProcess, "_start", refuse)


@pytest.mark.parametrize("fixture", CHART_FIXTURES, ids=lambda p: p.name)
def test_a_warm_run_answers_as_without_cache_and_starts_no_engine(tmp_path, fixture,
                                                                  renders, monkeypatch):
    repo = _copy(fixture, tmp_path)
    uncached = _check([repo], cache=False)
    assert renders  # the fixture has a chart the engine renders
    assert _check([repo]) == uncached  # cold: written
    renders.clear()
    _without_engine(monkeypatch)
    assert _check([repo]) == uncached  # warm
    assert renders == []


# --- each input of a render ------------------------------------------------------------

PROD = REPO / "fixtures" / "helm-chart-prod"
API = "charts/api"


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _tgz(folder: Path, archive: Path) -> None:
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname=folder.name)


def _edit_tgz(archive: Path, member: str, old: str, new: str) -> None:
    with tarfile.open(archive, "r:gz") as tar:
        members = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar]
    with tarfile.open(archive, "w:gz") as tar:
        for m, data in members:
            if m.name == member:
                text = data.decode()
                assert old in text
                data = text.replace(old, new, 1).encode()
                m.size = len(data)
            tar.addfile(m, io.BytesIO(data) if data is not None else None)


def _worker_folder(repo: Path) -> None:
    """The vendored worker subchart as a folder instead of its .tgz."""
    charts = repo / API / "charts"
    with tarfile.open(charts / "worker-0.1.0.tgz", "r:gz") as tar:
        tar.extractall(charts, filter="data")
    (charts / "worker-0.1.0.tgz").unlink()


# name -> (prepare the repository before the first run, edit after it, options before,
# options after, whether the change shows in the answer)
EDITS = {
    "template": (None, lambda r: _replace(r / API / "templates" / "deployment.yaml",
                                          "apiVersion", "# edited\napiVersion"), {}, {}, True),
    "values.yaml": (None, lambda r: _replace(r / API / "values.yaml", "# Default values",
                                             "# edited\n# Default values"), {}, {}, False),
    "declared values file": (None, lambda r: _replace(r / API / "values-prod.yaml",
                                                      "replicaCount: 4", "replicaCount: 6"),
                             {}, {}, True),
    "Chart.yaml": (None, lambda r: _replace(r / API / "Chart.yaml", "version:",
                                            "# edited\nversion:"), {}, {}, False),
    ".helmignore": (None, lambda r: (r / API / ".helmignore").write_text("*.md\n"), {}, {},
                    False),
    "a file added": (None, lambda r: (r / API / "templates" / "extra.txt").write_text("x"),
                     {}, {}, False),
    "subchart .tgz": (None, lambda r: _edit_tgz(r / API / "charts" / "worker-0.1.0.tgz",
                                                "worker/templates/deployment.yaml",
                                                "apiVersion", "# edited\napiVersion"),
                      {}, {}, False),
    "subchart folder": (_worker_folder,
                        lambda r: _replace(r / API / "charts" / "worker" / "values.yaml",
                                           "replicaCount: 2", "replicaCount: 3"),
                        {"set_values": ["database.poolSize=20"]},
                        {"set_values": ["database.poolSize=20"]}, True),
    "--set": (None, None, {"set_values": ["database.poolSize=20"]},
              {"set_values": ["database.poolSize=40"]}, True),
    "--values order": (None, None, {"values_files": ["a.yaml", "b.yaml"]},
                       {"values_files": ["b.yaml", "a.yaml"]}, True),
    "--values file": (None, lambda r: _replace(r / API / "b.yaml", "poolSize: 30",
                                               "poolSize: 35"),
                      {"values_files": ["b.yaml"]}, {"values_files": ["b.yaml"]}, True),
    "--release": (None, None, {"release": "orders"}, {"release": "shop"}, True),
    "--namespace": (None, None, {"namespace": "shop"}, {"namespace": "prod"}, True),
}


@pytest.mark.parametrize("name", list(EDITS))
def test_a_change_of_any_input_renders_the_chart_again(tmp_path, renders, name):
    prepare, edit, before, after, visible = EDITS[name]
    repo = _copy(PROD, tmp_path)
    (repo / API / "a.yaml").write_text("database:\n  poolSize: 20\n")
    (repo / API / "b.yaml").write_text("database:\n  poolSize: 30\n")
    if prepare is not None:
        prepare(repo)

    def options(given: dict) -> dict:
        values = [str(repo / API / v) for v in given.get("values_files", [])]
        return {**given, "values_files": values}

    # Options for one chart: the chart is the path checked (with the database beside it).
    paths = [repo / API, repo / "k8s"] if before or after else [repo]
    first = _check(paths, **options(before))
    assert _check(paths, **options(before)) == first  # warm
    renders.clear()
    assert _check(paths, **options(before)) == first
    assert renders == []
    if edit is not None:
        edit(repo)
    changed = _check(paths, **options(after))
    assert renders == ["charts/api"]
    assert changed == _check(paths, cache=False, **options(after))
    if visible:
        assert changed != first  # the change is in the answer
    renders.clear()
    assert _check(paths, **options(after)) == changed  # the new render is kept
    assert renders == []


def test_a_change_beside_the_chart_does_not_render_it_again(tmp_path, renders):
    repo = _copy(PROD, tmp_path)
    _check([repo])
    renders.clear()
    _replace(repo / "k8s" / "postgres.yaml", "apiVersion", "# edited\napiVersion")
    assert _check([repo]) == _check([repo], cache=False)
    assert renders == ["charts/api"]  # (the --no-cache run's)


def test_another_engine_renders_again(tmp_path, renders, monkeypatch):
    repo = _copy(PROD, tmp_path)
    expected = _check([repo])
    identity = helm_cache.engine_identity()
    assert identity is not None
    monkeypatch.setenv("HELM_C_LIB", str(tmp_path / "libhelm_c.so"))
    assert helm_cache.engine_identity() != identity  # another library named
    monkeypatch.delenv("HELM_C_LIB")
    assert helm_cache.engine_identity() == identity
    renders.clear()
    monkeypatch.setattr(helm_cache, "engine_identity", lambda: identity + "\nupgraded")
    assert _check([repo]) == expected
    assert renders == ["charts/api"]


# --- damaged entries, renders that are not kept ----------------------------------------


def _pack(repo: Path) -> Path:
    [pack] = (repo / CACHE_DIR).glob(f"*/{PACK}")
    return pack


def _helm_entries(repo: Path, change) -> int:
    """Rewrite every rendered chart in the pack with `change(raw) -> raw`; how many."""
    pack_path = _pack(repo)
    key, entries, *rest = msgspec.msgpack.decode(pack_path.read_bytes())  # rest: stats
    n = 0
    for k, raw in list(entries.items()):
        try:
            msgspec.msgpack.decode(raw, type=render_cache.RenderedEntry)
        except msgspec.ValidationError:
            continue
        entries[k] = change(raw)
        n += 1
    pack_path.write_bytes(msgspec.msgpack.encode([key, entries, *rest]))
    return n


def _bad_body(raw: bytes) -> bytes:
    entry = msgspec.msgpack.decode(raw, type=render_cache.RenderedEntry)
    entry.objects[0].body = [0, 1, 2, ["a"], [], [], b""]  # keys without values
    return msgspec.msgpack.encode(entry)


@pytest.mark.parametrize("damage", [lambda raw: raw[: len(raw) // 2],
                                    lambda raw: b"\xc1" + raw[1:],
                                    lambda raw: msgspec.msgpack.encode([1, 2, 3]),
                                    _bad_body],
                         ids=["truncated", "not msgpack", "another shape", "bad tree"])
def test_a_damaged_entry_is_a_miss(tmp_path, renders, damage):
    repo = _copy(PROD, tmp_path)
    expected = _check([repo])
    assert _helm_entries(repo, damage) == 1
    renders.clear()
    assert _check([repo]) == expected
    assert renders == ["charts/api"]
    renders.clear()
    assert _check([repo]) == expected  # written again
    assert renders == []


def test_tracing_cut_short_is_not_kept(tmp_path, renders, monkeypatch):
    from advisor.read.render import helm_trace

    monkeypatch.setattr(helm_trace, "MAX_TRACE_RENDERS", 0)
    repo = _copy(PROD, tmp_path)
    first = _check([repo])
    assert "values tracing stopped" in first
    renders.clear()
    assert _check([repo]) == first
    assert renders == ["charts/api"]


def test_a_chart_with_a_symlink_is_rendered_every_time(tmp_path, renders):
    repo = _copy(PROD, tmp_path)
    (repo / API / "templates" / "NOTES.link").symlink_to("NOTES.txt")
    first = _check([repo])
    renders.clear()
    assert _check([repo]) == first
    assert renders == ["charts/api"]


def test_relocated_positions_stay_packed_and_read_the_same():
    from advisor.read.render.helm_positions import relocate
    from advisor.read.yamlpos import load_all

    text = "a:\n  b: 1\n  c: [1, 2]\nd:\n- x: 1\n- 2\n"
    moved = next(load_all(text))
    relocate(moved, lambda line0: line0 + 10)
    plain = next(load_all(text))
    plain["a"].lc.data  # noqa: B018 (unpacked: read through `data`)

    def walk(a, b):
        assert a.lc.line == b.lc.line + 10 and a.lc.col == b.lc.col
        assert a.lc._data is None  # packed
        keys = list(a) if isinstance(a, dict) else range(len(a))
        for k in keys:
            if isinstance(a, dict):
                (kl, kc), (vl, vc) = a.lc.key(k), a.lc.value(k)
                (pkl, pkc), (pvl, pvc) = b.lc.key(k), b.lc.value(k)
                assert (kl, kc, vl, vc) == (pkl + 10, pkc, pvl + 10, pvc)
            else:
                (il, ic), (pl, pc) = a.lc.item(k), b.lc.item(k)
                assert (il, ic) == (pl + 10, pc)
            if isinstance(a[k], dict | list):
                walk(a[k], b[k])

    walk(moved, plain)


def test_a_symlink_out_of_the_root_is_refused_with_the_cache_too(tmp_path, renders):
    repo = _copy(PROD, tmp_path)
    (tmp_path / "secret.yaml").write_text("kind: Secret\n")
    (repo / API / "templates" / "stolen.yaml").symlink_to(tmp_path / "secret.yaml")
    for _ in range(2):
        report = _check([repo])
        assert "symlink points outside the scanned root" in report
    assert renders == []


# --- a chart at the repository root: the cache folder is inside it --------------------

FILES_LIST = """apiVersion: v1
kind: ConfigMap
metadata:
  name: files
data:
  list: |
{{- range $path, $_ := .Files.Glob "**" }}
    {{ $path }}
{{- end }}
"""


def _root_chart(tmp_path: Path) -> Path:
    """A repository that is a chart (no .helmignore), one of whose templates lists every
    file Helm loaded; with a .git folder, and a symlink to a folder Helm follows."""
    repo = tmp_path / "repo"
    (repo / "templates").mkdir(parents=True)
    (repo / "Chart.yaml").write_text("apiVersion: v2\nname: rootchart\nversion: 0.1.0\n")
    (repo / "values.yaml").write_text("x: 1\n")
    (repo / "templates" / "files.yaml").write_text(FILES_LIST)
    (repo / ".git").mkdir()
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (repo / "conf").mkdir()
    (repo / "conf" / "a.txt").write_text("a\n")
    (repo / "linked").symlink_to("conf")
    return repo


def _files_listed(repo: Path) -> tuple[list[str], list[str]]:
    """The files the chart's template listed; the notices of the render."""
    from advisor.read.fs import Root

    rendered = helm_mod.render_chart(Root(repo), ".")
    (files,) = [o for o in rendered.objects if o.name == "files"]
    return files.body["data"]["list"].split(), rendered.notices


def test_a_chart_at_the_root_does_not_load_the_cache_folder(tmp_path, monkeypatch):
    """Helm loads every file of the chart folder .helmignore does not name (checked with
    the engine: without the view, the list holds .pool-advisor-cache/...): the cache
    folder is not one of them, whether the cache is used or not; the rest is as Helm
    loads it (.git included, a symlinked folder followed)."""
    # a temp folder of this test's own: other runs on the machine make chart views too
    own_tmp = tmp_path / "tmp"
    own_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(own_tmp))
    repo = _root_chart(tmp_path)
    listed, notices = _files_listed(repo)  # no cache folder yet
    assert listed == [".git/HEAD", "conf/a.txt", "linked/a.txt"]
    # Helm's own word about the chart's symlink, for the chart's own folder
    assert any(f"path={repo}/linked resolved={repo}/conf" in n for n in notices), notices
    first = _check([repo])  # writes the cache folder
    assert (repo / CACHE_DIR / ".gitignore").is_file()
    assert _files_listed(repo) == (listed, notices)
    assert _check([repo], cache=False) == first
    (repo / CACHE_DIR / "extra.txt").write_text("x\n")  # the cache changing: same key
    assert _check([repo]) == first
    assert not list(Path(tempfile.gettempdir()).glob("pool-advisor-chart-*"))  # cleaned up


# --- a chart known by its files' stat signatures ---------------------------------------


@pytest.fixture
def chart_reads(monkeypatch) -> list[str]:
    """Files read to make a chart's key."""
    seen: list[str] = []
    real = render_cache.read_regular

    def counting(path, *a, **kw):
        seen.append(str(path))
        return real(path, *a, **kw)

    monkeypatch.setattr(render_cache, "read_regular", counting)
    return seen


def test_an_unchanged_chart_is_known_without_reading_its_files(tmp_path, renders,
                                                               chart_reads, monkeypatch):
    from advisor.read import cache as cache_mod

    monkeypatch.setattr(cache_mod, "RACY_NS", -10**15)  # every file old enough
    repo = _copy(PROD, tmp_path)
    first = _check([repo])  # renders, reads every file for the key, keeps its signature
    assert renders == ["charts/api"] and chart_reads
    renders.clear()
    chart_reads.clear()
    assert _check([repo]) == first
    assert renders == [] and chart_reads == []
    # Same size, same mtime, another content: the ctime moved, so it is read again.
    values = repo / API / "values-prod.yaml"
    st = values.stat()
    _replace(values, "replicaCount: 4", "replicaCount: 6")
    os.utime(values, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert values.stat().st_size == st.st_size and values.stat().st_mtime_ns == st.st_mtime_ns
    changed = _check([repo])
    assert renders == ["charts/api"] and str(values) in chart_reads
    assert changed != first and changed == _check([repo], cache=False)


def test_a_chart_written_in_this_clock_tick_is_read_again(tmp_path, renders, chart_reads):
    """Files younger than RACY_NS at the run's start (all of them: just copied) are not
    known by their signature: a warm run reads them to make the key."""
    repo = _copy(PROD, tmp_path)
    first = _check([repo])
    renders.clear()
    chart_reads.clear()
    assert _check([repo]) == first
    assert renders == [] and str(repo / API / "values-prod.yaml") in chart_reads


def _positions_shape(node):
    """A positioned tree as plain data: each node's line, column, key positions, children."""
    if isinstance(node, dict | list):
        lc = node.lc
        items = list(node.items()) if isinstance(node, dict) else list(enumerate(node))
        return (lc.line, lc.col, dict(lc.data), [(k, _positions_shape(v)) for k, v in items])
    return node


@pytest.mark.parametrize("text", [
    "a:\n  b: 1\n  c: [1, 2]\nd:\n- x: 1\n- 2\n- []\n- {}\n",
    "a: 1\na: 2\nb:\n  c: 3\n  c: 4\n",  # repeated keys: the last one's positions
    "base: &b\n  x: 1\n  y: 2\nuse:\n  <<: *b\n  z: 3\nlist: &l [1, 2]\nagain: *l\n",
    "k: |\n  text\n  more\nn: null\ne: ''\n",
])
def test_relocating_packed_positions_gives_what_unpacking_gives(text):
    """The packed fast path of relocate is the unpack-move-repack it replaces."""
    from advisor.read.render import helm_positions
    from advisor.read.yamlpos import load_all

    def slow(node, move, depth=0):
        helm_positions._relocate_data(node, move)
        for v in node.values() if isinstance(node, dict) else (
                node if isinstance(node, list) else []):
            slow(v, move, depth + 1)

    moves = {0: 7, 1: 9, 3: 2, 5: 40}
    fast, plain = next(load_all(text)), next(load_all(text))
    helm_positions.relocate(fast, lambda line0: moves.get(line0, line0 + 100))
    slow(plain, lambda line0: moves.get(line0, line0 + 100))
    assert _positions_shape(fast) == _positions_shape(plain)


@pytest.mark.parametrize("text", [
    "a:\n  b: 1\n  c: [1, 2]\nd:\n- x: 1\n- 2\n- []\n- {}\n",
    "a: 1\na: 2\nb:\n  c: 3\n  c: 4\n",
    "base: &b\n  x: 1\n  y: 2\nuse:\n  <<: *b\n  z: 3\nlist: &l [1, 2]\nagain: *l\n",
    "k: |\n  text\n  more\nn: null\ne: ''\n",
])
def test_relocating_by_a_dict_is_relocating_by_its_lookup(text):
    """A dict `move` (a line not in it stays) moves what the function looking it up does,
    packed or not: the mapping is unpacked first in one of the trees."""
    from advisor.read.render import helm_positions
    from advisor.read.yamlpos import load_all

    moves = {0: 7, 1: 9, 3: 2, 5: 40, 6: 70000}
    for unpack in (False, True):
        by_dict, by_function = next(load_all(text)), next(load_all(text))
        if unpack:
            by_dict.lc.data  # noqa: B018 (unpacked: moved through `data`)
            by_function.lc.data  # noqa: B018
        helm_positions.relocate(by_dict, moves)
        helm_positions.relocate(by_function, lambda line0: moves.get(line0, line0))
        assert _positions_shape(by_dict) == _positions_shape(by_function)
        assert _positions_shape(by_dict) != _positions_shape(next(load_all(text)))
