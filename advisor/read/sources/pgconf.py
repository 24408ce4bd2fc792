"""postgresql.conf, read exactly as PostgreSQL 15 reads it.

Grammar and include handling follow src/backend/utils/misc/guc-file.l (the flex rules,
ParseConfigFp, ParseConfigFile, ParseConfigDirectory, GUC_scanstr) and the checks of
ProcessConfigFileInternal in three phases, as the server runs them:

1. parse the file and its includes, then postgresql.auto.conf (only if 1 succeeded);
   syntax and include errors stop here;
2. names: an unknown name without a dot is an error; of duplicate entries only the
   last (same spelling) is kept;
3. values, in file order: each is checked like set_config_option; the last one wins.

Names and values are checked against the pg_settings of the server's own major (the
tables generated from real servers of 10 to 18, advisor.facts.pg_guc); an unknown name is what
PostgreSQL says of it, with a notice when another major has it (removed in 16, added in
17). A version without a table (9.6, or after 18) uses the nearest one's and an unknown
name is a non-fatal notice.

Problems carry PostgreSQL's own wording (with the file named by its display path) and
are `fatal` when the server would refuse to start. Unlike the server, the reader keeps
the settings that did parse, so one typo does not hide the rest of the file.
tests/test_pgconf_oracle.py compares all of this with `postgres -C`.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from msgspec import Struct, field
from msgspec.structs import replace

from advisor.facts import pg_guc as pgguc
from advisor.model import ConfigProblem, Location, Record, Setting, Source, TextPlaces
from advisor.read.fs import InputError, Root
from advisor.read.suppress import scan_suppressions

PROGRAM = "PostgreSQL"
AUTO_CONF = "postgresql.auto.conf"
MAX_DEPTH = 10  # CONF_FILE_MAX_DEPTH
MAX_SYNTAX_ERRORS = 100  # per file, then the file is abandoned
# Files opened per read. PostgreSQL has no such limit, but ten files each including the
# next ten, ten deep, is 10^10 reads: exponential for it and for us.
MAX_INCLUDES = 1000
# A line needs at most four tokens (name, =, value, one too many for the error): a
# 100 KB line is not tokenized past them.
_MAX_TOKENS = 4


class PgConf(Record, kw_only=True):
    settings: dict[str, Setting] = field(default_factory=dict)  # by lower-case name
    problems: list[ConfigProblem] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # display paths, in reading order
    suppressions: dict[str, dict[int, list[str]]] = field(default_factory=dict)
    # The mounted directories (MountedDir.path) an include_dir read, in reading order.
    mounted_read: list[str] = field(default_factory=list)
    # The mounted files (paths in the container) an include or include_if_exists read.
    mounted_files_read: list[str] = field(default_factory=list)


class MountedFile(Struct, frozen=True):
    """A file of a mounted directory: its text and where its line 1 is cited."""

    text: str
    display: str
    line_offset: int = 0


class MountedDir(Struct, frozen=True):
    """A directory the container mounts (a ConfigMap volume: one file per key), by its
    path in the container. `files` is None when its content is not in the repository
    (a ConfigMap named but not given): `why` then says so."""

    path: str
    files: dict[str, MountedFile] | None
    why: str = ""


# --- the lexer (guc-file.l) ---------------------------------------------------------

ID, QUALIFIED_ID, STRING, UNQUOTED, INTEGER, REAL, EQUALS, ERROR = range(8)
_VALUE_TOKENS = (ID, STRING, INTEGER, REAL, UNQUOTED)

# LETTER is [A-Za-z_\200-\377]: with %option 8bit every byte of a non-ASCII UTF-8
# character is a letter, so in decoded text every character >= U+0080 is one.
# Written as a negated ASCII class: the same set as [\u0080-\U0010ffff], but it
# compiles in 0.1 ms instead of 20+ ms, which matters on every pre-commit run.
_L = "(?:[A-Za-z_]|[^\x00-\x7f])"
_LD = "(?:[A-Za-z_0-9]|[^\x00-\x7f])"
_ID = f"{_L}{_LD}*"
# Each rule separately; flex takes the longest match, ties going to the earlier rule.
# INTEGER's two alternatives are split so Python's greedy matching finds the longest.
_RULES: list[tuple[int, re.Pattern[str]]] = [
    (ID, re.compile(_ID)),
    (QUALIFIED_ID, re.compile(f"{_ID}\\.{_ID}")),
    (STRING, re.compile(r"'(?:[^'\\\n]|\\.|'')*'")),
    (UNQUOTED, re.compile(f"{_L}(?:{_LD}|[-._:/])*")),
    (INTEGER, re.compile(r"[-+]?[0-9]+[a-zA-Z]*")),
    (INTEGER, re.compile(r"[-+]?0x[0-9a-fA-F]+[a-zA-Z]*")),
    (REAL, re.compile(r"[-+]?[0-9]*\.[0-9]*(?:[Ee][-+]?[0-9]+)?")),
    (EQUALS, re.compile("=")),
]


_LETTER_RULES = [r for r in _RULES if r[0] in (ID, QUALIFIED_ID, UNQUOTED)]
_NUMBER_RULES = [r for r in _RULES if r[0] in (INTEGER, REAL)]
_STRING_RULES = [r for r in _RULES if r[0] == STRING]
_EQUALS_RULES = [r for r in _RULES if r[0] == EQUALS]


def _rules_for(c: str) -> list[tuple[int, re.Pattern[str]]]:
    """The rules that can match at a character (by what each pattern starts with): a
    third of the regex calls of trying all eight."""
    if not c.isascii() or c.isalpha() or c == "_":
        return _LETTER_RULES
    if c.isdigit() or c in "+-.":
        return _NUMBER_RULES
    if c == "'":
        return _STRING_RULES
    if c == "=":
        return _EQUALS_RULES
    return []


def tokenize_line(line: str, limit: int | None = None) -> list[tuple[int, str]]:
    """Tokens of one line (no newline inside; tokens never span lines); the first
    `limit` only when given."""
    out: list[tuple[int, str]] = []
    i, n = 0, len(line)
    while i < n and (limit is None or len(out) < limit):
        c = line[i]
        if c in " \t\r":
            i += 1
            continue
        if c == "#":
            break  # comment to end of line
        best_kind, best_len = ERROR, 1  # the "." rule: any other single character
        for kind, rx in _rules_for(c):  # in rule order, so a later rule must be longer
            m = rx.match(line, i)
            length = m.end() - i if m else 0
            if length > best_len or (length == best_len and best_kind == ERROR):
                best_kind, best_len = kind, length
        out.append((best_kind, line[i : i + best_len]))
        i += best_len
    return out


def scanstr(token: str) -> str:
    """GUC_scanstr: strip the quotes, collapse '' and backslash escapes."""
    s = token[1:]  # the trailing quote is copied and dropped at the end
    out: list[str] = []
    i = 0
    simple = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
    while i < len(s):
        c = s[i]
        if c == "\\":
            i += 1
            e = s[i]
            if e in simple:
                out.append(simple[e])
            elif "0" <= e <= "7":
                k, octal = 0, 0
                while k < 3 and i + k < len(s) and "0" <= s[i + k] <= "7":
                    octal = (octal << 3) + int(s[i + k])
                    k += 1
                i += k - 1
                out.append(chr(octal & 0xFF))
            else:
                out.append(e)
        elif c == "'" and i + 1 < len(s) and s[i + 1] == "'":
            i += 1
            out.append("'")
        else:
            out.append(c)
        i += 1
    return "".join(out)[:-1]


# --- reading files -----------------------------------------------------------------


class _Item(Struct):
    name: str
    value: str
    display: str
    line: int
    ignore: bool = False


class _File(Struct):
    """A file to parse: real (path) or virtual (text, e.g. a ConfigMap key)."""

    abs_path: str  # lexical absolute path, as PostgreSQL would name it
    display: str
    text: str
    line_offset: int = 0
    # Its path in the container, when known (a mounted ConfigMap key): include_dir of a
    # relative name resolves against it among the mounted directories.
    container: str | None = None


class _Reader(Struct):
    root: Root
    siblings: dict[str, tuple[str, int]]
    virtual_display: str | None  # display path of ConfigMap-held files
    version: int
    items: list[_Item] = field(default_factory=list)
    problems: list[ConfigProblem] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    suppressions: dict[str, dict[int, list[str]]] = field(default_factory=dict)
    included: int = 0  # files opened by include directives (MAX_INCLUDES)
    mounts: dict[str, MountedDir] = field(default_factory=dict)  # by container path
    # Every file the container is known to hold, by its path there: the files of the
    # mounted directories and single files (a subPath mount).
    mounted_files: dict[str, MountedFile] = field(default_factory=dict)
    mounted_read: list[str] = field(default_factory=list)
    mounted_files_read: list[str] = field(default_factory=list)

    # -- reporting --

    def fatal(self, display: str | None, line: int | None, message: str) -> None:
        self.problems.append(
            ConfigProblem(
                location=Location(path=display or "", line=line),
                message=message,
                fatal=True,
                program=PROGRAM,
            )
        )

    def notice(self, display: str, line: int | None, message: str) -> None:
        self.problems.append(
            ConfigProblem(
                location=Location(path=display, line=line),
                message=message,
                fatal=False,
                program="pool-advisor",
            )
        )

    def shown(self, abs_path: str) -> str:
        """How our copy of a PostgreSQL message names a file: root-relative."""
        return self.root.rel(abs_path)

    # -- files --

    def open_file(
        self, abs_path: str, calling: _File, calling_line: int | None
    ) -> _File | str | None:
        """The file at abs_path: a sibling ConfigMap key, else a file under the root.
        Returns an errno text ("No such file or directory") when it cannot be read
        the way PostgreSQL would fail, None when we cannot know (reported here)."""
        key = posixpath.basename(abs_path)
        if key in self.siblings and self.virtual_display is not None:
            text, offset = self.siblings[key]
            return _File(abs_path, self.virtual_display, text, offset)
        try:
            real = self.root.resolve(abs_path)
        except InputError as exc:
            self.notice(calling.display, calling_line, f"not followed: {exc.message}")
            return None
        if real.is_dir():
            return "is a directory"
        if not real.exists():
            return "No such file or directory"
        try:
            text = self.root.read_text(real)
        except InputError as exc:
            self.notice(exc.path, exc.line, exc.message)
            return None
        return _File(abs_path, self.root.rel(real), text)

    def note_file(self, f: _File) -> None:
        if f.display not in self.files:
            self.files.append(f.display)
        sup = scan_suppressions(f.text, f.line_offset)
        if sup:
            merged = self.suppressions.setdefault(f.display, {})
            for line, codes in sup.items():
                merged.setdefault(line, []).extend(codes)

    def absolute(self, location: str, calling: _File) -> str:
        """AbsoluteConfigLocation: relative to the including file's folder."""
        if location.startswith("/"):
            return posixpath.normpath(location)
        return posixpath.normpath(posixpath.join(posixpath.dirname(calling.abs_path), location))

    def missing_virtual(self, calling: _File) -> bool:
        # A ConfigMap's include may name a file the deployment mounts from elsewhere.
        return calling.display == self.virtual_display

    # -- ParseConfigFile --

    def parse_file(
        self,
        config_file: str,
        strict: bool,
        calling: _File,
        calling_line: int,
        depth: int,
    ) -> bool:
        where = (calling.display, calling_line)
        if config_file == "":
            self.fatal(*where, f'empty configuration file name: "{config_file}"')
            return False
        if not self.may_open(config_file, calling, calling_line, depth):
            return False
        if calling.container is not None:
            return self.parse_in_container(config_file, strict, calling, calling_line, depth)
        abs_path = self.absolute(config_file, calling)
        if abs_path == calling.abs_path:
            self.fatal(*where, f'configuration file recursion in "{self.shown_of(calling)}"')
            return False
        opened = self.open_file(abs_path, calling, calling_line)
        if opened is None:
            return True  # not followed; already reported as a notice
        if isinstance(opened, str):
            if opened == "is a directory":
                # fopen() of a directory succeeds; flex's read then fails.
                self.fatal(
                    *where, f'input in flex scanner failed at file "{self.shown(abs_path)}" line 1'
                )
                return False
            if not strict:
                return True  # include_if_exists: "skipping missing configuration file"
            if self.missing_virtual(calling):
                self.notice(
                    *where,
                    f'included file "{config_file}" is not in this ConfigMap or the '
                    "repository; settings it may hold are unknown",
                )
                return True
            self.fatal(
                *where, f'could not open configuration file "{self.shown(abs_path)}": {opened}'
            )
            return False
        return self.parse_fp(opened, depth)

    def in_container(self, location: str, calling: _File) -> str:
        """AbsoluteConfigLocation in the container: relative to the including file's
        folder there."""
        assert calling.container is not None
        return posixpath.normpath(posixpath.join(posixpath.dirname(calling.container),
                                                 location))

    def parse_in_container(self, config_file: str, strict: bool, calling: _File,
                           calling_line: int, depth: int) -> bool:
        """include / include_if_exists from a file whose path in the container is known:
        the file the container holds there (a key of a mounted ConfigMap), as
        ParseConfigFile opens it. The repository's own folders are not the container's:
        a path on no volume mounted from the repository is the image's, not known here."""
        where = (calling.display, calling_line)
        target = self.in_container(config_file, calling)
        if target == calling.container:
            self.fatal(*where, f'configuration file recursion in "{target}"')
            return False
        held = self.mounted_files.get(target)
        if held is not None:
            self.mounted_files_read.append(target)
            return self.parse_fp(_File(target, held.display, held.text.removeprefix("\ufeff"),
                                       held.line_offset, container=target), depth)
        if target in self.mounts:
            # fopen() of a directory succeeds; flex's read then fails.
            self.fatal(*where, f'input in flex scanner failed at file "{target}" line 1')
            return False
        mounted = mount_holding(self.mounts.values(), target)
        if mounted is not None and mounted.files is None:
            self.notice(*where, f'included file "{config_file}" ({target}) is mounted from '
                        f"{mounted.why}; settings it may hold are unknown")
            return True
        if mounted is not None and posixpath.dirname(target) == mounted.path:
            # A ConfigMap volume holds its keys and nothing else.
            if not strict:
                return True  # include_if_exists: "skipping missing configuration file"
            self.fatal(*where, f'could not open configuration file "{target}": '
                       "No such file or directory")
            return False
        self.notice(*where, f'included file "{config_file}" is not in the repository ({target} '
                    "in the container is on no volume whose files the repository holds); "
                    "settings it may hold are unknown")
        return True

    def may_open(self, config_file: str, calling: _File, calling_line: int, depth: int
                 ) -> bool:
        """ParseConfigFile's nesting check, and our bound on the files opened."""
        where = (calling.display, calling_line)
        if depth > MAX_DEPTH:
            self.fatal(
                *where,
                f'could not open configuration file "{config_file}": '
                "maximum nesting depth exceeded",
            )
            return False
        self.included += 1
        if self.included > MAX_INCLUDES:
            if self.included == MAX_INCLUDES + 1:
                # pool-advisor's bound, not PostgreSQL's: no refusal to start (PA901)
                self.fatal(*where, f"more than {MAX_INCLUDES} configuration files included "
                           "(includes that fan out); pool-advisor stops reading includes here")
                self.problems[-1] = replace(self.problems[-1], program="pool-advisor")
            return False
        return True

    def shown_of(self, f: _File) -> str:
        if f.display == self.virtual_display:
            return f.display
        # A mounted file: PostgreSQL names it by its path in the container.
        return f.container if f.container is not None else self.shown(f.abs_path)

    # -- ParseConfigDirectory --

    def parse_dir(self, includedir: str, calling: _File, calling_line: int, depth: int) -> bool:
        where = (calling.display, calling_line)
        if includedir == "":
            self.fatal(*where, f'empty configuration directory name: "{includedir}"')
            return False
        if calling.container is not None:
            target = self.in_container(includedir, calling)
            mounted = self.mounts.get(target)
            if mounted is not None:
                return self.parse_mounted(includedir, mounted, calling, calling_line, depth)
            if target in self.mounted_files:
                self.fatal(*where, f'could not open configuration directory "{target}": '
                           "Not a directory")
                return False
            holding = mount_holding(self.mounts.values(), target)
            if holding is not None and holding.files is None:
                self.notice(*where, f'included directory "{includedir}" ({target}) is mounted '
                            f"from {holding.why}; settings it may hold are unknown")
                return True
            if holding is not None:
                return self.parse_in_volume(target, calling, calling_line, depth)
            self.notice(*where, f'included directory "{includedir}" is not in the repository '
                        f"({target} in the container is on no volume whose files the "
                        "repository holds); settings it may hold are unknown")
            return True
        directory = self.absolute(includedir, calling)
        try:
            real = self.root.resolve(directory)
        except InputError as exc:
            self.notice(calling.display, calling_line, f"not followed: {exc.message}")
            return True
        shown = self.shown(directory)
        if not real.exists():
            if self.missing_virtual(calling):
                self.notice(
                    *where,
                    f'included directory "{includedir}" is not in the '
                    "repository; settings it may hold are unknown",
                )
                return True
            self.fatal(
                *where,
                f'could not open configuration directory "{shown}": No such file or directory',
            )
            return False
        if not real.is_dir():
            self.fatal(*where, f'could not open configuration directory "{shown}": Not a directory')
            return False
        names = []
        for name in os.listdir(real):
            # Only names ending in ".conf", not starting with ".", at least 6 long.
            if len(name) < 6 or name.startswith(".") or not name.endswith(".conf"):
                continue
            if (real / name).is_dir():
                continue
            names.append(name)
        for name in conf_dir_order(names):
            if not self.parse_file(
                posixpath.join(directory, name), True, calling, calling_line, depth
            ):
                return False
        return True

    def parse_in_volume(self, target: str, calling: _File, calling_line: int, depth: int
                        ) -> bool:
        """include_dir of a folder below a mounted volume whose files the repository holds
        (a ConfigMap mounted at /etc/postgresql, include_dir 'conf.d'): the volume holds
        its keys and nothing else, so the folder is there only when `items` put files in
        it; else ParseConfigDirectory fails ("could not open configuration directory ...:
        No such file or directory", conffiles.c GetConfFilesInDir) and the server does
        not start (guc-file.l: during postmaster startup any error is fatal)."""
        where = (calling.display, calling_line)
        inside = target.rstrip("/") + "/"
        if any(path.startswith(inside) for path in self.mounts):
            # a volume mounted below it: the folder is its mount point, and what else it
            # holds is the runtime's to say
            self.notice(*where, f'included directory "{target}" holds a mounted volume; '
                        "settings its other files may hold are unknown")
            return True
        files = {path[len(inside):]: held for path, held in self.mounted_files.items()
                 if path.startswith(inside)}
        if not files:
            self.fatal(*where, f'could not open configuration directory "{target}": '
                       "No such file or directory")
            return False
        for name in conf_dir_order(n for n in files if "/" not in n):
            if not self.may_open(name, calling, calling_line, depth):
                return False
            path = inside + name
            held = files[name]
            self.mounted_files_read.append(path)
            if not self.parse_fp(_File(path, held.display, held.text.removeprefix("\ufeff"),
                                       held.line_offset, container=path), depth):
                return False
        return True

    def parse_mounted(self, includedir: str, mounted: MountedDir, calling: _File,
                      calling_line: int, depth: int) -> bool:
        """include_dir of a directory the container mounts: its files (a ConfigMap's
        keys, never a subdirectory) as ParseConfigDirectory reads a directory."""
        if mounted.files is None:
            self.notice(calling.display, calling_line,
                        f'included directory "{includedir}" ({mounted.path}) is mounted '
                        f"from {mounted.why}; settings it may hold are unknown")
            return True
        self.mounted_read.append(mounted.path)
        for name in conf_dir_order(mounted.files):
            if not self.may_open(name, calling, calling_line, depth):
                return False
            held = mounted.files[name]
            path = posixpath.join(mounted.path, name)
            if not self.parse_fp(_File(path, held.display, held.text.removeprefix("\ufeff"),
                                       held.line_offset, container=path), depth):
                return False
        return True

    # -- ParseConfigFp --

    def parse_fp(self, f: _File, depth: int) -> bool:
        self.note_file(f)
        ok = True
        errors = 0
        lines = f.text.split("\n")
        ends_with_newline = f.text.endswith("\n")
        if ends_with_newline:
            lines.pop()
        for index, line in enumerate(lines):
            number = index + 1
            has_newline = ends_with_newline or index < len(lines) - 1
            tokens = tokenize_line(line, _MAX_TOKENS)
            if not tokens:
                continue
            parsed = parse_line(tokens, number, has_newline)
            if isinstance(parsed, _SyntaxError):
                err_line, message = parsed.line, parsed.near
                # The message keeps PostgreSQL's line; the location points at the line.
                self.fatal(
                    f.display,
                    number + f.line_offset,
                    f'syntax error in file "{self.shown_of(f)}" line '
                    f"{err_line + f.line_offset}, {message}",
                )
                ok = False
                errors += 1
                if errors >= MAX_SYNTAX_ERRORS:
                    self.fatal(
                        f.display,
                        None,
                        f'too many syntax errors found, abandoning file "{self.shown_of(f)}"',
                    )
                    break
                continue
            name, value = parsed
            line_no = number + f.line_offset
            directive = name.lower()
            if directive == "include_dir":
                if not self.parse_dir(value, f, line_no, depth + 1):
                    ok = False
            elif directive == "include_if_exists":
                if not self.parse_file(value, False, f, line_no, depth + 1):
                    ok = False
            elif directive == "include":
                if not self.parse_file(value, True, f, line_no, depth + 1):
                    ok = False
            else:
                self.items.append(_Item(name, value, f.display, line_no))
        return ok


