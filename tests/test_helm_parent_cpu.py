"""The parent's cheaper paths through a Helm chart give what the slower ones gave (issue 19):
a template is read with one lstat (Root.read_below) when it is a plain file, else as
read_text reads it."""

from __future__ import annotations

import pytest

from advisor.read.fs import InputError, Root
from advisor.read.render.helm_positions import template_text


def _read_text_or_none(root: Root, display: str) -> str | None:
    """template_text before Root.read_below: read_text, None for what it refuses."""
    if "#" in display:
        return None
    try:
        return root.read_text(display)
    except InputError:
        return None


def test_a_plain_template_is_read_without_read_text(tmp_path, monkeypatch, reads):
    (tmp_path / "app" / "templates").mkdir(parents=True)
    (tmp_path / "app" / "templates" / "cm.yaml").write_text("kind: ConfigMap\n")
    root = Root.of(tmp_path)

    def refused(*_a, **_k):
        raise AssertionError("read_text")

    monkeypatch.setattr(Root, "read_text", refused)
    assert template_text(root, "app/templates/cm.yaml") == "kind: ConfigMap\n"
    assert list(reads.values()) == [1]


@pytest.mark.parametrize("display", [
    "app/templates/cm.yaml", "app/templates/link.yaml", "linked/templates/cm.yaml",
    "app/templates/bad.yaml", "app/templates/missing.yaml", "app/templates",
    "./app/templates/cm.yaml", "app/../app/templates/cm.yaml", "app/templates/bom.yaml",
    "app/charts/db.tgz#db/templates/x.yaml", "app/templates/outside.yaml",
    "app/templates/empty.yaml",
])
def test_template_text_is_what_read_text_gives(tmp_path, display):
    templates = tmp_path / "repo" / "app" / "templates"
    templates.mkdir(parents=True)
    (templates / "cm.yaml").write_text("kind: ConfigMap\nmetadata:\n  name: x\n")
    (templates / "link.yaml").symlink_to(templates / "cm.yaml")
    (tmp_path / "repo" / "linked").symlink_to(tmp_path / "repo" / "app")
    (templates / "bad.yaml").write_bytes(b"kind: \xff\n")
    (templates / "bom.yaml").write_bytes(b"\xef\xbb\xbfkind: ConfigMap\n")
    (templates / "empty.yaml").write_text("")
    (tmp_path / "elsewhere.yaml").write_text("kind: Secret\n")
    (templates / "outside.yaml").symlink_to(tmp_path / "elsewhere.yaml")
    root = Root.of(tmp_path / "repo")
    assert template_text(root, display) == _read_text_or_none(Root.of(tmp_path / "repo"),
                                                               display)
