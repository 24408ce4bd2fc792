"""Ecto (Elixir): `config :app, App.Repo, pool_size: ..., pool_count: ...` in
config/runtime.exs (read at boot, wins), config/prod.exs, config/config.exs; also
`?pool_size=` in the repo URL. config/releases.exs (Elixir 1.9-1.10's runtime file)
is read at boot only when there is no config/runtime.exs (elixir v1.18.0
lib/mix/lib/mix/tasks/release.ex:1233-1260). Comments are not read: Phoenix 1.8's
generated runtime.exs carries `# pool_count: 4,` (phoenix v1.8.7
installer/lib/phx_new/generator.ex:498).

A container that only runs `bin/app eval "App.Release.migrate"` (phx.gen.release's
release.ex and rel/overlays/bin/migrate) starts no application: Ecto.Migrator.with_repo
starts each repo with pool_size 2 (ecto_sql v3.14.0 lib/ecto/migrator.ex:161,817), one
repo after the other. A node running Oban with its default notifier holds one more
connection of its own for LISTEN (oban v2.23.0 lib/oban/config.ex:86-89,
lib/oban/notifiers/postgres.ex:55-68: a Postgrex.SimpleConnection from the repo's config;
lib/oban.ex:560-561 starts it whatever the queues and plugins).

A BEAM node is one OS process: pods x pool_size x pool_count.

Default read in elixir-ecto/ecto v3.14.1 lib/ecto/repo/supervisor.ex:12
(`@defaults [timeout: 15000, pool_size: 10]`); pool_count defaults to 1
(lib/ecto/repo.ex docs: total connections = pool_size * pool_count).
Forms read: integer literals, `String.to_integer(System.get_env("POOL_SIZE") || "10")`,
`System.get_env("POOL_SIZE", "10") |> String.to_integer()`, `System.fetch_env!("X")`.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

from msgspec.structs import replace

from advisor.model import EnvVar, Pool, Route, Source, Term
from advisor.read.apps.base import StackContext
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.source import AppFile
from advisor.read.apps.urls import route_from_env, route_from_parts, route_from_url, route_key

DEFAULT_POOL_SIZE = 10
MIGRATOR_POOL_SIZE = 2
OBAN_NOTIFIER = "Oban notifier LISTEN connection (outside the Repo pool)"
_OBAN_BLOCK = re.compile(r"^\s*config\s+:\w+,\s*Oban\s*,(.*?)(?=^\s*(?:config|if|import)\b|\Z)",
                         re.S | re.M)
# a notifier that is no PostgreSQL connection, or an engine for another database
_OBAN_NO_PG_NOTIFIER = re.compile(
    r"\bOban\.Notifiers\.(?:PG|Phoenix)\b|\bOban\.Engines\.(?:Lite|Dolphin)\b")
_EVAL_MIGRATE = re.compile(r"\beval\b[^\n;&|]*\bRelease\.migrate\b|\bbin/migrate\b")
_STARTS_NODE = re.compile(r"\b(?:start|start_iex|daemon|daemon_iex|foreground)\b|\bbin/server\b")
_ORDER = {"config/config.exs": 0, "config/prod.exs": 1, "config/runtime.exs": 2,
          "config/releases.exs": 2}
_GET_ENV = re.compile(
    r"""System\.(?:get_env|fetch_env!)\(\s*"(\w+)"\s*(?:,\s*"?(\d+)"?\s*)?\)(?:\s*\|\|\s*"?(\d+)"?)?""")


def _value(expr: str, line: int, path: str, key: str, label: str, ctx: StackContext
           ) -> tuple[int, Source] | str | None:
    """(value, where) of `key: expr`; "hidden" when it reads a variable set from a Secret
    or reference whose value is not here (ctx.unknown says so); None when not readable."""
    expr = expr.strip().rstrip(",")
    if re.fullmatch(r"\d+", expr):
        return int(expr), Source(path=path, line=line, key=key)
    m = _GET_ENV.search(expr)
    if not m:
        return None
    var = ctx.env(m.group(1))
    if var is not None and var.value is None:  # System.get_env reads what the Secret holds
        ctx.hidden_size(label, m.group(1), var.source)
        return "hidden"
    if var is not None and parse_int(var.value) is not None:
        return parse_int(var.value), replace(var.source, key=m.group(1))
    default = m.group(2) or m.group(3)
    if default is not None:
        return int(default), Source(path=path, line=line, key=f"{m.group(1)} (default)")
    return None


def blank_comments(text: str) -> str:
    """Elixir `#` comments as spaces (newlines kept, so offsets and lines stand); a `#`
    inside a "string", 'charlist', \"\"\"heredoc\"\"\" (its `#{}` interpolation) or the
    char literal `?#` is left alone."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "?" and i + 1 < n and not (i and (text[i - 1].isalnum() or text[i - 1] in "_?!")):
            i += 3 if text[i + 1] == "\\" else 2  # ?# ?" ?\\ are characters (not `server?`)
        elif c in "\"'":
            close = c * 3 if text.startswith(c * 3, i) else c
            i += len(close)
            while i < n and not text.startswith(close, i):
                i += 2 if text[i] == "\\" else 1
            i += len(close)
        elif c == "#":
            end = text.find("\n", i)
            end = n if end < 0 else end
            out[i:end] = " " * (end - i)
            i = end
        else:
            i += 1
    return "".join(out)


