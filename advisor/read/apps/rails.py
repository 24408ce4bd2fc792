"""Rails / Active Record: config/database.yml per environment (RAILS_ENV, else
RACK_ENV, else development), two-tier (`production: {adapter, pool}`) or three-tier
(`production: {primary: {...}, primary_replica: {..., replica: true}}`), one pool per
database config. ERB tags are evaluated without Ruby for the usual forms
(advisor/read/apps/rubyeval.py: `ENV.fetch("RAILS_MAX_THREADS") { 5 }` and friends).
DATABASE_URL, when set, is merged into the primary config and its `?pool=` query wins.

Default read in rails/rails activerecord/lib/active_record/database_configurations/
hash_config.rb (`def pool; (configuration_hash[:pool] || 5).to_i`); Rails 8.1 also
accepts `max_connections`. Each Puma worker (and each Sidekiq process) has its own pool.
"""

from __future__ import annotations

import re
import warnings
from urllib.parse import parse_qs, urlsplit

from msgspec.structs import replace

from advisor.model import EnvVar, Pool, Route, Source, Term
from advisor.read.apps.base import StackContext
from advisor.read.apps.cmdline import process_env, rails_env
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.pyeval import Val
from advisor.read.apps.rubyeval import RubyScope, ruby_eval
from advisor.read.apps.source import AppFile
from advisor.read.apps.urls import route_from_url

DEFAULT_POOL = 5
_ERB_OUT = re.compile(r"<%=\s*(.*?)\s*-?%>")
_ERB_CODE = re.compile(r"<%(?!=).*?%>")
_CONFIG_KEYS = {"adapter", "database", "url", "host", "pool", "username", "max_connections"}


def _render(f: AppFile, ctx: StackContext
            ) -> tuple[str, dict[int, Val], list[int], dict[int, EnvVar]]:
    """ERB rendered line by line: (text, line -> value of its <%= %>, unreadable lines,
    line -> the variable without a value here (a Secret's) that made it unreadable)."""
    env = process_env(ctx.env_map(), ctx.app, ctx.container.image)  # and its image ENV
    facts = _process_facts(ctx)
    values: dict[int, Val] = {}
    unknown: list[int] = []
    hidden: dict[int, EnvVar] = {}
    out_lines = []
    for n, line in enumerate(f.text.splitlines(), 1):
        # Tags are looked for only up to the last `%>`: past it, each unclosed `<%` would
        # scan to the end of the line again (quadratic on a 44 KB line of them).
        cut = line.rfind("%>") + 2
        line = _ERB_CODE.sub("", line[:cut]) + line[cut:] if cut >= 2 else line
        cut = line.rfind("%>") + 2

        def sub(m: re.Match[str], n: int = n) -> str:
            scope = RubyScope(f.path, n, env, ctx.cpus, dict(facts))
            v = ruby_eval(m.group(1), scope)
            if v is None or v.value is None:
                unknown.append(n)
                if scope.hidden:
                    hidden.setdefault(n, scope.hidden[0])
                return "__erb_unknown__"
            values[n] = v
            return str(v.value)

        out_lines.append(_ERB_OUT.sub(sub, line[:cut]) + line[cut:] if cut >= 2 else line)
    return "\n".join(out_lines), values, unknown, hidden


def _process_facts(ctx: StackContext) -> dict[str, Val]:
    """What the ERB may ask of the process it runs in: `Sidekiq.server?` is true in the
    Sidekiq CLI's process only (sidekiq/lib/sidekiq.rb: `defined?(Sidekiq::CLI)`), so a
    database.yml choosing its pool by it has one pool per process kind. Unknown (left
    out) when the container's server command is not found."""
    server = ctx.processes().server
    if not server:
        # no server: a one-process command (`rails db:chatwoot_prepare`, `rails runner`)
        # is no Sidekiq either when the command line is known and names none
        from advisor.read.apps.cmdline import command_line

        words = [w.text.rsplit("/", 1)[-1] for w in command_line(ctx.container, ctx.app,
                                                                   []).words]
        if not words or {"sidekiq", "sidekiqswarm"} & set(words):
            return {}
        server = " ".join(words[:4])
    is_sidekiq = server in ("sidekiq", "sidekiqswarm")
    why = f"Sidekiq.server? is {'true' if is_sidekiq else 'false'}: the container runs " \
          f"{server}"
    return {"Sidekiq.server?": Val(is_sidekiq, Source.default_of(why, key="Sidekiq.server?"))}


def _configs(block: object) -> list[tuple[str, dict]]:
    if not isinstance(block, dict):
        return []
    if any(k in _CONFIG_KEYS for k in block) or not all(isinstance(v, dict)
                                                        for v in block.values()):
        return [("primary", block)]
    return [(str(name), cfg) for name, cfg in block.items() if isinstance(cfg, dict)]


