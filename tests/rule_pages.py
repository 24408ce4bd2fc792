"""Reading rules/<CODE>-<name>.md pages: their Bad and Good examples as file trees."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = REPO / "rules"
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
_FILE = re.compile(r"^\s*(?:#|--|;|//)\s*file:\s*(\S+)\s*$")


@dataclass
class Page:
    path: Path
    code: str
    name: str
    bad: dict[str, str]
    good: dict[str, str]


def _section(text: str, title: str) -> str:
    m = re.search(rf"^## {title}\s*$(.*?)(?=^## |\Z)", text, re.S | re.M)
    return m.group(1) if m else ""


def _files(section: str) -> dict[str, str]:
    files: dict[str, str] = {}
    for block in _FENCE.findall(section):
        first = block.partition("\n")[0]
        m = _FILE.match(first)
        if m:
            # The `file:` line becomes a blank line: not every format has `#` comments
            # (SQL), and the lines below keep their numbers.
            files[m.group(1)] = "\n" + block.partition("\n")[2]
    return files


def load_pages() -> list[Page]:
    pages = []
    for path in sorted(PAGES.glob("PA*.md")):
        code, _, name = path.stem.partition("-")
        text = path.read_text(encoding="utf-8")
        pages.append(Page(path, code, name, _files(_section(text, "Bad")),
                          _files(_section(text, "Good"))))
    return pages


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
