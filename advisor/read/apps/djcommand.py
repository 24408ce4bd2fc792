"""A Celery worker started by a Django management command (`python manage.py
run_celery_prod`): the command's module, <app>/management/commands/<name>.py, builds
the worker's argv and starts it (`subprocess.call(shlex.split("celery -A main worker
..."))`, `app.worker_main(["worker", ...])`). Read from the module's literals (never
imported or run): the one Celery worker command line it writes, so its -c/--concurrency,
or Celery's default (cpu_count() of the node), applies as for `celery worker` itself.

Django finds a command in each installed app's management/commands/<name>.py
(django/core/management/__init__.py find_commands/get_commands); the app order is not
read here, so two modules of one name that start different workers are not told apart
(unknown). A worker command line with a value not written in the module where it can
change the pool (`-c {n}`, or a field that may add options) is unknown, never the
default.
"""

from __future__ import annotations

import ast
import re
import shlex
from typing import TYPE_CHECKING, NamedTuple

from advisor.model import Source
from advisor.read.apps.cmdline import CommandLine, Word
from advisor.read.apps.pyeval import parse
from advisor.read.shellwords import bounded

if TYPE_CHECKING:
    from advisor.read.apps.source import AppFile, AppSource

_MANAGE = ("manage.py", "django-admin", "django-admin.py")
# options that set the pool's size or kind (celery/bin/worker.py)
_POOL_OPTIONS = ("-c", "--concurrency", "--autoscale", "-P", "--pool")
_FIELD = "${?}"  # a value the module computes (an f-string field, a list item not literal)


class Managed(NamedTuple):
    """What a `manage.py <command>` runs: `words` (after `celery`) when read, with the
    place they are written (`where`); else `why` it is unknown. `command` names it."""

    command: str
    where: str
    words: list[Word] | None = None
    why: str = ""


def manage_command(cmd: CommandLine) -> tuple[str, list[Word]] | None:
    """(command name, its arguments) of `python manage.py <command> ...`/`django-admin`."""
    for segment in cmd.segments():
        for i, w in enumerate(segment):
            if w.text.rsplit("/", 1)[-1] not in _MANAGE:
                continue
            rest = segment[i + 1:]
            while rest and rest[0].text.startswith("-"):  # --settings=..., -v 2
                rest = rest[1:]
            if rest and re.fullmatch(r"[A-Za-z_]\w*", rest[0].text):
                return rest[0].text, rest[1:]
    return None


def command_modules(app: AppSource, name: str) -> list[AppFile]:
    return sorted((f for f in app.of_kind("python")
                   if f.rel == f"management/commands/{name}.py"
                   or f.rel.endswith(f"/management/commands/{name}.py")),
                  key=lambda f: f.rel)


def _text(node: ast.expr, pad: str = " ") -> str | None:
    """A string literal, or an f-string with each field as _FIELD (a word of its own
    when `pad`: `{celery_args}` may be several)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else f"{pad}{_FIELD}{pad}"
                       for v in node.values)
    return None


def _items(node: ast.expr) -> list[str] | None:
    """A list/tuple literal's items as words (_FIELD for one not a string literal)."""
    if not isinstance(node, ast.List | ast.Tuple):
        return None
    out = []
    for e in node.elts:
        text = _text(e, pad="")
        out.append(text if text is not None else _FIELD)
    return out


def _split(text: str) -> list[str]:
    try:
        return shlex.split(bounded(text))
    except ValueError:
        return text.split()


def _worker_argv(words: list[str]) -> list[str] | None:
    """The words after `celery` when they start a worker: `celery ... worker ...`,
    `python -m celery ... worker`; None for anything else (a message, beat)."""
    if len(words) >= 3 and words[0].rsplit("/", 1)[-1].startswith("python") \
            and words[1] == "-m":
        words = words[2:]
    if not words or words[0].rsplit("/", 1)[-1] != "celery" or "worker" not in words:
        return None
    return words[1:]


def _candidates(tree: ast.Module) -> list[tuple[list[str], int]]:
    """Each Celery worker command line the module writes, with its line: a string or
    list whose first word is celery, or the argv of a `worker_main(...)` call."""
    found: list[tuple[list[str], int]] = []
    # an f-string's literal parts are read with it, not as strings of their own
    parts = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if id(node) in parts:
            continue
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "worker_main":
            arg = node.args[0] if node.args else next(
                (k.value for k in node.keywords if k.arg == "argv"), None)
            items = _items(arg) if arg is not None else None
            if items is None:
                found.append(([_FIELD], line))  # argv not a literal (or sys.argv)
            else:
                found.append((items[1:] if items[:1] == ["celery"] else items, line))
            continue
        words = _items(node) if isinstance(node, ast.List | ast.Tuple) else None
        if words is None and isinstance(node, ast.Constant | ast.JoinedStr):
            text = _text(node)
            words = _split(text) if text is not None else None
        argv = _worker_argv(words) if words else None
        if argv is not None:
            found.append((argv, line))
    return found


def _unread_option(argv: list[str]) -> str | None:
    """Why a command line with computed values is not read: a pool option given one, or
    a field standing alone (it may hold any options); None when every computed value is
    another option's (`-Q {queues}`)."""
    for i, word in enumerate(argv):
        if _FIELD not in word:
            continue
        option = word.split("=", 1)[0] if word.startswith("-") else \
            (argv[i - 1] if i and argv[i - 1].startswith("-") and "=" not in argv[i - 1]
             else "")
        if option in _POOL_OPTIONS:
            return f"its {option} value is computed"
        if not option:
            return "a computed part of it may add options"
    return None


def read_managed(app: AppSource | None, cmd: CommandLine) -> Managed | None:
    """The Celery worker a `manage.py <command>` starts, read from the command's module;
    None when the command is not the app's own or starts no Celery worker."""
    given = manage_command(cmd)
    if given is None or app is None:
        return None
    name, extra = given
    starts: list[tuple[list[str], AppFile, int]] = []
    for f in command_modules(app, name):
        tree, _error, _line = parse(f.text, f.path)
        if tree is not None:
            starts += [(argv, f, line) for argv, line in _candidates(tree)]
    if not starts:
        return None
    first_file, first_line = starts[0][1], starts[0][2]
    where = first_file.cite(first_line).label()
    if len({tuple(argv) for argv, _, _ in starts}) > 1:
        return Managed(name, where, why=(
            f"`manage.py {name}` starts one of {len(starts)} Celery worker command lines "
            f"({', '.join(f.cite(n).label() for _, f, n in starts)}): which one is not read"))
    argv, f, line = starts[0]
    if (unread := _unread_option(argv)) is not None:
        return Managed(name, where, why=(
            f"`manage.py {name}` starts `celery {' '.join(argv)}` ({where}); {unread}"))
    passed = [w.text for w in extra]
    if any(t.split("=", 1)[0] in _POOL_OPTIONS for t in passed):
        return Managed(name, where, why=(
            f"`manage.py {name}` is given {' '.join(passed)} ({extra[0].source.label()}), "
            f"which its module ({where}) may pass to the Celery worker; not followed"))
    source = f.cite(line)
    return Managed(name, where, words=[
        Word(text=t, source=Source(path=source.path, line=source.line)) for t in argv])
