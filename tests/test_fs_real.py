"""Root.real looks at each path below the root once per run, and still finds symlinks."""

from __future__ import annotations

import os
from pathlib import Path

from advisor.read.fs import Root


def test_each_folder_is_looked_at_once(tmp_path, monkeypatch):
    (tmp_path / "a" / "b").mkdir(parents=True)
    for name in ("x.yaml", "y.yaml", "z.yaml"):
        (tmp_path / "a" / "b" / name).write_text("k: 1\n")
    root = Root.of(tmp_path)
    looked: list[str] = []
    real_lstat = os.lstat

    def counting(path, *args, **kwargs):
        looked.append(os.fspath(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", counting)
    for name in ("x.yaml", "y.yaml", "z.yaml"):
        assert root.read_text(root.path / "a" / "b" / name) == "k: 1\n"
        assert root.rel(root.path / "a" / "b" / name) == f"a/b/{name}"
    below = str(root.path) + "/"  # (the root itself is resolved once, by realpath)
    folders = [p for p in looked if p.startswith(below) and not p.endswith(".yaml")]
    assert sorted(folders) == [str(root.path / "a"), str(root.path / "a" / "b")]
    files = sorted(p for p in looked if p.endswith(".yaml"))  # read and shown: once each
    assert files == [str(root.path / "a" / "b" / n) for n in ("x.yaml", "y.yaml", "z.yaml")]


def test_a_symlinked_folder_is_still_resolved(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "x.yaml").write_text("k: 1\n")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    root = Root.of(tmp_path)
    assert root.rel(root.path / "real" / "x.yaml") == "real/x.yaml"
    assert root.rel(root.path / "link" / "x.yaml") == "real/x.yaml"
    assert root.real(root.path / "link" / "x.yaml") == root.path / "real" / "x.yaml"


def test_regular_gives_a_regular_file_reached_without_a_symlink(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "x.yaml").write_text("k: 1\n")
    (tmp_path / "real" / "y.yaml").symlink_to(tmp_path / "real" / "x.yaml")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    os.mkfifo(tmp_path / "real" / "pipe.yaml")
    root = Root.of(tmp_path)
    shown, st = root.regular(root.path / "real" / "x.yaml")
    assert shown == "real/x.yaml"
    assert st.st_ino == os.stat(tmp_path / "real" / "x.yaml").st_ino
    assert root.regular(root.path / "real" / "y.yaml") is None  # a symlink
    assert root.regular(root.path / "link" / "x.yaml") is None  # in a linked folder
    assert root.regular(root.path / "real" / "pipe.yaml") is None  # never opened
    assert root.regular(root.path / "real" / "gone.yaml") is None
    assert root.regular(root.path / "real") is None  # a folder
    assert root.regular(root.path / "real" / ".." / "real" / "x.yaml") is None
    assert root.regular(tmp_path.parent / "elsewhere.yaml") is None  # outside the root


def test_the_walk_knows_linked_folders_from_the_listing(tmp_path, monkeypatch):
    """A subfolder that is a symlink is not entered, known from the folder listing
    (d_type) without an lstat per subfolder."""
    from advisor.read.fs import walk_entries

    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "x.yaml").write_text("k: 1\n")
    (tmp_path / "link").symlink_to(tmp_path / "a")
    looked: list[str] = []
    real_lstat = os.lstat

    def counting(path, *args, **kwargs):
        looked.append(os.fspath(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", counting)
    walked = {folder: (sorted(dirs), [e.name for e in files], links)
              for folder, dirs, files, links in walk_entries(tmp_path)}
    assert walked == {str(tmp_path): (["a", "link"], [], {"link"}),
                      str(tmp_path / "a"): (["b"], [], set()),
                      str(tmp_path / "a" / "b"): ([], ["x.yaml"], set())}
    assert looked == []


def test_folders_a_walk_entered_are_trusted_and_symlinked_ones_are_not(tmp_path,
                                                                       monkeypatch):
    """Root.trust_folders(Discovered.real_dirs): regular() gives what it gives without,
    and looks at no folder the walk entered; a symlinked folder is never among them."""
    from advisor.read.discover import discover_paths

    (tmp_path / "a" / "b").mkdir(parents=True)
    for name in ("x.yaml", "y.yaml"):
        (tmp_path / "a" / "b" / name).write_text("k: 1\n")
    (tmp_path / "a" / "z.yaml").symlink_to(tmp_path / "a" / "b" / "x.yaml")
    (tmp_path / "link").symlink_to(tmp_path / "a")
    found = discover_paths(tmp_path, [tmp_path])
    top = tmp_path.resolve()
    assert sorted(found.real_dirs) == [str(top), str(top / "a"), str(top / "a" / "b")]
    files = [*found.manifests, tmp_path / "link" / "b" / "x.yaml"]
    plain = [Root.of(tmp_path).regular(p) for p in files]
    root = Root.of(tmp_path)
    root.trust_folders([*found.real_dirs, str(tmp_path.parent)])  # outside: not trusted
    looked: list[str] = []
    real_lstat = os.lstat

    def counting(path, *args, **kwargs):
        looked.append(os.fspath(path))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", counting)
    trusted = [root.regular(p) for p in found.manifests]
    assert not [p for p in looked if not p.endswith(".yaml")]  # no folder looked at
    trusted.append(root.regular(files[-1]))
    assert str(top / "link") in looked  # a symlinked folder is: its file is not regular
    assert [t and t[0] for t in trusted] == [p and p[0] for p in plain]
    assert [t and t[1].st_ino for t in trusted] == [p and p[1].st_ino for p in plain]
    assert plain[-1] is None and [p is None for p in plain].count(True) == 2
    assert root.regular(tmp_path.parent / "elsewhere.yaml") is None


def test_real_takes_dotdot_after_a_real_folder_without_resolving(tmp_path, monkeypatch):
    """`../../base` (kustomize) below real folders is their parent, an lstat per new
    folder; after a symlink, resolve() decides, as the kernel would."""
    (tmp_path / "apps" / "web").mkdir(parents=True)
    (tmp_path / "base").mkdir()
    (tmp_path / "x" / "y").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "x" / "y")
    root = Root.of(tmp_path)
    assert root.real(root.path / "apps" / "web" / ".." / ".." / "base") == root.path / "base"
    assert root.real(root.path / "apps" / "." / "web") == root.path / "apps" / "web"
    # through the symlink: link/.. is x, not the root
    assert root.real(root.path / "link" / ".." / "z") == root.path / "x" / "z"
    assert root.real(root.path / ".." / "elsewhere") == tmp_path.parent / "elsewhere"
    calls: list[str] = []
    real_resolve = Path.resolve
    monkeypatch.setattr(Path, "resolve", lambda self, *a, **k: calls.append(str(self))
                        or real_resolve(self, *a, **k))
    assert root.real(root.path / "apps" / "web" / ".." / "web") == root.path / "apps" / "web"
    assert calls == []