def mount_holding(mounts: Iterable[MountedDir], target: str) -> MountedDir | None:
    """The deepest of the mounted directories at or above `target` (a container path)."""
    best = None
    for mounted in mounts:
        path = mounted.path
        if (target == path or target.startswith(path.rstrip("/") + "/")) and \
                (best is None or len(path) > len(best.path)):
            best = mounted
    return best


def conf_dir_order(names: Iterable[str]) -> list[str]:
    """The files of a directory include_dir reads, in the order it reads them
    (GetConfFilesInDir, src/backend/utils/misc/conffiles.c at postgres 1b105f94; in
    guc-file.l's ParseConfigDirectory before 16): names ending in ".conf", not starting
    with ".", at least 6 bytes long, sorted by strcmp (byte order, not the locale's)."""
    return sorted((n for n in names if len(n.encode("utf-8", "surrogateescape")) >= 6
                   and not n.startswith(".") and n.endswith(".conf")),
                  key=lambda n: n.encode("utf-8", "surrogateescape"))


class _SyntaxError(Struct, frozen=True):
    line: int
    near: str  # 'near token "x"' or "near end of line"


def parse_line(
    tokens: list[tuple[int, str]], number: int, has_newline: bool
) -> tuple[str, str] | _SyntaxError:
    """One logical line of ParseConfigFp: (name, value) or where the syntax breaks."""
    # At end of file without a newline flex returns EOF before the line counter moves,
    # so "near end of line" names the line before (PostgreSQL does).
    eol_line = number if has_newline else number - 1

    def near(pos: int) -> _SyntaxError:
        if pos >= len(tokens):
            return _SyntaxError(eol_line, "near end of line")
        return _SyntaxError(number, f'near token "{tokens[pos][1]}"')

    kind, name = tokens[0]
    if kind not in (ID, QUALIFIED_ID):
        return near(0)
    pos = 1
    if pos < len(tokens) and tokens[pos][0] == EQUALS:
        pos += 1
    if pos >= len(tokens) or tokens[pos][0] not in _VALUE_TOKENS:
        return near(pos)
    vkind, vtext = tokens[pos]
    if pos + 1 < len(tokens):
        return near(pos + 1)
    return name, scanstr(vtext) if vkind == STRING else vtext


