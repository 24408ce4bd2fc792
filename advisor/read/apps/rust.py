"""Rust: sqlx's PgPool, deadpool-postgres and r2d2 (diesel's or r2d2_postgres's) pools,
read from the crate's .rs sources with a scanner (comments blanked, no Rust parser).

- sqlx: `PgPoolOptions::new()...max_connections(N)...connect(url)`; `PgPool::connect(url)`
  (and connect_lazy, connect_with, `Pool::<Postgres>::connect`) is the default options.
  Default `max_connections: 10` (launchbadge/sqlx@00eb69cd, 0.5,
  sqlx-core/src/pool/options.rs:51; the same in 0.8, c0556cd3 options.rs `new()`).
- deadpool-postgres: `PoolConfig::new(N)`, `PoolConfig { max_size: N, .. }`,
  `Pool::builder(mgr).max_size(N)`; the `config` crate's env `<PREFIX>__POOL__MAX_SIZE`.
  Default by the deadpool version Cargo.lock pins: before 0.12.3
  `num_cpus::get_physical() * 4` (deadpool-rs/deadpool@deadpool-v0.12.2
  src/managed/config.rs:54, the node's physical cores: CPU-dependent, PA103); from 0.12.3
  `num_cpus::get() * 2` (@deadpool-v0.12.3 crates/deadpool/src/util.rs:5,11), the logical
  CPUs, which num_cpus caps at the cgroup CPU quota (seanmonstar/num_cpus@v1.17.0
  src/linux.rs:32-36,139-140,215: min(ceil(quota / period), CPUs)): the container's
  resources.limits.cpu rounded up when set, else the node's CPUs. Not pinned (or two
  versions pinned): the larger of the two, said so.
- r2d2: `Pool::builder().max_size(N).build(manager)`; `Pool::new(manager)` is the default.
  Default `max_size: 10` (sfackler/r2d2@11d33776 src/config.rs:56).
- tokio-postgres with no pool: `tokio_postgres::connect` in main is one connection per
  process; in a request handler (tonic's `Request<T>`, actix/axum extractors or route
  attributes) one per request in flight, unbounded (PA102); elsewhere unknown.

A size argument is read when it is an integer literal, a `const`, a `let` of the same
file, `std::env::var("X")` (the container's X, else the `.unwrap_or(..)` fallback written
beside it) or a config field `cfg.x` (an env variable named X or ending in _X, else the one
integer a struct literal of the crate writes for `x:`). Anything else: unknown (PA106),
never the default. A tokio server is one process: the pool is per pod.
"""

from __future__ import annotations

import math
import re

import msgspec
from msgspec import Struct

from advisor.model import CpuFormula, Pool, Route, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.source import AppFile, auxiliary_script
from advisor.read.apps.urls import route_from_env

SQLX_DEFAULT = 10
R2D2_DEFAULT = 10
SQLX_WHERE = "launchbadge/sqlx@00eb69cd sqlx-core/src/pool/options.rs:51"
R2D2_WHERE = "sfackler/r2d2@11d33776 src/config.rs:56"
# deadpool's PoolConfig::default() max_size changed in 0.12.3 (CHANGELOG 0.12.3, PR #440)
DEADPOOL_PHYSICAL_WHERE = "deadpool-rs/deadpool@deadpool-v0.12.2 src/managed/config.rs:54"
DEADPOOL_PHYSICAL = CpuFormula(per_cpu=4, physical=True, text="num_cpus::get_physical() * 4")
DEADPOOL_LOGICAL_WHERE = ("deadpool-rs/deadpool@deadpool-v0.12.3 "
                          "crates/deadpool/src/util.rs:5,11")
DEADPOOL_LOGICAL = CpuFormula(per_cpu=2, text="num_cpus::get() * 2")
DEADPOOL_LOGICAL_SINCE = (0, 12, 3)
# num_cpus::get() on Linux: min(ceil(cgroup quota / period), logical CPUs)
NUM_CPUS_QUOTA_WHERE = "seanmonstar/num_cpus@v1.17.0 src/linux.rs:32-36,139-140,215"
DEADPOOL_LABEL = "deadpool-postgres max_size"


