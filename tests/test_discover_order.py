"""One folder walked is already in discover's order (files of a folder by name, then its
subfolders by name): discover_paths does not sort it again, and must give what sorting
would."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from advisor.read.discover import _walk_order, discover_paths
from tests.cli_helpers import REPO

TREES = [p for base in ("fixtures", "tests/realworld", "tests/realworld_apps")
         for p in sorted((REPO / base).iterdir()) if p.is_dir()]


def _sorted_as_before(root: Path, found) -> dict[str, list[Path]]:
    files = {name: sorted(getattr(found, name), key=lambda p: _walk_order(root, p, is_file=True))
             for name in ("manifests", "pg_confs", "bouncer_inis", "other_files")}
    dirs = {name: sorted(getattr(found, name), key=lambda p: _walk_order(root, p, is_file=False))
            for name in ("helm_charts", "kustomize_all")}
    return {**files, **dirs}


def _as_found(found) -> dict[str, list[Path]]:
    return {name: getattr(found, name) for name in ("manifests", "pg_confs", "bouncer_inis",
                                                     "other_files", "helm_charts",
                                                     "kustomize_all")}


@pytest.mark.parametrize("tree", TREES, ids=lambda p: p.name)
def test_one_folder_walked_is_in_order(tree):
    found = discover_paths(tree, [tree])
    assert _as_found(found) == _sorted_as_before(found.root, found)


def test_a_generated_tree_and_a_subfolder_are_in_order(tmp_path):
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from scale import generate_manifests
    finally:
        sys.path.remove(str(REPO / "bench"))
    generate_manifests(tmp_path, 300)
    for names in (["b.yaml", "a.yaml", "A.yaml", "_x.yaml"], ["z", "a-b", "a", "a.b"]):
        for name in names:  # names whose order a careless walk would get wrong
            target = tmp_path / "team-000" / name
            if name.endswith(".yaml"):
                target.write_text("a: 1\n")
            else:
                target.mkdir()
                (target / "x.yaml").write_text("a: 1\n")
    for start in (tmp_path, tmp_path / "team-000"):
        found = discover_paths(tmp_path, [start])
        assert len(found.manifests) > 8
        assert _as_found(found) == _sorted_as_before(found.root, found)


def test_several_paths_are_sorted_into_the_walk_order(tmp_path):
    for name in ("b", "a"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "x.yaml").write_text("a: 1\n")
    found = discover_paths(tmp_path, [tmp_path / "b" / "x.yaml", tmp_path / "a"])
    assert [p.relative_to(tmp_path).as_posix() for p in found.manifests] == ["a/x.yaml",
                                                                              "b/x.yaml"]