# --- ProcessConfigFileInternal -------------------------------------------------------


def _param_lookup(version: int) -> Callable[[str], pgguc.Param | None]:
    """Parameter by name in `version`'s own table (the nearest major's without one)."""
    params = pgguc.pg_params(version)
    return lambda name: params.get(name.lower())


def _unknown_for_version(name: str, version: int) -> str:
    shown = "9.6" if version == 9 else str(version)
    return (
        f'"{name}" is not a PostgreSQL {pgguc.table_major(version)} parameter; pool-advisor '
        f"has no parameter table of PostgreSQL {shown} and keeps it unchecked"
    )


def _version_note(name: str, version: int) -> str | None:
    """For an unrecognized name that another major has: when it was removed or added."""
    note = pgguc.version_note(name, version)
    return None if note is None else f'"{name}" was {note}: not a PostgreSQL {version} parameter'


def _apply(reader: _Reader) -> dict[str, Setting]:
    param_of = _param_lookup(reader.version)
    # The name check is exact for the majors whose pg_settings was generated; for
    # others an unknown name may be a parameter added or renamed since.
    exact = pgguc.has_table(reader.version)
    seen: set[str] = set()
    # Exact spelling -> items not dropped yet: each is dropped once, so 40,000 repeats of
    # a setting are linear, not a scan of every earlier item per repeat.
    live: dict[str, list[_Item]] = {}
    name_errors = False
    for item in reader.items:
        param = param_of(item.name)
        if param is not None:
            if param.name.lower() in seen:
                # Earlier entries spelled the same way are dropped (strcmp, so case counts).
                for earlier in live.pop(item.name, ()):
                    earlier.ignore = True
            seen.add(param.name.lower())
            live.setdefault(item.name, []).append(item)
        elif "." not in item.name:
            if exact:
                reader.fatal(
                    item.display,
                    item.line,
                    f'unrecognized configuration parameter "{item.name}" in file '
                    f'"{item.display}" line {item.line}',
                )
                name_errors = True
                if (note := _version_note(item.name, reader.version)) is not None:
                    reader.notice(item.display, item.line, note)
            else:
                reader.notice(
                    item.display, item.line, _unknown_for_version(item.name, reader.version)
                )
    settings: dict[str, Setting] = {}
    for item in reader.items:
        if item.ignore:
            continue
        param = param_of(item.name)
        key = param.name.lower() if param else item.name.lower()
        source = Source(path=item.display, line=item.line, key=key)
        if param is None:
            if exact and "." not in item.name:
                continue  # reported above
            # A custom (dotted) placeholder, or a name we cannot check: the string.
            settings[key] = Setting(name=key, raw=item.value, value=item.value, source=source)
            continue
        parsed = pgguc.parse_value(param, item.name, item.value, reader.version)
        if not parsed.ok:
            if not name_errors:  # PostgreSQL stops after the name phase's errors
                reader.fatal(item.display, item.line, parsed.message())
            continue
        assert parsed.value is not None
        settings[key] = Setting(
            name=key, raw=item.value, value=parsed.value, unit=param.unit, source=source
        )
    return settings


