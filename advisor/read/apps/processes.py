"""Processes per pod (and threads per process): each process has its own pool, so the
per-pod figure is processes x pool size.

Sources read (versions whose source was checked):
- gunicorn 27.0.1 (gunicorn/config.py): `-w/--workers`, default
  `int(os.environ.get("WEB_CONCURRENCY", 1))`; `--threads` default 1; `-c/--config`,
  default `./gunicorn.conf.py`. Later beats earlier: WEB_CONCURRENCY < config file <
  GUNICORN_CMD_ARGS < command line (gunicorn docs, "Configuration Overview"). The
  same defaults in every tag 19.0 to 26.1.0 (workers: 19.0 config.py:518, 20.1.0 :640,
  23.0.0 :649, 26.1.0 :709; threads 1 from 19.0); before 19.0 workers was 1 and
  WEB_CONCURRENCY not read (18.0 config.py:499, a8ce74b2 "Honor $WEB_CONCURRENCY").
  The default is cited at the version the app pins (pydeps.python_pin).
- uvicorn 0.55.0 (uvicorn/config.py:357, main.py:71): `--workers`, else
  $WEB_CONCURRENCY, else 1; every option also as UVICORN_<NAME> env (click
  auto_envvar_prefix), so UVICORN_WORKERS works. `--limit-concurrency` bounds the
  connections and tasks of a process. gunicorn `-k uvicorn.workers.UvicornWorker` runs
  it with no such limit (UvicornWorker.CONFIG_KWARGS, a subclass's only). Daphne runs
  one process with no limit.
- Celery (celery/worker/worker.py, setup_defaults): `-c/--concurrency`, default
  `cpu_count()` of the machine; `-P threads|gevent|eventlet|solo` runs one process.
  `--autoscale=MAX,MIN` (v5.6.3 celery/bin/worker.py:75-97 Autoscale: the larger number
  is MAX whatever the order, one number N is N,0) replaces --concurrency: the pool starts
  at MIN (celery/worker/components.py:126-127, :144) and the autoscaler grows it to MAX
  under load (celery/worker/autoscale.py:83-87). prefork, gevent and eventlet pools grow;
  the threads pool has no grow and stays at MIN (celery/concurrency/thread.py:39), solo
  stays one process.
- Puma v8.0.1 (lib/puma/configuration.rb): workers default 0 (one process), env
  WEB_CONCURRENCY (`auto` = processor count), threads 0:5 on MRI, env
  PUMA_MAX_THREADS/MAX_THREADS; the config file (config/puma.rb) overrides env
  defaults; the command line overrides both.
- Sidekiq v8.1.7 (lib/sidekiq/config.rb:15, cli.rb:290): concurrency 5, else
  RAILS_MAX_THREADS when set; `-c`, config/sidekiq.yml `concurrency`. One process.
- PHP-FPM: `pm.max_children` of the pool config (www.conf); each child is a process.
- PM2: `-i N|max|0` / ecosystem `instances` (max and 0 = CPU count); node `cluster.fork()`.
- uWSGI (docs "Configuring uWSGI", "uWSGI Options"): `-p/--processes/--workers`,
  `--threads`, an ini file (`uwsgi app.ini`, `--ini`) with `processes`/`workers`,
  `threads` and `if-env`/`if-not-env` ... `endif` blocks; every option also as env
  UWSGI_<OPTION>. Default 1 process, 1 thread. `attach-daemon` commands run next to
  the workers: each `manage.py` daemon is one more process with its own connection.
  Order assumed: ini < env < command line.
- Sentry `sentry run web` (sentry 23.7.1, the last on PyPI, sentry/services/http.py
  SentryHTTPServer; the same in later sources read): uWSGI with the settings'
  SENTRY_WEB_OPTIONS dict, `setdefault("workers", 1)`, `setdefault("threads", 2)`,
  `enable-threads` forced; `--workers/-w N` (sentry/runner/commands/run.py, default 0 =
  unset) replaces workers; the options become UWSGI_* env by `env.setdefault`, so a
  container's own UWSGI_WORKERS/UWSGI_THREADS win over both. (2016 releases had
  workers 3, threads 4.)
- supervisord (Supervisor 4.3.0): each `[program:x]` is numprocs processes (default 1),
  read with `%(ENV_X)s` from the container's env: advisor/read/apps/supervisord.py.

The command is read with what its shell script exports before it (cmdline.CommandLine.env,
e.g. Redash's `export WORKERS_COUNT=${WORKERS_COUNT:-2}` before `exec supervisord`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple, Protocol

from msgspec import field
from msgspec.structs import replace

from advisor.lazyregex import lazy
from advisor.model import Container, CpuFormula, EnvVar, Frozen, Source, Term
from advisor.read.apps.cmdline import (
    CommandLine,
    ScriptRun,
    Word,
    command_line,
    copied_from,
    dockerfile_base,
    process_env,
    rails_env,
    script_run,
)
from advisor.read.apps.envfrom import env_from_hidden, env_from_label, env_from_names
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.pydeps import python_pin, version_tuple
from advisor.read.apps.pyeval import PyScope, hidden_note, module_names, parse
from advisor.read.apps.rubyeval import RubyScope, ruby_eval
from advisor.read.apps.sidekiq_capsules import (
    Capsule,
    boot_files,
    initializer_capsules,
    yml_capsules,
)

if TYPE_CHECKING:
    from advisor.read.apps.source import AppSource


class ContainerReading(Protocol):
    """What process detection reads of a container (apps.base.StackContext is one):
    detection sits below the pool readers, so it names what it needs, not their context."""

    container: Container
    app: AppSource | None
    notices: list[str]

    def env(self, name: str) -> EnvVar | None: ...
    def env_map(self) -> dict[str, EnvVar]: ...
    def env_source(self, name: str) -> Source: ...
    def env_value(self, name: str) -> str | None: ...
    def problem(self, source: Source, message: str, *, fatal: bool = False,
                program: str = "") -> None: ...


class _ScriptEnv:
    """A container read with the variables its command's script exports before the
    command (CommandLine.env, e.g. `export WORKERS_COUNT=${WORKERS_COUNT:-2}` in an
    entrypoint function): the process inherits them, over the container's own."""

    def __init__(self, ctx: ContainerReading, exported: tuple[EnvVar, ...]) -> None:
        names = {e.name for e in exported}
        env = (*(e for e in ctx.container.env if e.name not in names), *exported)
        self.container = replace(ctx.container, env=env)
        self.app = ctx.app
        self.notices = ctx.notices
        self._ctx = ctx
        self._env = {e.name: e for e in env}

    def env(self, name: str) -> EnvVar | None:
        return self._env.get(name)

    def env_map(self) -> dict[str, EnvVar]:
        return dict(self._env)

    def env_source(self, name: str) -> Source:
        var = self._env.get(name)
        if var is not None and (var.source.key or "").endswith("*"):
            return var.source  # `X=${X:-2}` under an envFrom source not held: cited there
        return replace(var.source if var is not None else self.container.source, key=name)

    def env_value(self, name: str) -> str | None:
        var = self._env.get(name)
        return var.value if var is not None else None

    def problem(self, source: Source, message: str, *, fatal: bool = False,
                program: str = "") -> None:
        self._ctx.problem(source, message, fatal=fatal, program=program)


class ProcessInfo(Frozen, kw_only=True):
    """How many processes share nothing in one container, and threads in each."""

    server: str = ""  # "gunicorn", "uvicorn", "celery", "puma", "sidekiq", "php-fpm", ...
    processes: Term | None = None  # None: one process
    threads: Term | None = None  # threads per process that may each hold a connection
    cpu_formula: CpuFormula | None = None  # when processes come from the CPU count
    cpus: Term | None = None
    notes: list[str] = field(default_factory=list)
    # An ASGI server (uvicorn, daphne, gunicorn with a Uvicorn worker class): each
    # request in flight may run its sync code in a thread of its own, so threads are not
    # bounded by a thread count; `in_flight`, when set, bounds the requests in flight
    # per process (uvicorn --limit-concurrency).
    asgi: bool = False
    in_flight: Term | None = None
    # Counts set by a variable from a Secret or reference whose value the repository
    # does not hold (why, for PA106): the container's connections are then unknown,
    # never the server's default.
    hidden: list[str] = field(default_factory=list)
    # Why the command that starts the server was not found (a script not in the source,
    # scripts that start none, no command at all): processes is then a default, noticed.
    unfound: str = ""


class _HiddenRead(NamedTuple):
    """A configuration file's count that reads a secret-set variable (pyeval Val.hidden)."""

    name: str
    # where, when an envFrom source not held may set it (its marker, keyed `<prefix>*`:
    # hidden_note says "may be set"); None: the variable's own env entry
    source: Source | None = None


class _UnreadCount(NamedTuple):
    """A configuration file's count written in a form not evaluated here: unknown, not the
    server's default it replaces."""

    source: Source


def _top_level_args(text: str) -> list[str]:
    """`a, b` split at the commas outside brackets and quotes (`threads
    ENV.fetch("X", 5), ENV.fetch("X", 5)` is two arguments, not four)."""
    out, depth, quote, cur = [], 0, "", []
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur).strip())
    return out


def _env_int(ctx: ContainerReading, name: str) -> tuple[int, Source] | str | None:
    """The container's number-valued variable `name` with its line; its name when the
    container sets it from a Secret or reference whose value is not here (unknown); None
    when it is not set or not a number."""
    var = ctx.env(name)
    if var is None:
        return None
    if var.value is None:
        return name
    n = parse_int(var.value)
    return (n, ctx.env_source(name)) if n is not None else None


def _may_set(ctx: ContainerReading, label: str, *names: str) -> str | None:
    """Why `label` is unknown (PA106) when an envFrom source whose keys the repository
    does not hold may set one of `names` the env does not set: that value, not the
    default or a lower-precedence one, would be used. None when no such source can."""
    marker = env_from_hidden(ctx.container.env, *names)
    if marker is None:
        return None
    unset = [n for n in env_from_names(marker, names) if ctx.env(n) is None]
    return f"{label}: {' or '.join(unset)} may be set by {env_from_label(marker)}"


