"""Render markdown as GitHub does (cmark-gfm, via PyPI cmarkgfm, with GitHub's table,
autolink, strikethrough and tagfilter extensions) and parse the HTML into a small tree,
so tests can check that tables and <details> come out as intended."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

import pytest

VOID = {"br", "hr", "img", "input", "meta", "link"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str | None] = field(default_factory=dict)
    children: list[Node | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def find_all(self, tag: str) -> list[Node]:
        out = []
        for c in self.children:
            if isinstance(c, Node):
                if c.tag == tag:
                    out.append(c)
                out.extend(c.find_all(tag))
        return out

    def child_tags(self) -> list[str]:
        return [c.tag for c in self.children if isinstance(c, Node)]


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("root")
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, dict(attrs))
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        assert self.stack[-1].tag == tag, f"unbalanced </{tag}> in {self.stack[-1].tag}"
        self.stack.pop()

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def to_html(markdown: str) -> str:
    cmarkgfm = pytest.importorskip("cmarkgfm")
    from cmarkgfm.cmark import Options

    # UNSAFE keeps raw HTML (<details>) the way GitHub's own sanitizer does; GitHub's
    # tagfilter extension still applies.
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


def parse(markdown: str) -> Node:
    builder = _TreeBuilder()
    builder.feed(to_html(markdown))
    builder.close()
    assert builder.stack == [builder.root], "unclosed tags"
    return builder.root


def table_rows(table: Node) -> list[list[str]]:
    return [[cell.text().strip() for cell in tr.children if isinstance(cell, Node)]
            for tr in table.find_all("tr")]
