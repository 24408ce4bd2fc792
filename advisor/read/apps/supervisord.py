"""supervisord's programs as processes of one container: `supervisord -c worker.conf`
(Redash's worker: `[program:worker]` with `numprocs=%(ENV_WORKERS_COUNT)s` copies of
`./manage.py rq worker`).

Read in Supervisor/supervisor 4.3.0, supervisor/options.py:
- the configuration: `-c/--configuration` (line 106), else the first of `supervisord.conf`,
  `etc/supervisord.conf`, `/etc/supervisord.conf`, `/etc/supervisor/supervisord.conf`
  (searchpaths, lines 109-116, also below the executable's folder).
- expansions: every variable of supervisord's environment as `%(ENV_X)s`
  (environ_expansions, lines 118-120), with `[supervisord] environment=` added (lines
  652-655); `expand` (line 2200) is Python `%` formatting: a name that is not there is an
  error and supervisord does not start. `[include] files=` globs, relative to the
  including file's folder (lines 582-605).
- each `[program:x]` (and `[fcgi-program:x]`) starts `numprocs` processes, default 1
  (`integer(get(section, 'numprocs', 1))`, line 918), read with those expansions
  (saneget, line 1813: parser.expansions, line 566); `autostart` default true (line 907)
  (false: not started). `[eventlistener:x]` pools are supervisor event handlers (line 727):
  not counted (Redash's `rq healthcheck` reads Redis only: redash/cli/rq.py
  WorkerHealthcheck, v25.8.0).

A program running a server that speaks no PostgreSQL (nginx, redis-server) is not
counted. How the programs' processes add up (a gunicorn program's workers in each copy)
is advisor.read.apps.processes' (_supervisord). When numprocs cannot be read, the
processes are unknown (PA106), never a guess.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from typing import TYPE_CHECKING, NamedTuple

from msgspec.structs import replace

from advisor.model import EnvVar, Source, Term
from advisor.read.apps.cmdline import NON_CLIENT_SERVERS, CommandLine, Word, shell_command
from advisor.read.apps.numbers import parse_int

if TYPE_CHECKING:
    from advisor.read.apps.source import AppFile, AppSource

SEARCH_PATHS = ("supervisord.conf", "etc/supervisord.conf", "etc/supervisor/supervisord.conf")
_EXPANSION = re.compile(r"%\(([^)]+)\)[sd]")


def _option(words: list[Word]) -> str | None:
    """-c PATH, -cPATH, --configuration PATH / =PATH."""
    found = None
    for i, w in enumerate(words):
        t = w.text
        if t in ("-c", "--configuration") and i + 1 < len(words):
            found = words[i + 1].text
        elif t.startswith("--configuration="):
            found = t.split("=", 1)[1]
        elif t.startswith("-c") and len(t) > 2 and not t.startswith("--"):
            found = t[2:]
    return found


def _tails(path: str) -> list[str]:
    """`/app/worker.conf` as the app folder's worker.conf, then less of its folders."""
    parts = [p for p in path.split("/") if p and p != "."]
    return ["/".join(parts[i:]) for i in range(len(parts))]


def _config(files: list[AppFile], path: str | None) -> AppFile | None:
    """The file `-c path` names (or the default search path finds): the app folder's
    file at that path, or at less of its leading folders (/app/worker.conf under WORKDIR
    /app); else the only file of that name (a Dockerfile's `COPY
    docker/supervisord.conf /etc/supervisor/conf.d/`)."""
    wanted = _tails(path) if path else list(SEARCH_PATHS)
    found = next((f for want in wanted for f in files if f.rel == want), None)
    if found is None:
        name = posixpath.basename(path or "supervisord.conf")
        named = [f for f in files if f.name == name]
        found = named[0] if len(named) == 1 else None
    return found


def _included(rel: str, base: str, pattern: str) -> bool:
    """Whether the app file `rel` is one `[include] files = pattern` (glob, relative to
    the including file's folder `base`) reads: the same path below the app folder, or,
    for an absolute path in the image (/etc/supervisor/conf.d/*.conf), a file in a
    folder of that name (conf.d/web.conf)."""
    parts = rel.split("/")
    if pattern.startswith("/"):
        wanted = [p for p in pattern.split("/") if p][-2:]
        parts = parts[-len(wanted):]
    else:
        wanted = posixpath.normpath(posixpath.join(base, pattern)).split("/")
    return len(parts) == len(wanted) and all(
        fnmatch.fnmatchcase(a, b) for a, b in zip(parts, wanted, strict=True))


