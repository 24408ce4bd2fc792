"""A container's command line as words, the way the process will see them.

Kubernetes expands `$(VAR)` in command/args from the container env (kubelet); a shell
(`sh -c "..."`) further expands `$VAR`, `${VAR}`, `${VAR:-default}`. When the
manifest sets no command, the image's CMD/ENTRYPOINT applies: taken from the app's
Dockerfile, or a Procfile entry, with a notice saying so.

A shell script (`sh -c "...; exec prog args"`, the Redash chart's args) is followed to
the command its process becomes: its first top-level `exec`, else its last top-level
command; `export VAR=...` (and `VAR=...`) lines before it, outside branches and loops,
are the env that command is read with (CommandLine.env: what the process inherits).
When that command, or the image's own command, is the image's ENTRYPOINT script with an
argument that names one of its shell functions (redash/redash bin/docker-entrypoint:
`server() { ...; exec gunicorn -w${REDASH_WEB_WORKERS:-4} ... }`, then
`case "$1" in server) server ;;`), the function is followed the same way. An ENTRYPOINT
given a shell script as its arguments (`args: [/bin/sh, -c, ...]` under
`ENTRYPOINT ["/app/bin/docker-entrypoint"]`) is taken to run it (`*) exec "$@"`).
"""

from __future__ import annotations

import io
import posixpath
import re
import shlex
from typing import NamedTuple

from msgspec.structs import replace

from advisor.lazyregex import lazy
from advisor.model import Container, EnvVar, Frozen, Source
from advisor.read import jsontext
from advisor.read.apps.envfrom import may_set
from advisor.read.apps.locate import image_name
from advisor.read.apps.source import AppFile, AppSource
from advisor.read.shellwords import bounded