def _database_yml(ctx: StackContext) -> AppFile | None:
    """config/database.yml, else the file a Dockerfile copies there
    (`COPY config/database.yml.sample /app/config/database.yml`)."""
    files = ctx.files("database-yml")
    found = next((f for f in files if f.rel.endswith("config/database.yml")), None)
    if found is not None:
        return found
    for docker in ctx.files("dockerfile"):
        for n, line in enumerate(docker.text.splitlines(), 1):
            words = [w for w in line.split() if not w.startswith("--")]
            if len(words) == 3 and words[0].upper() in ("COPY", "ADD") \
                    and words[2].endswith("config/database.yml"):
                src = words[1].lstrip("./")
                hit = next((f for f in files if f.rel == src), None)
                if hit is not None:
                    ctx.notices.append(f"{docker.path}:{n}: the image's config/database.yml "
                                       f"is {hit.path} (COPY)")
                    return hit
    return None


# Programs that load the Rails application (config/environment.rb, so database.yml):
# its servers (Rack), job runners, tasks, and what runs them (foreman a Procfile, ruby a
# script). A command running none of them runs another program.
_RAILS_PROGRAMS = frozenset({
    "rails", "rake", "ruby", "irb", "puma", "pumactl", "unicorn", "unicorn_rails",
    "passenger", "thin", "falcon", "rackup", "iodine", "pitchfork", "agoo", "thrust",
    "sidekiq", "sidekiqswarm", "good_job", "jobs", "delayed_job", "resque", "resque-pool",
    "shoryuken", "que", "sneakers", "karafka", "racecar", "clockwork", "foreman",
    "overmind", "hivemind"})
_LAUNCHERS = frozenset({"bundle", "exec", "env", "tini", "dumb-init", "--", "nice", "timeout"})


def other_program(ctx: StackContext) -> str | None:
    """The program (with where it is written) the container runs when it is not the
    Rails application: every command of its command line runs a bundled gem's own
    executable by name (`bundle exec prometheus_exporter`, an exporter that never loads
    Rails). None when one may load it: a Rails server, job runner or task, a shell, a
    script or a program that is no gem of the app, or no command known."""
    from advisor.read.apps.cmdline import command_line

    segments = command_line(ctx.container, ctx.app, []).segments()
    if not segments:
        return None
    found = None
    for seg in segments:
        names = [w.text.rsplit("/", 1)[-1] for w in seg]
        if _RAILS_PROGRAMS & set(names):
            return None
        first = next((w for w in seg if w.text not in _LAUNCHERS
                      and not re.fullmatch(r"[A-Za-z_]\w*=.*", w.text)), None)
        if first is None:
            continue
        if first.text not in _bundled_gems(ctx):
            return None
        found = f"{first.text} ({first.source.label()})"
    return found


def _bundled_gems(ctx: StackContext) -> set[str]:
    """The gems the app's Gemfile / Gemfile.lock name: a command running one of their
    executables by name runs that gem's program."""
    gems: set[str] = set()
    for f in ctx.files("deps"):
        if f.rel.endswith("Gemfile.lock"):
            gems.update(re.findall(r"^ {4}([\w.-]+) \(", f.text, re.M))
        elif f.rel.endswith("Gemfile"):
            gems.update(re.findall(r"^\s*gem\s+['\"]([\w.-]+)['\"]", f.text, re.M))
    return gems


