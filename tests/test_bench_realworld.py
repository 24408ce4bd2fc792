"""bench/realworld.py counts what a scan found, per repository, in its own process."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def bench():
    spec = importlib.util.spec_from_file_location("realworld", REPO / "bench" / "realworld.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_counts_of_a_fixture_repository():
    row = bench().run_one(REPO / "tests" / "realworld" / "cnpg-samples", timeout=120)
    assert row["status"] == "ok"
    # cluster-example and its replicas; two Poolers; web and worker, both linked
    assert (row["servers"], row["standbys"], row["poolers"]) == (2, 1, 2)
    assert (row["clients"], row["linked"], row["unlinked"], row["unknown"]) == (2, 2, 0, 0)


def test_a_folder_of_checkouts_is_one_row_each(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "db.yaml").write_text(
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n  template:\n"
        "    spec:\n      containers: [{name: pg, image: 'postgres:16'}]\n")
    module = bench()
    repos = module.repositories([tmp_path])
    assert [r.name for r in repos] == ["a", "b"]
    rows = [module.run_one(r, timeout=120) for r in repos]
    assert [r["servers"] for r in rows] == [0, 1]
    assert "repository" in module.table(rows) and "b " in module.table(rows)
