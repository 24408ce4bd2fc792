"""A bound on what shlex is given.

CPython's shlex builds each word a character at a time (`self.token += nextchar`,
Lib/shlex.py read_token at 3.11), so a word's cost is quadratic in its length: an
entrypoint script holding one 2.6 MB word (an embedded base64 blob) kept a check running
for hours. A word that long is no command anyone reads for pool settings; callers treat
it as they treat an unclosed quote (shlex's ValueError): their plain-split fallback.
"""

from __future__ import annotations

from advisor.lazyregex import lazy

# a shell command's words are a few hundred characters; 16 KiB is 0.05 s in shlex
MAX_WORD = 16 * 1024
# a word: characters up to unquoted white space, quoted runs (and an unclosed one) kept
_WORD = lazy(r"""(?:[^\s"']+|"[^"]*"?|'[^']*'?)+""")  # compiled when a text is long


def bounded(text: str) -> str:
    """`text`, or ValueError when one of its words is longer than MAX_WORD."""
    if len(text) > MAX_WORD and any(m.end() - m.start() > MAX_WORD
                                    for m in _WORD.finditer(text)):
        raise ValueError(f"a shell word longer than {MAX_WORD} characters")
    return text