class RustFile(Struct, frozen=True):
    file: AppFile
    code: str  # the text with comments blanked (strings kept), lines where they were

    def line(self, pos: int) -> int:
        return self.code.count("\n", 0, pos) + 1

    def cite(self, pos: int, key: str) -> Source:
        return self.file.cite(self.line(pos), key)


class Size(Struct, frozen=True):
    value: int
    source: Source
    note: str = ""


def blank_comments(text: str) -> str:
    """`//` and `/* */` comments as spaces (newlines kept); strings, raw strings and
    char literals left alone, so a URL's `//` is not a comment."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out[i:end] = " " * (end - i)
            i = end
        elif c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out[i:end] = [ch if ch == "\n" else " " for ch in text[i:end]]
            i = end
        elif c == "r" and (m := re.compile(r'r(#*)"').match(text, i)) and \
                (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = '"' + m.group(1)
            end = text.find(close, m.end())
            i = n if end < 0 else end + len(close)
        elif c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif c == "'" and (m := re.compile(r"'(?:\\.|[^\\'])'").match(text, i)):
            i = m.end()  # a char literal ('"'); a lifetime ('a) is left as code
        else:
            i += 1
    return "".join(out)


def _rust_files(ctx: StackContext) -> list[RustFile]:
    cache = ctx.cache.get("rust")
    if isinstance(cache, list):
        return cache
    files = [RustFile(file=f, code=blank_comments(f.text)) for f in ctx.files("rust")
             if not auxiliary_script(f.rel) and f.name not in ("tests.rs", "build.rs")
             and not f.name.endswith("_test.rs")]
    ctx.cache["rust"] = files
    return files


def _call_end(code: str, open_paren: int) -> int:
    """The index just past the `)` closing the `(` at `open_paren` (strings skipped)."""
    return _walk(code, open_paren, statement=False)


def _statement(code: str, start: int) -> str:
    """From `start` to the `;` that ends the statement at its nesting depth (a chain)."""
    return code[start:_walk(code, start, statement=True)]


def _walk(code: str, start: int, *, statement: bool) -> int:
    """Where a bracketed call (just past its closing bracket) or a statement (at its `;`,
    or at a bracket closing outside it) that starts at `start` ends; strings skipped."""
    depth, i, n = 0, start, len(code)
    while i < n:
        c = code[i]
        if c == '"':
            i += 1
            while i < n and code[i] != '"':
                i += 2 if code[i] == "\\" else 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if not statement and depth == 0:
                return i + 1
            if statement and depth < 0:
                return i
        elif statement and c == ";" and depth == 0:
            return i
        i += 1
    return n


def _argument(code: str, method: str, within: str) -> tuple[str, int] | None:
    """The argument text of `.method(...)` in `within` (a statement), and its offset."""
    m = re.search(rf"\.\s*{method}\s*\(", within)
    if m is None:
        return None
    end = _call_end(within, m.end() - 1)
    return within[m.end():end - 1].strip(), m.start()



def _builder_pool(ctx: StackContext, reader: _Reader, f: RustFile, at: int, chain: str,
                  method: str, here: Source, fallback: tuple[str, int, Source],
                  route: Route | None) -> list[Pool]:
    """The pool a builder chain starting at `at` makes: `.method(N)` read by `reader`
    (nothing when the reader says it is unknown), else the library's default
    (`fallback`: label, size, where it is cited)."""
    label, default_size, default = fallback
    found = _argument(f.code, method, chain) if chain else None
    if found is None:
        return [ctx.pool(label, default_size, default, route=route, bound="default",
                         per_process=False, note=f"{here.label()}: no {method}")]
    size = reader.size(found[0], f, at + found[1])
    if size is None:
        return []
    return [ctx.pool(label, size.value, size.source, route=route, per_process=False,
                     note=size.note)]

_INT = re.compile(r"(\d[\d_]*)(?:_?(?:u8|u16|u32|u64|usize|i32|i64|isize))?")
_ENV_READ = re.compile(r'\b(?:env::)?var(?:_os)?\s*\(\s*"(\w+)"\s*\)')
_FALLBACK = re.compile(r'unwrap_or(?:_else)?\s*\(\s*(?:\|[^|]*\|\s*)?(?:"(\d+)"|(\d[\d_]*))')


class _Reader:
    """Resolves a size argument within one app (its Rust files and container env)."""

    def __init__(self, ctx: StackContext, label: str) -> None:
        self.ctx = ctx
        self.label = label

    def size(self, arg: str, f: RustFile, pos: int) -> Size | None:
        """The value of `arg` at `pos` of `f`; None when not read (said in unknown)."""
        found = self._value(arg.strip(), f, pos, 0)
        if found is None:
            self.ctx.unread_size(self.label, f.cite(pos, self.label))
        return found if isinstance(found, Size) else None

    def _value(self, arg: str, f: RustFile, pos: int, depth: int) -> Size | bool | None:
        """A Size; False when hidden (a Secret's value, already said); None when not read."""
        arg = re.sub(r"\s+as\s+\w+$", "", arg)  # `n as u32`
        arg = re.sub(r"\s+", "", arg)
        arg = re.sub(r"\.(?:into\(\)|try_into\(\)\.unwrap\(\))$", "", arg)
        if m := _INT.fullmatch(arg):
            return Size(int(m.group(1).replace("_", "")), f.cite(pos, self.label))
        if depth > 3:
            return None
        if _ENV_READ.search(arg):
            return self._env_read(arg, f, pos)
        if re.fullmatch(r"[A-Z][A-Z0-9_]*", arg):
            return self._const(arg)
        if re.fullmatch(r"[a-z_][a-z0-9_]*", arg):
            return self._let(arg, f, pos, depth)
        if m := re.fullmatch(r"&?(?:[a-z_]\w*\.)+([a-z_]\w*)", arg):
            return self._field(m.group(1))
        return None

    def _env_read(self, arg: str, f: RustFile, pos: int) -> Size | bool | None:
        m = _ENV_READ.search(arg)
        assert m is not None
        name = m.group(1)
        got = self.ctx.env_int(self.label, name, least=1)
        if got is False:
            return False
        if got is not None:
            return Size(got[0], got[1])
        fallback = _FALLBACK.search(arg, m.end())
        if fallback is None:
            return None
        value = int((fallback.group(1) or fallback.group(2)).replace("_", ""))
        return Size(value, f.cite(pos, name),
                    note=f"{name} is not set in the container env: the fallback written "
                         f"at {f.cite(pos, name).label()}")

    def _const(self, name: str) -> Size | None:
        for g in _rust_files(self.ctx):
            m = re.search(rf"\b(?:const|static)\s+{name}\s*:\s*\w+\s*=\s*([^;]+);", g.code)
            if m and (n := _INT.fullmatch(m.group(1).strip())):
                return Size(int(n.group(1).replace("_", "")), g.cite(m.start(), name))
        return None

    def _let(self, name: str, f: RustFile, pos: int, depth: int) -> Size | bool | None:
        lets = [m for m in re.finditer(rf"\blet\s+(?:mut\s+)?{name}\s*(?::[^=;]+)?=",
                                       f.code[:pos])]
        if not lets:
            return None
        m = lets[-1]
        return self._value(_statement(f.code, m.end()), f, m.start(), depth + 1)

    def _field(self, field: str) -> Size | bool | None:
        """A config struct's field: an env variable FIELD or *_FIELD (figment's and the
        config crate's env providers), else the one integer the crate's struct literals
        write for it (a `Default` impl)."""
        upper = field.upper()
        for var in self.ctx.container.env:
            if var.name.upper() == upper or var.name.upper().endswith("_" + upper):
                got = self.ctx.env_int(self.label, var.name, least=1)
                return False if got is False else Size(got[0], got[1]) if got else None
        written: dict[int, Source] = {}
        for g in _rust_files(self.ctx):
            for m in re.finditer(rf"(?<![\w.]){field}\s*:\s*(\d[\d_]*)\w*\s*[,}}\n]", g.code):
                written.setdefault(int(m.group(1).replace("_", "")), g.cite(m.start(), field))
        if len(written) != 1:
            return None
        (value, src), = written.items()
        return Size(value, src, note=f"{field}: the value the crate's struct literal writes "
                                     f"({src.label()}); no env variable {upper} or *_{upper} "
                                     "in the container sets it")


def _locked(ctx: StackContext, crate: str) -> str:
    """" 0.5.13 (Cargo.lock:1452)" for the version Cargo.lock pins, else ""."""
    found = _locked_all(ctx, crate)
    return f" {found[0][0]} ({found[0][1].label()})" if found else ""


def _locked_all(ctx: StackContext, crate: str) -> list[tuple[str, Source]]:
    """Every version of `crate` the Cargo.lock files pin, with the line of each."""
    out: list[tuple[str, Source]] = []
    for f in ctx.files("cargo-lock"):
        for m in re.finditer(rf'^name = "{re.escape(crate)}"\nversion = "([^"]+)"', f.text,
                             re.M):
            out.append((m.group(1), f.cite(f.text.count("\n", 0, m.start()) + 2, "version")))
    return out


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text.split("-")[0].split("+")[0])[:3])