def read_pgconf(
    root: Root,
    path: str | Path,
    *,
    text: str | None = None,
    line_offset: int = 0,
    display_path: str | None = None,
    siblings: dict[str, tuple[str, int]] | None = None,
    auto_conf: bool = True,
    version: int = 15,
    container_path: str | None = None,
    mounts: list[MountedDir] | None = None,
    mounted_files: dict[str, MountedFile] | None = None,
) -> PgConf:
    """Read postgresql.conf at `path` (or `text`, e.g. a ConfigMap key held in the file
    at `path`, whose lines start after `line_offset`). `siblings` are the other keys of
    that ConfigMap: includes naming them resolve there first. `container_path`: where
    the server finds the file in its container; its includes then resolve in the
    container, as PostgreSQL resolves them there: an include_dir naming one of `mounts`
    reads that mounted directory, an include a file of those directories or of
    `mounted_files` (single files mounted with subPath), by their container paths; a
    path on none of them is the image's (not known here), never a repository file."""
    p = Path(path)
    abs_main = posixpath.normpath(str(p if p.is_absolute() else root.path / p))
    virtual = text is not None
    display = display_path or root.rel(abs_main)
    reader = _Reader(
        root=root,
        siblings=dict(siblings or {}),
        virtual_display=display if virtual else None,
        version=version,
        mounts={posixpath.normpath(m.path): m for m in mounts or ()},
        mounted_files=_files_at(mounts or (), mounted_files or {}),
    )
    if text is None:
        try:
            text = root.read_text(abs_main)
        except InputError as exc:
            reader.fatal(exc.path, exc.line, exc.message)
            reader.problems[-1] = replace(reader.problems[-1], program="pool-advisor")
            return _result(reader, {})
    main = _File(abs_main, display, text.removeprefix("\ufeff"), line_offset,
                 container=posixpath.normpath(container_path) if container_path else None)
    ok = reader.parse_fp(main, 0)
    if ok and auto_conf:
        auto_path = posixpath.join(posixpath.dirname(abs_main), AUTO_CONF)
        opened = None
        if virtual and AUTO_CONF in reader.siblings:
            opened = reader.open_file(auto_path, main, None)
        elif not virtual:
            try:
                real = root.resolve(auto_path)
                if real.is_file():
                    opened = reader.open_file(auto_path, main, None)
            except InputError:
                opened = None
        if isinstance(opened, _File):
            ok = reader.parse_fp(opened, 0)
    return _finish(reader, ok)


