"""A container's command line as words, the way the process will see them.

Kubernetes expands `$(VAR)` in command/args from the container env (kubelet); a shell
(`sh -c "..."`) further expands `$VAR`, `${VAR}`, `${VAR:-default}`. When the
manifest sets no command, the image's CMD/ENTRYPOINT applies: taken from the app's
Dockerfile, or a Procfile entry, with a notice saying so.
"""

from __future__ import annotations

import re
import shlex

from msgspec.structs import replace

from advisor.lazyregex import lazy
from advisor.model import Container, EnvVar, Frozen, Source
from advisor.read.apps.locate import image_name
from advisor.read.apps.source import AppFile, AppSource

_SHELLS = {"sh", "bash", "ash", "dash", "zsh", "/bin/sh", "/bin/bash", "/usr/bin/env"}
_K8S_VAR = lazy(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
_SH_VAR = lazy(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


class Word(Frozen, kw_only=True):
    text: str
    source: Source
    from_env: str | None = None  # the env var that supplied (part of) it
    cpu: bool = False  # came from $(nproc)


class CommandLine(Frozen, kw_only=True):
    words: tuple[Word, ...]
    origin: str  # "manifest", "Dockerfile", "Procfile", ""

    def segments(self) -> list[list[Word]]:
        """Split at shell separators (&&, ;, |) and drop `exec`/env assignments."""
        out: list[list[Word]] = [[]]
        for w in self.words:
            if w.text in ("&&", ";", "||", "|"):
                out.append([])
                continue
            if not out[-1] and (w.text == "exec" or re.fullmatch(r"[A-Za-z_]\w*=.*", w.text)):
                continue
            out[-1].append(w)
        return [s for s in out if s]


def _expand_k8s(text: str, env: dict[str, EnvVar]) -> tuple[str, str | None]:
    used: list[str] = []

    def sub(m: re.Match[str]) -> str:
        var = env.get(m.group(1))
        if var is None or var.value is None:
            return m.group(0)  # kubelet leaves unknown references as written
        used.append(m.group(1))
        return var.value

    return _K8S_VAR.sub(sub, text), (used[0] if used else None)


def _expand_shell(text: str, env: dict[str, EnvVar]) -> tuple[str, str | None, bool]:
    used: list[str] = []
    cpu = "$(nproc)" in text or "`nproc`" in text
    text = text.replace("$(nproc)", "__NPROC__").replace("`nproc`", "__NPROC__")

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(3)
        var = env.get(name)
        if var is not None and var.value is not None:
            used.append(name)
            return var.value
        if m.group(2) is not None:
            return m.group(2)
        return m.group(0)

    return _SH_VAR.sub(sub, text), (used[0] if used else None), cpu


def _split(text: str) -> list[str]:
    # a backslash-newline joins lines (the Airflow chart's `exec \<newline>airflow celery
    # worker`); shlex would keep the newline in the next word
    text = text.replace("\\\n", "")
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return text.split()


def _words_of(items: list[tuple[str, Source]], env: dict[str, EnvVar], *, k8s: bool
              ) -> list[Word]:
    words: list[Word] = []
    index = 0
    while index < len(items):
        text, source = items[index]
        used = None
        if k8s:
            text, used = _expand_k8s(text, env)
        base = text.rsplit("/", 1)[-1]
        if (text in _SHELLS or base in ("sh", "bash")) and index + 2 < len(items) + 1:
            # sh -c "script": the script is shell text
            rest = items[index + 1:]
            flags = [t for t, _ in rest[:1] if t.startswith("-") and "c" in t]
            if flags and len(rest) > 1:
                script, script_source = rest[1]
                if k8s:
                    script, _ = _expand_k8s(script, env)
                expanded, used2, cpu = _expand_shell(script, env)
                for part in _split(expanded):
                    words.append(Word(text=part.replace("__NPROC__", "1"),
                                      source=script_source, from_env=used2,
                                      cpu=cpu and "__NPROC__" in part))
                index += 3
                continue
        words.append(Word(text=text, source=source, from_env=used))
        index += 1
    return words


def _dockerfile_command(app: AppSource) -> tuple[list[str], str] | None:
    """ENTRYPOINT + CMD of the last stage of the app's Dockerfile (exec or shell form)."""
    files = sorted(app.of_kind("dockerfile"), key=lambda f: (f.rel.count("/"), f.rel))
    if not files:
        return None
    f = files[0]
    entry: list[str] = []
    cmd: list[str] = []
    stages: dict[str, tuple[list[str], list[str]]] = {}  # name -> its ENTRYPOINT, CMD
    stage = ""
    logical = re.sub(r"\\\n", " ", f.text)
    for line in logical.splitlines():
        m = re.match(r"\s*(FROM|ENTRYPOINT|CMD)\s+(.*)", line, re.IGNORECASE)
        if not m:
            continue
        word, rest = m.group(1).upper(), m.group(2).strip()
        if word == "FROM":
            if stage:
                stages[stage] = (entry, cmd)
            words = [w for w in rest.split() if not w.startswith("--")]
            base = words[0].lower() if words else ""
            stage = words[2].lower() if len(words) >= 3 and words[1].lower() == "as" else ""
            # FROM an earlier stage keeps its ENTRYPOINT and CMD (DefectDojo's
            # `FROM release AS development`); another image's are not known here
            entry, cmd = stages.get(base, ([], []))
            continue
        import json  # here: only Dockerfiles need it, and it is 3 ms of start-up

        try:
            parsed = json.loads(rest) if rest.startswith("[") else ["/bin/sh", "-c", rest]
        except json.JSONDecodeError:
            parsed = ["/bin/sh", "-c", rest]
        if word == "ENTRYPOINT":
            entry = [str(x) for x in parsed]
            cmd = []
        else:
            cmd = [str(x) for x in parsed]
    full = entry + cmd
    return (full, f.path) if full else None


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


def _entrypoint_function(app: AppSource, words: list[str]) -> tuple[list[str], str, str] | None:
    """An ENTRYPOINT script that dispatches on its first argument to a shell function
    (`server() { exec gunicorn ... }`, then `case "$1" in server) server ;;`): the
    function's exec line for that argument."""
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
        for i in range(start + 1, min(len(lines), start + 40)):
            text = lines[i].strip()
            if text.startswith("}"):
                break
            if text.startswith("exec "):
                return (["/bin/sh", "-c", text[5:]], f"{f.path}:{i + 1 + f.line_offset}",
                        "entrypoint")
    return None


# Shell compound commands: a line inside one runs only on a branch or in a loop.
_OPENS = frozenset({"if", "case", "for", "while", "until", "select"})
_CLOSES = frozenset({"fi", "esac", "done"})
_FUNCTION = lazy(r"^(?:function\s+)?[A-Za-z_][\w-]*\s*\(\)\s*\{?\s*$"
                 r"|^function\s+[A-Za-z_][\w-]*\s*\{?\s*$")
_ARRAY_SET = lazy(r"^([A-Za-z_]\w*)\+?=\((.*)$", re.S)
_ARRAY_USE = lazy(r'"?\$\{([A-Za-z_]\w*)\[[@*]\]\}"?')


def _script_file(app: AppSource, word: str) -> AppFile | None:
    """The app's shell script a command word runs (`./celery_with_exporter.sh`,
    `/etc/app/bin/start.sh`): the file at that path below the app folder, else the only
    script of that name."""
    if not word.endswith(".sh"):
        return None
    scripts = app.of_kind("shell", "entrypoint")
    rel = word.removeprefix("./")
    exact = [f for f in scripts if f.rel == rel]
    if exact:
        return exact[0]
    named = [f for f in scripts if f.name == word.rsplit("/", 1)[-1]]
    return named[0] if len(named) == 1 else None


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
        lexer = shlex.shlex(body, posix=False)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        return list(lexer)
    except ValueError:
        return body.split()


def top_level_commands(script: AppFile) -> list[tuple[int, str]]:
    """The commands a shell script always runs (not inside a branch, loop or function,
    not sent to the background), bash arrays they expand (`celery "${ARGS[@]}"`) written
    out: (line, command text)."""
    arrays: dict[str, list[str]] = {}
    out: list[tuple[int, str]] = []
    depth = 0
    in_function = 0
    lines = _logical_lines(script.text)
    index = 0
    while index < len(lines):
        n, line = lines[index]
        index += 1
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
        if line.endswith("&") and not line.endswith("&&"):
            continue  # a background job, not what the container's process becomes
        out.append((n, _ARRAY_USE.sub(
            lambda u: " ".join(arrays.get(u.group(1), [u.group(0)])), line)))
    return out


def wrapped_commands(container: Container, app: AppSource | None, cmd: CommandLine,
                     ) -> tuple[list[CommandLine], str]:
    """When the command runs one of the app's shell scripts (`./celery_with_exporter.sh`,
    `bash start.sh`): each command the script always runs, as a command line read with
    the container's env, and the script as shown; ([], "") otherwise."""
    segments = cmd.segments()
    if app is None or not segments:
        return [], ""
    words = [w.text for w in segments[0]]
    if words[0].rsplit("/", 1)[-1] in ("sh", "bash") and len(words) > 1:
        words = words[1:]
    script = _script_file(app, words[0])
    if script is None:
        return [], ""
    env = {e.name: e for e in container.env}
    out = []
    for n, text in top_level_commands(script):
        src = script.cite(n, "script", text)
        out.append(CommandLine(words=tuple(_words_of([("/bin/sh", src), ("-c", src),
                                                      (text, src)], env, k8s=False)),
                               origin="script"))
    return out, script.path


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
        items = [(t, src) for (t, _), src in zip(items, container.word_sources, strict=True)]
    if container.command or not app:
        if not items:
            return CommandLine(words=(), origin="")
        return CommandLine(words=tuple(_words_of(items, env, k8s=True)), origin="manifest")
    image = _dockerfile_command(app)
    procfile = _procfile_command(app, container.name)
    chosen = None
    if image is not None:
        words, where = image
        if container.args:  # args replace CMD, keep ENTRYPOINT: not known apart here
            words = [*words[:1], *container.args]
        chosen = (words, where, "Dockerfile")
    elif procfile is not None:
        chosen = (procfile[0], procfile[1], "Procfile")
    if chosen is None:
        return CommandLine(words=tuple(_words_of(items, env, k8s=True)),
                           origin="manifest" if items else "")
    words, where, origin = chosen
    script = _entrypoint_function(app, words)
    if script is not None:
        words, where, origin = script
    notices.append(f"{container.name}: command taken from {where} (the manifest sets none)")
    path, _, line = where.partition(":")
    src = Source(path=path, line=int(line) if line.isdigit() else None, key=origin)
    return CommandLine(words=tuple(_words_of([(w, src) for w in words], env, k8s=False)),
                       origin=origin)


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


def non_client_server(container: Container) -> Word | None:
    """The word of the manifest's command that runs a server of NON_CLIENT_SERVERS (the
    program the last shell segment runs), or the image of NON_CLIENT_IMAGES; None."""
    if image_name(container.image).lower() in NON_CLIENT_IMAGES:
        return Word(text=container.image, source=container.source)
    if not container.command and not container.args:
        return None
    segments = command_line(container, None, []).segments()
    if not segments:
        return None
    first = segments[-1][0]
    if first.text.rsplit("/", 1)[-1] in NON_CLIENT_SERVERS:
        return first
    # a Prefect worker (or 2.x agent) runs flows through the API, not the database
    # (the prefect-worker chart is given the server's database env too)
    texts = [w.text.rsplit("/", 1)[-1] for w in segments[-1]]
    for i, text in enumerate(texts[:-1]):
        if text == "prefect" and texts[i + 1] in ("worker", "agent"):
            return segments[-1][i]
    return None
