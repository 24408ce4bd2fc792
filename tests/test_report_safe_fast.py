"""report/safe.escape_control: its printable-ASCII shortcut gives what the pattern gives,
for every ASCII character and the unsafe ones beyond."""

from __future__ import annotations

import pytest

from advisor.report.safe import _UNSAFE, escape_control, safe_line


def _by_pattern(text: str) -> str:
    return _UNSAFE.sub(lambda m: escape_control(m.group()), text)


@pytest.mark.parametrize("code", [*range(0x80), 0x85, 0x9f, 0xa0, 0xe9, 0x2028, 0x2029,
                                  0x200e, 0x202e, 0x2066, 0xfeff, 0x1f600])
def test_each_character_as_the_pattern_escapes_it(code):
    text = f"pool {chr(code)} size"
    assert escape_control(text) == _by_pattern(text)
    if _UNSAFE.search(text):
        assert escape_control(text) != text  # escaped, never let through by the shortcut


def test_printable_ascii_and_tab_are_kept():
    printable = "".join(chr(c) for c in range(0x20, 0x7f))
    assert escape_control(printable) == printable
    assert escape_control("a\tb") == "a\tb"
    assert escape_control("a\x7fb\nc\x1b") == "a\\x7fb\\nc\\e"
    assert safe_line("::error::x") == ":\\:error::x"