def start_errors(problems: Iterable[ConfigProblem]) -> list[ConfigProblem]:
    """The problems of a server's configuration PostgreSQL refuses to start on: the fatal
    ones in its own words (guc-file.l: during postmaster startup any error in the file is
    fatal; a bad -c option is FATAL too). Not its warnings, nor pool-advisor's notices."""
    return [p for p in problems if p.fatal and p.program == PROGRAM]


def _files_at(mounts: Iterable[MountedDir], single: dict[str, MountedFile]
              ) -> dict[str, MountedFile]:
    """Every file the container holds by its path: the mounted directories' files, then
    the single files."""
    found = {posixpath.join(posixpath.normpath(m.path), name): held
             for m in mounts for name, held in (m.files or {}).items()}
    found.update({posixpath.normpath(path): held for path, held in single.items()})
    return found


def _finish(reader: _Reader, ok: bool) -> PgConf:
    if not ok:
        # Syntax or include errors: PostgreSQL checks nothing else. Keep what parsed,
        # but report only what the server would.
        before = list(reader.problems)
        settings = _apply(reader)
        reader.problems = before
        return _result(reader, settings)
    return _result(reader, _apply(reader))


def read_mounted_dir(root: Root, mounted: MountedDir, version: int = 15) -> PgConf:
    """The files of a mounted directory as a postgresql.conf whose include_dir names it
    reads them (the Bitnami image's own postgresql.conf and its conf.d)."""
    reader = _Reader(root=root, siblings={}, virtual_display=None, version=version,
                     mounts={mounted.path: mounted})
    calling = _File(posixpath.join(posixpath.dirname(mounted.path), "postgresql.conf"),
                    display="", text="", container=None)
    ok = reader.parse_mounted(posixpath.basename(mounted.path), mounted, calling, 0, 1)
    return _finish(reader, ok)