def _sqlx(ctx: StackContext, files: list[RustFile]) -> list[Pool]:
    pools: list[Pool] = []
    label = "sqlx max_connections"
    reader = _Reader(ctx, label)
    route = route_from_env(ctx.container.env)
    default = Source.default_of(f"sqlx{_locked(ctx, 'sqlx')} default max_connections "
                                f"{SQLX_DEFAULT} ({SQLX_WHERE})", key="max_connections")
    for f in files:
        code = f.code
        for m in re.finditer(r"\b(?:PgPoolOptions|PoolOptions\s*::\s*<\s*Postgres\s*>)\s*::\s*"
                             r"(?:new|default)\s*\(\s*\)", code):
            pools += _builder_pool(ctx, reader, f, m.end(), _statement(code, m.end()),
                                   "max_connections", f.cite(m.start(), "PgPoolOptions::new()"),
                                   (label, SQLX_DEFAULT, default), route)
        for m in re.finditer(r"\b(?:PgPool|Pool\s*::\s*<\s*Postgres\s*>)\s*::\s*"
                             r"(connect(?:_lazy)?(?:_with)?)\s*\(", code):
            here = f.cite(m.start(), f"PgPool::{m.group(1)}")
            pools.append(ctx.pool(label, SQLX_DEFAULT, default, route=route, bound="default",
                                  per_process=False,
                                  note=f"{here.label()}: PgPool::{m.group(1)} takes the "
                                       "default options"))
    return pools


