"""Text from the repository (object and file names, values, messages) made safe to
print: it cannot add a line, move or recolour the terminal, or start a command of the
CI runner that reads the output.

GitHub's runner reads every line a step prints: a line that starts with `::` (after
blanks) is a workflow command (`::error::`, `::add-mask::`, `::stop-commands::`), and
the older `##[command]` form is recognised anywhere in a line. Terminals act on ESC and
C1 sequences; Python and many editors split lines on more than LF (VT, FF, FS..RS,
NEL, LINE/PARAGRAPH SEPARATOR). Bidirectional overrides reorder what a reader sees.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import msgspec

from advisor.model import escape_surrogates

if TYPE_CHECKING:
    from advisor.model import CheckResult

# Control characters and Unicode line/format breakers; TAB is kept (harmless, common).
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f"
                     "\u202a-\u202e\u2066-\u2069\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\x1b": "\\e"}


def escape_control(text: str) -> str:
    """Every unsafe character as a visible escape (\\n, \\r, \\e, \\x07, \\u2028)."""
    # Printable ASCII holds none of them: told in one pass of C (the pattern's class is
    # matched character by character, ~100 instructions each)
    if (text.isascii() and text.isprintable()) or not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(lambda m: _NAMED.get(m.group()) or (
        f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"),
        text)


def printable_result(result: CheckResult) -> CheckResult:
    """`result` with every text escape_surrogates'd, the same in every output format;
    itself when it has none (told by encoding it: msgspec refuses a lone surrogate).
    `root` is kept: reporters read the repository's files under it."""
    try:
        msgspec.json.encode(result)
    except UnicodeEncodeError:
        pass
    else:
        return result
    data = _escaped(msgspec.to_builtins(result))
    data["root"] = result.root
    return msgspec.convert(data, type(result))


def _escaped(value: Any) -> Any:
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, dict):
        return {_escaped(k): _escaped(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_escaped(v) for v in value]
    return value


def safe_line(line: str) -> str:
    """One output line that cannot inject: control characters escaped, and no runner
    command (`::name::` at its start, `##[` anywhere)."""
    line = escape_control(line)
    if line.lstrip().startswith("::"):
        line = line.replace("::", ":\\:", 1)
    return line.replace("##[", "##\\[")