def placed(conf: PgConf, display: str, line_offset: int, text: str,
           places: TextPlaces | None) -> PgConf:
    """`conf` read from `text` (at `display`, lines after `line_offset`) with its
    settings and problems cited where `places` says the text's lines are written
    (ConfigMapData.text_places): a values key traced into a setting's value, else the
    data key's line when the text is not in the file line for line (a Secret's base64,
    a template's `include`), never the key's line + n, a line of something else."""
    if places is None:
        return conf
    lines = text.splitlines()

    def source(s: Setting) -> Source:
        n = (s.source.line or 0) - line_offset
        if s.source.path != display or not 1 <= n <= len(lines):
            return s.source  # an included file, or a line not of this text
        return places.cite(n, lines[n - 1], s.name, s.source)

    def location(loc: Location) -> Location:
        flat = places.flat
        inside = loc.path == display and loc.line is not None \
            and 1 <= loc.line - line_offset <= len(lines)
        placed = places.lines.get(loc.line - line_offset) if inside and loc.line else None
        if placed is not None:
            return Location(path=placed.path, line=placed.line)
        return Location(path=flat.path, line=flat.line) if flat is not None and inside \
            else loc

    return replace(conf, settings={k: replace(s, source=source(s))
                                   for k, s in conf.settings.items()},
                   problems=[replace(p, location=location(p.location))
                             for p in conf.problems])