def _unheld(label: str, got: tuple[str, Word] | None) -> str | None:
    """Why `label` is unknown when the command line gives it as a variable whose value
    is not held (Word.unheld: `-w ${WORKERS:-2}` whose WORKERS is a Secret's or may be
    set by an envFrom source not held): that value, not the fallback, is what runs."""
    if got is None or got[1].unheld is None:
        return None
    var = got[1].unheld
    key = var.source.key or ""
    return hidden_note(label, var.name, var.source if key.endswith("*")
                       else replace(var.source, key=var.name))


def _basename(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _opt(words: list[Word], short: tuple[str, ...], long: tuple[str, ...]
         ) -> tuple[str, Word] | None:
    """Last value of an option: -w 4, -w4, --workers 4, --workers=4."""
    found = None
    for i, w in enumerate(words):
        t = w.text
        for name in long:
            if t == name and i + 1 < len(words):
                found = (words[i + 1].text, words[i + 1])
            elif t.startswith(name + "="):
                found = (t.split("=", 1)[1], w)
        for name in short:
            if t == name and i + 1 < len(words):
                found = (words[i + 1].text, words[i + 1])
            elif t.startswith(name) and len(t) > len(name) and not t.startswith("--"):
                found = (t[len(name):].lstrip("="), w)
    return found


def _word_source(word: Word, ctx: ContainerReading, key: str) -> Source:
    if word.from_env:
        var = ctx.env(word.from_env)
        if var is not None:
            return replace(var.source, key=word.from_env)
    where = word.source.key
    return replace(word.source, key=f"{key} ({where})" if where else key)


def _cpus_term(cpus: int, assumed: bool) -> Term:
    src = Source.default_of("assumed node size (set node-cpus)", key="node-cpus") \
        if assumed else Source.default_of("node-cpus, the configuration", key="node-cpus")
    return Term(label="node CPUs", value=cpus, source=src)


def _find_server(cmd: CommandLine, names: tuple[str, ...]) -> tuple[str, list[Word]] | None:
    segments = cmd.segments()
    for at, segment in enumerate(segments):
        for i, w in enumerate(segment):
            base = _basename(w.text)
            if base == "pumactl" and "puma" in names \
                    and (started := _pumactl_start(segment[i + 1:])) is not None:
                return "puma", started
            if base in names:
                if base in ("rails", "rake") and "puma" in names and not (
                        base == "rails" and segment[i + 1:i + 2]
                        and segment[i + 1].text in ("s", "server")):
                    # a task before the server (`rails db:prepare && pumactl start`):
                    # the server is what runs on
                    servers = tuple(n for n in names if n not in ("rails", "rake"))
                    later = next((found for seg in segments[at + 1:] if (found := _find_server(
                        CommandLine(words=tuple(seg), origin=""), servers)) is not None), None)
                    if later is not None:
                        return later
                return base, segment[i + 1:]
            if "runserver" in names and base in _DJANGO_MANAGE and (
                    rest := _manage_args(segment[i + 1:])) and rest[0].text == "runserver":
                return "runserver", rest[1:]
            if base.startswith("python") and i + 2 < len(segment) + 1 \
                    and i + 1 < len(segment) and segment[i + 1].text == "-m" \
                    and i + 2 < len(segment) and segment[i + 2].text in names:
                return segment[i + 2].text, segment[i + 3:]
    return None


_DJANGO_MANAGE = ("manage.py", "django-admin", "django-admin.py")

# pumactl's options taking a value (puma v8.0.2 lib/puma/control_cli.rb:59-91); its -C is
# the control URL, not Puma's --config
_PUMACTL_VALUED = ("-S", "--state", "-P", "--pidfile", "-p", "--pid", "-C", "--control-url",
                   "-T", "--control-token", "-F", "--config-file", "-e", "--environment")


def _pumactl_start(words: list[Word]) -> list[Word] | None:
    """`pumactl [options] start` runs Puma in its own process (puma v8.0.2 lib/puma/
    control_cli.rb:297-316: `Puma::CLI.new(run_args)`, `-F` given as `-C`, `-e` as
    `-e`): the words Puma's command line would have; None for another command (stop,
    restart, status: they signal a Puma already running)."""
    out: list[Word] = []
    i = 0
    while i < len(words):
        t = words[i].text
        name, eq, value = t.partition("=")
        if not t.startswith("-"):
            # OptionParser#order! stops at the first command word (control_cli.rb:104)
            return out if t == "start" else None
        if name in _PUMACTL_VALUED:
            if eq:
                given = replace(words[i], text=value)
            elif i + 1 < len(words):
                given = words[i + 1]
                i += 1
            else:
                return None
            if name in ("-F", "--config-file"):
                out += [replace(words[i], text="--config"), given]
            elif name in ("-e", "--environment"):
                out += [replace(words[i], text="-e"), given]
        i += 1
    return None


def _manage_args(words: list[Word]) -> list[Word]:
    """The words after `manage.py`'s own options (--settings=..., -v 2): its command."""
    while words and words[0].text.startswith("-"):
        words = words[1:]
    return words


def _runserver(words: list[Word]) -> ProcessInfo:
    """Django's development server: threaded unless --nothreading (django 5.2.20
    core/management/commands/runserver.py:51-53,126,149), a thread per request
    (core/servers/basehttp.py:256-280 socketserver.ThreadingMixIn), each thread its
    own connection: one per request in flight, unbounded, as under ASGI."""
    if any(w.text == "--nothreading" for w in words):
        return ProcessInfo(server="manage.py runserver --nothreading")
    return ProcessInfo(server="manage.py runserver", asgi=True)


# --- gunicorn / uvicorn ----------------------------------------------------------------


def _gunicorn_conf(ctx: ContainerReading, path_hint: str | None, cpus: int
                   ) -> dict[str, tuple[object, Source, CpuFormula | None]]:
    if ctx.app is None:
        return {}
    files = ctx.app.of_kind("gunicorn-conf", "python")
    wanted = None
    if path_hint and not path_hint.startswith("python:"):
        hint = path_hint.lstrip("./")
        wanted = next((f for f in files if f.rel == hint or f.rel.endswith("/" + hint)), None)
    if wanted is None and not path_hint:
        wanted = next((f for f in files if f.rel == "gunicorn.conf.py"), None) or next(
            (f for f in ctx.app.of_kind("gunicorn-conf")), None)
    if wanted is None:
        return {}
    tree, error, line = parse(wanted.text, wanted.path)
    if tree is None:
        ctx.problem(Source(path=wanted.path, line=line), error or "", program="gunicorn")
        return {}
    scope = PyScope(path=wanted.path, env={e.name: e for e in ctx.container.env}, cpus=cpus)
    names = module_names(tree, scope)
    out: dict[str, tuple[object, Source, CpuFormula | None]] = {}
    for key in ("workers", "threads", "worker_class"):
        v = names.get(key)
        if v is None:
            continue
        out[key] = (_HiddenRead(v.hidden) if v.hidden else v.value,
                    replace(v.source, key=v.source.key or key), v.cpu)
    return out


_GUNICORN_READ = "27"  # the version whose defaults the module docstring cites
_GUNICORN_CHECKED = (27, 0, 1)  # workers default 1 in every release up to it
_GUNICORN_WEB_CONCURRENCY = (19, 0)  # the first that reads WEB_CONCURRENCY
_GUNICORN_CMD_ARGS = (19, 7)  # the first that reads GUNICORN_CMD_ARGS (3f9eace2, #1385)


def _gunicorn_version(ctx: ContainerReading) -> tuple[str, str, bool]:
    """(version the workers default is cited at, where the app pins it or "", whether
    that version reads WEB_CONCURRENCY): the app's exact pin when its defaults were
    checked, else the version they were read at."""
    found = python_pin(ctx.app, "gunicorn")
    if found is None or version_tuple(found[0]) > _GUNICORN_CHECKED:
        return _GUNICORN_READ, "", True
    text, source = found
    return text, source.label(), version_tuple(text) >= _GUNICORN_WEB_CONCURRENCY


def _cmd_args_hidden(ctx: ContainerReading, what: str) -> str | None:
    """Why gunicorn's `what` is unknown when GUNICORN_CMD_ARGS, over WEB_CONCURRENCY and
    the config file (gunicorn/app/base.py load_config), has a value not held: set from a
    Secret, or unset with an envFrom source not held that may set it."""
    var = ctx.env("GUNICORN_CMD_ARGS")
    if var is not None:
        return hidden_note(what, "GUNICORN_CMD_ARGS", ctx.env_source("GUNICORN_CMD_ARGS")) \
            if var.value is None else None
    return _may_set(ctx, what, "GUNICORN_CMD_ARGS")


def _gunicorn(ctx: ContainerReading, words: list[Word], cpus: int, assumed: bool) -> ProcessInfo:
    notes: list[str] = []
    workers: tuple[int, Source] | None = None
    threads: tuple[int, Source] | None = None
    cpu: CpuFormula | None = None
    hidden: str | None = None  # the secret-set variable the workers count reads
    version, pin, reads_web = _gunicorn_version(ctx)
    reads_args = version == _GUNICORN_READ or version_tuple(version) >= _GUNICORN_CMD_ARGS
    web = _env_int(ctx, "WEB_CONCURRENCY") if reads_web else None
    if not reads_web and ctx.env("WEB_CONCURRENCY") is not None:
        notes.append(f"gunicorn {version} ({pin}) does not read WEB_CONCURRENCY "
                     f"({ctx.env_source('WEB_CONCURRENCY').label()}): read from 19.0")
    if isinstance(web, str):
        hidden = hidden_note("gunicorn workers", web, ctx.env_source(web))
    elif web is not None:
        workers = web
    conf_path = _opt(words, ("-c",), ("--config",))
    conf = _gunicorn_conf(ctx, conf_path[0] if conf_path else None, cpus)
    if "workers" in conf:
        value, src, cpu_f = conf["workers"]
        number = parse_int(str(value)) if value is not None else None
        if isinstance(value, _HiddenRead):
            hidden = hidden_note("gunicorn workers", value.name, src)
        elif number is not None:
            workers, cpu, hidden = (number, src), cpu_f, None
        else:
            notes.append(f"gunicorn workers at {src.label()} could not be read statically")
    hidden_threads: str | None = None
    if "threads" in conf and isinstance(conf["threads"][0], _HiddenRead):
        hidden_threads = hidden_note("gunicorn threads", conf["threads"][0].name,
                                     conf["threads"][1])
    elif "threads" in conf and parse_int(str(conf["threads"][0])) is not None:
        threads = (parse_int(str(conf["threads"][0])), conf["threads"][1])
    cmd_args = ctx.env("GUNICORN_CMD_ARGS") if reads_args else None
    # GUNICORN_CMD_ARGS is over WEB_CONCURRENCY and the config file: its value not held
    # (a Secret's, or an envFrom source not held that may set it) leaves what it may
    # give unknown unless the command line gives it
    if reads_args and (why := _cmd_args_hidden(ctx, "gunicorn workers")) is not None:
        hidden, hidden_threads = why, _cmd_args_hidden(ctx, "gunicorn threads")
    elif workers is None and reads_web and "workers" not in conf:
        hidden = _may_set(ctx, "gunicorn workers", "WEB_CONCURRENCY") or hidden
    layers: list[list[Word]] = []
    if cmd_args is not None and cmd_args.value:
        src = ctx.env_source("GUNICORN_CMD_ARGS")
        layers.append([Word(text=t, source=src) for t in cmd_args.value.split()])
    layers.append(words)
    for layer in layers:
        got = _opt(layer, ("-w",), ("--workers",))
        if (why := _unheld("gunicorn workers", got)) is not None:
            hidden = why
        elif got and parse_int(got[0]) is not None:
            workers = (parse_int(got[0]), _word_source(got[1], ctx, "--workers"))
            cpu = CpuFormula(per_cpu=1, text="$(nproc)", applies_to="processes") \
                if got[1].cpu else None
            hidden = None
        got = _opt(layer, (), ("--threads",))
        if (why := _unheld("gunicorn threads", got)) is not None:
            hidden_threads = why
        elif got and parse_int(got[0]) is not None:
            threads = (parse_int(got[0]), _word_source(got[1], ctx, "--threads"))
            hidden_threads = None
    if workers is None:
        unset = "no --workers, no WEB_CONCURRENCY" if reads_web else \
            "no --workers; WEB_CONCURRENCY is read from 19.0"
        workers = (1, Source.default_of(
            f"gunicorn {version} default ({f'{pin} pins gunicorn=={version}; ' if pin else ''}"
            f"{unset})", key="workers"))
    worker_class = str(conf["worker_class"][0]) if "worker_class" in conf else ""
    for layer in layers:
        got = _opt(layer, ("-k",), ("--worker-class",))
        worker_class = got[0] if got else worker_class
    # uvicorn.workers.UvicornWorker (and UvicornH11Worker, uvicorn_worker's): ASGI. Its
    # limit_concurrency cannot be given on gunicorn's command line, only in a subclass.
    asgi = "UvicornWorker" in worker_class or "UvicornH11Worker" in worker_class
    info = ProcessInfo(
        server="gunicorn",
        processes=Term(label="gunicorn workers", value=workers[0], source=workers[1]),
        threads=Term(label="gunicorn threads", value=threads[0], source=threads[1])
        if threads else None,
        cpu_formula=cpu, cpus=_cpus_term(cpus, assumed) if cpu else None, notes=notes,
        hidden=[x for x in (hidden, hidden_threads) if x], asgi=asgi)
    return info


def _uvicorn(ctx: ContainerReading, words: list[Word]) -> ProcessInfo:
    got = _opt(words, (), ("--workers",))
    if (why := _unheld("uvicorn workers", got)) is not None:
        return ProcessInfo(server="uvicorn", hidden=[why])
    env = None if got and parse_int(got[0]) is not None else next(
        (found for name in ("UVICORN_WORKERS", "WEB_CONCURRENCY")
         if (found := _env_int(ctx, name)) is not None), None)
    if isinstance(env, str):
        return ProcessInfo(server="uvicorn", hidden=[
            hidden_note("uvicorn workers", env, ctx.env_source(env))])
    # UVICORN_WORKERS (click's auto_envvar_prefix) is over WEB_CONCURRENCY (config.py)
    why = None if (got and parse_int(got[0]) is not None) or ctx.env("UVICORN_WORKERS") \
        else _may_set(ctx, "uvicorn workers", "UVICORN_WORKERS", "WEB_CONCURRENCY")
    if why is not None:
        return ProcessInfo(server="uvicorn", hidden=[why])
    if got and parse_int(got[0]) is not None:
        n, src = parse_int(got[0]), _word_source(got[1], ctx, "--workers")
    elif env is not None:
        n, src = env
    else:
        n, src = 1, Source.default_of("uvicorn default (no --workers, no WEB_CONCURRENCY)",
                                      key="workers")
    interface = _opt(words, (), ("--interface",))
    return ProcessInfo(server="uvicorn",
                       processes=Term(label="uvicorn workers", value=n or 1, source=src),
                       asgi=not (interface and interface[0] == "wsgi"),
                       in_flight=_uvicorn_limit(ctx, words))


def _granian_value(ctx: ContainerReading, words: list[Word], option: str
                   ) -> tuple[str, Source] | str | None:
    """An option's value from the command line, else its GRANIAN_* variable (click's
    auto_envvar_prefix, granian/cli.py:606); the variable's name when it is not held."""
    got = _opt(words, (), (option,))
    if got is not None:
        return got[0], _word_source(got[1], ctx, option)
    name = "GRANIAN_" + option.lstrip("-").replace("-", "_").upper()
    var = ctx.env(name)
    if var is None:
        return None
    return (var.value, ctx.env_source(name)) if var.value is not None else name


def _granian(ctx: ContainerReading, words: list[Word]) -> ProcessInfo:
    """granian 2.8.1 (emmett-framework/granian@9a20b17): --workers processes (default 1,
    granian/cli.py:132); an ASGI application (--interface asgi, asginl; the default rsgi
    is no Django's) runs each request's sync code in a thread of its own, as under
    uvicorn; --interface wsgi runs it on --blocking-threads per worker, by default
    max(1, backpressure // 2), backpressure = max(128, backlog 1024) // workers
    (granian/server/common.py:168-174)."""
    values = {o: _granian_value(ctx, words, o) for o in (
        "--workers", "--interface", "--blocking-threads", "--backlog", "--backpressure")}
    hidden = [hidden_note(f"granian {o}", v, ctx.env_source(v)) for o, v in values.items()
              if isinstance(v, str)]
    if (why := _unheld("granian workers", _opt(words, (), ("--workers",)))) is not None:
        hidden.append(why)
    if hidden:
        return ProcessInfo(server="granian", hidden=hidden)

    def number(option: str) -> tuple[int, Source] | None:
        v = values[option]
        n = parse_int(v[0]) if isinstance(v, tuple) else None
        return (n, v[1]) if n is not None and isinstance(v, tuple) else None

    workers = number("--workers") or (1, Source.default_of(
        "granian 2.8.1 default --workers 1 (granian/cli.py:132)", key="--workers"))
    processes = Term(label="granian workers", value=max(1, workers[0]), source=workers[1])
    interface = values["--interface"]
    if not (isinstance(interface, tuple) and interface[0].lower() == "wsgi"):
        return ProcessInfo(server="granian", processes=processes, asgi=True)
    given = number("--blocking-threads")
    if given is not None:
        threads = Term(label="granian --blocking-threads", value=max(1, given[0]),
                       source=given[1])
    else:
        backlog = max(128, (number("--backlog") or (1024,))[0])
        pressure = number("--backpressure")
        per = max(1, (pressure[0] if pressure else backlog // int(processes.value)) // 2)
        threads = Term(label="granian blocking threads", value=per, source=Source.default_of(
            "granian 2.8.1 WSGI default blocking threads max(1, backpressure // 2), "
            "backpressure = backlog // workers (granian/server/common.py:168-174)",
            key="--blocking-threads"))
    return ProcessInfo(server="granian", processes=processes, threads=threads)


def _uvicorn_limit(ctx: ContainerReading, words: list[Word]) -> Term | None:
    """--limit-concurrency N (or UVICORN_LIMIT_CONCURRENCY): at most N connections and
    tasks per process, more get HTTP 503 (uvicorn config.py limit_concurrency)."""
    got = _opt(words, (), ("--limit-concurrency",))
    if got and parse_int(got[0]):
        n, src = parse_int(got[0]), _word_source(got[1], ctx, "--limit-concurrency")
    else:
        env = _env_int(ctx, "UVICORN_LIMIT_CONCURRENCY")
        if not isinstance(env, tuple) or env[0] <= 0:
            return None
        n, src = env
    return Term(label="uvicorn --limit-concurrency", value=n, source=src)


def _uwsgi_ini(ctx: ContainerReading, hint: str | None) -> tuple[dict[str, tuple[str, Source]],
                                                              list[Source]]:
    """Options of the uWSGI ini file named on the command line (matched by path suffix),
    with if-env/if-not-env blocks decided by the container env; and attach-daemon lines
    that run manage.py."""
    if ctx.app is None or not hint:
        return {}, []
    parts = hint.strip("/").split("/")
    best, score = None, 0
    for f in ctx.app.of_kind("uwsgi"):
        fparts = f.rel.split("/")
        n = 0
        while n < min(len(parts), len(fparts)) and parts[-1 - n] == fparts[-1 - n]:
            n += 1
        if n > score:
            best, score = f, n
    if best is None:
        return {}, []
    env = ctx.env_map()
    options: dict[str, tuple[str, Source]] = {}
    daemons: list[Source] = []
    active: list[bool] = []
    section = ""
    for n, raw in enumerate(best.text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith((";", "#")):
            continue
        if line.startswith("["):
            section = line.strip("[]").strip()
            continue
        if section != "uwsgi" or "=" not in line:
            continue
        key, value = (x.strip() for x in line.split("=", 1))
        if key in ("if-env", "if-not-env"):
            var = env.get(value)
            is_set = var is not None and var.value not in (None, "")
            active.append(is_set if key == "if-env" else not is_set)
            continue
        if key == "endif":
            if active:
                active.pop()
            continue
        if not all(active):
            continue
        src = best.cite(n, key)
        if key == "attach-daemon" and "manage.py" in value:
            daemons.append(replace(src, key=f"attach-daemon {value}"))
        else:
            options[key] = (value, src)
    return options, daemons


def _uwsgi(ctx: ContainerReading, words: list[Word]) -> ProcessInfo:
    ini = _opt(words, (), ("--ini",))
    hint = ini[0] if ini else next((w.text for w in words if w.text.endswith(".ini")), None)
    options, daemons = _uwsgi_ini(ctx, hint)

    hidden: list[str] = []

    def pick(cli_short: tuple[str, ...], cli_long: tuple[str, ...], env_names: tuple[str, ...],
             ini_keys: tuple[str, ...], what: str) -> tuple[int, Source]:
        got = _opt(words, cli_short, cli_long)
        if (why := _unheld(f"uWSGI {what}es", got)) is not None:
            hidden.append(why)
            return 1, got[1].source if got else ctx.container.source
        if got and parse_int(got[0]) is not None:
            return parse_int(got[0]) or 1, _word_source(got[1], ctx, cli_long[0])
        for name in env_names:
            env = _env_int(ctx, name)
            if isinstance(env, str):
                hidden.append(hidden_note(f"uWSGI {what}es", env, ctx.env_source(env)))
                return 1, ctx.env_source(env)
            if env is not None:
                return env[0] or 1, env[1]
        if (why := _may_set(ctx, f"uWSGI {what}es", *env_names)) is not None:
            hidden.append(why)  # the env is over the ini file and the default
            return 1, ctx.container.source
        for key in ini_keys:
            if key in options and parse_int(options[key][0]) is not None:
                return parse_int(options[key][0]) or 1, options[key][1]
        return 1, Source.default_of(f"uWSGI default: 1 {what}", key=ini_keys[0])

    n, src = pick(("-p",), ("--processes", "--workers"), ("UWSGI_PROCESSES", "UWSGI_WORKERS"),
                  ("processes", "workers"), "process")
    t, tsrc = pick((), ("--threads",), ("UWSGI_THREADS",), ("threads",), "thread")
    notes = []
    label = "uWSGI processes"
    if daemons:
        label = f"uWSGI processes {n} + {len(daemons)} attach-daemon manage.py command(s)"
        notes.append(f"{ctx.container.name}: uWSGI attach-daemon runs "
                     + ", ".join(d.label() for d in daemons)
                     + ": each is one more process with its own connection")
        n += len(daemons)
    return ProcessInfo(server="uwsgi", processes=Term(label=label, value=n, source=src),
                       threads=Term(label="uWSGI threads", value=t, source=tsrc)
                       if t > 1 or tsrc.path else None, notes=notes, hidden=hidden)


# Sentry's own defaults (sentry/services/http.py SentryHTTPServer.__init__)
SENTRY_WEB_WORKERS = 1
SENTRY_WEB_THREADS = 2
_SENTRY_HTTP = "sentry/services/http.py SentryHTTPServer"


def _sentry_web_options(ctx: ContainerReading, cpus: int) -> dict[str, tuple[object, Source]]:
    """workers/threads of SENTRY_WEB_OPTIONS in the sentry.conf.py the pod has (the
    sentry-kubernetes chart mounts it from a ConfigMap), with their lines."""
    if ctx.app is None:
        return {}
    files = [f for f in ctx.app.of_kind("python")
             if f.name == "sentry.conf.py" and "SENTRY_WEB_OPTIONS" in f.text]
    if not files:
        return {}
    f = min(files, key=lambda f: (f.rel.count("/"), f.rel))
    tree, error, line = parse(f.text, f.path)
    if tree is None:
        ctx.problem(f.cite(line), error or "", program="Python")
        return {}
    scope = PyScope(path=f.path, env=ctx.env_map(), cpus=cpus)
    options = module_names(tree, scope).get("SENTRY_WEB_OPTIONS")
    if options is None or not isinstance(options.value, dict):
        return {}
    out: dict[str, tuple[object, Source]] = {}
    for key in ("workers", "threads"):
        v = options.value.get(key)
        if v is None:
            continue
        src = f.cite(v.source.line, f"SENTRY_WEB_OPTIONS[{key!r}]", key)
        out[key] = (_HiddenRead(v.hidden) if v.hidden else v.value, src)
    return out


def _sentry_web(ctx: ContainerReading, words: list[Word], cpus: int) -> ProcessInfo:
    """`sentry run web`: uWSGI workers x threads, each thread a Django connection."""
    conf = _sentry_web_options(ctx, cpus)
    hidden: list[str] = []
    notes: list[str] = []

    def pick(key: str, env_name: str, cli: tuple[str, Source] | None, default: int
             ) -> tuple[int, Source]:
        env = _env_int(ctx, env_name)
        if isinstance(env, str):
            hidden.append(hidden_note(f"Sentry web {key}", env, ctx.env_source(env)))
            return default, ctx.env_source(env)
        if env is not None:
            return env  # Sentry passes its options by env.setdefault: the pod's wins
        if (why := _may_set(ctx, f"Sentry web {key}", env_name)) is not None:
            hidden.append(why)
            return default, ctx.container.source
        if cli is not None:
            return parse_int(cli[0]) or default, cli[1]
        if key in conf:
            value, src = conf[key]
            if isinstance(value, _HiddenRead):
                hidden.append(hidden_note(f"Sentry web {key}", value.name, src))
                return default, src
            n = parse_int(str(value)) if value is not None else None
            if n is not None and n > 0:
                return n, src
            notes.append(f"Sentry web {key} at {src.label()} could not be read statically")
        return default, Source.default_of(
            f"Sentry default {key} {default} ({_SENTRY_HTTP}: setdefault)", key=key)

    got = _opt(words, ("-w",), ("--workers",))
    cli = (got[0], _word_source(got[1], ctx, "--workers")) \
        if got and parse_int(got[0]) else None  # 0, the option's default, is unset
    n, src = pick("workers", "UWSGI_WORKERS", cli, SENTRY_WEB_WORKERS)
    if (why := _unheld("Sentry web workers", got)) is not None and not hidden:
        hidden.append(why)  # `-w ${WORKERS:-3}` whose WORKERS is not held: not the 3
    t, tsrc = pick("threads", "UWSGI_THREADS", None, SENTRY_WEB_THREADS)
    return ProcessInfo(server="sentry-web",
                       processes=Term(label="Sentry web uWSGI workers", value=n, source=src),
                       threads=Term(label="Sentry web uWSGI threads", value=t, source=tsrc),
                       notes=notes, hidden=hidden)


_THREAD_POOLS = ("threads", "gevent", "eventlet")  # one process, tasks in threads


def _autoscale(value: str) -> tuple[int, int] | None:
    """(MAX, MIN) of `--autoscale` as Celery reads it (Autoscale.convert: one number N
    is (N, 0); two are sorted, the larger is MAX); None when not two numbers or one."""
    parts = value.split(",")
    if len(parts) > 2 or not all(p.strip().isdigit() for p in parts):
        return None
    numbers = sorted((int(p) for p in parts), reverse=True)
    return (numbers[0], numbers[1] if len(numbers) > 1 else 0)


def _celery_autoscale(ctx: ContainerReading, words: list[Word], kind: str
                      ) -> ProcessInfo | None:
    """The pool's size under `--autoscale` (over --concurrency, which it replaces):
    MAX for a pool that grows, MIN for the threads pool; unknown when MAX is not read
    (a variable not held, a value not two numbers), never --concurrency. None: no
    --autoscale."""
    got = _opt(words, (), ("--autoscale",))
    if got is None:
        return None
    if (why := _unheld("Celery --autoscale maximum", got)) is not None:
        return ProcessInfo(server="celery", hidden=[why])
    src = _word_source(got[1], ctx, "--autoscale")
    scale = _autoscale(got[0])
    if scale is None:
        return ProcessInfo(server="celery", hidden=[
            f"Celery --autoscale maximum: {got[0]!r} ({src.label()}) is not read as "
            "MAX,MIN; the pool grows to that maximum, not --concurrency"])
    top, low = scale
    if kind == "threads":
        # celery/concurrency/thread.py: ThreadPoolExecutor(max_workers=limit), limit the
        # autoscale minimum, no grow(): it never gets more threads than MIN
        if low < 1:
            return ProcessInfo(server="celery", hidden=[
                f"Celery threads pool: --autoscale minimum 0 ({src.label()}) sizes the "
                "thread pool at 0 threads, which Python refuses: the worker does not start"])
        return ProcessInfo(server="celery", threads=Term(
            label="Celery threads pool size (--autoscale minimum; the threads pool "
                  "does not grow)", value=low, source=src))
    label = f"Celery --autoscale maximum (of {top},{low})"
    if kind in _THREAD_POOLS:
        return ProcessInfo(server="celery", threads=Term(
            label=f"Celery {kind} {label}", value=top, source=src))
    return ProcessInfo(server="celery", processes=Term(label=label, value=top, source=src))


def _unread_array(words: list[Word]) -> Word | None:
    """A bash array expansion left as written (`"${EXTRA_PARAMS[@]}"` set in a branch
    not decided): the options it holds (--autoscale, --concurrency) are not read."""
    return next((w for w in words if re.search(r"\$\{\w+\[[@*]\]\}", w.text)), None)


def _celery(ctx: ContainerReading, words: list[Word], cpus: int, assumed: bool) -> ProcessInfo:
    pool = _opt(words, ("-P",), ("--pool",))
    kind = pool[0] if pool else "prefork"
    if kind == "solo":
        return ProcessInfo(server="celery", notes=["celery -P solo: one process, one task"])
    if (array := _unread_array(words)) is not None:
        return ProcessInfo(server="celery", hidden=[
            f"Celery concurrency: {array.text} ({array.source.label()}) is not read "
            "(an array set in a branch); it may give --autoscale or --concurrency"])
    scaled = _celery_autoscale(ctx, words, kind)
    if scaled is not None:
        return scaled
    got = _opt(words, ("-c",), ("--concurrency",))
    cpu = None
    why = _unheld("Celery concurrency", got)
    if got and parse_int(got[0]):
        n, src = parse_int(got[0]), _word_source(got[1], ctx, "--concurrency")
    else:
        n = cpus
        src = Source.default_of("Celery default concurrency: cpu_count() of the node",
                                key="concurrency")
        cpu = CpuFormula(per_cpu=1, text="cpu_count()", applies_to="processes")
    term = Term(label="Celery concurrency", value=n, source=src)
    hidden = [why.replace("Celery", f"Celery {kind}", 1) if kind in _THREAD_POOLS
              else why] if why else []
    if kind in _THREAD_POOLS:
        return ProcessInfo(server="celery",
                           threads=replace(term, label=f"Celery {kind} concurrency"),
                           hidden=hidden)
    return ProcessInfo(server="celery", processes=term, cpu_formula=cpu,
                       cpus=_cpus_term(cpus, assumed) if cpu else None, hidden=hidden)


# --- Ruby ------------------------------------------------------------------------------


def _path_tails(path: str) -> list[str]:
    """A path the command gives, relative to the application folder first, then less of
    its leading folders: `--config /app/config/puma.rb` in an image whose WORKDIR is /app
    is the folder's config/puma.rb (rubygems.org: the file was missed, Puma's default 5
    threads taken where its puma.rb reads RAILS_MAX_THREADS)."""
    parts = [p for p in path.split("/") if p and p != "."]
    return ["/".join(parts[i:]) for i in range(len(parts))]


def _puma_file(ctx: ContainerReading, hint: str | None, cpus: int) -> dict[str, object]:
    if ctx.app is None:
        return {}
    files = ctx.app.of_kind("puma", "ruby")
    env = process_env(ctx.env_map(), ctx.app, ctx.container.image)  # and its image ENV
    candidates = _path_tails(hint) if hint else [f"config/puma/{rails_env(env)}.rb",
                                                 "config/puma.rb"]
    f = next((f for c in candidates for f in files if f.rel == c), None)
    if f is None:
        return {}
    names: dict = {}
    hidden_names: dict[str, _HiddenRead] = {}  # local name -> the secret-set variable it reads
    out: dict[str, object] = {}

    def count(text: str, scope: RubyScope) -> object:
        v = ruby_eval(text, scope)
        if v is None and scope.hidden:
            var = scope.hidden[0]
            return _HiddenRead(var.name, var.source if (var.source.key or "").endswith("*")
                               else None)
        used = next((hidden_names[x] for x in re.findall(r"[a-z_]\w*", text)
                     if x in hidden_names), None)
        return used if v is None and used else v

    for n, raw in enumerate(f.text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        scope = RubyScope(f.path, n, env, cpus, names)
        m = re.fullmatch(r"([a-z_]\w*)\s*=\s*(.+)", line)
        if m:
            v = count(m.group(2), scope)
            if isinstance(v, _HiddenRead):
                hidden_names[m.group(1)] = v
            elif v is not None:
                names[m.group(1)] = v
                hidden_names.pop(m.group(1), None)
            continue
        m = re.fullmatch(r"workers\s*\(?\s*(.+?)\s*\)?", line)
        if m:
            text = m.group(1)
            out["workers"] = ("auto", Source(path=f.path, line=n, key="workers")) \
                if text == ":auto" else count(text, scope)
            continue
        m = re.fullmatch(r"threads\s*(?:\((.+)\)|\s(.+))", line)
        args = _top_level_args(m.group(1) or m.group(2)) if m else []
        if len(args) == 2:
            got = count(args[1], scope)
            out["threads"] = got if got is not None else _UnreadCount(
                Source(path=f.path, line=n, key="threads"))
    return out


def puma_workers_label(workers: int) -> str:
    """How a Puma worker count reads as processes: 0 (or less) is Puma's single mode, one
    process, so "workers 0" is not shown as "workers = 1" (audit4 D6)."""
    return "Puma workers" if workers > 0 else \
        f"Puma processes (workers {workers}: single mode, one process)"


def _puma(ctx: ContainerReading, words: list[Word], cpus: int, assumed: bool) -> ProcessInfo:
    cpu = None
    workers: tuple[int, Source] = (0, Source.default_of("Puma 8 default: workers 0 (single mode)",
                                                        key="workers"))
    threads: tuple[int, Source] = (5, Source.default_of("Puma 8 default: max threads 5 (MRI)",
                                                        key="threads"))
    default_workers, default_threads = workers, threads
    # why the workers / max threads count is unknown, while it is (a secret-set variable)
    hidden: dict[str, str] = {}
    for name in ("PUMA_MAX_THREADS", "MAX_THREADS"):
        env = _env_int(ctx, name)
        if isinstance(env, str):
            hidden["threads"] = hidden_note("Puma max threads", env, ctx.env_source(env))
            break
        if env is not None:
            threads = env
            break
    web = ctx.env_value("WEB_CONCURRENCY")
    if ctx.env("WEB_CONCURRENCY") is not None and web is None:
        hidden["workers"] = hidden_note("Puma workers", "WEB_CONCURRENCY",
                                        ctx.env_source("WEB_CONCURRENCY"))
    elif web is not None and web.strip() == "auto":
        workers, cpu = (cpus, ctx.env_source("WEB_CONCURRENCY")), CpuFormula(
            per_cpu=1, text="WEB_CONCURRENCY=auto", applies_to="processes")
    elif parse_int(web) is not None:
        workers = (parse_int(web), ctx.env_source("WEB_CONCURRENCY"))
    conf = _opt(words, ("-C",), ("--config",))
    from_file = _puma_file(ctx, conf[0] if conf else None, cpus)
    w = from_file.get("workers")
    if isinstance(w, _HiddenRead):
        hidden["workers"] = hidden_note("Puma workers", w.name,
                                        w.source or ctx.env_source(w.name))
    elif isinstance(w, tuple):
        workers, cpu = (cpus, w[1]), CpuFormula(per_cpu=1, text="workers :auto",
                                                applies_to="processes")
        hidden.pop("workers", None)
    elif w is not None and parse_int(str(w.value)) is not None:
        workers = (parse_int(str(w.value)), w.source)
        cpu = replace(w.cpu, applies_to="processes") if w.cpu else None
        hidden.pop("workers", None)
    t = from_file.get("threads")
    if isinstance(t, _UnreadCount):
        hidden["threads"] = f"Puma max threads: {t.source.label()} is written in a form " \
                            "not evaluated here"
    elif isinstance(t, _HiddenRead):
        hidden["threads"] = hidden_note("Puma max threads", t.name,
                                        t.source or ctx.env_source(t.name))
    elif t is not None and parse_int(str(t.value)) is not None:
        threads = (parse_int(str(t.value)), t.source)
        hidden.pop("threads", None)
    got = _opt(words, ("-w",), ("--workers",))
    if (why := _unheld("Puma workers", got)) is not None:
        hidden["workers"] = why
    elif got and parse_int(got[0]) is not None:
        workers, cpu = (parse_int(got[0]), _word_source(got[1], ctx, "--workers")), None
        hidden.pop("workers", None)
    got = _opt(words, ("-t",), ("--threads",))
    if (why := _unheld("Puma max threads", got)) is not None:
        hidden["threads"] = why
    elif got:
        maximum = parse_int(got[0].split(":")[-1])
        if maximum is not None:
            threads = (maximum, _word_source(got[1], ctx, "--threads"))
            hidden.pop("threads", None)
    # Puma reads its env only for what the config file and command line leave unset
    if workers is default_workers and (why := _may_set(ctx, "Puma workers",
                                                       "WEB_CONCURRENCY")) is not None:
        hidden.setdefault("workers", why)
    if threads is default_threads and (why := _may_set(
            ctx, "Puma max threads", "PUMA_MAX_THREADS", "MAX_THREADS")) is not None:
        hidden.setdefault("threads", why)
    processes = Term(label=puma_workers_label(workers[0]), value=max(workers[0], 1),
                     source=workers[1])
    return ProcessInfo(server="puma", processes=processes,
                       threads=Term(label="Puma max threads", value=threads[0],
                                    source=threads[1]),
                       cpu_formula=cpu, cpus=_cpus_term(cpus, assumed) if cpu else None,
                       hidden=list(hidden.values()))


def _sidekiq(ctx: ContainerReading, words: list[Word], cpus: int) -> ProcessInfo:
    conc: tuple[int, Source] = (5, Source.default_of("Sidekiq 7/8 default concurrency 5",
                                                     key="concurrency"))
    default = conc
    hidden: str | None = None
    env = _env_int(ctx, "RAILS_MAX_THREADS")
    if isinstance(env, str):
        hidden = hidden_note("Sidekiq concurrency", env, ctx.env_source(env))
    elif env is not None:
        conc = env
    conf = _opt(words, ("-C",), ("--config",))
    hint = conf[0].lstrip("./") if conf else "config/sidekiq.yml"
    capsules: list[Capsule] = []
    if ctx.app is not None:
        for f in ctx.app.of_kind("sidekiq-yml"):
            if f.rel != hint:
                continue
            env = process_env(ctx.env_map(), ctx.app, ctx.container.image)
            capsules, inside = yml_capsules(f, env, cpus)
            for n, line in enumerate(f.text.splitlines(), 1):
                m = re.match(r"\s*:?concurrency:\s*(.+)", line)
                if not m or n in inside:
                    continue
                text = m.group(1).strip()
                erb = re.fullmatch(r"<%=\s*(.+?)\s*%>", text)
                scope = RubyScope(f.path, n, env, cpus)
                v = ruby_eval(erb.group(1) if erb else text, scope)
                if v is None and scope.hidden:
                    hidden = hidden_note("Sidekiq concurrency", scope.hidden[0].name,
                                         scope.hidden[0].source)
                elif v is not None and parse_int(str(v.value)) is not None:
                    conc, hidden = (parse_int(str(v.value)), v.source), None
    got = _opt(words, ("-c",), ("--concurrency",))
    if (why := _unheld("Sidekiq concurrency", got)) is not None:
        hidden = why
    elif got and parse_int(got[0]) is not None:
        conc, hidden = (parse_int(got[0]), _word_source(got[1], ctx, "--concurrency")), None
    if conc is default and hidden is None:
        hidden = _may_set(ctx, "Sidekiq concurrency", "RAILS_MAX_THREADS")
    threads, unread = _sidekiq_threads(ctx, conc, capsules, cpus)
    return ProcessInfo(server="sidekiq", threads=threads,
                       hidden=[h for h in (hidden, *unread) if h])


def _sidekiq_threads(ctx: ContainerReading, conc: tuple[int, Source],
                     yml: list[Capsule], cpus: int) -> tuple[Term, list[str]]:
    """Job threads of one Sidekiq process: the default capsule's concurrency plus each
    other capsule's (advisor/read/apps/sidekiq_capsules.py); why any is unread."""
    plain = Term(label="Sidekiq concurrency", value=conc[0], source=conc[1])
    if ctx.app is None:
        return plain, []
    env = process_env(ctx.env_map(), ctx.app, ctx.container.image)  # and its image ENV
    declared = initializer_capsules(boot_files(ctx.app.of_kind("ruby"), rails_env(env)), env,
                                    cpus)
    by_name = {c.name: c for c in yml} | {c.name: c for c in declared.capsules}
    first = plain
    if declared.default is not None and declared.default.concurrency is not None:
        v = declared.default.concurrency
        first = Term(label="Sidekiq concurrency", value=int(str(v.value)), source=v.source)
    unread = [f"Sidekiq capsule {c.name} concurrency ({c.source.label()}): "
              f"{c.unread} not read" for c in (declared.default, *by_name.values())
              if c is not None and c.unread is not None]
    if not by_name:
        return first, unread
    parts = [f"default capsule {int(first.value)} ({first.source.label()})"]
    total = first.value
    last = next((c for c in reversed(by_name.values()) if c.concurrency is not None), None)
    for c in by_name.values():
        n = int(str(c.concurrency.value)) if c.concurrency is not None else conc[0]
        why = "" if c.concurrency is None or c is last else \
            f" ({c.concurrency.source.label()})"
        if c.concurrency is None:
            why = f" (sets none: the process's concurrency, {c.source.label()})"
        parts.append(f"capsule {c.name} {n}{why}")
        total += n
    return Term(label="Sidekiq job threads: " + " + ".join(parts), value=total,
                source=last.concurrency.source if last is not None and last.concurrency
                is not None else next(iter(by_name.values())).source), unread


# Tasks whose process runs job threads of its own (Solid Queue's supervisor and workers,
# GoodJob): their threads are not read here, so the pool is counted, not one thread.
_THREADED_TASKS = ("solid_queue:", "good_job", "jobs:work:threaded")


def _ruby_task(ctx: ContainerReading, name: str, words: list[Word], cpus: int,
               assumed: bool) -> ProcessInfo:
    """`rake TASK` / `rails TASK` / `rails runner`: one process running the task on its main
    thread, which leases one Active Record connection (ConnectionPool#lease_connection is
    per thread, activerecord connection_adapters/abstract/connection_pool.rb), not the
    pool (db:migrate / db:prepare are counted before this, with the Rails versions whose
    migration lock takes a second connection: apps/__init__._migration_pool). A
    later server in the same command (`rails db:migrate && rails s`) is what runs."""
    later = _server_after_task(ctx, words)
    if later is not None:
        return _server_info(ctx, *later, cpus, assumed)
    task = next((w.text for w in words if not w.text.startswith("-") and "=" not in w.text),
                "default")
    if task.startswith(_THREADED_TASKS):
        return ProcessInfo()
    return ProcessInfo(threads=Term(label=f"{name} {task}: one thread", value=1,
                                    source=Source.default_of(
        "a rake / rails task runs on one thread, one Active Record connection per thread "
        "(ConnectionPool#lease_connection); threads a task starts are not seen",
        key="threads")))


def _server_after_task(ctx: ContainerReading, words: list[Word]
                       ) -> tuple[str, list[Word]] | None:
    """The long-running Ruby server a command starts after the task whose words are
    `words` (`bundle exec rails db:migrate && bundle exec puma`)."""
    if not words:
        return None
    segments = command_line(ctx.container, ctx.app, []).segments()
    at = next((i for i, seg in enumerate(segments) if words[0] in seg), None)
    if at is None:
        return None
    for seg in segments[at + 1:]:
        found = _find_server(CommandLine(words=tuple(seg), origin=""),
                             ("puma", "sidekiq", "sidekiqswarm", "rails"))
        if found is not None and (found[0] != "rails" or (
                found[1] and found[1][0].text in ("s", "server"))):
            return found
    return None


# --- PHP-FPM, PM2, node cluster ---------------------------------------------------------


def _php_fpm(ctx: ContainerReading) -> ProcessInfo:
    found = None
    if ctx.app is not None:
        for f in ctx.app.of_kind("php-fpm"):
            for n, line in enumerate(f.text.splitlines(), 1):
                m = re.match(r"\s*pm\.max_children\s*=\s*(\d+)\s*$", line)
                if m:
                    found = (int(m.group(1)), Source(path=f.path, line=n, key="pm.max_children"))
    if found is None:
        found = (5, Source.default_of("php:fpm image www.conf (pm.max_children = 5)",
                                      key="pm.max_children"))
    return ProcessInfo(server="php-fpm", processes=Term(label="PHP-FPM pm.max_children",
                                                        value=found[0], source=found[1]))


def _pm2(ctx: ContainerReading, words: list[Word], cpus: int, assumed: bool) -> ProcessInfo:
    got = _opt(words, ("-i",), ("--instances",))
    if (why := _unheld("PM2 instances", got)) is not None:
        return ProcessInfo(server="pm2", hidden=[why])  # not the fallback written
    value, src = (got[0], _word_source(got[1], ctx, "--instances")) if got else (None, None)
    if value is None and ctx.app is not None:
        for f in ctx.app.of_kind("pm2"):
            for n, line in enumerate(f.text.splitlines(), 1):
                m = re.search(r"""["']?instances["']?\s*:\s*["']?(\w+|-1)["']?""", line)
                if m:
                    value, src = m.group(1), Source(path=f.path, line=n, key="instances")
    if value is None:
        return ProcessInfo(server="pm2")
    if value in ("max", "0", "-1"):
        per = CpuFormula(per_cpu=1, plus=-1 if value == "-1" else 0, floor=1,
                         text=f"instances {value}", applies_to="processes")
        return ProcessInfo(server="pm2", processes=Term(label="PM2 instances",
                                                        value=per.at(cpus), source=src),
                           cpu_formula=per, cpus=_cpus_term(cpus, assumed))
    n = parse_int(value)
    return ProcessInfo(server="pm2", processes=Term(label="PM2 instances", value=n, source=src)
                       if n else None)


_CLUSTER_IF = lazy(r"\bif\s*\(([^)]*\bcluster\.is(?:Primary|Master)\b[^)]*)\)")
_ENV_TEST = lazy(r"process\.env\.(\w+)\s*===?\s*['\"]([^'\"]*)['\"]|"
                 r"(?:!!|Boolean\()?\s*process\.env\.(\w+)")


def _cluster_gate(text: str) -> tuple[str, str | None, int] | None:
    """The env variable the primary's `if (... && cluster.isPrimary)` also requires
    (trigger.dev: `const ENABLE_CLUSTER = process.env.ENABLE_CLUSTER === "1"`, then
    `if (ENABLE_CLUSTER && cluster.isPrimary)`): (name, the value it must equal or None
    for any non-empty value, offset of the test)."""
    m = _CLUSTER_IF.search(text)
    if m is None:
        return None
    condition = m.group(1)
    tests = [(condition, m.start(1))]
    for ident in re.findall(r"\b([A-Za-z_]\w*)\b", condition):
        if ident in ("cluster", "isPrimary", "isMaster", "process", "env"):
            continue
        d = re.search(rf"\b(?:const|let|var)\s+{ident}\s*=\s*([^;\n]+)", text)
        if d:
            tests.append((d.group(1), d.start(1)))
    for expr, at in tests:
        t = _ENV_TEST.search(expr)
        if t is None:
            continue
        if t.group(1):
            return t.group(1), t.group(2), at + t.start()
        return t.group(3), None, at + t.start()
    return None


def _node_cluster(ctx: ContainerReading, cpus: int, assumed: bool) -> ProcessInfo | None:
    if ctx.app is None:
        return None
    for f in ctx.app.of_kind("js"):
        if "cluster.fork(" not in f.text and "throng(" not in f.text:
            continue
        line = f.text[: f.text.find("fork(") if "fork(" in f.text else 0].count("\n") + 1
        gate = _cluster_gate(f.text)
        if gate is not None:
            name, wanted, at = gate
            var = ctx.env(name)
            where = f"{f.path}:{f.text[:at].count(chr(10)) + 1}"
            if var is not None and var.value is None:
                return ProcessInfo(server="node-cluster", hidden=[hidden_note(
                    f"node cluster (on when {name} is set, {where})", name,
                    ctx.env_source(name))])
            if var is None and (why := _may_set(
                    ctx, f"node cluster (on when {name} is set, {where})", name)) is not None:
                return ProcessInfo(server="node-cluster", hidden=[why])
            value = var.value if var is not None else None
            on = bool(value) if wanted is None else value == wanted
            if not on:
                return ProcessInfo(server="node", notes=[
                    f"{where}: the node cluster forks only when {name}"
                    f"{' = ' + repr(wanted) if wanted is not None else ' is set'}; the "
                    f"container {'sets ' + repr(value) if value is not None else 'does not set it'}"
                    ": one process per pod"])
        web = ctx.env("WEB_CONCURRENCY")
        if "WEB_CONCURRENCY" in f.text and web is not None and web.value is None:
            return ProcessInfo(server="node-cluster", hidden=[hidden_note(
                "node cluster workers", "WEB_CONCURRENCY", ctx.env_source("WEB_CONCURRENCY"))])
        if "WEB_CONCURRENCY" in f.text and web is None and (why := _may_set(
                ctx, "node cluster workers", "WEB_CONCURRENCY")) is not None:
            return ProcessInfo(server="node-cluster", hidden=[why])
        if "WEB_CONCURRENCY" in f.text and web is not None and parse_int(web.value):
            return ProcessInfo(server="node-cluster", processes=Term(
                label="node cluster workers", value=parse_int(web.value),
                source=ctx.env_source("WEB_CONCURRENCY")))
        if re.search(r"cpus\(\)\.length|availableParallelism\(\)", f.text):
            per = CpuFormula(per_cpu=1, text="os.cpus().length", applies_to="processes")
            return ProcessInfo(server="node-cluster", processes=Term(
                label="node cluster workers", value=cpus,
                source=Source(path=f.path, line=line, key="os.cpus().length")),
                cpu_formula=per, cpus=_cpus_term(cpus, assumed))
        return ProcessInfo(server="node-cluster", notes=[
            f"{f.path}:{line}: node cluster with a worker count not read statically"])
    return None


# `celery flower` (the Flower dashboard: one Tornado process on the broker's events,
# mher/flower@0424679 flower/command.py:31-53) and `celery events` run no task: no pool
# of worker processes
_CELERY_MONITORS = ("flower", "events")

_SERVERS = ("gunicorn", "uvicorn", "granian", "daphne", "uwsgi", "celery", "sentry",
            "puma", "sidekiq", "sidekiqswarm", "php-fpm",
            "pm2-runtime", "pm2", "rails", "rake", "node", "php-fpm8.2", "php-fpm8.3", "php-fpm7.4",
            "supervisord", "runserver")


def _supervisord(ctx: ContainerReading, words: list[Word], cpus: int, assumed: bool
                 ) -> ProcessInfo:
    """supervisord's programs (advisor/read/apps/supervisord.py), numprocs copies each:
    added up when each is one process (no server found in its command, or a
    one-process one); a single program's server (gunicorn -w 3) times its copies;
    programs of several servers not combined (unknown)."""
    from advisor.read.apps.supervisord import supervisord_programs

    found = supervisord_programs(ctx.app, words, ctx.env_map(), ctx.container.name)
    notes = found.notes
    if found.unknown:
        return ProcessInfo(server="supervisord", notes=notes, hidden=found.unknown)
    if not found.programs:
        return ProcessInfo(server="supervisord", notes=[
            *notes, f"{ctx.container.name}: supervisord ({found.config}) starts no program "
                    "that may connect"])
    servers = tuple(s for s in _SERVERS if s != "supervisord")
    infos = []
    for program in found.programs:
        server = _find_server(program.command, servers)
        infos.append(_server_info(ctx, *server, cpus, assumed) if server else None)
    if all(i is None or (i.processes is None and i.threads is None and not i.asgi
                         and not i.hidden) for i in infos):
        counts = [p.count for p in found.programs]
        label = f"supervisord [program:{found.programs[0].name}] numprocs" \
            if len(counts) == 1 else "supervisord programs: " + " + ".join(
                f"{p.name} {int(p.count.value)}" for p in found.programs)
        return ProcessInfo(server="supervisord", notes=notes, processes=Term(
            label=label, value=sum(c.value for c in counts), source=counts[0].source))
    if len(infos) == 1 and infos[0] is not None:
        (program,), info = found.programs, infos[0]
        if program.count.value == 1:
            return replace(info, notes=[*notes, *info.notes])
        if info.cpu_formula is None:
            per = info.processes
            label = f"supervisord [program:{program.name}] numprocs " \
                    f"{int(program.count.value)}" + (
                        f" x {per.label} {int(per.value)}" if per is not None else "")
            return replace(info, notes=[*notes, *info.notes], processes=Term(
                label=label, value=program.count.value * (per.value if per else 1),
                source=program.count.source))
    servers_run = ", ".join(f"[program:{p.name}] ({i.server or 'one process'})" if i else
                            f"[program:{p.name}]" for p, i in zip(found.programs, infos,
                                                                   strict=True))
    return ProcessInfo(server="supervisord", notes=notes, hidden=[
        f"supervisord ({found.config}) runs {servers_run}: their processes and threads "
        "are not combined here"])


class _Wrapped(NamedTuple):
    server: tuple[str, list[Word]] | None
    why: str = ""  # why no server was found
    unknown: bool = False  # several servers found: not combined (PA106)


def _wrapped_server(ctx: ContainerReading, run: ScriptRun) -> _Wrapped:
    """The server the app's scripts the command runs start (cmdline.script_run: a chain
    of scripts followed), with a notice naming the script's line: the last always-run
    command that starts one; a server sent to the background (`gunicorn ... &` before
    `exec nginx`) when none runs in the foreground. Else why none was found."""
    found = [(c, s) for c in run.commands if (s := _find_server(c.line, _SERVERS))]
    front = [(c, s) for c, s in found if not c.background]
    back = [(c, s) for c, s in found if c.background]
    chain = " -> ".join(dict.fromkeys(run.scripts))
    if front and back:
        names = ", ".join(f"{s[0]} ({c.script}:{c.line.words[0].source.line})"
                          for c, s in [*back, front[-1]])
        return _Wrapped(None, f"{chain} runs {names} side by side (some in the "
                              "background): their processes are not combined here", True)
    if len(back) > 1:
        names = ", ".join(f"{s[0]} ({c.script}:{c.line.words[0].source.line})"
                          for c, s in back)
        return _Wrapped(None, f"{chain} starts {names} in the background: their "
                              "processes are not combined here", True)
    pick = front[-1] if front else back[0] if back else None
    if pick is None:
        missing = ", ".join(dict.fromkeys(run.missing))
        return _Wrapped(None, f"the script {missing} it runs is not in the application "
                              "source" if missing and not run.scripts else
                        f"{chain} (followed from the command) starts no server read here" + (
                            f", and {missing} it runs is not in the application source"
                            if missing else ""))
    command, server = pick
    how = " in the background" if command.background else ""
    runs = ", which runs ".join(command.chain)
    ctx.notices.append(f"{ctx.container.name}: server command taken from "
                       f"{command.script}:{command.line.words[0].source.line} (the command "
                       f"runs {runs}, which starts it{how})")
    return _Wrapped(server)


def _managed_worker(ctx: ContainerReading, cmd: CommandLine
                    ) -> tuple[str, list[Word]] | ProcessInfo | None:
    """The Celery worker a Django management command starts (advisor/read/apps/
    djcommand.py): its words, or unknown (PA106) when its command line is not read;
    None when the command starts none (`manage.py migrate`: one process)."""
    from advisor.read.apps.djcommand import read_managed

    managed = read_managed(ctx.app, cmd)
    if managed is None:
        return None
    if managed.words is None:
        return ProcessInfo(server="celery", hidden=[f"Celery concurrency: {managed.why}"])
    ctx.notices.append(f"{ctx.container.name}: server command taken from {managed.where} "
                       f"(`manage.py {managed.command}` starts that Celery worker)")
    return "celery", managed.words


def detect_processes(ctx: ContainerReading, cpus: int, assumed: bool) -> ProcessInfo:
    cmd = command_line(ctx.container, ctx.app, ctx.notices)
    if cmd.env:
        ctx = _ScriptEnv(ctx, cmd.env)
    found = _find_server(cmd, _SERVERS)
    if len(at_once := _servers_at_once(cmd)) > 1:
        return _together(ctx, at_once, cpus, assumed)
    why = ""
    if found is None:
        managed = _managed_worker(ctx, cmd)
        if isinstance(managed, ProcessInfo):
            return managed
        found = managed
    if found is None:
        run = script_run(ctx.container, ctx.app, cmd)
        if run.scripts or run.missing:
            found, why, unknown = _wrapped_server(ctx, run)
            if unknown:
                return ProcessInfo(hidden=[f"{ctx.container.name}: {why}"])
        elif not cmd.words and ctx.app is not None:
            if (started := _start_sh_image(ctx, cpus, assumed)) is not None:
                return started
            why = "no command in the manifest, the app's Dockerfile or a Procfile"
    if found is None:
        if "fpm" in ctx.container.image:
            return _php_fpm(ctx)
        node = _node_cluster(ctx, cpus, assumed)
        if node is None and ctx.env_value("WEB_CONCURRENCY"):
            return ProcessInfo(notes=[
                f"{ctx.container.name}: WEB_CONCURRENCY={ctx.env_value('WEB_CONCURRENCY')} "
                f"({ctx.env_source('WEB_CONCURRENCY').label()}) is set but no server command "
                "was found (manifest, Dockerfile, Procfile): one process per pod assumed"])
        if node is None and why:
            # never a quiet one process: the count is a default, said to be one (the
            # pool readers then count Django's one connection, Active Record's whole pool)
            return ProcessInfo(unfound=why, notes=[
                f"{ctx.container.name}: the command that starts the server was not found "
                f"({why}): one process per pod assumed, with no thread count read"])
        return node or ProcessInfo()
    name, words = found
    return _server_info(ctx, name, words, cpus, assumed)


# Images whose CMD /start.sh runs `gunicorn -k WORKER -c $GUNICORN_CONF $APP_MODULE`
# with the image's /gunicorn_conf.py unless the app holds /app/gunicorn_conf.py or
# /app/app/gunicorn_conf.py (or GUNICORN_CONF names one): workers = WEB_CONCURRENCY when
# set, else max(int(WORKERS_PER_CORE x cpu_count()), floor), at most MAX_WORKERS.
# tiangolo/uvicorn-gunicorn-docker@cb5abd5 docker-images/start.sh:13-21,34,
# gunicorn_conf.py:5-30 (unchanged since 2daa3e3, 2020-04-27; -fastapi is FROM it);
# tiangolo/meinheld-gunicorn-docker@70cb797 docker-images/start.sh:15, entrypoint.sh:13-20,
# gunicorn_conf.py:7-25 (WORKERS_PER_CORE 2, no floor, no MAX_WORKERS).
# repository -> (WORKERS_PER_CORE default, floor, reads MAX_WORKERS, worker class)
_START_SH_IMAGES: dict[str, tuple[float, int, bool, str]] = {
    "tiangolo/uvicorn-gunicorn": (1.0, 2, True, "uvicorn.workers.UvicornWorker"),
    "tiangolo/uvicorn-gunicorn-fastapi": (1.0, 2, True, "uvicorn.workers.UvicornWorker"),
    "tiangolo/meinheld-gunicorn": (2.0, 0, False, "egg:meinheld#gunicorn_worker"),
    "tiangolo/meinheld-gunicorn-flask": (2.0, 0, False, "egg:meinheld#gunicorn_worker"),
}


def _start_sh_image(ctx: ContainerReading, cpus: int, assumed: bool) -> ProcessInfo | None:
    """The gunicorn a _START_SH_IMAGES base image's /start.sh runs, when the app's
    Dockerfile is built FROM one and sets no command; None otherwise."""
    base = dockerfile_base(ctx.app, ctx.container.image)
    if base is None or ctx.app is None:
        return None
    repo = base[0].split("@", 1)[0].rsplit(":", 1)[0].removeprefix("docker.io/")
    model = _START_SH_IMAGES.get(repo)
    if model is None:
        return None
    per_core, floor, reads_max, worker = model
    src = replace(base[1], key="/start.sh")
    ctx.notices.append(f"{ctx.container.name}: command taken from its base image {base[0]} "
                       f"({base[1].label()}): /start.sh runs gunicorn -k {worker} -c "
                       "$GUNICORN_CONF")
    env = process_env(ctx.env_map(), ctx.app, ctx.container.image)
    conf = env.get("GUNICORN_CONF")
    own = [p for where in ("/app/gunicorn_conf.py", "/app/app/gunicorn_conf.py")
           for p in copied_from(ctx.app, ctx.container.image, where)
           if any(f.rel == p for f in ctx.app.files)]
    if conf is not None or own:
        path = conf.value if conf is not None and conf.value else own[0] if own else ""
        if not path:
            return ProcessInfo(hidden=[hidden_note("gunicorn workers", "GUNICORN_CONF",
                                                   conf.source if conf else src)])
        words = [Word(text=t, source=src) for t in ("-k", worker, "-c", path)]
        return _gunicorn(ctx, words, cpus, assumed)
    asgi = "Uvicorn" in worker
    web = env.get("WEB_CONCURRENCY")
    if web is not None:
        n = parse_int(web.value) if web.value is not None else None
        if n is None:
            return ProcessInfo(server="gunicorn", asgi=asgi, hidden=[hidden_note(
                "gunicorn workers", "WEB_CONCURRENCY", web.source)])
        return ProcessInfo(server="gunicorn", asgi=asgi, processes=Term(
            label=f"gunicorn workers ({repo} gunicorn_conf.py: WEB_CONCURRENCY)",
            value=n, source=web.source))
    per = env.get("WORKERS_PER_CORE")
    most = env.get("MAX_WORKERS") if reads_max else None
    hidden = [hidden_note("gunicorn workers", v.name, v.source)
              for v in (per, most) if v is not None and v.value is None]
    if hidden:
        return ProcessInfo(server="gunicorn", asgi=asgi, hidden=hidden)
    try:
        per_core = float(per.value) if per is not None and per.value else per_core
    except ValueError:
        return ProcessInfo(server="gunicorn", asgi=asgi, hidden=[
            f"gunicorn workers: WORKERS_PER_CORE={per.value!r} is no number"])
    ceiling = parse_int(most.value) if most is not None and most.value else None
    formula = CpuFormula(per_cpu=per_core, floor=floor, ceiling=ceiling,
                         applies_to="processes",
                         text=f"max(int({per_core:g} x cpu_count()), {floor})"
                         + (f", at most MAX_WORKERS {ceiling}" if ceiling else ""))
    value = max(int(per_core * cpus), floor)
    value = min(value, ceiling) if ceiling else value
    where = per.source if per is not None else Source.default_of(
        f"{repo} gunicorn_conf.py: WORKERS_PER_CORE {per_core:g} x CPUs, at least "
        f"{floor} (no WEB_CONCURRENCY)", key="workers")
    return ProcessInfo(server="gunicorn", asgi=asgi, cpu_formula=formula,
                       cpus=_cpus_term(cpus, assumed), processes=Term(
                           label="gunicorn workers", value=value, source=where))


def _servers_at_once(cmd: CommandLine) -> list[tuple[str, list[Word], Word]]:
    """The servers of the command line that run at the same moment (name, words after
    it, its first word): those sent to the background (`gunicorn app &`) with the next
    one run in the foreground, as _runs_at_once groups PostgreSQL's client programs; a
    Rails or rake task is not one (it runs and exits)."""
    background: list[tuple[str, list[Word], Word]] = []
    for words, bg in cmd.jobs():
        if words[0].text == "wait":
            background = []
            continue
        found = _find_server(CommandLine(words=tuple(words), origin=""), _SERVERS)
        if found is None or found[0] == "rake" or (found[0] == "rails" and not (
                found[1] and found[1][0].text in ("s", "server"))):
            continue
        if not bg:
            return [*background, (*found, words[0])]
        background.append((*found, words[0]))
    return background


def _together(ctx: ContainerReading, servers: list[tuple[str, list[Word], Word]],
              cpus: int, assumed: bool) -> ProcessInfo:
    """Servers run at once (`gunicorn app & celery worker`): their processes added up
    when each process runs one thread (as supervisord's programs are); otherwise not
    combined here (unknown, PA106), never the one read first alone."""
    infos = [_server_info(ctx, name, words, cpus, assumed) for name, words, _ in servers]
    named = ", ".join(f"{name} ({w.source.label()})" for name, _, w in servers)
    notes = [n for i in infos for n in i.notes]
    if any(i.threads is not None or i.asgi or i.cpu_formula is not None or i.hidden
           or i.in_flight is not None or i.unfound for i in infos):
        return ProcessInfo(notes=notes, hidden=[
            f"{ctx.container.name}: the command runs {named} at once (`&`): their "
            "processes and threads are not combined here"])
    parts = [f"{i.processes.label} {int(i.processes.value)}" if i.processes is not None
             else f"{name} 1" for i, (name, _, _) in zip(infos, servers, strict=True)]
    source = next((i.processes.source for i in infos if i.processes is not None),
                  replace(servers[0][2].source, key=servers[0][0]))
    ctx.notices.append(f"{ctx.container.name}: the command runs {named} at once (`&`): "
                       "their processes add up")
    return ProcessInfo(server=" + ".join(dict.fromkeys(n for n, _, _ in servers)),
                       notes=notes, processes=Term(
                           label=" + ".join(parts),
                           value=sum(i.processes.value if i.processes is not None else 1
                                     for i in infos), source=source))


def _server_info(ctx: ContainerReading, name: str, words: list[Word], cpus: int,
                 assumed: bool) -> ProcessInfo:
    """The processes and threads of server `name` run with `words` after its name."""
    if name == "supervisord":
        return _supervisord(ctx, words, cpus, assumed)
    if name == "gunicorn":
        return _gunicorn(ctx, words, cpus, assumed)
    if name == "uvicorn":
        return _uvicorn(ctx, words)
    if name == "granian":
        return _granian(ctx, words)
    if name == "daphne":
        return ProcessInfo(server="daphne", asgi=True)  # one process, no concurrency limit
    if name == "runserver":
        return _runserver(words)
    if name == "uwsgi":
        return _uwsgi(ctx, words)
    if name == "sentry" and words[:2] and [w.text for w in words[:2]] == ["run", "worker"]:
        # `sentry run worker -c N` runs a Celery worker with N processes
        return _celery(ctx, words[2:], cpus, assumed)
    if name == "sentry" and [w.text for w in words[:2]] == ["run", "web"]:
        return _sentry_web(ctx, words[2:], cpus)
    if name == "celery":
        if any(w.text == "beat" for w in words) and not any(w.text == "worker" for w in words):
            return ProcessInfo(server="celery-beat")
        if not any(w.text == "worker" for w in words) and (
                monitor := next((w.text for w in words if w.text in _CELERY_MONITORS), None)):
            # a monitor runs no task: one process, not cpu_count() pool children
            return ProcessInfo(server=f"celery-{monitor}")
        return _celery(ctx, words, cpus, assumed)
    if name == "puma" or (name == "rails" and words and words[0].text in ("s", "server")):
        return _puma(ctx, words, cpus, assumed)
    if name in ("rails", "rake"):
        return _ruby_task(ctx, name, words, cpus, assumed)
    if name in ("sidekiq", "sidekiqswarm"):
        info = _sidekiq(ctx, words, cpus)
        count = ctx.env("SIDEKIQ_COUNT")
        if name == "sidekiqswarm" and count is not None and parse_int(count.value):
            info = replace(info, processes=Term(
                label="sidekiqswarm SIDEKIQ_COUNT", value=parse_int(count.value),
                source=ctx.env_source("SIDEKIQ_COUNT")))
        return info
    if name.startswith("php-fpm"):
        return _php_fpm(ctx)
    if name in ("pm2", "pm2-runtime"):
        return _pm2(ctx, words, cpus, assumed)
    if name == "node":
        return _node_cluster(ctx, cpus, assumed) or ProcessInfo(server="node")
    return ProcessInfo(server=name)