def _deadpool(ctx: StackContext, files: list[RustFile]) -> list[Pool]:
    label = "deadpool-postgres max_size"
    reader = _Reader(ctx, label)
    route = route_from_env(ctx.container.env)
    settings: list[tuple[RustFile, int, str]] = []  # (file, where, argument)
    sites: list[tuple[RustFile, int]] = []
    for f in files:
        code = f.code
        for m in re.finditer(r"\bPoolConfig\s*::\s*new\s*\(", code):
            settings.append((f, m.start(), code[m.end():_call_end(code, m.end() - 1) - 1]))
        for m in re.finditer(r"\bPoolConfig\s*\{", code):
            body = code[m.end():_call_end(code, m.end() - 1) - 1]
            if s := re.search(r"\bmax_size\s*:\s*([^,}]+)", body):
                settings.append((f, m.end() + s.start(), s.group(1)))
        for m in re.finditer(r"\bPool\s*::\s*builder\s*\(", code):
            sites.append((f, m.start()))
            if found := _argument(code, "max_size", _statement(code, m.end())):
                settings.append((f, m.end() + found[1], found[0]))
        sites.extend((f, m.start()) for m in re.finditer(r"\.\s*create_pool\s*\(", code))
    env = next((v for v in ctx.container.env if v.name.upper().endswith("POOL__MAX_SIZE")),
               None)
    pools: list[Pool] = []
    for f, at in sites:
        size: Size | None = None
        if env is not None:
            got = ctx.env_int(label, env.name, least=1)
            if got is False:
                continue
            size = Size(got[0], got[1]) if got else None
        else:
            mine = [s for s in settings if s[0] is f and s[1] <= at + 200]
            chosen = mine[-1] if mine else settings[0] if len(settings) == 1 else None
            if chosen is None and settings:
                ctx.unread_size(label, f.cite(at, label))
                continue
            if chosen is not None:
                size = reader.size(chosen[2], chosen[0], chosen[1])
                if size is None:
                    continue
        if size is not None:
            pools.append(ctx.pool(label, size.value, size.source, route=route,
                                  per_process=False, note=size.note))
            continue
        pools.append(deadpool_default(ctx, route,
                                      f"{f.cite(at, label).label()}: no PoolConfig max_size"))
    return pools


