"""Laravel Horizon (`php artisan horizon`): the PHP processes that run jobs in one pod, each
holding its own PDO connection (apps/laravel.py), from the app's config/horizon.php
(laravel/horizon@d9c39ce4 is the source cited):
- the environment: `--environment`, else config('horizon.env'), else config('app.env')
  (src/Console/HorizonCommand.php:40), APP_ENV defaulting to 'production' (laravel/framework
  config/app.php).
- its supervisors: `defaults` replaced by the first `environments` key matching it (`*`
  globs; ProvisioningPlan applyDefaultOptions array_replace_recursive, deploy Str::is), a
  supervisor whose maxProcesses <= 0 not started (ProvisioningPlan.php:114).
- each supervisor's workers: maxProcesses (`processes` is its old name, convert():176;
  default 1, SupervisorOptions.php:61); a balancing supervisor (balance simple or auto)
  keeps minProcesses (default 1) on each of its queues, so it may run more when
  minProcesses x queues is larger (Supervisor::scale, Supervisor.php:136).
The master and supervisor processes run no job; they are not counted."""

from __future__ import annotations

import fnmatch

from msgspec.structs import replace

from advisor.model import Source, Term
from advisor.read.apps.base import StackContext
from advisor.read.apps.phparray import EnvCall, Opaque, Value, returned_array
from advisor.read.apps.source import AppFile

LABEL = "Laravel Horizon workers"
APP_ENV_DEFAULT = Source.default_of(
    "Laravel config('app.env'): env('APP_ENV', 'production') (laravel/framework@defd5d4b "
    "config/app.php:32)", key="APP_ENV")
_NOT_SET = object()


class _Unknown(Exception):
    """A value the repository does not say; the message says which."""


def _file(ctx: StackContext) -> AppFile | None:
    found = [f for f in ctx.files("laravel-config") if f.rel.endswith("config/horizon.php")]
    return min(found, key=lambda f: f.rel.count("/"), default=None)


def _resolve(ctx: StackContext, v: Value | None, f: AppFile, key: str) -> object:
    """The PHP value `v`, env() read from the container (its default when unset)."""
    if v is None:
        return None
    if isinstance(v.value, Opaque):
        raise _Unknown(f"{f.cite(v.line).label()}: {key} is `{v.value.text}`, an expression "
                       "pool-advisor does not evaluate")
    if isinstance(v.value, EnvCall):
        var = ctx.env(v.value.name)
        if var is not None and var.value is not None:
            return var.value
        if var is not None or ctx.env_from_hidden(v.value.name) is not None:
            raise _Unknown(f"{f.cite(v.line).label()}: {key} is env('{v.value.name}'), set "
                           "from a source whose value the repository does not hold")
        return _resolve(ctx, v.value.default, f, key)
    return v.value


def _option(words: list[str], name: str) -> str | None:
    for i, w in enumerate(words):
        if w.startswith(name + "="):
            return w.split("=", 1)[1]
        if w == name and i + 1 < len(words):
            return words[i + 1]
    return None


def _environment(ctx: StackContext, words: list[str], doc: dict, f: AppFile
                 ) -> tuple[str, Source]:
    if (opt := _option(words, "--environment")) is not None:
        return opt, replace(ctx.container.source, key="--environment")
    env = doc.get("env")
    value = _resolve(ctx, env, f, "env")
    if value is not None and env is not None:
        return str(value), f.cite(env.line, "env")
    var = ctx.env("APP_ENV")
    if var is not None and var.value is not None:
        return var.value.strip(), var.source
    if var is not None or ctx.env_from_hidden("APP_ENV") is not None:
        raise _Unknown("APP_ENV, which picks Horizon's environment, is set from a source "
                       "whose value the repository does not hold")
    return "production", APP_ENV_DEFAULT


def _merged(defaults: dict, plan: dict) -> dict:
    """PHP array_replace_recursive(defaults, plan) on parsed arrays."""
    out = dict(defaults)
    for k, v in plan.items():
        old = out.get(k)
        if old is not None and isinstance(old.value, dict) and isinstance(v.value, dict):
            out[k] = Value(_merged(old.value, v.value), v.line)
        else:
            out[k] = v
    return out