def ecto_pools(ctx: StackContext) -> list[Pool]:
    rels = {f.rel for f in ctx.files("elixir")}
    files = sorted((f for f in ctx.files("elixir") if f.rel in _ORDER
                    # releases.exs is not read at boot beside a runtime.exs
                    and not (f.rel == "config/releases.exs" and "config/runtime.exs" in rels)),
                   key=lambda f: _ORDER[f.rel])
    if not files:
        return []
    postgres_repos = set()
    for f in ctx.files("elixir"):
        for m in re.finditer(r"defmodule\s+([\w.]+)\s+do\s+use\s+Ecto\.Repo\b(?:(?!\bend\b).)"
                             r"{0,400}?Ecto\.Adapters\.Postgres", blank_comments(f.text), re.S):
            postgres_repos.add(m.group(1))
    repos: dict[str, dict[str, tuple[int, Source] | str]] = {}
    for f in files:
        text = blank_comments(f.text)
        for block in re.finditer(r"^\s*config\s+:\w+,\s*([A-Z][\w.]*Repo\w*)\s*,(.*?)"
                                 r"(?=^\s*(?:config|if|import)\b|\Z)", text, re.S | re.M):
            repo, body = block.group(1), block.group(2)
            start = text[: block.start(2)].count("\n") + 1
            entry = repos.setdefault(repo, {})
            for key in ("pool_size", "pool_count"):
                km = re.search(rf"\b{key}:\s*([^\n]+)", body)
                if km:
                    line = start + body[: km.start()].count("\n")
                    got = _value(km.group(1), line, f.path, key, f"Ecto {repo} {key}", ctx)
                    if got is None:
                        ctx.notices.append(f"{f.path}:{line}: {key} not readable statically")
                    else:
                        entry[key] = got
            um = re.search(r"\burl:\s*([^\n]+)", body)
            if um:
                entry["url"] = um.group(1)
            for key in ("url", "hostname", "port", "database", "username"):
                km = re.search(rf"(?<![\w.]){key}:\s*([^\n]+)", body)
                var = _env_name(km.group(1), text[: block.start()]) if km else None
                if var is not None:
                    entry[f"{key}_var"] = var
                elif km and key != "url":
                    lit = re.match(r'"([^"#$]*)"', km.group(1).strip())
                    if lit:
                        entry[f"{key}_lit"] = lit.group(1)
    migrate = _migrate_only(ctx)
    oban = None if migrate else _oban_repo(files)
    pools: list[Pool] = []
    for repo, entry in repos.items():
        if postgres_repos and repo not in postgres_repos:
            continue
        route = route_from_env(ctx.container.env)
        env_url = ctx.env("DATABASE_URL")
        if route is None and env_url is not None and (env_url.value or "").startswith("ecto://"):
            route = route_from_url("postgres://" + env_url.value[len("ecto://"):],
                                   replace(env_url.source, key="DATABASE_URL"))
        own, hidden = _repo_route(ctx, entry)
        if own is not None:
            route = own
        url_text = str(entry.get("url", ""))
        lit = re.search(r'"(ecto|postgres(?:ql)?)://[^"]+"', url_text)
        if lit:
            route = route_from_url(lit.group(0).strip('"').replace("ecto://", "postgres://", 1),
                                   Source(path=files[-1].path, key="url"))
        url_var = ctx.env("DATABASE_URL")
        url_pool = None
        if url_var is not None and url_var.value and "DATABASE_URL" in url_text:
            url_pool = parse_int((parse_qs(urlsplit(url_var.value).query).get("pool_size")
                                  or [None])[-1])
        size = _init_override(ctx, repo) or (migrate or entry.get("pool_size"))
        count = entry.get("pool_count")
        if "hidden" in (size, count):
            continue  # unknown (ctx.unknown): no pool, not an earlier file's or the default
        label = f"Ecto {repo} pool_size"
        if url_pool is not None:
            size = (url_pool, replace(url_var.source, key="DATABASE_URL ?pool_size="))
        if isinstance(size, tuple):
            pool = ctx.pool(label, size[0], size[1], route=route, per_process=False)
        else:
            pool = ctx.pool(label, DEFAULT_POOL_SIZE, Source.default_of(
                "Ecto 3.x default pool_size 10 (Ecto.Repo.Supervisor @defaults)",
                key="pool_size"), route=route, bound="default", per_process=False,
                note=f"{repo} sets no pool_size")
        if isinstance(count, tuple) and count[0] > 1:
            # pool_count pools per node: shown as the process-like factor of the product
            pool = replace(pool, processes=Term(
                label=f"Ecto {repo} pool_count", value=count[0], source=count[1]))
        mine = [pool]
        if oban is not None and oban[0] == repo:
            mine.append(ctx.pool(OBAN_NOTIFIER, 1, Source.default_of(
                "Oban default notifier Oban.Notifiers.Postgres: one Postgrex.SimpleConnection "
                "with the repo's config (oban lib/oban/notifiers/postgres.ex start_link)",
                key="notifier"), route=route, per_process=False,
                note=f"Oban runs on {repo} ({oban[1]})"))
        if hidden is not None:
            mine = ctx.hidden_route(mine, f"Ecto {repo}", hidden.name, hidden.source)
        pools.extend(mine)
    return _one_after_the_other(pools) if migrate else pools