def deadpool_default(ctx: StackContext, route: Route | None, why: str) -> Pool:
    """deadpool's default max_size for the version Cargo.lock pins: physical cores x 4
    before 0.12.3, num_cpus::get() x 2 from it; not pinned (or several versions pinned),
    the larger of the two, with the assumption named."""
    locked = _locked_all(ctx, "deadpool")
    newer = {_version(v) >= DEADPOOL_LOGICAL_SINCE for v, _ in locked}
    pins = " and ".join(f"{v} ({src.label()})" for v, src in locked)
    if newer == {False}:
        return _deadpool_physical(ctx, route, why, f" {pins}")
    if newer == {True}:
        return _deadpool_logical(ctx, route, why, f" {pins}")
    old = _deadpool_physical(ctx, route, why, "")
    new = _deadpool_logical(ctx, route, why, "")
    unpinned = f"versions {pins} locked" if locked else "version not pinned in a Cargo.lock"
    forms = {id(old): f"< 0.12.3: {DEADPOOL_PHYSICAL.text} ({DEADPOOL_PHYSICAL_WHERE})",
             id(new): f">= 0.12.3: {DEADPOOL_LOGICAL.text} ({DEADPOOL_LOGICAL_WHERE})"}
    chosen, other = (new, old) if new.size.value > old.size.value else (old, new)
    assumption = (f"deadpool {unpinned}: assumed the larger default max_size, "
                  f"{forms[id(chosen)]}; {forms[id(other)]} gives {other.size.value:g}")
    return msgspec.structs.replace(
        chosen, size=msgspec.structs.replace(
            chosen.size, source=Source.default_of(assumption, key="max_size")))


def _deadpool_physical(ctx: StackContext, route: Route | None, why: str,
                       version: str) -> Pool:
    """deadpool < 0.12.3: num_cpus::get_physical() * 4, the node's physical cores."""
    return ctx.pool(
        DEADPOOL_LABEL, ctx.cpu_size(DEADPOOL_PHYSICAL)[0],
        Source.default_of(f"deadpool{version} default max_size {DEADPOOL_PHYSICAL.text} "
                          f"({DEADPOOL_PHYSICAL_WHERE})", key="max_size"),
        route=route, cpu=DEADPOOL_PHYSICAL, per_process=False,
        note=f"{why}; {ctx.node.counted_text(DEADPOOL_PHYSICAL)}")


def _deadpool_logical(ctx: StackContext, route: Route | None, why: str,
                      version: str) -> Pool:
    """deadpool >= 0.12.3: num_cpus::get() * 2. num_cpus counts the cgroup CPU quota,
    which only resources.limits.cpu sets (a request is a weight, not a quota): with a
    limit, its CPUs rounded up (at most a configured node-cpus; an assumed node size
    would only lower it), else the node's CPUs."""
    source = Source.default_of(f"deadpool{version} default max_size {DEADPOOL_LOGICAL.text} "
                               f"({DEADPOOL_LOGICAL_WHERE})", key="max_size")
    limit = ctx.container.cpu_limit
    if limit is None or limit.source.key != "resources.limits.cpu":
        return ctx.pool(DEADPOOL_LABEL, ctx.cpu_size(DEADPOOL_LOGICAL)[0], source,
                        route=route, cpu=DEADPOOL_LOGICAL, per_process=False,
                        note=f"{why}; no CPU limit on the container, so num_cpus::get() is "
                             f"the node's CPUs: {ctx.node.counted_text(DEADPOOL_LOGICAL)}")
    quota = max(1, math.ceil(limit.value))
    counted = quota if ctx.node.assumed else min(quota, ctx.node.logical)
    node = ctx.node.logical_term()
    capped = f", at most the {node.value:g} node CPUs ({node.source.label()})" \
        if counted < quota else ""
    return ctx.pool(DEADPOOL_LABEL, DEADPOOL_LOGICAL.at(counted), source, route=route,
                    bound="default", per_process=False,
                    note=f"{why}; num_cpus::get() is the cgroup CPU quota rounded up "
                         f"({NUM_CPUS_QUOTA_WHERE}): {limit.value:g} (container CPU limit, "
                         f"{limit.source.label()}) -> {counted}{capped}")