_SHELLS = {"sh", "bash", "ash", "dash", "zsh", "/bin/sh", "/bin/bash", "/usr/bin/env"}
_K8S_VAR = lazy(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
_SH_VAR = lazy(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


class Word(Frozen, kw_only=True):
    text: str
    source: Source
    from_env: str | None = None  # the env var that supplied (part of) it
    cpu: bool = False  # came from $(nproc)
    # A variable it reads whose value is not held here (unheld): a Secret's, or one an
    # envFrom source not held may set (cited at its marker, keyed `<prefix>*`). Its text
    # is then the `${X:-2}` fallback (or the reference as written), not what runs.
    unheld: EnvVar | None = None
    # a newline follows it in its script: the command it is part of ends there
    line_end: bool = False


class CommandLine(Frozen, kw_only=True):
    words: tuple[Word, ...]
    origin: str  # "manifest", "Dockerfile", "Procfile", ""
    # Variables the script that runs the command exports before it (`export
    # WORKERS_COUNT=${WORKERS_COUNT:-2}`), at that line: the process inherits them.
    # A value the repository does not hold (a Secret's, a command's output) is None.
    env: tuple[EnvVar, ...] = ()

    def segments(self) -> list[list[Word]]:
        """The commands of the line (jobs), whether or not sent to the background."""
        return [words for words, _ in self.jobs()]

    def jobs(self) -> list[tuple[list[Word], bool]]:
        """The line split into its commands as the shell splits it: at `&&`, `||`, `;`,
        `|`, `|&`, at `&` (the command before it sent to the background: True; not a
        redirection's `2>&1`, `&>f`) and at an unquoted newline of a script
        (Word.line_end; not one after `&&` or `|`, where the command goes on), each
        without its leading `exec` and env assignments."""
        out: list[tuple[list[Word], bool]] = []
        cur: list[Word] = []
        words = self.words
        for i, w in enumerate(words):
            sep = w.text in ("&&", ";", "||", "|", "|&") or (
                w.text == "&" and is_background(words, i))
            if sep:
                out.append((cur, w.text == "&"))
                cur = []
                continue
            if cur or not (w.text == "exec" or re.fullmatch(r"[A-Za-z_]\w*=.*", w.text)):
                cur.append(w)
            if w.line_end:
                out.append((cur, False))
                cur = []
        out.append((cur, False))
        return [(s, bg) for s, bg in out if s]


def is_background(words: tuple[Word, ...] | list[Word], i: int) -> bool:
    """`&` at words[i] puts what precedes it in the background; `2>&1`, `&>file` and
    `>&2` are redirections (shlex splits them into `2>`, `&`, `1`)."""
    before = words[i - 1].text if i else ""
    after = words[i + 1].text if i + 1 < len(words) else ""
    return not (before.endswith((">", "<")) or after.startswith((">", "<")))


def unheld(name: str, env: dict[str, EnvVar]) -> EnvVar | None:
    """The variable `name` when its value is not held here: set from a Secret or
    reference (not a script's own command output), or unset with an envFrom source not
    held that may set it (then an entry for `name` cited at that source's marker, as
    pyeval's _env_lookup cites it). None when its value, or its being unset, is known."""
    var = env.get(name)
    if var is not None:
        shell = (var.from_ref or "").startswith("shell:")
        return var if var.value is None and not shell and not name.endswith("*") else None
    return may_set(env.values(), name)


_UNHELD_TOKEN = lazy(r"__UNHELD(\d+)__")


def _expand_k8s(text: str, env: dict[str, EnvVar], marks: list[str] | None = None
                ) -> tuple[str, str | None]:
    """`text` with kubelet's `$(VAR)` expanded from `env`, and the first variable used.
    With `marks`, each expanded value is marked as coming from its variable (_marked)."""
    used: list[str] = []

    def sub(m: re.Match[str]) -> str:
        var = env.get(m.group(1))
        if var is None or var.value is None:
            return m.group(0)  # kubelet leaves unknown references as written
        used.append(m.group(1))
        return var.value if marks is None else _marked(var.value, m.group(1), marks)

    return _K8S_VAR.sub(sub, text), (used[0] if used else None)


def _expand_shell(text: str, env: dict[str, EnvVar],
                  held: list[tuple[str, EnvVar]] | None = None,
                  marks: list[str] | None = None) -> tuple[str, str | None, bool]:
    """`text` with the shell's variable references expanded from `env`. With `held`, a
    reference to a variable whose value is not held (unheld) becomes a token
    `__UNHELD<i>__` for held[i] = (its fallback, or the reference as written; the
    variable), for _words_of to mark the word it lands in. With `marks`, each expanded
    value is marked as coming from its variable (_marked)."""
    used: list[str] = []
    cpu = "$(nproc)" in text or "`nproc`" in text
    text = text.replace("$(nproc)", "__NPROC__").replace("`nproc`", "__NPROC__")

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        var = env.get(name)
        if var is not None and var.value is not None:
            used.append(name)
            return var.value if marks is None else _marked(var.value, name, marks)
        written = m.group(2) if m.group(2) is not None else m.group(0)
        hidden = unheld(name, env) if held is not None else None
        if held is not None and hidden is not None and not re.search(r"\s", written):
            held.append((written, hidden))
            return f"__UNHELD{len(held) - 1}__"
        return written

    return _SH_VAR.sub(sub, text), (used[0] if used else None), cpu


# A variable's value marked in a script's text (_marked), so that each word the script
# splits into names the variable it came from: private-use characters no script holds.
_MARK_OPEN, _MARK_SEP, _MARK_CLOSE = "\ue000", "\ue001", "\ue002"
_MARK = lazy(f"{_MARK_OPEN}(\\d+){_MARK_SEP}")
_MARKS = lazy(f"{_MARK_OPEN}\\d+{_MARK_SEP}|{_MARK_CLOSE}")


def _marked(value: str, name: str, marks: list[str]) -> str:
    """`value` with each of its runs of non-blank text marked as the variable `name`'s
    (marks[i] = name): a run is all or part of one word however the script splits it
    (an unquoted value of several words becomes several, each from the variable)."""
    marks.append(name)
    tag = f"{_MARK_OPEN}{len(marks) - 1}{_MARK_SEP}"
    return re.sub(r"\S+", lambda m: f"{tag}{m.group(0)}{_MARK_CLOSE}", value)


def _unmarked(part: str, marks: list[str]) -> tuple[str, str | None]:
    """A word without its marks, and the variable that supplied its first marked text
    (None: every character of it is the script's own)."""
    first = _MARK.search(part)
    return _MARKS.sub("", part), (marks[int(first.group(1))] if first else None)


def _split(text: str) -> list[str]:
    return [word for word, _ in _split_lines(text)]


# the white space after a word, a `#` comment in it (shlex drops the comment, and with
# it the newline that ends the command)
_GAP = lazy(r"(?:[ \t\r\n]|#[^\n]*)*")


def _without_heredocs(text: str) -> str:
    """`text` without the bodies of its here-documents (`cat <<EOF > f` ... `EOF`): the
    lines up to the delimiter are the command's input, not commands; the rest of the
    script when it is never closed, as the shell reads it (top_level_jobs does the
    same for a script file)."""
    if "<<" not in text:
        return text
    lines = text.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        out.append(line)
        index += 1
        m = _HEREDOC.search(line)
        if m is None or line[:m.start()].count("((") > line[:m.start()].count("))"):
            continue  # none, or `$((1 << N))`: a shift in arithmetic
        strip = "\t" if m.group(1) else ""  # `<<-EOF`: the delimiter's tabs go
        index = next((i + 1 for i in range(index, len(lines))
                      if lines[i].lstrip(strip).rstrip("\r") == m.group(2)), len(lines))
    return "\n".join(out)


def _split_lines(text: str) -> list[tuple[str, bool]]:
    """The shell words of `text`, each with whether an unquoted newline follows it (the
    end of a command, as `;` is: shlex reads a newline as a space); here-document bodies
    are left out (_without_heredocs)."""
    # a backslash-newline joins lines (the Airflow chart's `exec \<newline>airflow celery
    # worker`); shlex would keep the newline in the next word
    text = _without_heredocs(text.replace("\\\n", ""))
    try:
        stream = io.StringIO(bounded(text))
        lexer = shlex.shlex(stream, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        out: list[tuple[str, bool]] = []
        for word in lexer:
            # the stream stands after the character that ended the word: a newline in
            # the white space from there is outside any quote
            end = max(stream.tell() - 1, 0)
            gap = _GAP.match(text, end)
            out.append((word, gap is not None and "\n" in gap.group(0)))
        return out
    except ValueError:
        return [(word, False) for word in text.split()]


def _words_of(items: list[tuple[str, Source]], env: dict[str, EnvVar], *, k8s: bool
              ) -> list[Word]:
    words: list[Word] = []
    index = 0
    while index < len(items):
        text, source = items[index]
        used = None
        # kubelet expands $(X) from every env entry, envFrom's too
        hidden = _k8s_unheld(text, env) if k8s else None
        if k8s:
            text, used = _expand_k8s(text, env)
        base = text.rsplit("/", 1)[-1]
        if (text in _SHELLS or base in ("sh", "bash")) and index + 2 < len(items) + 1:
            # sh -c "script": the script is shell text
            rest = items[index + 1:]
            flags = [t for t, _ in rest[:1] if t.startswith("-") and "c" in t]
            if flags and len(rest) > 1:
                script, script_source = rest[1]
                # each word names the variable its own text came from, not the
                # script's first (`--loglevel=${LEVEL} --concurrency=${N}`)
                names: list[str] = []
                if k8s:
                    script, _ = _expand_k8s(script, env, names)
                held: list[tuple[str, EnvVar]] = []
                expanded, _, cpu = _expand_shell(script, env, held, names)
                for part, line_end in _split_lines(expanded):
                    part, from_env = _unmarked(part, names)
                    marks = [held[int(i)] for i in _UNHELD_TOKEN.findall(part)]
                    part = _UNHELD_TOKEN.sub(lambda m, held=held: held[int(m.group(1))][0],
                                             part)
                    words.append(Word(text=part.replace("__NPROC__", "1"),
                                      source=script_source, from_env=from_env,
                                      cpu=cpu and "__NPROC__" in part,
                                      unheld=marks[0][1] if marks else
                                      _k8s_unheld(part, env) if k8s else None,
                                      line_end=line_end))
                index += 3
                continue
        words.append(Word(text=text, source=source, from_env=used, unheld=hidden))
        index += 1
    return words


def _k8s_unheld(text: str, env: dict[str, EnvVar]) -> EnvVar | None:
    """The first `$(X)` of `text` whose value is not held here (unheld)."""
    return next((var for m in _K8S_VAR.finditer(text)
                 if (var := unheld(m.group(1), env)) is not None), None)


class _ImageCommand(NamedTuple):
    """ENTRYPOINT and CMD of an image, each with the Dockerfile line that sets it."""

    entry: list[str]
    cmd: list[str]
    path: str
    entry_at: Source
    cmd_at: Source


def _dockerfile_lines(text: str) -> list[tuple[int, str]]:
    """(1-based line of its start, text) of each instruction, continuations joined."""
    out: list[tuple[int, str]] = []
    parts: list[str] = []
    start = 0
    for n, line in enumerate(text.splitlines(), 1):
        if not parts:
            start = n
        if line.endswith("\\"):
            parts.append(line[:-1])
            continue
        out.append((start, " ".join([*parts, line])))
        parts = []
    return out


class DockerCopy(NamedTuple):
    src: str  # relative to the build context ("." for all of it)
    dest: str  # absolute in the image


def dockerfile_copies(text: str) -> tuple[list[DockerCopy], str]:
    """COPY/ADD from the build context in the last stage, and its final WORKDIR."""
    copies: list[DockerCopy] = []
    workdir = "/"
    for _, line in _dockerfile_lines(text):
        words = line.split()
        if not words:
            continue
        op = words[0].upper()
        if op == "FROM":
            copies, workdir = [], "/"
        elif op == "WORKDIR" and len(words) > 1:
            workdir = posixpath.normpath(posixpath.join(workdir, words[1]))
        elif op in ("COPY", "ADD"):
            args = [w for w in words[1:] if not w.startswith("--")]
            if any(w.startswith("--from") for w in words[1:]) or len(args) < 2 \
                    or args[0].startswith("[") or "$" in line:
                continue
            dest = posixpath.normpath(posixpath.join(workdir, args[-1]))
            copies += [DockerCopy(posixpath.normpath(s), dest) for s in args[:-1]]
    return copies, workdir


def copied_from(app: AppSource, image: str, path: str) -> list[str]:
    """The app-relative paths the image's file at `path` (absolute, or relative to the
    WORKDIR) is copied from by the Dockerfile that builds `image` (pick_dockerfile),
    the last COPY first: `COPY docker/entrypoint.sh entrypoint.sh` under WORKDIR
    /usr/src/app puts docker/entrypoint.sh at /usr/src/app/entrypoint.sh."""
    f = pick_dockerfile(app, image)[0]
    if f is None:
        return []
    copies, workdir = dockerfile_copies(f.text)
    full = posixpath.normpath(posixpath.join(workdir, path))
    out: list[str] = []
    for c in reversed(copies):
        dest = c.dest.rstrip("/") or "/"
        if full == dest or full == posixpath.join(dest, posixpath.basename(c.src)):
            out.append(c.src)  # onto that name, or into that folder under its own name
        elif full.startswith(dest.rstrip("/") + "/"):
            out.append(posixpath.normpath(posixpath.join(c.src, full[len(dest):].strip("/"))))
    return out


def pick_dockerfile(app: AppSource, image: str) -> tuple[AppFile | None, str]:
    """Pure: the Dockerfile of the app's folder that builds `image`: the one the
    repository names for it (a skaffold/compose build's dockerfile, a Dockerfile named
    like the image: AppSource.image_dockerfiles), else the folder's own Dockerfile (what
    `docker build FOLDER` uses), else its only one. (None, why) when that is not
    determinable or the file named is outside the folder: no command is taken from a
    Dockerfile that may build another image (docker/backups.Dockerfile was read for
    the changelog.com app's command)."""
    files = app.of_kind("dockerfile")
    named = next((path for img, path in app.image_dockerfiles if img == image), None)
    if named is not None:
        chosen = next((f for f in files if f.path == named), None)
        return (chosen, "") if chosen is not None else \
            (None, f"{named}, which builds {image}, is outside the application source")
    if not files:
        return None, ""
    own = [f for f in files if f.rel == "Dockerfile"]
    if own or len(files) == 1:
        return (own or files)[0], ""
    shown = ", ".join(sorted(f.path for f in files)[:3]) + (
        f" and {len(files) - 3} more" if len(files) > 3 else "")
    return None, f"none of its Dockerfiles ({shown}) is named for {image or 'its image'}"


def dockerfile_doubt(container: Container, app: AppSource | None) -> str | None:
    """The notice that the container's command, which its manifest does not set, is
    not taken from a Dockerfile because none is known to build its image; else None."""
    if app is None or container.command:
        return None
    why = pick_dockerfile(app, container.image)[1]
    return f"{container.name}: command not taken from a Dockerfile: {why}" if why else None


def _dockerfile_command(app: AppSource, image: str = "") -> _ImageCommand | None:
    """ENTRYPOINT and CMD of the last stage of the Dockerfile that builds `image`
    (exec or shell form), with the Dockerfile's path and their lines (pick_dockerfile)."""
    f = pick_dockerfile(app, image)[0]
    if f is None:
        return None
    entry: list[str] = []
    cmd: list[str] = []
    entry_at = cmd_at = f.cite(None, "Dockerfile")
    # name -> its ENTRYPOINT, CMD and their lines
    stages: dict[str, tuple[list[str], list[str], Source, Source]] = {}
    stage = ""
    for n, line in _dockerfile_lines(f.text):
        m = re.match(r"\s*(FROM|ENTRYPOINT|CMD)\s+(.*)", line, re.IGNORECASE)
        if not m:
            continue
        word, rest = m.group(1).upper(), m.group(2).strip()
        if word == "FROM":
            if stage:
                stages[stage] = (entry, cmd, entry_at, cmd_at)
            words = [w for w in rest.split() if not w.startswith("--")]
            base = words[0].lower() if words else ""
            stage = words[2].lower() if len(words) >= 3 and words[1].lower() == "as" else ""
            # FROM an earlier stage keeps its ENTRYPOINT and CMD (DefectDojo's
            # `FROM release AS development`); another image's are not known here
            entry, cmd, entry_at, cmd_at = stages.get(
                base, ([], [], f.cite(None, "Dockerfile"), f.cite(None, "Dockerfile")))
            continue
        import json  # here: only Dockerfiles need it, and it is 3 ms of start-up

        try:
            parsed = jsontext.loads(rest) if rest.startswith("[") else ["/bin/sh", "-c", rest]
        except json.JSONDecodeError:
            parsed = ["/bin/sh", "-c", rest]
        if word == "ENTRYPOINT":
            entry, entry_at = [str(x) for x in parsed], f.cite(n, "Dockerfile")
            cmd = []
        else:
            cmd, cmd_at = [str(x) for x in parsed], f.cite(n, "Dockerfile")
    return _ImageCommand(entry, cmd, f.path, entry_at, cmd_at) if entry or cmd else None


def dockerfile_base(app: AppSource | None, image: str = "") -> tuple[str, Source] | None:
    """The image the last stage of the Dockerfile that builds `image` (pick_dockerfile)
    starts FROM, through earlier stages it names, lower-case with its tag, and its line."""
    f = pick_dockerfile(app, image)[0] if app is not None else None
    if f is None:
        return None
    stages: dict[str, tuple[str, Source]] = {}
    last: tuple[str, Source] | None = None
    for n, line in _dockerfile_lines(f.text):
        m = re.match(r"\s*FROM\s+(.*)", line, re.IGNORECASE)
        if not m:
            continue
        words = [w for w in m.group(1).split() if not w.startswith("--")]
        if not words:
            continue
        base = words[0].lower()
        last = stages.get(base, (base, f.cite(n, "FROM")))
        if len(words) >= 3 and words[1].lower() == "as":
            stages[words[2].lower()] = last
    return last


_ENV_PAIR = lazy(r"""([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|'[^']*'|\S*)""")


def dockerfile_env(app: AppSource | None, image: str = "") -> dict[str, EnvVar]:
    """The ENV of the last stage of the Dockerfile that builds `image` (pick_dockerfile,
    the one _dockerfile_command reads; when that is not determinable, the app's
    shallowest Dockerfile), with those of the earlier stages it is built FROM, each
    cited at its line; a value that expands a variable (`ENV NODE_ENV=$NODE_ENV` of a
    build ARG) is not known here: value None, from_ref "dockerfile". Below the
    manifest's env, which Kubernetes sets over the image's."""
    if app is None:
        return {}
    f = pick_dockerfile(app, image)[0] if image else None
    if f is None:
        files = sorted(app.of_kind("dockerfile"), key=lambda f: (f.rel.count("/"), f.rel))
        if not files:
            return {}
        f = files[0]
    env: dict[str, EnvVar] = {}
    stages: dict[str, dict[str, EnvVar]] = {}
    stage = ""
    for n, line in _dockerfile_lines(f.text):
        m = re.match(r"\s*(FROM|ENV)\s+(.*)", line, re.IGNORECASE)
        if not m:
            continue
        rest = m.group(2).strip()
        if m.group(1).upper() == "FROM":
            if stage:
                stages[stage] = env
            words = [w for w in rest.split() if not w.startswith("--")]
            base = words[0].lower() if words else ""
            stage = words[2].lower() if len(words) >= 3 and words[1].lower() == "as" else ""
            env = dict(stages.get(base, {}))
            continue
        if not rest:
            continue
        pairs = [(k, v) for k, v in _ENV_PAIR.findall(rest)] if "=" in rest.split()[0] \
            else [tuple(rest.split(None, 1))] if len(rest.split(None, 1)) == 2 else []
        for name, raw in pairs:
            value = raw[1:-1] if raw[:1] in "\"'" and raw[-1:] == raw[:1] and len(raw) > 1 \
                else raw
            known = "$" not in value or raw.startswith("'")
            env[name] = EnvVar(name=name, value=value if known else None,
                               source=f.cite(n, name), from_ref="dockerfile")
    return env


def process_env(env: dict[str, EnvVar], app: AppSource | None,
                image: str = "") -> dict[str, EnvVar]:
    """The variables the container's process starts with: the ENV of the Dockerfile that
    builds `image` (dockerfile_env) with the manifest's `env` over it (Kubernetes sets a
    container's env over its image's; the image's stays where the manifest is silent)."""
    return {**dockerfile_env(app, image), **env}


def rails_env(env: dict[str, EnvVar]) -> str:
    """Rails.env of a process with `env` (process_env): RAILS_ENV, else RACK_ENV, else
    "development" (railties lib/rails.rb Rails.env)."""
    for name in ("RAILS_ENV", "RACK_ENV"):
        var = env.get(name)
        if var is not None and var.value:
            return var.value
    return "development"


def _procfile_command(app: AppSource, container_name: str) -> tuple[list[str], str] | None:
    for f in app.of_kind("procfile"):
        entries: dict[str, tuple[str, int]] = {}
        for n, line in enumerate(f.text.splitlines(), 1):
            m = re.match(r"([A-Za-z0-9_-]+):\s*(.+)", line)
            if m:
                entries[m.group(1)] = (m.group(2), n)
        pick = entries.get(container_name) or entries.get("web")
        if pick:
            return ["/bin/sh", "-c", pick[0]], f"{f.path}:{pick[1]}"
    return None


class _Followed(NamedTuple):
    """A command a script runs, as written, with what the script set before it."""

    text: str
    source: Source
    scope: dict[str, EnvVar]  # every variable set, for expanding the command's words
    exported: dict[str, EnvVar]  # those the command's process inherits


def _entrypoint_function(app: AppSource, words: list[str], env: dict[str, EnvVar]
                         ) -> _Followed | None:
    """An ENTRYPOINT script that dispatches on its first argument to a shell function
    (`server() { exec gunicorn ... }`, then `case "$1" in server) server ;;`): the
    function's first top-level `exec` (else its last top-level command), read with the
    script's top-level assignments and the function's before it; else (every command in
    a branch) its first `exec` line."""
    if len(words) < 2:
        return None
    name = words[0].rsplit("/", 1)[-1]
    for f in app.of_kind("entrypoint"):
        if f.name != name:
            continue
        lines = f.text.splitlines()
        start = next((i for i, line in enumerate(lines)
                      if re.match(rf"\s*(?:function\s+)?{re.escape(words[1])}\s*\(\)", line)),
                     None)
        if start is None:
            return None
        end = next((i for i in range(start + 1, len(lines))
                    if lines[i].strip().startswith("}")), len(lines))
        # the script's own top-level assignments (`export X=...` before the `case`)
        outer = script_tail(f.text, env, f.cite, assignments_only=True)
        scope = outer.scope if outer is not None else dict(env)
        exported = outer.exported if outer is not None else {}
        body = "\n".join(lines[start + 1:end])
        found = script_tail(body, scope, lambda n, f=f, at=start: f.cite(at + 1 + n))
        if found is not None and found.text:
            return found._replace(exported={**exported, **found.exported})
        for i in range(start + 1, end):
            text = lines[i].strip()
            if text.startswith("exec "):
                return _Followed(text=text[5:], source=f.cite(i + 1), scope=scope,
                                 exported=exported)
    return None


# Shell compound commands: a line inside one runs only on a branch or in a loop.
_OPENS = frozenset({"if", "case", "for", "while", "until", "select"})
_CLOSES = frozenset({"fi", "esac", "done"})
_FUNCTION = lazy(r"^(?:function\s+)?[A-Za-z_][\w-]*\s*\(\)\s*\{?\s*$"
                 r"|^function\s+[A-Za-z_][\w-]*\s*\{?\s*$")
_ARRAY_SET = lazy(r"^([A-Za-z_]\w*)\+?=\((.*)$", re.S)
_HEREDOC = lazy(r"""(?<!<)<<(-?)\s*['"]?([A-Za-z_]\w*)['"]?""")
_ARRAY_USE = lazy(r'"?\$\{([A-Za-z_]\w*)\[[@*]\]\}"?')


def _script_file(app: AppSource, word: str, *, named: bool = False,
                 image: str = "") -> AppFile | None:
    """The app's shell script a command word runs (`./celery_with_exporter.sh`,
    `/etc/app/bin/start.sh`, `./docker/run`): the file at that path below the app folder
    (the path taken relative to the image's WORKDIR, where the app is copied), else the
    only script of that name. A word with no `.sh` is a script only when written as a
    path (`./docker/run`) or given to a shell (`named`: `sh run`, `. run`), and only a
    file with a shell shebang is one (source.classify_script): `gunicorn` is a program."""
    if not word.endswith(".sh") and not named and "/" not in word:
        return None
    scripts = app.of_kind("shell", "entrypoint")
    rel = word.removeprefix("./")
    exact = [f for f in scripts if f.rel == rel]
    if exact:
        return exact[0]
    # the file the image's Dockerfile copies to that path (`COPY docker/entrypoint.sh
    # entrypoint.sh`): Marquez's root also holds web/docker/entrypoint.sh, another image's
    for src in copied_from(app, image, word):
        copied = [f for f in scripts if f.rel == src]
        if copied:
            return copied[0]
    if "/" in rel.strip("/"):
        # `/app/docker/run` under WORKDIR /app, `docker/run` of an app copied below it
        parts = rel.strip("/").split("/")
        for k in range(len(parts) - 1):
            tail = "/".join(parts[k:])
            under = [f for f in scripts if f.rel == tail or f.rel.endswith("/" + tail)]
            if len(under) == 1 and tail.count("/") >= 1:
                return under[0]
    named_files = [f for f in scripts if f.name == word.rsplit("/", 1)[-1]]
    return named_files[0] if len(named_files) == 1 else None


# `sh x`, `bash -e x`, `. x`, `source x`: the script a shell or the current shell runs
_SCRIPT_RUNNERS = frozenset({"sh", "bash", "ash", "dash", "zsh", ".", "source"})
MAX_SCRIPT_DEPTH = 5  # scripts that run scripts: entrypoint.sh -> webserver.sh -> ...


def script_word(words: list[str]) -> tuple[str, bool] | None:
    """The script a command's words run (`./start.sh`, `sh start.sh`, `. ./env.sh`,
    `/usr/bin/env bash run`) and whether it was given to a shell; None: none (a program,
    `sh -c TEXT`, or a virtualenv's `source venv/bin/activate`: written by venv when the
    image is built, it sets PATH and VIRTUAL_ENV and starts nothing)."""
    rest = list(words)
    if rest and rest[0].rsplit("/", 1)[-1] == "env":
        rest = rest[1:]
    if rest and rest[0].rsplit("/", 1)[-1] in _SCRIPT_RUNNERS:
        rest = rest[1:]
        while rest and rest[0].startswith("-"):
            if "c" in rest[0]:
                return None  # `sh -c TEXT`: text, read by _follow
            rest = rest[1:]
        if rest and (rest[0] == "bin/activate" or rest[0].endswith("/bin/activate")):
            return None
        return (rest[0], True) if rest else None
    if rest and ("/" in rest[0] or rest[0].endswith(".sh")):
        return rest[0], False
    return None


class ScriptCommand(NamedTuple):
    """A command a script of the app always runs (in its order), read with the env."""

    line: CommandLine
    script: str  # the script's path
    background: bool  # sent to the background (`gunicorn ... &`): runs beside the rest
    chain: tuple[str, ...] = ()  # the scripts run to reach it, the first one's first


class ScriptRun(NamedTuple):
    """What the app's scripts a command runs run, nested scripts followed in place."""

    commands: list[ScriptCommand]
    scripts: list[str]  # each script followed, in order
    missing: list[str]  # scripts named that are not found in the application source


def script_run(container: Container, app: AppSource | None, cmd: CommandLine) -> ScriptRun:
    """The commands the app's shell scripts that `cmd` runs always run (not in a branch,
    loop or function): each segment that runs a script (`./entrypoint.sh`, `exec
    ./webserver.sh`, `sh x.sh`, `bash x`, `. x`, `source x`) is replaced by that script's
    commands, to MAX_SCRIPT_DEPTH levels, a script never twice in one chain."""
    out = ScriptRun([], [], [])
    if app is None:
        return out
    env = {e.name: e for e in (*container.env, *cmd.env)}
    for segment, background in cmd.jobs():
        _run_segment(app, [w.text for w in segment], env, out, (), background=background,
                     image=container.image)
    return out


def _installed_program(word: str, named: bool) -> bool:
    """A path in a `bin/` folder, not given to a shell and not a `.sh`, that is not one
    of the app's scripts: a program the image installs (`/opt/venv/bin/gunicorn`, a
    virtualenv's console script; `/usr/local/bin/celery`), run as that program."""
    folder = word.rsplit("/", 1)[0] if "/" in word else ""
    return not named and not word.endswith(".sh") and folder.rsplit("/", 1)[-1] in ("bin", "sbin")


def _run_segment(app: AppSource, words: list[str], env: dict[str, EnvVar], out: ScriptRun,
                 chain: tuple[str, ...], *, background: bool, image: str = "") -> bool:
    """Follow the script `words` run into `out`; False when they run none."""
    found = script_word(words)
    if found is None:
        return False
    script = _script_file(app, found[0], named=found[1], image=image)
    if script is None and _installed_program(*found):
        return False  # a program the image installs: the caller reads its command line
    if script is None:
        out.missing.append(found[0])
        return True
    if script.path in chain or len(chain) >= MAX_SCRIPT_DEPTH:
        return True  # a cycle (or a chain too deep): read no further
    out.scripts.append(script.path)
    # what the script sets (`WORKERS="${GUNICORN_WORKERS:-5}"`) expands its later lines
    # (DrDroidLab/PlayBooks start-server.sh `--workers $WORKER_COUNT`); the scripts it
    # runs inherit only what it exports (and what it was given)
    scope, inherited = dict(env), dict(env)
    for n, text, bg in top_level_jobs(script.text, env):
        src = script.cite(n, "script", text)
        _script_assignments(text, scope, inherited, src)
        line = CommandLine(words=tuple(_words_of([("/bin/sh", src), ("-c", src), (text, src)],
                                                 scope, k8s=False)), origin="script")
        nested = False
        for segment, job_bg in line.jobs():
            nested |= _run_segment(app, [w.text for w in segment], inherited, out,
                                   (*chain, script.path), background=background or bg or job_bg,
                                   image=image)
        if not nested:
            out.commands.append(ScriptCommand(line, script.path, background or bg,
                                             (*chain, script.path)))
    return True


def _script_assignments(text: str, scope: dict[str, EnvVar], inherited: dict[str, EnvVar],
                        src: Source) -> None:
    """Record a top-level `NAME=value ...` or `export NAME=value` line in `scope` (and in
    `inherited` when exported, or when it sets a variable the script was given)."""
    words = _split(text)
    export = words[:1] == ["export"]
    if not words or not (export or all(_NAME_EQ.fullmatch(w) for w in words)):
        return
    for word in words[1:] if export else words:
        if _NAME_EQ.fullmatch(word):
            var = _assigned(word, scope, src)
            scope[var.name] = var
            if export or var.name in inherited:
                inherited[var.name] = var
        elif export and word in scope:
            inherited[word] = scope[word]


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(1-based line, text) with backslash continuations joined and comment lines
    dropped."""
    out: list[tuple[int, str]] = []
    parts: list[str] = []
    start = 0
    for n, line in enumerate(text.splitlines(), 1):
        if not parts:
            start = n
            if line.lstrip().startswith("#"):
                continue
        if line.endswith("\\"):
            parts.append(line[:-1])
            continue
        out.append((start, " ".join([*parts, line]).strip()))
        parts = []
    return [(n, t) for n, t in out if t]


def _array_items(body: str) -> list[str]:
    """The items of a bash array body (`"--quiet"  # comment`), as written (quotes kept,
    so the command line built from them splits as the shell would)."""
    try:
        lexer = shlex.shlex(bounded(body), posix=False)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        return list(lexer)
    except ValueError:
        return body.split()


def top_level_commands(script: AppFile, env: dict[str, EnvVar] | None = None
                       ) -> list[tuple[int, str]]:
    """The commands a shell script always runs (not inside a branch, loop or function,
    not sent to the background), bash arrays they expand (`celery "${ARGS[@]}"`) written
    out: (line, command text). With `env`, an `if` whose test `env` decides runs its
    branch (_decided_ifs)."""
    return top_level_lines(script.text, env)


# `if [ "${X}" = "prefork" ]; then` (also `$X`, `==`, `!=`, `[[ ]]`): one test of one
# variable against a word, which the env decides when it holds the variable's value
_IF_TEST = lazy(r"""^if\s+\[\[?\s+(["']?)\$\{?([A-Za-z_]\w*)\}?\1\s+(==?|!=)\s+"""
                r"""(["']?)([^"'\s\]]*)\4\s+\]\]?\s*(;\s*then)?\s*$""")


def _if_end(lines: list[tuple[int, str]], start: int) -> tuple[int | None, int] | None:
    """(index of its `else` or None, index of its `fi`) for the `if` whose body starts at
    `start`; None when it has an `elif` or no `fi`."""
    depth, other = 0, None
    for k in range(start, len(lines)):
        line = lines[k][1]
        first = line.split(None, 1)[0].rstrip(";")
        if first in _OPENS:
            closed = re.search(r"(?:^|[;\s])(?:fi|esac|done)\s*(?:[;&|]|$)", line)
            depth += 0 if closed else 1
        elif first in _CLOSES:
            if not depth:
                return (other, k) if first == "fi" else None
            depth -= 1
        elif not depth and first == "elif":
            return None
        elif not depth and first == "else":
            other = k
    return None


def _decided_ifs(lines: list[tuple[int, str]], env: dict[str, EnvVar]
                 ) -> list[tuple[int, str]]:
    """`lines` with each `if [ "$X" = word ]; then A else B fi` whose X `env` holds
    replaced by the branch that runs (DefectDojo's entrypoint sets its Celery options
    in `if [ "${DD_CELERY_WORKER_POOL_TYPE}" = "prefork" ]`); other tests stay."""
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(lines):
        m = _IF_TEST.match(lines[i][1])
        var = env.get(m.group(2)) if m else None
        body = i + 1 if m and m.group(6) else i + 2
        if m and not m.group(6) and (i + 1 >= len(lines) or lines[i + 1][1] != "then"):
            var = None
        ends = _if_end(lines, body) if m and var is not None and var.value is not None \
            else None
        if m is None or ends is None or var is None or var.value is None:
            out.append(lines[i])
            i += 1
            continue
        other, fi = ends
        holds = (var.value == m.group(5)) != (m.group(3) == "!=")
        branch = lines[body:other if other is not None else fi] if holds else \
            lines[other + 1:fi] if other is not None else []
        out.extend(_decided_ifs(branch, env))
        i = fi + 1
    return out


def top_level_lines(text: str, env: dict[str, EnvVar] | None = None
                    ) -> list[tuple[int, str]]:
    """top_level_commands of a shell text (a file's, or a `sh -c` script's)."""
    return [(n, line) for n, line, bg in top_level_jobs(text, env) if not bg]


def top_level_jobs(text: str, env: dict[str, EnvVar] | None = None
                   ) -> list[tuple[int, str, bool]]:
    """top_level_lines with the commands sent to the background too (a server started
    with `&` before `exec nginx` is a process of the container): (line, command without
    its `&`, whether sent to the background)."""
    arrays: dict[str, list[str]] = {}
    out: list[tuple[int, str, bool]] = []
    depth = 0
    in_function = 0
    lines = _logical_lines(text)
    if env is not None:
        lines = _decided_ifs(lines, env)
    index = 0
    while index < len(lines):
        n, line = lines[index]
        index += 1
        heredoc = _HEREDOC.search(line)
        if heredoc and line[:heredoc.start()].count("((") > line[:heredoc.start()].count("))"):
            heredoc = None  # `$((1 << SHIFT))`: a shift in arithmetic, not a heredoc
        if heredoc:  # `psql <<'SQL'`: the lines up to SQL are its input, not commands
            # never closed: the rest of the script is its body, as bash reads it (and
            # not a scan to the end again for each such line)
            index = next((i + 1 for i in range(index, len(lines))
                          if lines[i][1] == heredoc.group(2)), len(lines))
        first = line.split(None, 1)[0].rstrip(";")
        if _FUNCTION.match(line):
            in_function += 1
            continue
        if in_function:
            if line == "}":
                in_function -= 1
            continue
        if first in _OPENS:
            closed = re.search(r"(?:^|[;\s])(?:fi|esac|done)\s*(?:[;&|]|$)", line)
            depth += 0 if closed else 1
            continue
        if first in _CLOSES:
            depth = max(0, depth - 1)
            continue
        if depth:
            continue
        m = _ARRAY_SET.match(line)
        if m:
            body = m.group(2)
            last = body
            while ")" not in last.split(" #", 1)[0] and index < len(lines):
                last = lines[index][1]
                body += "\n" + last
                index += 1
            items = _array_items(body.rsplit(")", 1)[0])
            name = m.group(1)
            arrays[name] = ([*arrays.get(name, []), *items] if "+=(" in line else items)
            continue
        bg = line.endswith("&") and not line.endswith("&&")
        text = _ARRAY_USE.sub(lambda u: " ".join(arrays.get(u.group(1), [u.group(0)])),
                              line[:-1].rstrip() if bg else line)
        out.append((n, text, bg))
    return out


def _split_commands(line: str) -> list[tuple[str, bool]]:
    """The commands of one shell line as written (quotes kept): split at `;`, `&&`,
    `||`, `|` and `&` outside quotes and `$(...)`, a `#` comment dropped; (text, sent to
    the background)."""
    out: list[tuple[str, bool]] = []
    buf: list[str] = []
    quote = ""
    depth = 0
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            buf.append(c)
            if c == "\\" and quote == '"' and i + 1 < len(line):
                buf.append(line[i + 1])
                i += 1
            elif c == quote:
                quote = ""
            i += 1
            continue
        if c == "\\" and i + 1 < len(line):
            buf += [c, line[i + 1]]
            i += 2
            continue
        if c in "'\"`":
            quote = c
        elif c == "(" and (depth or line[i - 1:i] == "$"):
            depth += 1
        elif c == ")" and depth:
            depth -= 1
        elif c == "#" and not depth and (not buf or buf[-1].isspace()):
            break
        elif c in ";&|" and not depth:
            two = line[i:i + 2]
            redirect = c == "&" and (line[i - 1:i] in (">", "<") or two == "&>")
            if not redirect:
                out.append(("".join(buf).strip(),
                            c == "&" and two != "&&"))
                buf = []
                i += 2 if two in ("&&", "||", ";;") else 1
                continue
        buf.append(c)
        i += 1
    out.append(("".join(buf).strip(), False))
    return [(t, bg) for t, bg in out if t]


_NAME_EQ = lazy(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", re.S)


def _assigned(word: str, scope: dict[str, EnvVar], source: Source) -> EnvVar:
    """`NAME=value` (quotes removed) as the shell sets it, expanded with `scope`. Its
    value is None (not known here) when it reads a variable whose value is not known (a
    Secret's, one not set, with no `:-` default) or a command's output. A value that is
    one variable (`${WORKERS_COUNT:-2}` with WORKERS_COUNT set) keeps that variable's
    source; otherwise the assignment's line is its source."""
    m = _NAME_EQ.fullmatch(word)
    assert m is not None
    name, value = m.group(1), m.group(2)
    src = replace(source, key=name)
    if "$(" in value or "`" in value:
        return EnvVar(name=name, value=None, source=src, from_ref=f"shell:{value}")
    refs = list(_SH_VAR.finditer(value))
    for ref in refs:
        var = scope.get(ref.group(1) or ref.group(3))
        if var is None and (hidden := unheld(ref.group(1) or ref.group(3), scope)):
            # an envFrom source not held may set it: not its `:-` fallback; `X=${X:-2}`
            # keeps the marker's citation (it may be set there)
            return EnvVar(name=name, value=None, from_ref=hidden.from_ref,
                          source=hidden.source if hidden.name == name else src,
                          secret=hidden.secret)
        if (var is None and ref.group(2) is None) or (var is not None and var.value is None):
            return EnvVar(name=name, value=None, source=src,
                          from_ref=var.from_ref if var is not None and var.from_ref
                          else f"shell:{ref.group(0)}",
                          secret=var is not None and var.secret)
    expanded, used, _ = _expand_shell(value, scope)
    if len(refs) == 1 and refs[0].span() == (0, len(value)) and used:
        src = replace(scope[used].source, key=name)
    return EnvVar(name=name, value=expanded, source=src)


def script_tail(text: str, env: dict[str, EnvVar], cite, *, assignments_only: bool = False
                ) -> _Followed | None:
    """What a shell script's process becomes: its first top-level `exec` command (the
    shell is replaced; nothing after runs), else its last top-level command (not in a
    branch, loop or function, not sent to the background), with the variables the
    script set before it (`export A=1`, `B=2`, and the command's own `C=3 prog`).
    `cite(n)` is the Source of the script's line n. With `assignments_only`, every
    top-level assignment, whatever follows (text ""). None: no such command."""
    scope = dict(env)
    exported: dict[str, EnvVar] = {}
    last: _Followed | None = None

    def assign(words: list[str], n: int, export: bool) -> None:
        for word in words:
            if _NAME_EQ.fullmatch(word):
                var = _assigned(word, scope, cite(n))
                scope[var.name] = var
                if export or var.name in exported or var.name in env:
                    exported[var.name] = var  # an inherited variable stays exported
            elif export and word in scope:
                exported[word] = scope[word]

    for n, line in top_level_lines(text, env):
        for command, background in _split_commands(line):
            if background:
                continue
            words = _split(command)
            if not words:
                continue
            if words[0] == "export" or all(_NAME_EQ.fullmatch(w) for w in words):
                assign([w for w in words if not w.startswith("-")], n,
                       export=words[0] == "export")
                continue
            if assignments_only:
                continue
            lead = 0
            while lead < len(words) and _NAME_EQ.fullmatch(words[lead]):
                lead += 1
            own = dict(exported)
            before = scope
            if lead:  # `WEB_CONCURRENCY=4 gunicorn app`: for this command only
                scope = dict(scope)
                saved = dict(exported)
                assign(words[:lead], n, export=True)
                own, exported = exported, saved
            rest = command
            for _ in range(lead):
                rest = re.sub(r"^\s*[A-Za-z_]\w*=(?:'[^']*'|\"(?:\\.|[^\"\\])*\"|\S)*\s*", "",
                              rest, count=1)
            found = _Followed(text=rest, source=cite(n), scope=scope, exported=own)
            scope = before
            if words[lead:lead + 1] == ["exec"]:
                return found._replace(text=re.sub(r"^exec\s+", "", rest))
            last = found
    if assignments_only:
        return _Followed(text="", source=cite(1), scope=scope, exported=exported)
    return last


def _shell_script_at(items: list[tuple[str, Source]]) -> bool:
    """items run `sh -c SCRIPT` (bash, /bin/sh, ...)."""
    if len(items) < 3:
        return False
    text = items[0][0]
    flag = items[1][0]
    return (text in _SHELLS or text.rsplit("/", 1)[-1] in ("sh", "bash")) \
        and flag.startswith("-") and "c" in flag


class _Resolved(NamedTuple):
    items: list[tuple[str, Source]]
    k8s: bool  # the items still hold $(VAR) references kubelet expands
    scope: dict[str, EnvVar]
    exported: dict[str, EnvVar]
    via: str  # "path:line" of the entrypoint function followed, else ""


def _follow(items: list[tuple[str, Source]], env: dict[str, EnvVar], app: AppSource | None,
            *, k8s: bool, entry: int) -> _Resolved:
    """The command the container's process becomes (module docstring): an ENTRYPOINT
    (its first `entry` items) handed a `sh -c` script runs the script; the script's
    `exec` (or last) command is read with what the script set before it, and when it
    (or the image's own command) is the image's entrypoint script with the name of one
    of its functions, the function's command replaces the words. Otherwise the words
    stay the whole script: readers of client programs (`until pg_isready; ...; psql`)
    look at each of its commands."""
    scope, exported, via = dict(env), {}, ""
    if entry and _shell_script_at(items[entry:]):
        items = items[entry:]
    words = [_expand_k8s(t, env)[0] if k8s else t for t, _ in items]
    if _shell_script_at(items):
        script, src = words[2], items[2][1]
        tail = script_tail(script, env, lambda _n: src)
        if tail is not None:
            scope, exported = tail.scope, tail.exported
            words = [w.text for w in _words_of([("sh", src), ("-c", src), (tail.text, src)],
                                               scope, k8s=False)]
    if app is None:
        return _Resolved(items, k8s, scope, exported, via)
    while words and (words[0] == "exec" or _NAME_EQ.fullmatch(words[0])):
        words = words[1:]
    # the entrypoint is a process of its own: it inherits the exported variables only
    fn = _entrypoint_function(app, words, {**env, **exported})
    if fn is not None:
        items = [("/bin/sh", fn.source), ("-c", fn.source), (fn.text, fn.source)]
        k8s, scope = False, fn.scope
        exported = {**exported, **fn.exported}
        via = f"{fn.source.path}:{fn.source.line}"
    return _Resolved(items, k8s, scope, exported, via)


def shell_command(text: str, source: Source, env: dict[str, EnvVar], *, origin: str
                  ) -> CommandLine:
    """A command line written as shell text (`./manage.py rq worker`), read with `env`."""
    return CommandLine(words=tuple(_words_of([("/bin/sh", source), ("-c", source),
                                              (text, source)], env, k8s=False)),
                       origin=origin)


def command_line(container: Container, app: AppSource | None, notices: list[str]
                 ) -> CommandLine:
    if not app and not container.command and not container.args:
        return CommandLine(words=(), origin="")  # nothing to read (most containers)
    env = {e.name: e for e in container.env}
    items = [(t, replace(container.source, key=f"command[{i}]"))
             for i, t in enumerate(container.command)]
    items += [(t, replace(container.source, key=f"args[{i}]"))
              for i, t in enumerate(container.args)]
    if len(container.word_sources) == len(items):  # each item at its own line
        items = [(src_t, src) for (src_t, _), src in zip(items, container.word_sources,
                                                          strict=True)]
    origin, where, entry, k8s = "manifest", "", 0, True
    if not container.command and app:
        image = _dockerfile_command(app, container.image)
        procfile = _procfile_command(app, container.name)
        if image is not None and (image.entry or not container.args):
            entrypoint, where = image.entry, image.path
            # args replace CMD and keep ENTRYPOINT
            items = [*((w, image.entry_at) for w in entrypoint),
                     *(items if container.args else ((w, image.cmd_at) for w in image.cmd))]
            origin, entry, k8s = "Dockerfile", len(entrypoint), False
        elif image is None and procfile is not None:
            words, where = procfile
            path, _, line = where.partition(":")
            src = Source(path=path, line=int(line) if line.isdigit() else None, key="Procfile")
            items = [(w, src) for w in words]
            origin, k8s = "Procfile", False
    if not items:
        return CommandLine(words=(), origin="")
    if container.args and origin == "Dockerfile":
        # the manifest's args still hold $(VAR): expand them (not the Dockerfile's words)
        items = [(_expand_k8s(t, env)[0], s) if i >= entry else (t, s)
                 for i, (t, s) in enumerate(items)]
        k8s = False
    followed = _follow(items, env, app, k8s=k8s, entry=entry)
    if followed.via:
        how = ("the container's command runs it" if container.command else
               "the image's ENTRYPOINT runs the manifest's args" if container.args else
               "the manifest sets none")
        where, origin = followed.via, "entrypoint"
        notices.append(f"{container.name}: command taken from {where} ({how})")
    elif origin != "manifest":
        notices.append(f"{container.name}: command taken from {where} (the manifest sets "
                       "none)" if not container.args else
                       f"{container.name}: the manifest's args run by the ENTRYPOINT of "
                       f"{where}")
    return CommandLine(words=tuple(_words_of(followed.items, followed.scope,
                                             k8s=followed.k8s)),
                       origin=origin, env=tuple(followed.exported.values()))


# Servers that speak no PostgreSQL protocol: a container whose manifest command runs one
# opens no database connection, whatever env the chart gives every container (Zammad's
# chart gives its nginx container the database env of the Rails ones). Not openresty:
# OpenResty's Lua (pgmoon, Kong) does connect.
NON_CLIENT_SERVERS = frozenset({"nginx", "httpd", "apache2", "apachectl", "haproxy",
                                "envoy", "caddy", "varnishd", "squid", "memcached",
                                "redis-server"})


# Images of programs that open no PostgreSQL connection though their charts give them
# the database env of the application beside them: immich's machine learning service
# (immich-app/immich machine-learning/immich_ml/config.py: MACHINE_LEARNING_* and
# IMMICH_* settings only; sepffuzzball/fuzzlab gives it DB_URL)
NON_CLIENT_IMAGES = frozenset({"immich-machine-learning"})


# ruby's prometheus_exporter collector loads Ruby of the app only from the files these
# name (discourse/prometheus_exporter@3785ea90 (v2.3.0) exe/prometheus_exporter:44-48)
_EXPORTER_LOADS = ("-c", "--collector", "-a", "--type-collector")


def _prometheus_exporter(texts: list[str]) -> int | None:
    """The index of `prometheus_exporter` when the command runs the gem's collector
    server (`bundle exec prometheus_exporter --bind 0.0.0.0`) with no collector file of
    the application: it requires only the gem's own lib and server
    (discourse/prometheus_exporter@3785ea90 (v2.3.0) exe/prometheus_exporter:8-9), not
    Rails, so it opens no database connection; the app's processes send it metrics."""
    i = 0
    while i < len(texts) and (texts[i] in ("bundle", "exec", "env")
                              or re.fullmatch(r"[A-Za-z_]\w*=.*", texts[i])):
        i += 1
    if i >= len(texts) or texts[i] != "prometheus_exporter":
        return None
    loads = any(t in _EXPORTER_LOADS or t.startswith(tuple(f"{o}=" for o in _EXPORTER_LOADS
                                                           if o.startswith("--")))
                for t in texts[i + 1:])
    return None if loads else i


def non_client_server(container: Container) -> Word | None:
    """The word of the manifest's command that runs a server of NON_CLIENT_SERVERS (the
    program the last shell segment runs, with none but such servers sent to the
    background beside it), or the image of NON_CLIENT_IMAGES; None."""
    if image_name(container.image).lower() in NON_CLIENT_IMAGES:
        return Word(text=container.image, source=container.source)
    if not container.command and not container.args:
        return None
    jobs = command_line(container, None, []).jobs()
    if not jobs:
        return None
    # a program sent to the background before the last (`gunicorn app &` then `nginx`)
    # runs beside it: the container is a client unless that one is such a server too
    if not all(words[0].text.rsplit("/", 1)[-1] in NON_CLIENT_SERVERS
               for words, bg in jobs if bg):
        return None
    segments = [words for words, _ in jobs]
    first = segments[-1][0]
    if first.text.rsplit("/", 1)[-1] in NON_CLIENT_SERVERS:
        return first
    # a Prefect worker (or 2.x agent) runs flows through the API, not the database
    # (the prefect-worker chart is given the server's database env too)
    texts = [w.text.rsplit("/", 1)[-1] for w in segments[-1]]
    if (exporter := _prometheus_exporter(texts)) is not None:
        return segments[-1][exporter]
    for i, text in enumerate(texts[:-1]):
        if text == "prefect" and texts[i + 1] in ("worker", "agent"):
            return segments[-1][i]
        # Synapse's configuration check only loads the configuration (element-hq/synapse
        # synapse/config/__main__.py main: HomeServerConfig.load_config, then prints it)
        if text == "-m" and texts[i + 1] == "synapse.config":
            return segments[-1][i + 1]
    return None