def _one_after_the_other(pools: list[Pool]) -> list[Pool]:
    """A release's migrate runs each repo in turn: Ecto.Migrator.with_repo starts it
    (pool_size 2) and stops it before the next (ecto_sql v3.14.0 lib/ecto/migrator.ex:161,
    817, 853-855; phoenix v1.8.7 priv/templates/phx.gen.release/release.ex.eex:11-13
    `for repo <- repos()`): one pool per server at a time, not one per repo."""
    kept: dict[object, Pool] = {}
    for pool in pools:
        key = route_key(pool.route) if pool.route is not None else pool.route_unknown
        if key in kept:
            first = kept[key]
            kept[key] = replace(first, note=(f"{first.note}; " if first.note else "")
                                + f"{pool.label.removesuffix(' pool_size')} migrates after it, "
                                "on the same server (Ecto.Migrator.with_repo, one repo at a time)")
        else:
            kept[key] = pool
    return list(kept.values())


_ENV_CALL = re.compile(r'System\.(?:get_env|fetch_env!?)\(\s*"(\w+)"|"\$\{(\w+)\}"')


def _env_name(expr: str, before: str) -> str | None:
    """The variable a repo setting reads: `System.get_env("X")`, `System.fetch_env!("X")`,
    Distillery's `"${X}"`, or a name assigned from one earlier in the file
    (`database_url = System.get_env("DATABASE_URL") || raise ...`)."""
    expr = expr.strip()
    m = _ENV_CALL.match(expr)
    if m:
        return m.group(1) or m.group(2)
    name = re.match(r"([a-z_]\w*)\s*(?:,|$)", expr)
    if name is None:
        return None
    assigned = None
    for a in re.finditer(rf"^\s*{name.group(1)}\s*=\s*(?:\n\s*)?([^\n]+)", before, re.M):
        assigned = _ENV_CALL.search(a.group(1))
    return (assigned.group(1) or assigned.group(2)) if assigned else None


