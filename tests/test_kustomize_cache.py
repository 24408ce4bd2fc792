"""kustomize builds in the parse cache (advisor.read.render.kustomize_cache): a warm run
gives the --no-cache answer without running kustomize; a change of any file the build's
working copy is made of (an overlay, a base it names, a patch file, a Flux component)
builds again the kustomizations that read it, and only those; what is not kept (a
failed build, a folder holding a symlink) is built on every run."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.read.cache import CACHE_DIR, decode_tree, encode_tree
from advisor.read.fs import Root
from advisor.read.render import kustomize as kustomize_mod
from advisor.read.render.kustomize import Prepared
from advisor.read.render.kustomize_cache import build_key
from advisor.report.json import render
from advisor.rules import load_rules
from tests.cli_helpers import REPO

pytestmark = pytest.mark.skipif(not (shutil.which("kubectl") or shutil.which("kustomize")),
                                reason="kubectl (kustomize) not installed")

REGISTRY = load_rules()
OVERLAYS = REPO / "fixtures" / "kustomize-overlays"
FLUX = REPO / "tests" / "realworld" / "flux-substitute"


def _copy(fixture: Path, tmp_path: Path) -> Path:
    repo = tmp_path / fixture.name
    shutil.copytree(fixture, repo, ignore=shutil.ignore_patterns("__pycache__", CACHE_DIR))
    (repo / ".git").mkdir()
    return repo


def _check(repo: Path, *, cache: bool = True) -> str:
    result = run_check([str(repo)], CheckOptions(cache=cache), REGISTRY)
    return render(result, REGISTRY)


@pytest.fixture
def builds(monkeypatch) -> list[str]:
    """The kustomizations kustomize built (not taken from the cache) during a run, as
    shown, with the components added."""
    seen: list[str] = []
    real = kustomize_mod.build_sandboxed

    def counting(root, top, *args, components=None, **kw):
        seen.append(root.rel(top) + "".join(f"+{c}" for c in components or []))
        return real(root, top, *args, components=components, **kw)

    monkeypatch.setattr(kustomize_mod, "build_sandboxed", counting)
    return seen


@pytest.mark.parametrize("fixture", [OVERLAYS, FLUX], ids=lambda p: p.name)
def test_a_warm_run_answers_as_without_cache_and_runs_no_kustomize(tmp_path, fixture,
                                                                   builds):
    repo = _copy(fixture, tmp_path)
    uncached = _check(repo, cache=False)
    assert builds
    builds.clear()
    assert _check(repo) == uncached  # cold: built and kept
    assert builds
    builds.clear()
    assert _check(repo) == uncached  # warm
    assert builds == []


def test_a_change_to_a_base_builds_every_overlay_that_names_it_again(tmp_path, builds):
    repo = _copy(OVERLAYS, tmp_path)
    first = _check(repo)
    assert sorted(builds) == ["overlays/prod", "overlays/staging"]
    builds.clear()
    base = repo / "base" / "kustomization.yaml"  # the pool size both overlays keep
    base.write_text(base.read_text().replace("MAXIMUMPOOLSIZE=10", "MAXIMUMPOOLSIZE=30"))
    changed = _check(repo)
    assert sorted(builds) == ["overlays/prod", "overlays/staging"]
    assert changed != first and changed == _check(repo, cache=False)


def test_a_change_to_one_overlays_file_builds_that_overlay_only(tmp_path, builds):
    repo = _copy(OVERLAYS, tmp_path)
    first = _check(repo)
    builds.clear()
    hpa = repo / "overlays" / "prod" / "hpa.yaml"
    hpa.write_text(hpa.read_text().replace("maxReplicas: 10", "maxReplicas: 12"))
    changed = _check(repo)
    assert builds == ["overlays/prod"]
    assert changed != first and changed == _check(repo, cache=False)


def test_a_flux_component_change_builds_the_folder_with_it_again(tmp_path, builds):
    repo = _copy(FLUX, tmp_path)
    _check(repo)
    with_components = [b for b in builds if "+" in b]
    assert with_components  # the fixture builds a folder with its Flux components
    builds.clear()
    component = next(p for p in (repo / "kubernetes" / "components").rglob("*.yaml")
                     if p.name != "kustomization.yaml")
    component.write_text(component.read_text() + "\n# changed\n")
    changed = _check(repo)
    assert set(with_components) <= set(builds)
    assert changed == _check(repo, cache=False)


def test_a_failed_build_is_not_kept(tmp_path, builds):
    repo = _copy(OVERLAYS, tmp_path)
    kfile = repo / "overlays" / "staging" / "kustomization.yaml"
    kfile.write_text(kfile.read_text() + (  # a patch kustomize refuses: no such field
        "patches:\n  - target:\n      kind: Deployment\n      name: api\n"
        "    patch: |-\n      - op: replace\n        path: /spec/nothing/here\n"
        "        value: 1\n"))
    first = _check(repo)
    assert "overlays/staging" in builds and "kustomize failed" in first
    builds.clear()
    assert _check(repo) == first
    assert builds == ["overlays/staging"]  # prod from the cache, staging built again


def test_a_folder_holding_a_symlink_is_built_on_every_run(tmp_path, builds):
    repo = _copy(OVERLAYS, tmp_path)
    os.symlink("hpa.yaml", repo / "overlays" / "prod" / "hpa-link.yaml")
    first = _check(repo)
    builds.clear()
    assert _check(repo) == first
    assert builds == ["overlays/prod"]


def test_the_key_covers_every_input_of_the_build(tmp_path):
    repo = _copy(OVERLAYS, tmp_path)
    root = Root(repo)
    binary = tmp_path / "kustomize"
    binary.write_bytes(b"#!/bin/sh\n")
    prepared = Prepared([str(binary), "build"])
    top = repo / "overlays" / "prod"
    folders = [top, repo / "base"]

    def key(**change):
        args = {"folders": folders, "files": [], "components": [], "prepared": prepared}
        args.update(change)
        return build_key(root, top, args["folders"], args["files"], args["components"],
                         args["prepared"])

    first = key()
    assert first is not None and key() == first
    assert key(components=["../../components/x"]) != first
    assert key(prepared=Prepared([str(binary), "build"], prefix=["unshare", "-n"])) != first
    assert key(files=[repo / "overlays" / "staging" / "kustomization.yaml"]) != first
    (repo / "base" / "new.yaml").write_text("a: 1\n")  # in a folder the copy holds whole
    assert key() != first
    (repo / "base" / "new.yaml").unlink()
    assert key() == first
    (repo / CACHE_DIR).mkdir()  # the cache folder itself is no input
    (repo / CACHE_DIR / "x").write_text("x")
    assert key(folders=[repo]) == key(folders=[repo])
    before = key(folders=[repo])
    (repo / CACHE_DIR / "x").write_text("y")
    assert key(folders=[repo]) == before
    st = binary.stat()
    os.utime(binary, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # another binary
    assert key() != first
    assert key(prepared=Prepared([str(tmp_path / "absent"), "build"])) is None


def test_positions_a_renderer_rewrote_are_kept_packed_again():
    from advisor.read.yamlpos import load_all

    text = "a:\n  b: 1\n  c: [1, 2]\nd:\n- x: 1\n- 2\n"
    tree = next(load_all(text))
    for node in (tree, tree["a"], tree["a"]["c"], tree["d"]):
        node.lc.data  # noqa: B018 (unpacked, as kustomize placing leaves them)
    tree["a"].lc.data["b"] = [20, 4, 20, 7]  # moved by a renderer
    back = decode_tree(encode_tree(tree))
    assert back == tree
    assert back["a"].lc.key("b") == (20, 4) and back["a"].lc.value("b") == (20, 7)
    assert back["a"]["c"].lc.item(1) == tree["a"]["c"].lc.item(1)
    assert back["d"].lc.item(0) == tree["d"].lc.item(0)
    assert back.lc.key("d") == tree.lc.key("d")
    del tree["d"].lc.data[1]  # an item without a position: not kept
    with pytest.raises(TypeError):
        encode_tree(tree)


def test_an_unchanged_build_is_known_without_reading_its_files(tmp_path, builds,
                                                               monkeypatch):
    from advisor.read import cache as cache_mod
    from advisor.read.render import render_cache

    monkeypatch.setattr(cache_mod, "RACY_NS", -10**15)  # every file old enough
    read: list[str] = []
    real = render_cache.read_regular

    def counting(path, *a, **kw):
        read.append(str(path))
        return real(path, *a, **kw)

    monkeypatch.setattr(render_cache, "read_regular", counting)
    repo = _copy(OVERLAYS, tmp_path)
    first = _check(repo)  # built, every input read for the key, the signature kept
    assert builds and read
    builds.clear()
    read.clear()
    assert _check(repo) == first
    assert builds == [] and read == []
    # Same size, same mtime, another content: the ctime moved, so it is read again.
    hpa = repo / "overlays" / "prod" / "hpa.yaml"
    st = hpa.stat()
    hpa.write_text(hpa.read_text().replace("maxReplicas: 10", "maxReplicas: 12"))
    os.utime(hpa, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert hpa.stat().st_size == st.st_size and hpa.stat().st_mtime_ns == st.st_mtime_ns
    changed = _check(repo)
    assert builds == ["overlays/prod"] and str(hpa) in read
    assert changed != first and changed == _check(repo, cache=False)


def test_builds_side_by_side_keep_their_order(monkeypatch):
    import threading
    import time

    from advisor.engine import repository

    monkeypatch.setattr(repository.os, "sched_getaffinity", lambda _pid: {0, 1})
    threads: set[str] = set()

    class Pending:
        def __init__(self, i: int) -> None:
            self.i = i

        def finish(self):
            threads.add(threading.current_thread().name)
            time.sleep(0.02 * (5 - self.i))  # the first ends last
            if self.i in (1, 3):
                raise RuntimeError(f"build {self.i} broke")
            return self.i

    def job(i: int):
        def run(defer: bool = False):
            # run first in this thread: nothing kept but build 4's
            pending = Pending(i)
            if i == 4:
                return 4
            return pending if defer else pending.finish()
        return run

    problems: list = []
    got = repository._side_by_side(problems, [(f"k{i}", job(i)) for i in range(5)], "x")
    assert got == [0, None, 2, None, 4]
    assert [p.location.path for p in problems] == ["k1", "k3"]
    assert "build 1 broke" in problems[0].message
    assert len(threads) == 3  # the cores and one more, for the four builds not kept
    threads.clear()
    every = repository._side_by_side([], [(f"k{i}", job(4)) for i in range(3)], "x")
    assert every == [4, 4, 4] and threads == set()  # all kept: no build, no thread
    threads.clear()
    monkeypatch.setattr(repository.os, "sched_getaffinity", lambda _pid: {0})
    assert repository._side_by_side([], [("k0", job(0))], "x") == [0]
    assert threads == {threading.main_thread().name}  # one job: no thread
