"""pgbouncer.ini read exactly as PgBouncer 1.18 reads it.

The grammar is PgBouncer's own, emulated character by character from its source:
- libusual usual/cfparser.c (submodule commit b0bc727b of PgBouncer 1.18.0):
  parse_ini_file_internal: leading whitespace skipped; `%include <path>`; lines starting
  `#` or `;` are comments (nothing else is: `x = 20 ; note` has the value `20 ; note`);
  `[section]`; keys of [A-Za-z0-9_.-*] (case-sensitive), `=`, value to end of line with
  trailing whitespace trimmed and quotes kept; the first error stops loading.
  cf_load_file / fill_defaults: every [pgbouncer] header resets that section's keys to
  their defaults; "main section missing" if there is none. cf_set_int: strtol base 0
  of the whole value; cf_set_time_usec: a decimal number of seconds, no units;
  cf_set_lookup: case-insensitive names.
- PgBouncer src/main.c: the [pgbouncer] keys (advisor/facts/pgbouncer_params.py); sections
  pgbouncer, databases, users only.
- PgBouncer src/loader.c: parse_database / parse_user connection strings: `key=value`
  pairs separated by spaces, values in single quotes with '' for a quote; numbers by
  atoi (so `pool_size=abc` is 0 and no error); `*` is stored as the fallback and only
  parsed when a client asks for an unknown database; the name `pgbouncer` is reserved.
  1.18 spells the per-database reserve `reserve_pool` (`reserve_pool_size` from 1.24).

`%include` paths: PgBouncer opens them relative to its working directory (verified with
the real 1.18; docs agree). Reading a repository we resolve them against the scanned
root, then the including file's folder, and say which in a (non-fatal) problem when
that matters; a ConfigMap key of the same name (`siblings`) wins, as that is what a
mounted ConfigMap gives PgBouncer.

Bad input (unreadable, binary, non-UTF-8, include loops, includes outside the root)
becomes a ConfigProblem with file:line, never an exception.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from pathlib import Path, PurePosixPath

from msgspec import Struct, field

from advisor.facts.pgbouncer import (
    c_atoi,
    database_keys,
    lookup_names,
    params,
    parse_param_value,
    table_version,
    user_keys,
)
from advisor.model import (
    BouncerVersion,
    ConfigProblem,
    Location,
    Pooler,
    PoolerDatabase,
    PoolerUser,
    Record,
    Setting,
    Source,
    Term,
    TextPlaces,
)
from advisor.read.fs import InputError, Root
from advisor.read.suppress import scan_suppressions

MAX_INCLUDE = 10  # usual/cfparser.c
_C_SPACE = " \t\n\v\f\r"
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-*")
PROGRAM = "PgBouncer"


class PgBouncerIni(Record, kw_only=True):
    """What PgBouncer would load from one pgbouncer.ini (and its includes)."""

    path: str
    version: BouncerVersion
    settings: dict[str, Setting] = field(default_factory=dict)  # explicit [pgbouncer] values
    databases: list[PoolerDatabase] = field(default_factory=list)  # one per name, `*` too
    users: list[PoolerUser] = field(default_factory=list)
    problems: list[ConfigProblem] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    suppressions: dict[str, dict[int, list[str]]] = field(default_factory=dict)
    # The ERROR lines PgBouncer logs (with its own file:line) before
    # "FATAL cannot load config file"; empty when it would start.
    refusal: list[str] = field(default_factory=list)
    # Raw connection-string pairs of each [databases] entry (password left out).
    database_params: dict[str, dict[str, str]] = field(default_factory=dict)
    # The last line read in its [pgbouncer] section: where an absent setting is added.
    main_end: Source | None = None
    # The last line read in a [databases] section: where a missing entry is added (PA213).
    databases_end: Source | None = None
    # The `%include` lines not followed (outside the root, not in it, unreadable), or the
    # file itself when it cannot be read: what they hold is unknown, [databases] too.
    unread_includes: list[Location] = field(default_factory=list)

    @property
    def fatal(self) -> bool:
        return any(p.fatal for p in self.problems)

    # PgBouncer stopped loading where [databases] entries may follow (a syntax error, a
    # bad entry, a stop inside an include or before a later [databases] or %include)
    databases_cut: bool = False

    @property
    def complete(self) -> bool:
        """Every [databases] entry PgBouncer would load is read: no %include left unread,
        and no stop (PA209) before the last of them."""
        return not self.unread_includes and not self.databases_cut

    def database(self, name: str) -> PoolerDatabase | None:
        return next((d for d in self.databases if d.name == name), None)

    def user(self, name: str) -> PoolerUser | None:
        return next((u for u in self.users if u.name == name), None)


_VALUE_END = re.compile(r"\s|$")


class _File(Struct):
    text: str
    fn: str  # the name PgBouncer would print: as given on the command line / %include
    display: str  # shown to users
    line_offset: int
    folder: Path | None  # for resolving relative includes
    newlines: list[int] = field(default_factory=list)
    places: TextPlaces | None = None  # lines not at line_offset + n

    def __post_init__(self) -> None:
        self.newlines = [i for i, c in enumerate(self.text) if c == "\n"]

    def line(self, pos: int) -> int:
        """1-based line of text position `pos` (newlines before it + 1)."""
        return bisect_right(self.newlines, pos - 1) + 1

    def user_line(self, pos: int) -> int:
        return self.line(pos) + self.line_offset

    def location(self, pos: int) -> Location:
        placed = self.places.lines.get(self.line(pos)) if self.places is not None else None
        if placed is not None:
            return Location(path=placed.path, line=placed.line)
        flat = self.places.flat if self.places is not None else None
        if flat is not None:
            return Location(path=flat.path, line=flat.line)
        return Location(path=self.display, line=self.user_line(pos))

    def source(self, pos: int, key: str) -> Source:
        if self.places is not None:
            traced = self._traced(pos, key)
            if traced is not None:
                return traced
            placed = self.places.lines.get(self.line(pos))
            if placed is not None:  # the chart file line a helper's text is written at
                return Source(path=placed.path, line=placed.line, key=key)
            flat = self.places.flat
            if flat is not None:  # the text is not in the file: its key's line
                return Source(path=flat.path, line=flat.line, key=f"{flat.key}: {key}")
        return Source(path=self.display, line=self.user_line(pos), key=key)

    def written_source(self, pos: int, key: str) -> Source | None:
        """source(), when that is this line as the file holds it (where a line can be
        added after it); None for a traced values line or the key line of a text not
        in the file."""
        if self.places is not None and (self.places.flat is not None
                                        or self.line(pos) in self.places.traced
                                        or self.line(pos) in self.places.lines):
            return None
        return self.source(pos, key)

    def _traced(self, pos: int, key: str) -> Source | None:
        """The values key traced into the value of `key` on the line at `pos`."""
        assert self.places is not None
        n = self.line(pos)
        hits = self.places.traced.get(n)
        if not hits:
            return None
        start = self.newlines[n - 2] + 1 if n > 1 else 0
        end = self.newlines[n - 1] if n - 1 < len(self.newlines) else len(self.text)
        line = self.text[start:end]
        m = re.search(rf"(?<![\w.]){re.escape(key)}\s*=\s*", line)
        if m is None:
            return None
        stop = _VALUE_END.search(line, m.end())
        value_end = stop.start() if stop is not None else len(line)
        return next((source for column, source in hits if m.end() <= column <= value_end),
                    None)


# A [databases] header or an %include line: after a stop, entries PgBouncer would read
_MORE_DATABASES = re.compile(r"^[ \t\r\f\v]*(?:\[databases\]|%include[ \t])", re.M)
# A connection-string value that is a template placeholder (envsubst's ${VAR}, Python's
# %(VAR)s, a Helm/Jinja {{ ... }}): the file is rendered before PgBouncer reads it (audit
# 48: AI4Bharat/Chat-Arena-Backend's pgbouncer/Dockerfile copies pgbouncer.ini as
# pgbouncer.ini.template and its entrypoint.sh runs envsubst; `port=${DB_PORT}` was a PA209
# error whose refusal also dropped `pool_mode = transaction` below it). Such a value is
# unknown, said once, not a refusal.
_PLACEHOLDER = re.compile(r"\$\{?[A-Za-z_]\w*\}?|%\([A-Za-z_]\w*\)s|\{\{[^}]*\}\}")


class _Stop(Exception):
    """PgBouncer stops loading here (it refuses to start)."""


class _Loader:
    def __init__(
        self,
        root: Root,
        version: BouncerVersion,
        siblings: dict[str, tuple[str, int]],
        sibling_display: str,
    ) -> None:
        self.root = root
        self.version = version
        self.params = params(version)
        self.db_keys = database_keys(version)
        self.user_keys = user_keys(version)
        self.siblings = siblings
        self.sibling_display = sibling_display
        self.section: str | None = None
        self.got_main = False
        self.settings: dict[str, Setting] = {}
        self.databases: dict[str, PoolerDatabase] = {}
        self.database_params: dict[str, dict[str, str]] = {}
        self.users: dict[str, PoolerUser] = {}
        self.problems: list[ConfigProblem] = []
        self.files: list[str] = []
        self.suppressions: dict[str, dict[int, list[str]]] = {}
        self.unread: list[Location] = []
        self.databases_cut = False  # a stop left [databases] entries unread
        self.refusal: list[str] = []
        self.main_end: Source | None = None  # last line of the [pgbouncer] section
        self.databases_end: Source | None = None  # last line of a [databases] section

    # --- problems --------------------------------------------------------------------

    def note(self, location: Location, message: str) -> None:
        self.problems.append(ConfigProblem(location=location, message=message, program=PROGRAM))

    def refuse(self, location: Location, message: str, log: list[str],
               databases_read: bool = False) -> None:
        """PgBouncer stops loading here. `databases_read`: no [databases] entry is left
        unread by the stop (the file is refused, but fixed at this line it serves what
        was read: PA213 may still say which databases it lacks)."""
        self.problems.append(
            ConfigProblem(location=location, message=message, fatal=True, program=PROGRAM)
        )
        self.refusal += log
        self.databases_cut = self.databases_cut or not databases_read
        raise _Stop

    # --- the ini grammar (usual/cfparser.c parse_ini_file_internal) ---------------------

    def add_file(self, f: _File) -> None:
        if f.display not in self.files:
            self.files.append(f.display)
        found = scan_suppressions(f.text, f.line_offset)
        if found:
            self.suppressions.setdefault(f.display, {}).update(found)

    def parse(self, f: _File, inclevel: int) -> None:
        self.add_file(f)
        s = f.text
        n = len(s)
        p = 0
        while p < n:
            while p < n and s[p] in _C_SPACE:
                p += 1
            if s.startswith("%include", p) and p + 8 < n and s[p + 8] in " \t":
                p = self.include(f, p, inclevel)
                continue
            if p < n and s[p] in "#;":
                while p < n and s[p] != "\n":
                    p += 1
                continue
            if p < n and s[p] == "[":
                start = p
                p += 1
                name_at = p
                while p < n and s[p] not in "]\n":
                    p += 1
                if p >= n or s[p] != "]":
                    self.syntax_error(f, p, start)
                self.section_start(f, s[name_at:p], p, start)
                p += 1
                continue
            if p >= n:
                break
            key_at = p
            while p < n and s[p] in _KEY_CHARS:
                p += 1
            key = s[key_at:p]
            while p < n and s[p] in " \t":
                p += 1
            if p >= n or s[p] != "=":
                self.syntax_error(f, p, key_at)
            p += 1
            while p < n and s[p] in " \t":
                p += 1
            val_at = p
            while p < n and s[p] != "\n":
                p += 1
            val_end = p
            while val_end > val_at and s[val_end - 1] in _C_SPACE:
                val_end -= 1
            while p < n and s[p] in _C_SPACE:
                p += 1
            value = s[val_at:val_end]
            detail = self.set_value(f, key, value, key_at)
            if detail is not None:
                # count_lines() runs while val[vlen] is NUL: a newline right after the
                # value is not counted, the blank lines skipped after it are.
                reported = f.line(p) - (1 if val_end < n and s[val_end] == "\n" else 0)
                main = f'invalid value "{value}" for parameter {key}'
                log = [d for d in detail if d]
                log.append(f"{main} in configuration ({f.fn}:{reported})")
                shown = [d for d in detail if d and d != "fill_defaults fail"]
                message = main + (f" ({'; '.join(shown)})" if shown else "")
                self.refuse(f.location(key_at), message, log,
                            databases_read=self.section == "pgbouncer" and inclevel == 0
                            and not _MORE_DATABASES.search(s, p))

    def syntax_error(self, f: _File, p: int, at: int) -> None:
        # A byte-order mark (a Windows editor's) is no key character to libusual's
        # cfparser.c: PgBouncer 1.18 stops at line 1 (audit 10a D9, run here)
        bom = f.text.startswith("\ufeff", at)
        self.refuse(
            f.location(at),
            "syntax error in configuration" + (
                ": the file starts with a UTF-8 byte-order mark (BOM), which PgBouncer "
                "reads as part of the first line; save it without one" if bom else ""),
            [f"syntax error in configuration ({f.fn}:{f.line(p)}), stopping loading"],
        )

    def section_start(self, f: _File, name: str, p: int, at: int) -> None:
        if name not in ("pgbouncer", "databases", "users"):
            self.refuse(
                f.location(at),
                f'invalid section "{name}"',
                [
                    "fill_defaults fail",
                    f'invalid section "{name}" in configuration ({f.fn}:{f.line(p)})',
                ],
            )
        self.section = name
        if name == "databases":
            self.databases_end = f.written_source(at, "[databases]")
        if name != "pgbouncer":
            return
        self.got_main = True
        self.main_end = f.written_source(at, "[pgbouncer]")
        # fill_defaults: keys with a default go back to it; keys without one keep theirs.
        lost = [k for k in self.settings if self.params.get(k, ("", None, False))[1] is not None]
        if lost:
            for k in lost:
                del self.settings[k]
            self.note(
                f.location(at),
                "this [pgbouncer] header resets the settings made above it to their "
                f"defaults: {', '.join(lost)}",
            )

    # --- values ----------------------------------------------------------------------

    def set_value(self, f: _File, key: str, value: str, at: int) -> list[str] | None:
        """None when accepted, else the detail lines PgBouncer logs before refusing."""
        if self.section is None:
            return [f"load_init_file: value without section: {key}"]
        if self.section == "pgbouncer":
            spec = self.params.get(key)
            if spec is None:
                return [f"unknown parameter: pgbouncer/{key}"]
            ok, parsed, unit = parse_param_value(spec[0], value, self.version)
            if not ok:
                return []
            self.settings[key] = Setting(
                name=key, raw=value, value=parsed, unit=unit, source=f.source(at, key)
            )
            self.main_end = f.written_source(at, key)
            return None
        if self.section == "databases":
            return self.set_database(f, key, value, at)
        return self.set_user(f, key, value, at)

    def set_database(self, f: _File, name: str, connstr: str, at: int) -> list[str] | None:
        if name == "pgbouncer":
            return [f'database name "{name}" is reserved']
        pairs, error = parse_connstr(connstr)
        is_auto = name == "*"
        if error:
            if is_auto:
                # set_autodb stores the string; it is parsed when first used.
                self.note(
                    f.location(at),
                    "the * fallback is parsed when a client first asks for an unknown "
                    "database; PgBouncer will then fail: syntax error in connection string",
                )
                pairs = []
            else:
                return ["syntax error in connection string"]
        fields: dict[str, object] = {}
        raw: dict[str, str] = {}
        placeholders: list[str] = []
        for k, v in pairs:
            problem = None
            if k in self.db_keys and _PLACEHOLDER.fullmatch(v.strip()):
                placeholders.append(f"{k}={v}")
                continue
            if k not in self.db_keys:
                problem = f"unrecognized connection parameter: {k}"
            elif k == "port" and c_atoi(v) == 0:
                problem = f"invalid port: {v}"
            elif k == "pool_mode":
                mode = _lookup(lookup_names("lookup:pool_mode_map", self.version), v)
                if mode is None:
                    problem = f"invalid pool mode: {v}"
                else:
                    fields["pool_mode"] = Setting(
                        name="pool_mode", raw=v, value=mode, source=f.source(at, "pool_mode")
                    )
            if problem is not None:
                if is_auto:
                    self.note(
                        f.location(at),
                        "the * fallback is parsed when a client first asks for an unknown "
                        f"database; PgBouncer will then fail: {problem}",
                    )
                    continue
                return [problem]
            if k != "password":
                raw[k] = v
            if k == "port":
                fields["port"] = c_atoi(v)
            elif k in ("dbname", "host", "user"):
                fields[k] = v
            elif k in ("auth_user", "auth_dbname"):
                fields[k] = Setting(name=k, raw=v, value=v, source=f.source(at, k))
            elif k in _DB_TERMS:
                attr = _DB_TERMS[k]
                fields[attr] = Term(
                    label=f"{k} of [databases] {name}",
                    value=float(c_atoi(v)),
                    source=f.source(at, k),
                )
        if placeholders:
            self.note(f.location(at), f"[databases] {name}: {', '.join(placeholders)}: template "
                      "placeholders, so the file is rendered (envsubst, a template engine) "
                      "before PgBouncer reads it; what they stand for is not known")
        old = self.databases.pop(name, None)
        if old is not None and old.user is not None and "user" not in fields and not is_auto:
            fields["user"] = old.user
            self.note(
                f.location(at),
                f"[databases] {name} is defined again without user=: PgBouncer keeps the "
                f"forced user {old.user} (losing forced user not supported)",
            )
        if old is not None:
            self.note(
                f.location(at),
                f"[databases] {name} is defined again; this entry replaces the one at "
                f"{old.location.label()}",
            )
        self.databases[name] = PoolerDatabase(name=name, location=f.location(at), **fields)
        self.database_params[name] = raw
        self.databases_end = f.written_source(at, name)
        return None

    def set_user(self, f: _File, name: str, connstr: str, at: int) -> list[str] | None:
        pairs, error = parse_connstr(connstr)
        if error:
            return ["syntax error in user settings"]
        fields: dict[str, object] = {}
        for k, v in pairs:
            if k not in self.user_keys:
                return [f"unrecognized user parameter: {k}"]
            if k == "pool_mode":
                mode = _lookup(lookup_names("lookup:pool_mode_map", self.version), v)
                if mode is None:
                    return [f"invalid pool mode: {v}"]
                fields["pool_mode"] = Setting(
                    name="pool_mode", raw=v, value=mode, source=f.source(at, "pool_mode")
                )
            elif k in ("max_user_connections", "pool_size"):
                fields[k] = Term(
                    label=f"{k} of [users] {name}",
                    value=float(c_atoi(v)),
                    source=f.source(at, k),
                )
        old = self.users.pop(name, None)
        if old is not None:
            self.note(
                f.location(at),
                f"[users] {name} is defined again; this entry replaces the one at "
                f"{old.location.label()}",
            )
        self.users[name] = PoolerUser(name=name, location=f.location(at), **fields)
        return None

    # --- %include ----------------------------------------------------------------------

    def include(self, f: _File, p: int, inclevel: int) -> int:
        s = f.text
        n = len(s)
        at = p
        if inclevel >= MAX_INCLUDE:
            self.refuse(
                f.location(at),
                f"include nesting level too deep (more than {MAX_INCLUDE}), stopping loading",
                [
                    f"include nesting level too deep ({f.fn}:{f.line(p)}), stopping loading",
                ],
            )
        p += 8
        while p < n and s[p] in " \t":
            p += 1
        val_at = p
        while p < n and s[p] != "\n":
            p += 1
        val_end = p
        while val_end > val_at and s[val_end - 1] in _C_SPACE:
            val_end -= 1
        name = s[val_at:val_end]
        chained = f"error processing include file in configuration ({f.fn}:{f.line(p)}), " + (
            "stopping loading"
        )
        target = self.resolve_include(f, name, at, chained)
        if target is not None:
            try:
                self.parse(target, inclevel + 1)
            except _Stop:
                self.refusal.append(chained)
                raise
        return p

    def resolve_include(self, f: _File, name: str, at: int, chained: str) -> _File | None:
        where = f.location(at)
        base = PurePosixPath(name).name
        for key in (name, base):
            if key in self.siblings:
                text, offset = self.siblings[key]
                if key != name:
                    self.note(
                        where,
                        f"%include {name}: read from the ConfigMap key {key} of the same "
                        "file (as mounted beside pgbouncer.ini)",
                    )
                return _File(text, name, self.sibling_display, offset, f.folder)
        path = Path(name)
        candidates: list[tuple[Path, str]] = []
        if path.is_absolute():
            candidates.append((path, "absolute"))
            if f.folder is not None:
                # Deployments mount the repo's file at the absolute path; try the file of
                # that name beside the including one, and say so.
                candidates.append(
                    (f.folder / base, "the file of that name beside the including file")
                )
        else:
            candidates.append((self.root.path / path, "the scanned root"))
            if f.folder is not None and f.folder != self.root.path:
                candidates.append((f.folder / path, "the including file's folder"))
        outside: list[str] = []
        found: list[tuple[Path, str]] = []
        for cand, how in candidates:
            try:
                real = self.root.resolve(cand)
            except InputError:
                outside.append(str(cand))
                continue
            if real.is_file():
                found.append((real, how))
        if not found:
            if outside and len(outside) == len(candidates):
                self.note(
                    where,
                    f"%include {name}: outside the scanned root {self.root.path}; not "
                    "followed, the settings in it are unknown",
                )
                self.unread.append(where)
                return None
            if path.is_absolute():
                self.note(
                    where,
                    f"%include {name}: not in the scanned root; not followed, the settings "
                    "in it are unknown",
                )
                self.unread.append(where)
                return None
            self.refuse(
                where,
                f'could not load file "{name}": No such file or directory; error processing '
                "include file (relative paths are opened from PgBouncer's working directory, "
                "taken to be the scanned root)",
                [f'could not load file "{name}": No such file or directory', chained],
            )
        real, how = found[0]
        if how == "the including file's folder":
            self.note(
                where,
                f"%include {name}: not found under the scanned root, read from {how}; "
                "PgBouncer opens relative paths from its working directory",
            )
        elif how == "the file of that name beside the including file":
            self.note(
                where,
                f"%include {name}: read {self.root.rel(real)}, {how}, assuming it is "
                f"mounted at {name}",
            )
        elif len(found) > 1 and found[0][0] != found[1][0]:
            self.note(
                where,
                f"%include {name}: ambiguous, both {self.root.rel(found[0][0])} and "
                f"{self.root.rel(found[1][0])} exist; read the first (PgBouncer opens "
                "relative paths from its working directory)",
            )
        try:
            text = self.root.read_text(real, bom=True)
        except InputError as exc:
            self.note(where, f"%include {name}: cannot read {exc.label()}: {exc.message}")
            self.unread.append(where)
            return None
        return _File(_c_string(text), name, self.root.rel(real), 0, real.parent)


_DB_TERMS = {
    "pool_size": "pool_size",
    "min_pool_size": "min_pool_size",
    "reserve_pool": "reserve_pool_size",
    "reserve_pool_size": "reserve_pool_size",
    "max_db_connections": "max_db_connections",
}


def _lookup(names: tuple[str, ...], value: str) -> str | None:
    return next((n for n in names if n.lower() == value.lower()), None)


def _c_string(text: str) -> str:
    """PgBouncer reads the file as a C string: a NUL ends it."""
    return text.split("\x00", 1)[0]


def parse_connstr(connstr: str) -> tuple[list[tuple[str, str]], bool]:
    """src/loader.c cstr_get_pair loop: ([(key, value)], syntax_error)."""
    s = connstr
    n = len(s)
    p = 0
    pairs: list[tuple[str, str]] = []

    def skip_ws(i: int) -> int:
        while i < n and s[i] == " ":  # cstr_skip_ws: spaces only
            i += 1
        return i

    while p < n:
        p = skip_ws(p)
        if p >= n:
            break
        key_at = p
        while p < n and s[p] not in "= ":
            p += 1
        key = s[key_at:p]
        p = skip_ws(p)
        if p >= n or s[p] != "=" or not key:
            return pairs, True
        p = skip_ws(p + 1)
        if p < n and s[p] == "'":
            p += 1
            out = []
            while True:
                if p >= n:
                    return pairs, True
                if s[p] == "'":
                    if p + 1 < n and s[p + 1] == "'":
                        p += 1
                    else:
                        break
                out.append(s[p])
                p += 1
            value = "".join(out)
            p += 1  # after the closing quote
        else:
            val_at = p
            while p < n and s[p] != " ":
                p += 1
            value = s[val_at:p]
        if p < n:
            p += 1  # "if not EOL, cut value": the character after the value is dropped
        if not value:
            return pairs, True
        pairs.append((key, value))
        p = skip_ws(p)
    return pairs, False


def read_pgbouncer_ini(
    root: Root,
    path: str | Path,
    *,
    text: str | None = None,
    line_offset: int = 0,
    display_path: str | None = None,
    siblings: dict[str, tuple[str, int]] | None = None,
    version: BouncerVersion | None = None,
    places: TextPlaces | None = None,
) -> PgBouncerIni:
    """Read pgbouncer.ini at `path` (or `text`, e.g. a ConfigMap value whose first line is
    line `line_offset + 1` of `display_path`). `siblings` maps the other keys of the same
    ConfigMap to (text, line_offset) so `%include` of them can be followed. `places`:
    where lines of `text` are cited instead (ConfigMapData.text_places)."""
    version = version or BouncerVersion()
    p = Path(path)
    shown = display_path or root.rel(p if p.is_absolute() else root.path / p)
    result = PgBouncerIni(path=shown, version=version)
    folder: Path | None
    if text is None:
        try:
            real = root.resolve(p)
            text = root.read_text(real, bom=True)  # PgBouncer refuses a file that has one
        except InputError as exc:
            result.problems.append(
                ConfigProblem(
                    location=Location(path=exc.path, line=exc.line),
                    message=exc.message,
                    program="pool-advisor",
                )
            )
            result.unread_includes.append(Location(path=exc.path, line=exc.line))
            return result
        folder = real.parent
    else:
        folder = (p if p.is_absolute() else root.path / p).parent
    loader = _Loader(root, version, siblings or {}, shown)
    used = table_version(version)
    if used != (version.major, version.minor):
        loader.note(
            Location(path=shown, line=1 + line_offset),
            f"PgBouncer {version.text} ({version.source.label()}): read with the parameter "
            f"tables of {used[0]}.{used[1]}, the nearest version known",
        )
    main = _File(_c_string(text), display_path or str(path), shown, line_offset, folder,
                 places=places)
    if len(main.text) != len(text):
        loader.note(
            main.location(len(main.text)),
            "NUL byte: PgBouncer stops reading the file here",
        )
    try:
        loader.parse(main, 0)
        if not loader.got_main:
            loader.refuse(
                Location(path=shown, line=1 + line_offset),
                "load_init_file: main section missing from config file",
                ["load_init_file: main section missing from config file"],
                databases_read=True,
            )
    except _Stop:
        pass
    result.settings = loader.settings
    result.databases = list(loader.databases.values())
    result.users = list(loader.users.values())
    result.problems += loader.problems
    result.files = loader.files
    result.suppressions = loader.suppressions
    result.refusal = loader.refusal
    result.database_params = loader.database_params
    result.main_end = loader.main_end
    result.databases_end = loader.databases_end
    result.unread_includes = loader.unread
    result.databases_cut = loader.databases_cut
    return result


def pooler_from_ini(
    ini: PgBouncerIni,
    *,
    id: str,
    name: str,
    replicas: Term | None = None,
    location: Location | None = None,
    namespace: str | None = None,
) -> Pooler:
    """A Pooler for the arithmetic (advisor.facts.pgbouncer); topology may build its own."""
    return Pooler(
        id=id,
        name=name,
        namespace=namespace,
        replicas=replicas
        or Term(label="replicas", value=1, source=Source.default_of("one PgBouncer process")),
        version=ini.version,
        settings=dict(ini.settings),
        databases=list(ini.databases),
        users=list(ini.users),
        location=location or Location(path=ini.path, line=None),
        suppressed=[],
        main_end=ini.main_end,
        databases_end=ini.databases_end,
    )


__all__ = ["PgBouncerIni", "parse_connstr", "pooler_from_ini", "read_pgbouncer_ini"]