def rails_pools(ctx: StackContext) -> list[Pool]:
    f = _database_yml(ctx)
    if f is None:
        return []
    program = other_program(ctx)
    if program is not None:
        ctx.notices.append(f"{ctx.container.name}: runs {program}, not the Rails application "
                           f"(no Rails server, job runner or task): {f.path} not applied")
        return []
    text, values, _, hidden = _render(f, ctx)
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        with warnings.catch_warnings():  # ruamel warns on reused anchors; YAML allows them
            warnings.simplefilter("ignore")
            data = YAML(typ="rt").load(text)
    except (YAMLError, RecursionError) as exc:
        mark = getattr(exc, "problem_mark", None)
        ctx.problem(Source(path=f.path, line=mark.line + 1 if mark else None),
                    f"invalid YAML after ERB: {getattr(exc, 'problem', exc)}", fatal=True,
                    program="Rails")
        return []
    from advisor.read.sources.k8s import MAX_EXPANDED_NODES, too_big

    if too_big(data):
        ctx.problem(Source(path=f.path, line=1), f"YAML expands to more than "
                    f"{MAX_EXPANDED_NODES} nodes through aliases; refusing to read it "
                    "(possible alias bomb)", fatal=True, program="YAML")
        return []
    env_name = rails_env(process_env(ctx.env_map(), ctx.app, ctx.container.image))
    if not isinstance(data, dict) or env_name not in data:
        ctx.notices.append(f"{f.path}: no {env_name!r} environment (RAILS_ENV)")
        return []
    url_var = ctx.env("DATABASE_URL")
    pools: list[Pool] = []
    configs = _configs(data[env_name])
    for index, (name, cfg) in enumerate(configs):
        adapter = str(cfg.get("adapter", ""))
        url = cfg.get("url")
        url_src = None
        if index == 0 and url_var is not None and url_var.value:
            url, url_src = url_var.value, replace(url_var.source, key="DATABASE_URL")
        if not (adapter.startswith(("postgres", "postgis")) or
                (isinstance(url, str) and url.startswith(("postgres", "postgis")))):
            continue
        route: Route | None = None
        if isinstance(url, str) and "__erb_unknown__" not in url:
            route = route_from_url(url.replace("postgis://", "postgresql://"), url_src or Source(
                path=f.path, line=_line(cfg, "url"), key="url"))
        elif cfg.get("host") and "__erb_unknown__" not in str(cfg.get("host")):
            port = parse_int(str(cfg.get("port", ""))) if cfg.get("port") else None
            route = Route(host=str(cfg["host"]), port=port,
                          dbname=str(cfg.get("database") or "") or None,
                          user=str(cfg.get("username") or "") or None,
                          source=Source(path=f.path, line=_line(cfg, "host"), key="host"))
        label = f"Rails {env_name}.{name} pool" if len(configs) > 1 else f"Rails {env_name} pool"
        from_url = parse_int((parse_qs(urlsplit(url).query).get("pool") or [None])[-1]) \
            if isinstance(url, str) and url_src is not None else None
        key = "max_connections" if "max_connections" in cfg else "pool"
        if from_url is not None:
            pools.append(ctx.pool(label, from_url, replace(url_src, key="DATABASE_URL ?pool="),
                                  route=route))
            continue
        if key in cfg:
            line = _line(cfg, key)
            n = parse_int(str(cfg[key]))
            var = hidden.get(line or -1)
            if n is None and var is not None:
                ctx.hidden_size(label, var.name, var.source)
                continue
            if n is None:
                # set, to a value not read here: unknown, not the default it replaces
                ctx.unread_size(label, Source(path=f.path, line=line, key=key))
                continue
            else:
                v = values.get(line or -1)
                src = v.source if v is not None else Source(path=f.path, line=line, key=key)
                pools.append(_capped_by_threads(ctx, label, n, src, route))
                continue
        secret_url = index == 0 and url_var is not None and url_var.value is None
        pool = ctx.pool(label, DEFAULT_POOL, Source.default_of(
            "Active Record default pool 5 (HashConfig#pool)", key="pool"), route=route,
            bound="default", note=f"{f.path}: {env_name}.{name} sets no pool" + (
                "; DATABASE_URL comes from a Secret not in the repository: a ?pool= in it "
                "would win" if secret_url else ""))
        threads = ctx.processes().threads
        after = _last_scalar_line(cfg) if not f.line_offset else None
        pools.append(replace(
            pool, moves_with=[threads] if threads is not None else [],
            insert_at=Source(path=f.path, line=after, key="pool") if after else None))
    return pools


def _last_scalar_line(cfg: object) -> int | None:
    """The line of the last key written in this mapping itself whose value is a scalar:
    `pool:` added after it stays in the mapping (not inside a nested one)."""
    lc = getattr(cfg, "lc", None)
    own = getattr(cfg, "_ok", None)
    if lc is None or not isinstance(cfg, dict):
        return None
    lines = []
    for key, value in cfg.items():
        if (own is not None and key not in own) or isinstance(value, dict | list):
            continue
        try:
            lines.append(lc.key(key)[0] + 1)
        except (KeyError, TypeError):
            continue
    return max(lines) if lines else None


def _capped_by_threads(ctx: StackContext, label: str, size: int, src: Source,
                       route: Route | None) -> Pool:
    """The rule for Rails (and Django, advisor/read/apps/django.py): a process holds at most
    one connection per thread that can hold one, and never more than its pool. Active
    Record opens connections lazily, one per thread that checks one out, so a pool of
    30 under 3 Puma threads (or Sidekiq concurrency 3) opens 3; with threads unknown the
    pool is counted. Threads above the pool wait (ActiveRecord::ConnectionTimeoutError)."""
    threads = ctx.processes().threads
    if threads is not None and threads.value > size:
        ctx.notices.append(f"{label} = {size} is smaller than {threads.show()}: threads wait "
                           "for a connection (ActiveRecord::ConnectionTimeoutError)")
    if threads is not None and threads.value < size:
        pool = ctx.pool(label, threads.value, threads.source, route=route,
                        size_label=f"{label}: {threads.label} (pool {size} at "
                                   f"{src.label()} is not reached: one connection per thread)",
                        note=f"pool {size} ({src.label()}) capped by {threads.show()}")
        return replace(pool, moves_with=[Term(label=label, value=size, source=src)])
    pool = ctx.pool(label, size, src, route=route)
    return replace(pool, moves_with=[threads] if threads is not None else [])


def _line(cfg: object, key: str) -> int | None:
    """Line of `key`, also when it comes through a `<<: *default` merge."""
    lc = getattr(cfg, "lc", None)
    own = getattr(cfg, "_ok", None)  # ruamel: keys written in this mapping itself
    if lc is not None and (own is None or key in own):
        try:
            return lc.key(key)[0] + 1
        except (KeyError, TypeError):
            pass
    for item in getattr(cfg, "merge", None) or []:
        merged = item[1] if isinstance(item, tuple) else item  # ruamel < 0.18 used pairs
        line = _line(merged, key)
        if line is not None:
            return line
    return None
