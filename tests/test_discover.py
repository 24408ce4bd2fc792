"""Directory walk: what is read, what is skipped."""

from __future__ import annotations

from pathlib import Path

from advisor.read.discover import discover, discover_paths


def touch(root: Path, rel: str, text: str = "x: 1\n") -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)


def test_skips_vcs_vendor_gitignored_and_excluded(tmp_path):
    for rel in ("k8s/app.yaml", ".git/config.yaml", "node_modules/x/a.yaml",
                "build/out.yaml", "svc/tmp/gen.yaml", "svc/keep.yaml", "legacy/old.yaml",
                "db/postgresql.conf", "pgb/pgbouncer.ini", "chart/Chart.yaml",
                "chart/templates/d.yaml", "ov/kustomization.yaml", "ov/p.yaml"):
        touch(tmp_path, rel)
    touch(tmp_path, ".gitignore", "build/\n")
    touch(tmp_path, "svc/.gitignore", "tmp/\n")
    found = discover(tmp_path, excludes=["legacy/**"])
    manifests = sorted(found.rel(p) for p in found.manifests)
    assert manifests == ["k8s/app.yaml", "ov/p.yaml", "svc/keep.yaml"]
    assert [found.rel(p) for p in found.pg_confs] == ["db/postgresql.conf"]
    assert [found.rel(p) for p in found.bouncer_inis] == ["pgb/pgbouncer.ini"]
    assert [found.rel(p) for p in found.helm_charts] == ["chart"]
    assert [found.rel(p) for p in found.kustomize_dirs] == ["ov"]


def test_symlinked_folder_outside_root_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    touch(outside, "secret.yaml")
    root = tmp_path / "repo"
    touch(root, "k8s/app.yaml")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "k8s" / "link.yaml").symlink_to(outside / "secret.yaml")
    found = discover(root)
    assert [found.rel(p) for p in found.manifests] == ["k8s/app.yaml"]
    assert any("outside the scanned root" in p.message for p in found.problems)


def test_a_listed_name_joins_its_folder_as_slash_does():
    from advisor.read.discover import _child

    for folder in (Path("/"), Path("/tmp/a b"), Path("rel/dir"), Path(".")):
        for name in ("x.yaml", ".gitignore", "ünï", "a.b.c"):
            joined = _child(folder, name)
            assert joined == folder / name and str(joined) == str(folder / name)
            assert joined.parts == (folder / name).parts and joined.name == name