def _camel(key: str) -> str:
    """Str::camel after convert()'s renames (tries, processes)."""
    key = {"processes": "max_processes", "tries": "max_tries"}.get(key, key)
    head, *rest = key.replace("-", "_").split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _count(ctx: StackContext, v: Value | None, f: AppFile, key: str, default: int
           ) -> tuple[int, Value | None]:
    value = _resolve(ctx, v, f, key)
    if value is None:
        return default, None
    if isinstance(value, bool) or not str(value).strip().lstrip("-").isdigit():
        raise _Unknown(f"{f.cite(v.line if v else None).label()}: {key} = {value!r} is not "
                       "a count")
    return int(str(value).strip()), v


def _workers(ctx: StackContext, name: str, options: dict, f: AppFile
             ) -> tuple[int, Value | None]:
    opts: dict[str, Value] = {}
    for key, v in options.items():
        if isinstance(key, str):
            opts[_camel(key)] = v  # later keys win, as in convert()'s mapWithKeys
    most, cited = _count(ctx, opts.get("maxProcesses"), f, f"{name}.maxProcesses", 1)
    least, _ = _count(ctx, opts.get("minProcesses"), f, f"{name}.minProcesses", 1)
    balance = _resolve(ctx, opts.get("balance"), f, f"{name}.balance")
    queue = _resolve(ctx, opts.get("queue"), f, f"{name}.queue")
    queues = len(queue) if isinstance(queue, dict) else \
        len([q for q in str(queue).split(",") if q]) if queue else 1
    if most <= 0:
        return 0, cited
    if balance in ("simple", "auto"):
        return max(most, least * queues), cited
    return most, cited


def horizon_workers(ctx: StackContext, words: list[str]) -> Term | None:
    """The job processes `artisan horizon` runs in the pod; None when not known (said in
    ctx.unknown)."""
    f = _file(ctx)
    if f is None:
        ctx.unknown.append(f"{LABEL}: config/horizon.php, whose supervisors say how many "
                           "job processes run, is not among the application files read")
        return None
    doc = returned_array(f.text)
    try:
        if doc is None or not isinstance(doc.value, dict):
            raise _Unknown(f"{f.path}: the array it returns is not one pool-advisor reads")
        env, env_source = _environment(ctx, words, doc.value, f)
        environments = doc.value.get("environments")
        defaults = doc.value.get("defaults")
        if environments is None or not isinstance(environments.value, dict) or (
                defaults is not None and not isinstance(defaults.value, dict)):
            raise _Unknown(f"{f.path}: its environments are not an array pool-advisor reads")
        plan = next((v for k, v in environments.value.items()
                     if isinstance(k, str) and fnmatch.fnmatchcase(env, k)), None)
        if plan is None or not isinstance(plan.value, dict):
            raise _Unknown(f"{f.cite(environments.line).label()}: no supervisors for the "
                           f"environment '{env}' ({env_source.label()})")
        supervisors = _merged(defaults.value if defaults is not None else {}, plan.value)
        counts: dict[str, tuple[int, Value | None]] = {}
        for name, options in supervisors.items():
            if not isinstance(options.value, dict):
                raise _Unknown(f"{f.cite(options.line).label()}: supervisor {name} is not an "
                               "array pool-advisor reads")
            counts[str(name)] = _workers(ctx, str(name), options.value, f)
    except _Unknown as why:
        ctx.unknown.append(f"{LABEL}: {why}")
        return None
    running = {n: c for n, c in counts.items() if c[0] > 0}
    total = sum(c[0] for c in running.values())
    cited = next((c[1] for c in running.values() if c[1] is not None), None)
    source = f.cite(cited.line, "maxProcesses") if cited is not None else f.cite(plan.line, env)
    each = " + ".join(f"[{n}] {c[0]}" for n, c in running.items()) or \
        "no supervisor with maxProcesses > 0"
    label = f"Horizon workers (environment {env}: {each})"
    return Term(label=label, value=total, source=source)