def _sections(f: AppFile) -> list[tuple[str, dict[str, tuple[str, int]]]]:
    """[section] -> key -> (value, line), as supervisor's RawConfigParser reads them
    (`;`/`#` comment lines, ` ;` inline comments, continuation lines)."""
    out: list[tuple[str, dict[str, tuple[str, int]]]] = []
    current: dict[str, tuple[str, int]] | None = None
    key = ""
    for n, raw in enumerate(f.text.splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith((";", "#")):
            continue
        if raw[:1].isspace() and current is not None and key:
            value, line = current[key]
            current[key] = (f"{value}\n{raw.strip()}", line)
            continue
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            current = {}
            out.append((line[1:-1].strip(), current))
            key = ""
            continue
        m = re.match(r"([^=:]+?)\s*[=:]\s*(.*)$", line)
        if m is None or current is None:
            continue
        key = m.group(1).strip().lower()
        current[key] = (re.split(r"\s;", m.group(2), maxsplit=1)[0].strip(), n)
    return out


def _environment(value: str) -> dict[str, str]:
    """`KEY=val,KEY2="v,2"` (supervisor/datatypes.py dict_of_key_value_pairs)."""
    out: dict[str, str] = {}
    for m in re.finditer(r"\s*([A-Za-z_]\w*)\s*=\s*(\"[^\"]*\"|'[^']*'|[^,]*)\s*,?", value):
        out[m.group(1)] = m.group(2).strip("'\"")
    return out


class Program(NamedTuple):
    """One `[program:x]` supervisord starts: `count` copies of `command`."""

    name: str
    count: Term
    command: CommandLine


class Programs(NamedTuple):
    config: str  # the configuration's path as shown; "" when not found
    programs: list[Program]
    notes: list[str]
    unknown: list[str]  # why the processes are not known (PA106); empty when they are


def supervisord_programs(app: AppSource | None, words: list[Word], env: dict[str, EnvVar],
                         container: str) -> Programs:
    """The programs `supervisord` (with `words` after its name) starts in container
    `container` whose env is `env` (what its command's script exports included)."""
    path = _option(words)
    files = app.of_kind("conf") if app is not None else []
    f = _config(files, path)
    if f is None:
        return Programs("", [], [], [
            f"supervisord's configuration ({path or 'its default supervisord.conf'}) is not "
            "in the application source: its programs, each a process, are not known"])
    sections = [(section, keys, f) for section, keys in _sections(f)]
    unknown: list[str] = []
    for _, keys, _ in [x for x in sections if x[0] == "include" and "files" in x[1]]:
        base = posixpath.dirname(f.rel)
        for pattern in keys["files"][0].split():
            found = [g for g in files if g is not f and _included(g.rel, base, pattern)]
            if not found:
                unknown.append(f"supervisord includes {pattern} "
                               f"({f.cite(keys['files'][1]).label()}), not in the "
                               "application source: its programs are not known")
            for g in sorted(found, key=lambda g: g.rel):
                sections += [(section, keys, g) for section, keys in _sections(g)]
    expansions: dict[str, tuple[str | None, Source, str]] = {
        f"ENV_{e.name}": (e.value, replace(e.source, key=e.name), e.name)
        for e in env.values()}
    for section, keys, g in sections:
        if section == "supervisord" and "environment" in keys:
            value, n = keys["environment"]
            for k, v in _environment(value).items():
                expansions[f"ENV_{k}"] = (v, g.cite(n, "environment", k), k)
    programs: list[Program] = []
    notes: list[str] = []
    for section, keys, g in sections:
        kind, _, program = section.partition(":")
        if kind == "eventlistener":
            notes.append(f"{container}: supervisord [{section}] "
                         f"({keys.get('command', ('', 0))[0]}) not counted: an event "
                         "listener handles supervisor's events")
            continue
        if kind not in ("program", "fcgi-program") or not program:
            continue
        autostart = keys.get("autostart", ("true", 0))[0].lower()
        if autostart in ("false", "no", "off", "0"):
            notes.append(f"{container}: supervisord [{section}] has autostart={autostart}: "
                         "not started, not counted")
            continue
        command = keys.get("command", ("", 0))
        src = g.cite(command[1], f"[{section}] command")
        text = _EXPANSION.sub(lambda m: (expansions.get(m.group(1), (None,))[0]
                                         or m.group(0)), command[0])
        cmd = shell_command(text, src, env, origin="supervisord")
        first = cmd.segments()[0][0].text.rsplit("/", 1)[-1] if cmd.segments() else ""
        if first in NON_CLIENT_SERVERS:
            notes.append(f"{container}: supervisord [{section}] runs {first}: not a "
                         "database client, not counted")
            continue
        count = _numprocs(section, keys, g, expansions)
        if isinstance(count, str):
            unknown.append(count)
            continue
        programs.append(Program(program, count, cmd))
    return Programs(f.path, programs, notes, unknown)


def _numprocs(section: str, keys: dict[str, tuple[str, int]], f: AppFile,
              expansions: dict[str, tuple[str | None, Source, str]]) -> Term | str:
    """numprocs of a program section as a Term, or why it is not known."""
    from advisor.read.apps.pyeval import hidden_note

    if "numprocs" not in keys:
        return Term(label="numprocs", value=1, source=Source.default_of(
            "supervisor 4.3.0 default numprocs 1 (supervisor/options.py:918)",
            key=f"[{section}] numprocs"))
    raw, n = keys["numprocs"]
    here = f.cite(n, f"[{section}] numprocs")
    refs = _EXPANSION.findall(raw)
    source = here
    value = raw
    for ref in refs:
        if ref not in expansions:
            return (f"supervisord [{section}] numprocs={raw} ({here.label()}) names "
                    f"%({ref})s, which the container's environment does not set "
                    "(supervisord does not start)")
        text, src, var = expansions[ref]
        if text is None:
            return hidden_note(f"supervisord [{section}] numprocs", var, src)
        source = src if raw.strip() == f"%({ref})s" else here
        value = value.replace(f"%({ref})s", text).replace(f"%({ref})d", text)
    number = parse_int(value)
    if number is None or number < 1:
        return (f"supervisord [{section}] numprocs={raw} ({here.label()}) is "
                f"{value!r}, not a count of processes")
    return Term(label="numprocs", value=number, source=source)