def _result(reader: _Reader, settings: dict[str, Setting]) -> PgConf:
    return PgConf(
        settings=settings,
        problems=reader.problems,
        files=reader.files,
        suppressions=reader.suppressions,
        mounted_read=reader.mounted_read,
        mounted_files_read=reader.mounted_files_read,
    )


# --- the command line ---------------------------------------------------------------

# postmaster.c short options that set parameters.
_SHORT = {
    "B": "shared_buffers",
    "N": "max_connections",
    "S": "work_mem",
    "p": "port",
    "k": "unix_socket_directories",
    "h": "listen_addresses",
}
_FLAGS = {"F": ("fsync", "false"), "i": ("listen_addresses", "*"), "l": ("ssl", "true")}
# Options taking an argument: postmaster.c getopt "B:bC:c:D:d:EeFf:h:ijk:lN:nOPp:r:S:sTt:W:-:"
_WITH_ARG = set("BCcDdfhkNprStW")


def parse_postgres_args(args: list[str], source: Source) -> dict[str, Setting]:
    """Settings from `postgres -c name=value` / `--name=value` / -N/-B/-S container args."""
    settings, _ = parse_postgres_args_checked(args, source)
    return settings


def parse_postgres_args_checked(
    args: list[str], source: Source, version: int = 15
) -> tuple[dict[str, Setting], list[ConfigProblem]]:
    pairs: list[tuple[str, str | None, str]] = []  # (name, value, option as written)
    items = list(args)
    if items and (items[0] == "postgres" or items[0].endswith("/postgres")):
        items = items[1:]
    i = 0
    while i < len(items):
        arg = items[i]
        i += 1
        if not arg.startswith("-") or arg == "-":
            continue
        if arg.startswith("--"):
            body = arg[2:]
            name, eq, value = body.partition("=")
            pairs.append((name.replace("-", "_"), value if eq else None, arg))
            continue
        opt = arg[1]
        if opt in _FLAGS:
            name, value = _FLAGS[opt]
            pairs.append((name, value, arg))
            rest = arg[2:]
            if rest:  # combined flags such as -il
                items.insert(i, "-" + rest)
            continue
        if opt not in _WITH_ARG:
            continue
        optarg = arg[2:]
        if not optarg and i < len(items):
            optarg = items[i]
            i += 1
        if opt == "c":
            name, eq, value = optarg.partition("=")
            pairs.append((name.replace("-", "_"), value if eq else None, f"-c {optarg}"))
        elif opt in _SHORT:
            pairs.append((_SHORT[opt], optarg, f"-{opt} {optarg}"))
    param_of = _param_lookup(version)
    settings: dict[str, Setting] = {}
    problems: list[ConfigProblem] = []
    loc = source.location() or Location(path=source.path or "")

    def problem(message: str, fatal: bool = True) -> None:
        problems.append(
            ConfigProblem(
                location=loc,
                message=message,
                fatal=fatal,
                program=PROGRAM if fatal else "pool-advisor",
            )
        )

    for name, value, written in pairs:
        if value is None:
            problem(f"{written} requires a value")
            continue
        param = param_of(name)
        key = param.name.lower() if param else name.lower()
        src = replace(source, key=key)
        if param is None:
            if "." not in name:
                if pgguc.has_table(version):
                    problem(f'unrecognized configuration parameter "{name}"')
                    if (note := _version_note(name, version)) is not None:
                        problem(note, fatal=False)
                    continue
                problem(_unknown_for_version(name, version), fatal=False)
            settings[key] = Setting(name=key, raw=value, value=value, source=src)
            continue
        parsed = pgguc.parse_value(param, name, value, version)
        if not parsed.ok:
            problem(parsed.message())
            continue
        assert parsed.value is not None
        settings[key] = Setting(
            name=key, raw=value, value=parsed.value, unit=param.unit, source=src
        )
    return settings, problems