def _r2d2(ctx: StackContext, files: list[RustFile]) -> list[Pool]:
    label = "r2d2 max_size"
    reader = _Reader(ctx, label)
    route = route_from_env(ctx.container.env)
    default = Source.default_of(f"r2d2{_locked(ctx, 'r2d2')} default max_size {R2D2_DEFAULT} "
                                f"({R2D2_WHERE})", key="max_size")
    pools: list[Pool] = []
    for f in files:
        code = f.code
        for m in re.finditer(r"\bPool\s*::\s*(builder\s*\(\s*\)|new\s*\()", code):
            chain = _statement(code, m.end()) if m.group(1).startswith("builder") else ""
            pools += _builder_pool(ctx, reader, f, m.end(), chain, "max_size",
                                   f.cite(m.start(), "r2d2::Pool"),
                                   (label, R2D2_DEFAULT, default), route)
    return pools


# tokio-postgres with no pool: each `connect` is one connection, held while its Client
# lives (sfackler/rust-postgres@ad68abfd, tag tokio-postgres-v0.7.13, tokio-postgres/
# src/lib.rs:184-192 `connect`: "parses a connection string and connects to the
# database"; src/connection.rs:41-47: the Connection "performs the actual IO" and ends
# when "its associated `Client` has dropped")
_TOKIO_CONNECT = re.compile(r"\btokio_postgres\s*::\s*connect\s*\(")
_FN = re.compile(r"\bfn\s+(\w+)")
# what a request handler's signature or attribute holds: tonic's Request<T>, actix's
# HttpRequest / web::Json / web::Path and its route attributes, axum's extractors
_HANDLER = re.compile(r"\bRequest\s*<|\bHttpRequest\b|\bweb\s*::\s*(?:Json|Path|Query|Form|"
                      r"Data)\b|\b(?:Json|Path|Query|State|Extension)\s*\(|\bRequest\b")
_ROUTE_ATTR = re.compile(r"#\[\s*(?:actix_web\s*::\s*)?(?:get|post|put|delete|patch|"
                         r"route)\s*\(")


def _enclosing_fn(code: str, pos: int) -> tuple[str, str, str] | None:
    """(name, signature, what is written just above it) of the innermost `fn` whose body
    holds `pos`; None at the top level."""
    for m in reversed(list(_FN.finditer(code, 0, pos))):
        brace = code.find("{", m.end())
        if brace < 0 or brace > pos:
            continue
        if _call_end(code, brace) > pos:
            above = code[max(0, code.rfind("\n\n", 0, m.start())):m.start()]
            return m.group(1), code[m.end():brace], above
    return None


def _tokio_postgres(ctx: StackContext, files: list[RustFile]) -> list[Pool]:
    """tokio_postgres::connect without a pool: one connection in main (per process); one
    per request in flight in a request handler (unbounded, PA102); in another function
    one per call, how many at once not read (unknown)."""
    pools: list[Pool] = []
    route = route_from_env(ctx.container.env)
    for f in files:
        for m in _TOKIO_CONNECT.finditer(f.code):
            here = f.cite(m.start(), "tokio_postgres::connect")
            found = _enclosing_fn(f.code, m.start())
            name, signature, above = found if found is not None else ("", "", "")
            if name == "main":
                pools.append(ctx.pool("tokio-postgres connect", 1, here, route=route,
                                      note=f"tokio_postgres::connect at {here.label()} in "
                                           "main: one connection while the process runs"))
            elif found is not None and (_HANDLER.search(signature)
                                        or _ROUTE_ATTR.search(above)):
                pools.append(ctx.pool(
                    "tokio-postgres connect (1 connection per request in flight)", 0, here,
                    route=route, bound="unbounded",
                    note=f"tokio_postgres::connect at {here.label()} in request handler "
                         f"{name}: each request in flight opens its own connection, and no "
                         "pool bounds them"))
            else:
                where = f"in function {name}" if name else "outside a function"
                why = (f"tokio_postgres::connect at {here.label()} {where}: one connection "
                       "per call, and how many calls are open at once is not read "
                       "statically")
                if why not in ctx.unknown:
                    ctx.unknown.append(why)
    return pools