def test_hidden_folders_are_not_walked_unless_given(tmp_path):
    """A hidden folder holds tooling or retired manifests (home-ops repositories keep
    archived apps in .archive/, which Flux never deploys): not read, with a notice when it
    holds YAML (CI folders such as .github/ without one); given as a path, it is read."""
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
    for rel in ("k8s/app.yaml", ".archive/old/app.yaml", ".github/workflows/ci.yaml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(manifest)
    found = discover(tmp_path)
    assert [found.rel(p) for p in found.manifests] == ["k8s/app.yaml"]
    assert found.notices == [".archive/: hidden folder not read (tooling or retired manifests "
                             "are kept in one); pass it as a path to read it"]
    given = discover_paths(tmp_path, [tmp_path / ".archive"])
    assert [given.rel(p) for p in given.manifests] == [".archive/old/app.yaml"]


def test_the_names_walk_finds_what_the_full_walk_finds(tmp_path):
    """discover_names (the application folders looked for in the whole repository when
    narrower paths are checked) lists the wanted names discover_paths would, in its
    order: .gitignore and --exclude, hidden and skipped folders, a chart's inside, a
    symlink out of the root."""
    import os

    from advisor.read.discover import discover_names

    files = {
        ".gitignore": "build/\n*.bak\n",
        "services/api/Dockerfile": "FROM python:3.12\n",
        "services/api/requirements.txt": "psycopg\n",
        "services/api/build/pom.xml": "<project/>\n",
        "services/web/package.json": "{}\n",
        "services/web/package.json.bak": "{}\n",
        "services/web/compose.yaml": "services: {}\n",
        "services/web/node_modules/x/package.json": "{}\n",
        ".github/workflows/package.json": "{}\n",
        "charts/app/Chart.yaml": "name: app\n",
        "charts/app/files/pom.xml": "<project/>\n",
        "vendor-x/go.mod": "module x\n",
        "k8s/app.yaml": "kind: Deployment\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "go.mod").write_text("module y\n")
    os.symlink(outside / "go.mod", tmp_path / "services" / "go.mod")

    def wanted(name):
        return name in ("Dockerfile", "requirements.txt", "pom.xml", "package.json", "go.mod",
                        "compose.yaml")

    excludes = [("", ["vendor-x/"])]
    full = discover_paths(tmp_path, [tmp_path], excludes=excludes)
    names = discover_names(tmp_path, wanted, excludes=excludes)
    expected = {k: v for k, v in full.names.items() if wanted(k)}
    assert names.names == expected
    assert {k: [p.relative_to(tmp_path).as_posix() for p in v]
            for k, v in names.names.items()} == {
        "Dockerfile": ["services/api/Dockerfile"],
        "requirements.txt": ["services/api/requirements.txt"],
        "compose.yaml": ["services/web/compose.yaml"],
        "package.json": ["services/web/package.json"]}
    assert names.manifests == [tmp_path / "services/web/compose.yaml"]


def test_the_names_walk_of_a_test_folder_reads_only_the_given_project(tmp_path):
    """A test folder is walked for a path given inside it, and then only the project
    (its subfolder) that holds that path: `check fixtures/shop/k8s` finds
    fixtures/shop's Dockerfile, not another fixture's beside it; `check fixtures` all."""
    from advisor.read.discover import discover_names

    for name in ("fixtures/shop/k8s/app.yaml", "fixtures/shop/api/Dockerfile",
                 "fixtures/other/api/Dockerfile", "fixtures/Dockerfile",
                 "tests/unit/Dockerfile", "api/Dockerfile"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("FROM python:3.12\n")

    def found(*given):
        names = discover_names(tmp_path, lambda name: name == "Dockerfile",
                               given=[tmp_path / g for g in given])
        return sorted(p.relative_to(tmp_path).as_posix() for p in names.names["Dockerfile"])

    assert found("fixtures/shop/k8s") == [
        "api/Dockerfile", "fixtures/Dockerfile", "fixtures/shop/api/Dockerfile"]
    assert found("fixtures") == [
        "api/Dockerfile", "fixtures/Dockerfile", "fixtures/other/api/Dockerfile",
        "fixtures/shop/api/Dockerfile"]
    assert found("k8s") == ["api/Dockerfile"]


def test_simple_gitignore_lines_are_read_as_pathspec_reads_them():
    """`.venv/`, `/node_modules/`, `*.egg-info/`, `build`: matched without importing
    pathspec (a fifth of the demo's check in this repository), with pathspec as the
    oracle on random patterns and paths; anything more is pathspec's."""
    import random

    import pathspec

    from advisor.read.discover import _simple_match, _simple_patterns

    names = ["build", "dist", ".venv", "node_modules", "*.egg-info", "*.pyc", "a*", "?b",
             "x.y", "tmp*", ".env", "*"]
    parts = ["build", "dist", "src", "x.egg-info", "a.pyc", "app", "ab", "cb", "x.y", ".env",
             "tmpfile", "lib", ".venv", "node_modules", "main.py"]
    rnd = random.Random(17)
    for _ in range(400):
        lines = [("/" if rnd.random() < 0.3 else "") + rnd.choice(names)
                 + ("/" if rnd.random() < 0.4 else "") for _ in range(rnd.randint(1, 4))]
        simple = _simple_patterns(["# a comment", "", *lines])
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
        for _ in range(15):
            rel = "/".join(rnd.choice(parts) for _ in range(rnd.randint(1, 4)))
            rel += "/" if rnd.random() < 0.4 else ""
            assert _simple_match(simple, rel) == spec.match_file(rel), (lines, rel)
    for line in ("!keep.txt", "docs/*.md", "**/tmp", "[ab].txt", "a\\ b"):
        assert _simple_patterns(["build/", line]) is None


def test_a_kustomization_only_a_cycle_uses_is_built(tmp_path):
    """k lists ../o and o lists ../k: no leaf reaches them, and their files were dropped
    with a notice ('no findings', exit 0). The first of the cycle is built, so
    kustomize's refusal ('cycle detected') is a PA901 and its files are read as
    written (review s26 F5)."""
    touch(tmp_path, "k/kustomization.yaml", "resources: [pg.yaml, ../o]\n")
    touch(tmp_path, "k/pg.yaml", "kind: ConfigMap\n")
    touch(tmp_path, "o/kustomization.yaml", "resources: [../k]\n")
    touch(tmp_path, "top/kustomization.yaml", "resources: [../base]\n")
    touch(tmp_path, "base/kustomization.yaml", "resources: []\n")
    found = discover(tmp_path)
    assert sorted(found.rel(p) for p in found.kustomize_dirs) == ["k", "top"]


def test_a_kustomize_cycle_is_a_refusal_with_its_files_read(tmp_path):
    import pytest

    from advisor.read.render.kustomize import find_kustomize

    if find_kustomize() is None:
        pytest.skip("no kustomize")
    import subprocess
    import sys

    touch(tmp_path, "k/kustomization.yaml", "resources: [pg.yaml, ../o]\n")
    touch(tmp_path, "k/pg.yaml", (
        "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: db}\nspec:\n"
        "  template:\n    spec:\n      containers:\n      - name: pg\n"
        "        image: postgres:16\n"))
    touch(tmp_path, "o/kustomization.yaml", "resources: [../k]\n")
    done = subprocess.run([sys.executable, "-m", "advisor", "check", str(tmp_path),
                           "--no-cache"], capture_output=True, text=True, check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "PA901" in done.stdout and "cycle detected" in done.stdout
    assert "server db" in done.stdout
