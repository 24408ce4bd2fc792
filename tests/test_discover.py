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
