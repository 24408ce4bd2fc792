"""Apache Airflow 2 run from its image (apache/airflow, the official chart): each
component's processes and the SQLAlchemy pool each opens on the metadata database.

Read in Airflow 2.10.0's own source (the apache_airflow-2.10.0 wheel):
- settings.prepare_engine_args: a QueuePool of `[database] sql_alchemy_pool_size`
  (fallback 5) + `sql_alchemy_max_overflow` (fallback 10) per process; NullPool when
  `sql_alchemy_pool_enabled` is False (config.yml: defaults "5", "10", "True"). The
  options moved from [core] in 2.3.0; configuration.py deprecated_options still reads
  the [core] names after the [database] ones.
- configuration.AirflowConfigParser.get: AIRFLOW__{SECTION}__{KEY} env, then the
  deprecated section's env, then airflow.cfg, then _CMD / _SECRET, then the default.
- webserver: webserver_command.py starts gunicorn with `--workers` (`-w`, else
  `[webserver] workers`, default "4") and `--preload` unless reload_on_plugin_change:
  the master builds the app (FAB permission sync) with its own pool; each worker gets
  its own (orm_event_handlers refuses a connection made in another pid).
- scheduler: unless `[scheduler] standalone_dag_processor` (default False) it starts
  the DagFileProcessorManager process (manager.py reload_configuration_for_dag_processing
  -> settings.initialize) and up to `[scheduler] parsing_processes` (default 2)
  DagFileProcessor children, each calling settings.configure_orm (processor.py:179).
  `airflow dag-processor` runs the manager and its parsers without a scheduler.
- triggerer: one process.
- celery worker (apache-airflow-providers-celery 3.8.1, the provider 2.10.0's
  constraints pin): celery_command.worker reconfigures the ORM with NullPool; each of
  `[celery] worker_concurrency` (default "16", `-c`) slots runs a task by forking the
  supervisor (`airflow tasks run --local`, task_command.py:476 NullPool), which forks the
  raw task (standard_task_runner.py): two NullPool processes, one connection each
  while it uses the database. `worker_autoscale` "max,min" replaces the concurrency.
  With no `[celery] result_backend` the results go to `db+` the metadata connection
  (default_celery.py); celery 5.4.0's SessionManager keeps an engine in each forked
  pool child, which runs one task at a time: one more connection per slot.
- `airflow db migrate` (utils/db.py upgradedb): create_global_lock holds
  pg_advisory_lock on a connection of its own while command.upgrade runs on a
  SingletonThreadPool connection: 2.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from msgspec.structs import replace

from advisor.model import Pool, Source, Term
from advisor.read.apps.base import StackContext, tag_version
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.source import AppFile

POOL_SIZE = 5  # config.yml [database] sql_alchemy_pool_size
MAX_OVERFLOW = 10  # config.yml [database] sql_alchemy_max_overflow
WEBSERVER_WORKERS = 4  # config.yml [webserver] workers
PARSING_PROCESSES = 2  # config.yml [scheduler] parsing_processes
WORKER_CONCURRENCY = 16  # celery provider [celery] worker_concurrency
TASK_PROCESSES = 2  # supervisor + raw task, NullPool each
MIGRATE_CONNECTIONS = 2  # advisory-lock connection + the upgrade's own
LABEL = "Airflow SQLAlchemy pool"
_VERSION = "Airflow 2 (read in 2.10.0)"


class Setting(NamedTuple):
    value: str
    source: Source


class Config(NamedTuple):
    """Where a container's Airflow options come from: its env, then airflow.cfg."""

    env: dict[str, tuple[str | None, Source]]
    cfg: dict[tuple[str, str], Setting]


