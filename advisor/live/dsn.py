"""DSNs as they may be printed or saved: passwords masked, and error messages about a
DSN scrubbed of every piece of its password (inspect and sweep print both)."""

from __future__ import annotations

import re

_PASSWORD_VALUE = re.compile(
    r"(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|'.*|[^\s&]+(?:\s+[^\s=&']+(?=\s|$))*)")


def mask_dsn(dsn: str) -> str:
    """The DSN as it may be printed or saved: any password replaced by ***, malformed
    ones too (an unclosed quote hides the rest, so do words after the password that are
    no `key=value`; `@` inside a URL's password, an upper-case scheme, leading blanks, a
    `password` query parameter)."""
    masked = _PASSWORD_VALUE.sub(r"\1***", dsn)
    # URL userinfo: everything between the user's `:` and the last `@`
    return re.sub(r"(?i)^(\s*[a-z][a-z0-9+.-]*://[^:/@\s]*:).*@", r"\1***@", masked)


def secret_parts(dsn: str) -> list[str]:
    """What mask_dsn hides, in pieces: error messages are scrubbed of each."""
    parts: list[str] = []
    for m in _PASSWORD_VALUE.finditer(dsn):
        parts += m.group(2).strip("'").split()
    m = re.match(r"(?i)^\s*[a-z][a-z0-9+.-]*://[^:/@\s]*:(.*)@", dsn)
    if m:
        parts += [m.group(1), *re.split(r"[@/\s%]", m.group(1))]
    return sorted({p for p in parts if len(p) >= 2}, key=len, reverse=True)


def scrub(message: str, dsn: str) -> str:
    """An error message about `dsn` without any piece of its password: libpq quotes
    the token it could not parse ('missing "=" after "b c"'), which may be one."""
    for part in secret_parts(dsn):
        message = message.replace(part, "***")
    if "connection info string" in message or "URI" in message or "percent" in message:
        message = re.sub(r'"[^"]*"', '"***"', message)
    return message
