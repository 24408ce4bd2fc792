"""Sentry run from its image (getsentry/sentry; the sentry-kubernetes chart, self-hosted):
the connections of each `sentry ...` command, from what the command runs. Django holds
one connection per thread (advisor/read/apps/django.py); what matters is which threads
and processes a command starts, and which of them reach the database.

Read in Sentry's source at getsentry/sentry master 55d5792c (2024-08-29, setup.cfg
`version = 24.9.0.dev0`, 18 days before the 24.9.0 release the sentry-kubernetes chart
runs as appVersion 24.9.0; the tag itself could not be fetched, see below). Paths are
under src/sentry/ unless named otherwise.

Every process holds a connection in its main thread once it has started:
- runner/initializer.py:398-401: initialize_app, which `configure()` runs in every
  `sentry` process, asks `options.get("system.url-prefix")` when SENTRY_SELF_HOSTED
  (conf/server.py:2481, True) and CSRF_TRUSTED_ORIGINS is empty (the chart sets none).
  The option is FLAG_PRIORITIZE_DISK (options/defaults.py:63-69): unless config.yml sets
  it (the chart writes it only when `system.url` is set; its default is ""), the options
  manager asks the store (options/manager.py:289-299), and the store the database
  (options/store.py:193, `Option.objects.get`) when its cache has no value (a missing
  row is never cached). Django opens that connection in the main thread and closes it
  only at a request's end; nothing in src/ calls close_old_connections, so a process
  that serves no request (a consumer, Celery beat) keeps it. Counted: 1 per process
  (exact with the chart's defaults, at most otherwise).
- The Celery worker's main process closes it: celery 5.3.5 (requirements-frozen.txt)
  celery/fixups/django.py:82 worker_init -> DjangoWorkerFixup.install:139-146
  close_database (CONN_MAX_AGE 0, the chart's). `sentry run web` exec()s uWSGI
  (services/http.py:177-178) with lazy-apps (:108): the master loads no application.
  Celery beat (`sentry run cron`, run.py:272 app.Beat) runs no worker_init, and the
  fixup closes connections of an embedded beat only (django.py:140): 1.

Per command (P: `--processes` after `--`, the consumer's options; C: the node's
logical CPUs, os.cpu_count(), not the pod's CPU limit):
- `run web`: uWSGI workers x threads (advisor/read/apps/processes.py).
- `run worker`: Celery prefork children (run.py:154 pool_cls="processes"), `-c`, default
  `cpu_count()` (run.py:180-189); each runs one task at a time (processes.py).
- `run cron`: 1 (above).
- `run consumer NAME ... -- OPTIONS` (run.py:280-387; consumer options parsed from the
  words after `--`, run.py:285 `consumer_args`, consumers/__init__.py:461-467):
  - spawned processes: sentry.utils.arroyo.MultiprocessingPool (utils/arroyo.py:138-146)
    is arroyo's: sentry-arroyo 2.16.5 run_task_with_multiprocessing.py:318,325-329
    starts `Pool(num_processes, ..., context=get_context("spawn"))` when the factory is
    built, at any P; each child runs configure() (utils/arroyo.py:115-118), so it holds
    1 from its start (above), and handles one message at a time: 1 each. Not when
    sentry.conf.py sets KAFKA_CONSUMER_FORCE_DISABLE_MULTIPROCESSING = True
    (conf/server.py:2916 False; utils/arroyo.py:141-142, 175-189: RunTask in the main
    process).
  - ingest-events, ingest-transactions, ingest-feedback-events (ingest/consumer/
    factory.py:79 pool at any P; :87 P > 1 processes in it, else RunTask in the main
    process; :110 the backpressure step's options.get, processing/backpressure/
    arroyo.py:23, in the main process): 1 + P. ingest-attachments: two pools
    (factory.py:79, 84): 1 + 2P. --processes default 1 (consumers/__init__.py:45).
  - ingest-monitors: `--mode` default parallel (consumers/__init__.py:110-113):
    ThreadPoolExecutor(max_workers=--max-workers) (monitor_consumer.py:1057-1059),
    `--max-workers` default None (consumers/__init__.py:127-132), each thread a check-in
    group's (:990-993): 1 + min(32, C + 4); serial: 1 (RunTask, :1082-1086).
  - ingest-occurrences: `--mode` default batched-parallel (consumers/__init__.py:68-73):
    ThreadPoolExecutor() (issues/run.py:42-43): 1 + min(32, C + 4); parallel: a
    MultiprocessingPool(P) (issues/run.py:48): 1 + P.
  - ingest-replay-recordings: P > 1 processes (replays/consumers/recording.py:62-64),
    else RunTaskInThreads(concurrency=--threads) (:89-96), `--threads` default 4
    (consumers/__init__.py:80; arroyo run_task_in_threads.py:44 ThreadPoolExecutor(
    max_workers=concurrency)): 1 + P, else 1 + threads.
  - ingest-profiles (profiles/consumers/process/factory.py:21-38), billing-metrics-consumer
    (ingest/billing_metrics_consumer.py): RunTask in the main process, 1.
  - ingest-metrics, ingest-generic-metrics: a MultiprocessingPool(--processes) always
    (sentry_metrics/consumers/indexer/parallel.py:142-152, 173), `--processes` default 1
    (consumers/__init__.py:175-178), the PostgreSQL indexer (`--indexer-db` default
    postgres, :168): 1 + P.
  - post-process-forwarder-errors / -transactions / -issue-platform: the pool is built in
    every mode (post_process_forwarder/post_process_forwarder.py:42); `--mode` default
    multithreaded (consumers/__init__.py:208-213) runs RunTaskInThreads(concurrency=
    --concurrency) (:49-56), `--concurrency` default 5 (:202-207); each thread reads
    options per message (eventstream/kafka/dispatch.py:71), the database on a cache
    miss: 1 + --concurrency + P; multiprocess: 1 + P.
  - events-, transactions-, generic-metrics-, metrics-subscription-results: a pool always
    (snuba/query_subscriptions/run.py:45), multi_proc default True (:35, 53-62): 1 + P.
  - another consumer: not read here, unknown.
- `cleanup --concurrency K` (runner/commands/cleanup.py:105-110, default 1): K
  multiprocessing workers (:155-158), each configure()s and deletes (:59-61), and the
  main process deletes too (:161-164): K + 1.
- another `sentry run` command: not read here, unknown; another `sentry` command
  (upgrade, createuser, exec): one process, Django's one connection per thread.

min(32, C + 4) is Python's ThreadPoolExecutor() without max_workers (CPython 3.8 to
3.12 Lib/concurrent/futures/thread.py ThreadPoolExecutor.__init__: `max_workers =
min(32, (os.cpu_count() or 1) + 4)`; the image runs python:3.12.3, self-hosted/
Dockerfile:1); PA103 reports it by node size.

Not counted: a web request may start threads of its own that query the database
(api/endpoints/organization_events_trace.py:1371 ThreadPoolExecutor(max_workers=20)),
and so may Celery tasks (hybridcloud/tasks/deliver_webhooks.py:273): how many at once is
not bounded where read.

Provenance: getsentry/sentry is over the fetch size limit; 55d5792c is read in the fork
Swimm-Demo/sentry-demo-1, whose own later commits change nothing under src/. What changed
between it and the 24.9.0 tag is not verified.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

from msgspec.structs import replace

from advisor.model import CpuFormula, Pool, Source, Term
from advisor.read.apps.base import StackContext
from advisor.read.apps.cmdline import Word
from advisor.read.apps.django import django_alias_pools, is_sentry_image
from advisor.read.apps.numbers import parse_int

# The image test lives in django.py, whose reader leaves these images to this one.
is_sentry = is_sentry_image
V = "Sentry 24.9 (master 55d5792c)"
THREAD_POOL = CpuFormula(per_cpu=1, plus=4, ceiling=32, text="min(32, os.cpu_count() + 4)")
PROCESSES_DEFAULT = 1  # consumers/__init__.py:45, :175-178 `--processes` default=1
REPLAY_THREADS = 4  # consumers/__init__.py:80 `--threads` default=4
PPF_CONCURRENCY = 5  # consumers/__init__.py:202-207 `--concurrency` default=5
CLEANUP_CONCURRENCY = 1  # runner/commands/cleanup.py:105-110 `--concurrency` default=1

_MAIN = (f"{V}: the main thread holds the connection runner/initializer.py:398-401 opens "
         "at start (options.get('system.url-prefix') reads the database when config.yml "
         "does not set it), never closed outside a request")
_SPAWNED = (f"{V}: utils/arroyo.py:138-146, arroyo 2.16.5 run_task_with_multiprocessing.py:"
            "318,325-329: Pool(--processes, spawn) started with the consumer; each child "
            "configure()s (utils/arroyo.py:115-118) and handles one message at a time")

# `sentry run consumer` options that take a value (run.py:286-351, log_options)
_VALUED = frozenset({"--topic", "--cluster", "--consumer-group", "--auto-offset-reset",
                     "--join-timeout", "--max-poll-interval-ms", "--group-instance-id",
                     "--synchronize-commit-log-topic", "--synchronize-commit-group",
                     "--healthcheck-file-path", "--log-level", "--loglevel", "-l",
                     "--logformat"})
_INGEST = ("ingest-events", "ingest-transactions", "ingest-feedback-events")
_SUBSCRIPTIONS = ("events-subscription-results", "transactions-subscription-results",
                  "generic-metrics-subscription-results", "metrics-subscription-results")
_PPF = ("post-process-forwarder-errors", "post-process-forwarder-transactions",
        "post-process-forwarder-issue-platform")
_FORCE_NO_MP = re.compile(r"^KAFKA_CONSUMER_FORCE_DISABLE_MULTIPROCESSING\s*=\s*True\b",
                          re.MULTILINE)


class Group(NamedTuple):
    """Threads or processes of a command that each hold up to one connection."""

    what: str  # "main process", "spawned processes", "worker threads"
    size: Term  # connections per process (threads that query)
    processes: Term | None = None
    bound: Literal["fixed", "default", "cpu"] = "fixed"
    cpu: CpuFormula | None = None
    note: str = ""


def _sentry_words(ctx: StackContext) -> list[Word] | None:
    """The words after `sentry` in the container's command, or None when it runs no
    sentry command (the image's entrypoint runs what the command says)."""
    from advisor.read.apps.cmdline import command_line

    for segment in command_line(ctx.container, ctx.app, []).segments():
        for i, w in enumerate(segment):
            if w.text.rsplit("/", 1)[-1] == "sentry":
                return segment[i + 1:]
    return None


def _word_source(ctx: StackContext, word: Word, key: str) -> Source:
    if word.from_env:
        var = ctx.env(word.from_env)
        if var is not None:
            return replace(var.source, key=word.from_env)
    return replace(word.source, key=key)


def _option(ctx: StackContext, words: list[Word], name: str, label: str, default: int,
            default_text: str) -> Term | None:
    """An integer option's Term: the last `--name N` / `--name=N`, else `default`. None
    (and why in ctx.unknown) when its value is not a number read here."""
    found: tuple[str, Word] | None = None
    for i, w in enumerate(words):
        if w.text == name and i + 1 < len(words):
            found = words[i + 1].text, words[i + 1]
        elif w.text.startswith(name + "="):
            found = w.text.split("=", 1)[1], w
    if found is None:
        return Term(label=label, value=default, source=Source.default_of(default_text,
                                                                         key=name))
    text, word = found
    src = _word_source(ctx, word, name)
    if word.from_env and (var := ctx.env(word.from_env)) is not None and var.value is None:
        ctx.hidden_size(label, word.from_env, src)
        return None
    n = parse_int(text.strip("'\""))
    if n is None or n < 1:
        ctx.unknown.append(f"{label} at {src.label()} is {text!r}, not a count "
                           "pool-advisor can read")
        return None
    return Term(label=label, value=n, source=src)


def _text_option(words: list[Word], name: str) -> str | None:
    value = None
    for i, w in enumerate(words):
        if w.text == name and i + 1 < len(words):
            value = words[i + 1].text
        elif w.text.startswith(name + "="):
            value = w.text.split("=", 1)[1]
    return value.strip("'\"") if value is not None else None


def _consumer(words: list[Word]) -> tuple[str, list[Word]] | None:
    """`consumer NAME [options] [-- consumer options]`: NAME and the words after `--`."""
    i = 0
    name = None
    while i < len(words):
        t = words[i].text
        if t == "--":
            break
        if t in _VALUED:
            i += 2
            continue
        if not t.startswith("-"):
            name = t
            break
        i += 1
    if name is None:
        return None
    rest = words[i + 1:]
    dash = next((j for j, w in enumerate(rest) if w.text == "--"), None)
    return name, rest[dash + 1:] if dash is not None else []


def _main(why: str = "") -> Group:
    return Group("main process", Term(label="main thread (1 connection)", value=1,
                                      source=Source.default_of(_MAIN, key="main thread")),
                 note=why)


def _spawned(processes: Term, pools: int = 1) -> Group:
    if pools > 1:
        processes = replace(processes, label=f"{pools} pools x {processes.label}",
                            value=pools * processes.value)
    return Group("spawned processes", Term(label="1 connection per spawned process", value=1,
                                           source=Source.default_of(_SPAWNED,
                                                                    key="--processes")),
                 processes=processes)


def _threads(term: Term, default: bool, note: str = "") -> Group:
    return Group("worker threads", term, bound="default" if default else "fixed", note=note)


def _cpu_threads(ctx: StackContext, where: str) -> Group:
    return Group("ThreadPoolExecutor threads", Term(
        label="ThreadPoolExecutor() threads", value=THREAD_POOL.at(ctx.cpus),
        source=Source.default_of(f"{V}: {where} ThreadPoolExecutor() without max_workers: "
                                 "CPython 3.12 min(32, os.cpu_count() + 4), os.cpu_count() "
                                 "of the node", key="max_workers")),
        bound="cpu", cpu=THREAD_POOL)


def _processes(ctx: StackContext, opts: list[Word], name: str) -> Term | None:
    return _option(ctx, opts, "--processes", f"Sentry {name} --processes", PROCESSES_DEFAULT,
                   f"{V} consumers/__init__.py: --processes default 1")


def _no_multiprocessing(ctx: StackContext) -> Source | None:
    """Where sentry.conf.py sets KAFKA_CONSUMER_FORCE_DISABLE_MULTIPROCESSING = True."""
    for f in ctx.files("python"):
        if f.name == "sentry.conf.py" and (m := _FORCE_NO_MP.search(f.text)):
            return f.cite(f.text.count("\n", 0, m.start()) + 1,
                          "KAFKA_CONSUMER_FORCE_DISABLE_MULTIPROCESSING")
    return None


def _consumer_groups(ctx: StackContext, name: str, opts: list[Word]) -> list[Group] | None:
    """The groups of consumer `name`; None when unknown (why in ctx.unknown)."""
    mp_off = _no_multiprocessing(ctx)

    def with_pool(why: str, pools: int = 1) -> list[Group] | None:
        procs = _processes(ctx, opts, name)
        if procs is None:
            return None
        if mp_off is not None:
            return [_main(f"{why}; KAFKA_CONSUMER_FORCE_DISABLE_MULTIPROCESSING at "
                          f"{mp_off.label()}: no spawned processes, RunTask here")]
        return [_main(why), _spawned(procs, pools)]

    if name in _INGEST:
        return with_pool("RunTask with --processes 1, the backpressure check's "
                         "options.get above (ingest/consumer/factory.py:87,110)")
    if name == "ingest-attachments":
        return with_pool("RunTask with --processes 1 (ingest/consumer/factory.py:87)",
                         pools=2)
    if name in ("ingest-metrics", "ingest-generic-metrics"):
        return with_pool("the indexer's factory (sentry_metrics/consumers/indexer/"
                         "parallel.py:120-160)")
    if name in _SUBSCRIPTIONS:
        return with_pool("commits and dispatches (snuba/query_subscriptions/run.py:53-62)")
    if name in ("ingest-profiles", "billing-metrics-consumer"):
        return [_main("RunTask in the main process")]
    if name == "ingest-monitors":
        mode = _text_option(opts, "--mode") or "parallel"
        if mode == "serial":
            return [_main("--mode serial: RunTask (monitor_consumer.py:1082-1086)")]
        given = _option(ctx, opts, "--max-workers", "Sentry ingest-monitors --max-workers",
                        0, "")
        if given is None:
            return None
        if given.value:
            return [_main(), _threads(given, default=False)]
        return [_main(), _cpu_threads(ctx, "monitors/consumers/monitor_consumer.py:1057-1059 "
                                           "(--max-workers unset)")]
    if name == "ingest-occurrences":
        mode = _text_option(opts, "--mode") or "batched-parallel"
        if mode == "parallel":
            return with_pool("--mode parallel (issues/run.py:48)")
        return [_main(), _cpu_threads(ctx, "issues/run.py:42-43 (--mode batched-parallel)")]
    if name == "ingest-replay-recordings":
        procs = _processes(ctx, opts, name)
        if procs is None:
            return None
        if procs.value > 1:
            return with_pool("--processes > 1 (replays/consumers/recording.py:62-64)")
        threads = _option(ctx, opts, "--threads", "Sentry ingest-replay-recordings --threads",
                          REPLAY_THREADS, f"{V} consumers/__init__.py:80: --threads default "
                          "4 (replays/consumers/recording.py:89-96 RunTaskInThreads)")
        if threads is None:
            return None
        return [_main(), _threads(threads, default=threads.source.path is None)]
    if name in _PPF:
        mode = _text_option(opts, "--mode") or "multithreaded"
        groups = with_pool("the forwarder (post_process_forwarder.py:42 builds the pool in "
                           "every mode)")
        if groups is None or mode == "multiprocess":
            return groups
        conc = _option(ctx, opts, "--concurrency", f"Sentry {name} --concurrency",
                       PPF_CONCURRENCY, f"{V} consumers/__init__.py:202-207: --concurrency "
                       "default 5 (post_process_forwarder.py:49-56 RunTaskInThreads)")
        if conc is None:
            return None
        return [*groups, _threads(conc, default=conc.source.path is None,
                                  note="each thread reads options per message "
                                       "(eventstream/kafka/dispatch.py:71), the database "
                                       "on a cache miss")]
    ctx.unknown.append(f"Sentry consumer {name!r} ({ctx.container.name}): its threads and "
                       f"processes are not read by pool-advisor ({V} read)")
    return None


def _groups(ctx: StackContext, words: list[Word]) -> tuple[str, list[Group]] | None:
    """(the command, its groups) for a command read here; None for one Django's reading
    covers (web, worker, another sentry command); ("", []) when unknown."""
    texts = [w.text for w in words]
    if texts[:1] == ["cleanup"]:
        k = _option(ctx, words, "--concurrency", "Sentry cleanup --concurrency",
                    CLEANUP_CONCURRENCY, f"{V} runner/commands/cleanup.py:105-110: "
                    "--concurrency default 1")
        if k is None:
            return "", []
        return "cleanup", [
            _main("deletes too (runner/commands/cleanup.py:161-164)"),
            Group("worker processes", Term(label="1 connection per worker", value=1,
                  source=Source.default_of(f"{V} runner/commands/cleanup.py:155-158: a "
                                           "Process per --concurrency, each configure()s "
                                           "(:59-61) and deletes", key="--concurrency")),
                  processes=k)]
    if texts[:1] != ["run"]:
        return None  # upgrade, createuser, exec: one process
    sub = texts[1] if len(texts) > 1 else ""
    if sub in ("web", "worker"):
        return None
    if sub == "cron":
        return "run cron", [_main("Celery beat (run.py:272): the fixup never closes it "
                                  "(celery 5.3.5 fixups/django.py:81-82, 140)")]
    if sub == "consumer":
        found = _consumer(words[2:])
        if found is None:
            ctx.unknown.append(f"{ctx.container.name}: `sentry run consumer` without a "
                               "consumer name read here")
            return "", []
        name, opts = found
        groups = _consumer_groups(ctx, name, opts)
        return name, groups or []
    ctx.unknown.append(f"{ctx.container.name}: `sentry run {sub}` is not read by "
                       f"pool-advisor ({V} read: web, worker, cron, consumer)")
    return "", []


def sentry_pools(ctx: StackContext) -> list[Pool]:
    """Each Django alias's connections (the route from sentry.conf.py's DATABASES), as
    the container's `sentry` command uses threads and processes."""
    aliases = django_alias_pools(ctx)
    if not aliases:
        return []
    words = _sentry_words(ctx)
    found = _groups(ctx, words) if words is not None else None
    if found is None:
        return aliases  # web and worker: processes.py's count; another command: 1 process
    command, groups = found
    if not groups:
        # unknown (ctx.unknown says why): the aliases still say where it connects
        return aliases
    pools: list[Pool] = []
    for alias in aliases:
        name = alias.label.split(" (", 1)[0]  # "Django default"
        for g in groups:
            # one connection per thread that queries, per DATABASES alias
            label = f"Sentry {command} {g.what}" + (f" ({name})" if len(aliases) > 1 else "")
            pool = ctx.pool(label, g.size.value, g.size.source, route=alias.route,
                            bound=g.bound, cpu=g.cpu, note=g.note, per_process=False,
                            size_label=g.size.label)
            pools.append(replace(pool, processes=g.processes) if g.processes else pool)
    return pools