def _repo_route(ctx: StackContext, entry: dict) -> tuple[Route | None, EnvVar | None]:
    """(route, None) from the variable the repo's own `url:` (else `hostname:`) reads,
    when the container sets it; (None, variable) when that variable is set from a
    reference whose value is not here; (None, None) when the repo names none the
    container sets (the container's database variables then say where it connects).
    Each Repo has its own config, so a second Repo's ORNITHO_DATABASE_URL is its own
    server, not DATABASE_URL's (Ecto.Repo.Supervisor reads the repo's config)."""
    for key in ("url", "hostname"):
        var = ctx.env(entry[f"{key}_var"]) if f"{key}_var" in entry else None
        if var is None:
            continue
        if var.value is None:
            return None, replace(var, name=entry[f"{key}_var"])
        where = replace(var.source, key=entry[f"{key}_var"])
        if key == "url":
            return route_from_url(var.value.replace("ecto://", "postgres://", 1), where), None

        def part(name: str) -> str | None:
            named = ctx.env(entry[f"{name}_var"]) if f"{name}_var" in entry else None
            return named.value if named is not None else entry.get(f"{name}_lit")

        return route_from_parts(var.value, part("port"), part("database"), part("username"),
                                where), None
    return None, None


def _migrate_only(ctx: StackContext) -> tuple[int, Source] | None:
    """pool_size 2 for a container whose command runs the release's migrate and starts no
    node after it (an init container, a Job, a Helm hook)."""
    words = " ".join((*ctx.container.command, *ctx.container.args))
    if not _EVAL_MIGRATE.search(words) or _STARTS_NODE.search(words):
        return None
    if not any("Ecto.Migrator.with_repo" in f.text and "pool_size" not in f.text
               for f in ctx.files("elixir")):
        return None  # a migrate that sizes its own pool, or none that was read
    return MIGRATOR_POOL_SIZE, Source.default_of(
        "Ecto.Migrator.with_repo default pool_size 2 (ecto_sql lib/ecto/migrator.ex with_repo)",
        key="pool_size")


def _oban_repo(files: list[AppFile]) -> tuple[str, str] | None:
    """(repo, file:line) of `config :app, Oban, repo: X` in the config read at boot, when
    no file read sets a notifier that is not PostgreSQL's LISTEN/NOTIFY."""
    found = None
    for f in files:
        text = blank_comments(f.text)
        if _OBAN_NO_PG_NOTIFIER.search(text):
            return None
        for block in _OBAN_BLOCK.finditer(text):
            rm = re.search(r"\brepo:\s*([A-Z][\w.]*)", block.group(1))
            if rm:
                line = text.count("\n", 0, text.index("config", block.start())) + 1
                found = (rm.group(1), f"{f.path}:{line}")
    return found


def _init_override(ctx: StackContext, repo: str) -> tuple[int, Source] | str | None:
    """`def init(_type, config)` of the repo module (Ecto.Repo's runtime callback, run at
    boot after config/*.exs) putting pool_size from the env: `System.get_env("X")` on a
    line that mentions pool_size, or assigned to a variable used with :pool_size."""
    for f in ctx.files("elixir"):
        text = blank_comments(f.text)
        if "def init(" not in text or "pool_size" not in text:
            continue
        at = text.index("def init(")
        mods = list(re.finditer(r"defmodule\s+([\w.]+)", text[:at]))
        mod = mods[-1] if mods else None
        if mod is None or mod.group(1) not in (repo, repo.removesuffix("Base")):
            continue
        body = text[at:]
        for m in re.finditer(r'System\.get_env\(\s*"(\w+)"', body):
            line_text = body[body.rfind("\n", 0, m.start()) + 1: body.find("\n", m.end())]
            name = m.group(1)
            if "pool_size" not in line_text.lower() and "POOL" not in name:
                continue
            var = ctx.env(name)
            if var is not None and var.value is None:  # init/2 runs last: it would win
                ctx.hidden_size(f"Ecto {repo} pool_size", name, var.source)
                return "hidden"
            n = parse_int(var.value) if var is not None else None
            if n is not None:
                line = text[: at + m.start()].count("\n") + 1
                ctx.notices.append(f"{f.path}:{line}: {mod.group(1)}.init/2 sets pool_size "
                                   f"from {name}")
                return n, ctx.env_source(name)
    return None