def rust_pools(ctx: StackContext) -> list[Pool]:
    files = _rust_files(ctx)
    sqlx = [f for f in files if "PgPool" in f.code or "Postgres" in f.code]
    deadpool = [f for f in files if "deadpool_postgres" in f.code]
    r2d2 = [f for f in files if "r2d2" in f.code
            and ("PgConnection" in f.code or "PostgresConnectionManager" in f.code)]
    tokio = [f for f in files if "tokio_postgres" in f.code]
    return [*_sqlx(ctx, sqlx), *_deadpool(ctx, deadpool), *_r2d2(ctx, r2d2),
            *_tokio_postgres(ctx, tokio)]


# Cargo.toml: which crate names the stack, and with which features
_TABLE = re.compile(r"^\[([^\]]+)\]\s*$", re.M)


def cargo_crates(f: AppFile) -> dict[str, tuple[int, frozenset[str]]]:
    """Dependency name -> (line, features) of one Cargo.toml, inline tables and
    `[dependencies.name]` tables alike (dev-dependencies left out: not deployed)."""
    out: dict[str, tuple[int, frozenset[str]]] = {}
    table = ""
    lines = f.text.splitlines()
    for n, line in enumerate(lines, 1):
        text = line.split("#", 1)[0].strip()
        if header := re.fullmatch(r"\[([^\[\]]+)\]", text):
            table = header.group(1).strip()
            if m := re.fullmatch(r"(?:workspace\.|target\..+\.)?dependencies\.([\w-]+)", table):
                feats = _features(" ".join(_table_lines(lines, n)))
                out[m.group(1)] = (n, feats)
            continue
        if not re.fullmatch(r"(?:workspace\.|target\..+\.)?dependencies", table):
            continue
        if m := re.match(r"""["']?([\w-]+)["']?\s*=\s*(.*)""", text):
            out[m.group(1)] = (n, _features(m.group(2)))
    return out


def _table_lines(lines: list[str], header: int) -> list[str]:
    out = []
    for line in lines[header:]:
        if line.strip().startswith("["):
            break
        out.append(line.split("#", 1)[0])
    return out


def _features(text: str) -> frozenset[str]:
    m = re.search(r"features\s*=\s*\[([^\]]*)\]", text)
    return frozenset(re.findall(r'"([\w-]+)"', m.group(1))) if m else frozenset()


def cargo_stack(ctx: StackContext) -> tuple[str, Source] | None:
    """("sqlx" | "deadpool" | "r2d2", where Cargo.toml names it) for a crate that
    depends on a PostgreSQL pool: sqlx with its `postgres` feature (or sqlx-postgres),
    deadpool-postgres, diesel with `postgres` and `r2d2` (or r2d2_postgres)."""
    for f in ctx.files("cargo"):
        deps = cargo_crates(f)
        if "sqlx-postgres" in deps or ("sqlx" in deps and "postgres" in deps["sqlx"][1]):
            name = "sqlx-postgres" if "sqlx-postgres" in deps else "sqlx"
            return "sqlx", f.cite(deps[name][0], f"{name} (postgres)")
        if "deadpool-postgres" in deps:
            return "deadpool", f.cite(deps["deadpool-postgres"][0], "deadpool-postgres")
        diesel = deps.get("diesel")
        if diesel and "postgres" in diesel[1] and ("r2d2" in diesel[1] or "r2d2" in deps):
            return "r2d2", f.cite(diesel[0], "diesel (postgres, r2d2)")
        if "r2d2_postgres" in deps:
            return "r2d2", f.cite(deps["r2d2_postgres"][0], "r2d2_postgres")
    return None


def default_pool(ctx: StackContext, stack: str, evidence: Source, route: Route | None
                 ) -> Pool:
    """The stack's default pool, for a crate whose pool settings no reader found."""
    why = f"stack identified by {evidence.key} ({evidence.label()}); no pool setting read"
    if stack == "deadpool":
        return deadpool_default(ctx, route, why)
    crate, n, where = ("sqlx", SQLX_DEFAULT, SQLX_WHERE) if stack == "sqlx" else \
        ("r2d2", R2D2_DEFAULT, R2D2_WHERE)
    key = "max_connections" if stack == "sqlx" else "max_size"
    return ctx.pool(f"{crate} {key}", n,
                    Source.default_of(f"{crate}{_locked(ctx, crate)} default {key} {n} "
                                      f"({where})", key=key),
                    route=route, bound="default", per_process=False,
                    note=why)