def _parse_cfg(f: AppFile) -> dict[tuple[str, str], Setting]:
    """airflow.cfg as configparser reads it: [section], `key = value` or `key: value`,
    keys lower-cased; the last entry wins."""
    out: dict[tuple[str, str], Setting] = {}
    section = ""
    for n, line in enumerate(f.text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        head = re.fullmatch(r"\[([^\]]+)\]", stripped)
        if head:
            section = head.group(1).strip().lower()
            continue
        m = re.match(r"([^=:]+?)\s*[=:]\s*(.*)$", stripped)
        if m and section:
            key = m.group(1).lower()
            out[(section, key)] = Setting(m.group(2).strip(),
                                          f.cite(n, f"[{section}] {key}", m.group(1)))
    return out


def _config(ctx: StackContext) -> Config:
    cfg: dict[tuple[str, str], Setting] = {}
    for f in ctx.files("airflow-cfg"):
        cfg.update(_parse_cfg(f))
    env = {e.name: (e.value, ctx.env_source(e.name)) for e in ctx.container.env
           if e.name.startswith("AIRFLOW__")}
    return Config(env=env, cfg=cfg)


class Unreadable(Exception):
    """An option set where the repository does not hold its value (a Secret, _CMD)."""

    def __init__(self, name: str, source: Source) -> None:
        super().__init__(name)
        self.name = name
        self.source = source


def option(conf: Config, sections: tuple[str, ...], key: str) -> Setting | None:
    """The option's value in Airflow's order (env per section, then airflow.cfg per
    section), None when unset; Unreadable when a Secret or a _CMD/_SECRET sets it."""
    for section in sections:
        name = f"AIRFLOW__{section.upper()}__{key.upper()}"
        if name in conf.env:
            value, source = conf.env[name]
            if value is None:
                raise Unreadable(name, source)
            return Setting(value, source)
    for section in sections:
        if (section, key) in conf.cfg:
            return conf.cfg[(section, key)]
    for section in sections:
        for suffix in ("_CMD", "_SECRET"):
            name = f"AIRFLOW__{section.upper()}__{key.upper()}{suffix}"
            if name in conf.env:
                raise Unreadable(name, conf.env[name][1])
    return None


def _count(conf: Config, sections: tuple[str, ...], key: str, default: int,
           label: str) -> Term | None:
    """An integer option as a Term (its default when unset); None if not a number."""
    got = option(conf, sections, key)
    if got is None:
        return Term(label=label, value=default, source=Source.default_of(
            f"{_VERSION} config.yml [{sections[0]}] {key} \"{default}\"", key=key))
    n = parse_int(got.value)
    return Term(label=label, value=n, source=got.source) if n is not None else None


def _db_sections(version: tuple[int, int]) -> tuple[str, ...]:
    # [database] came in 2.3.0; the [core] names are still read after it
    return ("core",) if version < (2, 3) else ("database", "core")


def pool_size(conf: Config, version: tuple[int, int]
              ) -> tuple[Term, str, str, list[Term]] | None:
    """One process's pool: (size, bound, note, the two settings the QueuePool's size is
    the sum of, each where it is set, for advise to move); None when a value is not a
    number."""
    sections = _db_sections(version)
    enabled = option(conf, sections, "sql_alchemy_pool_enabled")
    if enabled is not None and enabled.value.strip().lower() in ("false", "f", "0", "no", "off"):
        # NullPool: a connection per session in use; one thread holds one at a time
        return (Term(label="Airflow NullPool connections (sql_alchemy_pool_enabled=False)",
                     value=1, source=enabled.source), "fixed",
                "NullPool: one connection while the process uses the database", [])
    size = _count(conf, sections, "sql_alchemy_pool_size", POOL_SIZE,
                  "sql_alchemy_pool_size")
    overflow = _count(conf, sections, "sql_alchemy_max_overflow", MAX_OVERFLOW,
                      "sql_alchemy_max_overflow")
    if size is None or overflow is None:
        return None
    if size.value == 0 or overflow.value < 0:
        return (Term(label=LABEL, value=0, source=(size if size.value == 0 else overflow)
                     .source), "unbounded",
                "pool_size 0 or max_overflow -1: QueuePool without a limit", [])
    written = [t for t in (size, overflow) if t.source.path is not None]
    source = written[0].source if len(written) == 1 else size.source if written else \
        Source.default_of(f"{_VERSION} config.yml: sql_alchemy_pool_size \"5\" + "
                          "sql_alchemy_max_overflow \"10\" (settings.prepare_engine_args)",
                          key="sql_alchemy_pool_size")
    note = f"QueuePool pool_size {int(size.value)} ({size.source.label()}) + max_overflow " \
           f"{int(overflow.value)} ({overflow.source.label()})"
    return (Term(label=f"{LABEL} (pool_size + max_overflow)",
                 value=size.value + overflow.value, source=source),
            "fixed" if written else "default", note, [size, overflow])


def airflow_command(ctx: StackContext) -> list[str] | None:
    """The words after `airflow` in the container's command (`bash -c "exec airflow
    scheduler"`, the chart's args), or None when it runs no airflow command."""
    from advisor.read.apps.cmdline import command_line

    for segment in command_line(ctx.container, ctx.app, []).segments():
        words = [w.text for w in segment]
        for i, word in enumerate(words):
            if word.rsplit("/", 1)[-1] == "airflow":
                return words[i + 1:]
    return None


def _arg(words: list[str], short: str, long: str) -> str | None:
    for i, w in enumerate(words):
        if w in (short, long) and i + 1 < len(words):
            return words[i + 1]
        if w.startswith(long + "="):
            return w.split("=", 1)[1]
    return None


def _word_source(ctx: StackContext, key: str) -> Source:
    return replace(ctx.container.source, key=key)


def _processes(ctx: StackContext, conf: Config, words: list[str]
               ) -> list[tuple[str, Term, Term | None]] | None:
    """(what, processes, size override) per group of processes of the command; None
    when a count is not a number; [] for a command that holds no metadata pool."""
    one = Term(label="processes", value=1, source=Source.default_of(
        f"{_VERSION}: one process", key="processes"))
    sub = words[:2]
    if sub[:1] == ["webserver"]:
        given = _arg(words, "-w", "--workers")
        workers = Term(label="gunicorn workers (-w)", value=parse_int(given) or 0,
                       source=_word_source(ctx, "--workers")) if given else \
            _count(conf, ("webserver",), "workers", WEBSERVER_WORKERS, "gunicorn workers")
        if workers is None or not workers.value:
            return None
        groups = [("gunicorn workers", workers, None)]
        reload = option(conf, ("webserver",), "reload_on_plugin_change")
        if reload is None or reload.value.strip().lower() != "true":
            groups.append(("gunicorn master (--preload builds the app)", Term(
                label="gunicorn master", value=1, source=Source.default_of(
                    f"{_VERSION} webserver_command.py: gunicorn --preload",
                    key="reload_on_plugin_change")), None))
        return groups
    if sub[:1] in (["scheduler"], ["dag-processor"]):
        groups = [("scheduler", one, None)] if sub[0] == "scheduler" else []
        standalone = option(conf, ("scheduler",), "standalone_dag_processor")
        if sub[0] == "dag-processor" or standalone is None or \
                standalone.value.strip().lower() != "true":
            parsing = _count(conf, ("scheduler",), "parsing_processes", PARSING_PROCESSES,
                             "DAG file processors (parsing_processes)")
            if parsing is None:
                return None
            groups += [("DagFileProcessorManager", one, None),
                       ("DAG file processors", parsing, None)]
        return groups
    if sub[:1] == ["triggerer"]:
        return [("triggerer", one, None)]
    if sub == ["celery", "worker"]:
        return _celery_worker(ctx, conf, words)
    if sub[:1] == ["celery"]:
        return []  # flower, stop: the broker, not the metadata database
    if sub == ["db", "migrate"] or sub == ["db", "upgrade"]:
        return [("airflow db migrate", one, Term(
            label="airflow db migrate connections", value=MIGRATE_CONNECTIONS,
            source=Source.default_of(
                f"{_VERSION} utils/db.py upgradedb: the pg_advisory_lock connection "
                "(create_global_lock) + the upgrade's SingletonThreadPool connection",
                key="db migrate")))]
    # another CLI command (users create, connections add): one process, its pool
    return [(f"airflow {' '.join(w for w in sub if not w.startswith('-'))}", one, None)]


def _celery_worker(ctx: StackContext, conf: Config, words: list[str]
                   ) -> list[tuple[str, Term, Term | None]] | None:
    null = Term(label="Airflow NullPool connections per process", value=1,
                source=Source.default_of(
                    "airflow celery worker: settings.reconfigure_orm(disable_connection_pool"
                    "=True) (celery_command.py), tasks too (task_command.py:476)",
                    key="NullPool"))
    autoscale = _arg(words, "-a", "--autoscale")
    if autoscale is not None:
        slots: Term | None = Term(label="Celery pool processes (--autoscale max)",
                                  value=parse_int(autoscale.split(",")[0]) or 0,
                                  source=_word_source(ctx, "--autoscale"))
    else:
        given = _arg(words, "-c", "--concurrency")
        auto = option(conf, ("celery",), "worker_autoscale")
        if given is not None:
            slots = Term(label="Celery worker concurrency (-c)", value=parse_int(given) or 0,
                         source=_word_source(ctx, "--concurrency"))
        elif auto is not None and auto.value.strip():
            slots = Term(label="Celery pool processes (worker_autoscale max)",
                         value=parse_int(auto.value.split(",")[0]) or 0, source=auto.source)
        else:
            slots = _count(conf, ("celery",), "worker_concurrency", WORKER_CONCURRENCY,
                           "Celery worker concurrency")
    if slots is None or not slots.value:
        return None
    per_task = Term(label="connections per running task (supervisor + raw task, NullPool)",
                    value=TASK_PROCESSES, source=Source.default_of(
                        "the task supervisor (`airflow tasks run --local`) and the raw task "
                        "it forks, NullPool each (task_command.py, standard_task_runner.py)",
                        key="NullPool"))
    main = Term(label="Celery worker main process", value=1, source=Source.default_of(
        f"{_VERSION}: one process", key="processes"))
    groups = [("Celery worker main process (NullPool)", main, null),
              ("Celery task slots", slots, per_task)]
    try:
        backend = option(conf, ("celery",), "result_backend")
    except Unreadable as exc:
        # a command or Secret not run or held here (airflow-helm's
        # AIRFLOW__CELERY__RESULT_BACKEND_CMD builds a db+postgresql URL): counted as a
        # database backend, named, rather than left out of a total printed as exact
        ctx.notices.append(f"{ctx.container.name}: Celery result_backend is set by "
                           f"{exc.name} ({exc.source.label()}), not read here: counted as "
                           "a database backend (one connection per prefork child); a "
                           "non-database backend (redis://) opens none")
        groups.append(("Celery result backend (set where it is not read)", slots, Term(
            label="result-backend connections per prefork child", value=1,
            source=Source.default_of(
                f"result_backend from {exc.name}, not read here: assumed a database "
                "backend, one connection per prefork child (celery 5.4 backends/database/"
                "session.py get_engine: a kept engine after fork)", key="result_backend"))))
        return groups
    if backend is None:
        # default_celery.py: no result_backend -> db+ the metadata connection; each
        # prefork child stores its task's result through celery's SessionManager, whose
        # engine after fork is a QueuePool it keeps: one task at a time, one connection
        groups.append(("Celery result backend (db+ sql_alchemy_conn)", slots, Term(
            label="result-backend connections per prefork child", value=1,
            source=Source.default_of(
                "celery provider default_celery.py: result_backend unset -> db+ "
                "sql_alchemy_conn; celery 5.4 backends/database/session.py get_engine: a "
                "kept engine after fork, used by one task at a time", key="result_backend"))))
    return groups


def airflow_pools(ctx: StackContext) -> list[Pool]:
    image = ctx.container.image.split("@", 1)[0].lower()
    if image.rsplit(":", 1)[0].rsplit("/", 1)[-1] != "airflow" and not any(
            e.name.startswith("AIRFLOW__") for e in ctx.container.env):
        return []
    words = airflow_command(ctx)
    if words is None:
        return []  # the image running another program (the chart's log groomer)
    version = tag_version(ctx.container.image) \
        if image.rsplit(":", 1)[0].endswith("apache/airflow") else None
    tag = ctx.container.image.rsplit(":", 1)[-1]
    if version is None or version[0] != 2:
        ctx.unknown.append(
            f"Airflow image {ctx.container.image}: "
            + (f"Airflow {tag} is not read by pool-advisor (Airflow 3 moved the web server "
               "to the api-server and tasks to the Task SDK)" if version is not None else
               "its tag names no apache/airflow 2.x version, whose defaults pool-advisor "
               "knows"))
        return []
    conf = _config(ctx)
    try:
        size = pool_size(conf, version)
        groups = _processes(ctx, conf, words)
        executor = option(conf, ("core",), "executor")
    except Unreadable as exc:
        ctx.hidden_size(LABEL, exc.name, exc.source)
        return []
    if size is None or groups is None:
        ctx.unknown.append(f"{ctx.container.name}: an Airflow pool or process count is not "
                           "a number pool-advisor can read")
        return []
    if words[:1] == ["scheduler"] and executor is not None and \
            "LocalExecutor" in executor.value:
        # tasks then run in the scheduler's pod: processes pool-advisor does not count
        ctx.unknown.append(f"{ctx.container.name}: executor {executor.value} "
                           f"({executor.source.label()}) runs tasks in the scheduler's pod")
        return []
    if words[:1] == ["scheduler"] and executor is not None and \
            "KubernetesExecutor" in executor.value:
        # task pods are made at run time from pod_template_file: no manifest to count
        ctx.notices.append(
            f"{ctx.container.name}: executor {executor.value} ({executor.source.label()}) "
            "runs each task in a pod of its own, not in the manifests: up to [core] "
            "parallelism (default 32) tasks x 2 connections (supervisor + raw task) not "
            "counted")
    term, bound, note, parts = size
    out = []
    for what, processes, override in groups:
        pool_term = override or term
        out.append(Pool(label=f"{LABEL}: {what}", size=pool_term, processes=processes,
                        bound=bound if override is None else "fixed",
                        note=note if override is None else "",
                        parts=parts if override is None else []))
    return out
