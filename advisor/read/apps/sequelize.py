"""Sequelize: `new Sequelize(url, { pool: { max } })` or
`new Sequelize(database, user, password, { dialect: "postgres", pool: {...} })`;
`replication: { read: [...], write: {...} }` opens one pool per read host and one for
the write host.

Default read in sequelize v6.37.8, src/dialects/abstract/connection-manager.js:34
(`pool: { max: 5, min: 0, ... }`; the same in v7 packages/core/src/sequelize-typescript.ts).
"""

from __future__ import annotations

from msgspec.structs import replace

from advisor.model import Pool, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.jsentry import served
from advisor.read.apps.jsparse import call_args, find_calls
from advisor.read.apps.jssource import (
    as_int,
    get,
    js_modules,
    known,
    may_hold,
    options_unread,
    route_of,
)
from advisor.read.apps.pyeval import Val

DEFAULT_MAX = 5


def sequelize_pools(ctx: StackContext) -> list[Pool]:
    pools: list[Pool] = []
    loaded, maybe = served(ctx, js_modules(ctx, "Sequelize", frozenset({"Sequelize"})),
                           lambda m: bool(find_calls(m.toks, {"Sequelize"}, new=True)),
                           "new Sequelize")
    unknown_before = len(ctx.unknown)
    certain: list[Pool] = []
    for k, module in enumerate(loaded + maybe):
        if k == len(loaded):
            certain = list(pools)  # those of the modules the entry loads
        previous: int | None = None
        for _, paren in find_calls(module.toks, {"Sequelize"}, new=True):
            if previous is not None and _other_branch(module.toks, previous, paren):
                ctx.notices.append(
                    f"{module.file.path}:{module.toks[paren].line}: new Sequelize in the other "
                    f"branch of the one at line {module.toks[previous].line}: one pool")
                previous = None
                continue
            previous = paren
            args = call_args(module.parser, paren)
            opts = next((a for a in reversed(args) if a is not None and
                         isinstance(a.value, dict)), None)
            url = args[0] if args and known(args[0]) and isinstance(args[0].value, str) \
                and "://" in args[0].value else None
            dialect = get(opts, "dialect")
            is_pg = (known(dialect) and str(dialect.value).startswith("postgres")) or (
                url is not None and str(url.value).startswith("postgres"))
            if not is_pg and not (url is None and not known(dialect)):
                continue
            here = Source(path=module.file.path, line=module.toks[paren].line)
            v = get(opts, "pool", "max")
            if ctx.hidden_read("Sequelize pool.max", v):
                continue
            n = as_int(v)
            if not n and may_hold(_options_arg(args), "pool", "max"):
                # `new Sequelize(db, user, password, config)` with config from another
                # module, `{ ...base, dialect: "postgres" }`: pool.max may be set where it
                # is not read, so Sequelize's 5 is not known to apply
                options_unread(ctx, "Sequelize pool.max", here, "pool.max")
                continue
            reads = get(opts, "replication", "read")
            copies = [("", route_of(url, ctx))]
            if reads is not None and isinstance(reads.value, list):
                copies = [(" write", route_of(None, ctx))] + [
                    (f" read[{i}]", None) for i in range(len(reads.value))]
            for suffix, route in copies:
                if n:
                    pools.append(ctx.pool(f"Sequelize pool.max{suffix}", n,
                                          replace(v.source, key=v.source.key or "pool.max"),
                                          route=route))
                else:
                    pools.append(ctx.pool(
                        f"Sequelize pool.max{suffix}", DEFAULT_MAX,
                        Source.default_of("Sequelize 6/7 default (pool.max 5)", key="pool.max"),
                        route=route, bound="default", note=f"new Sequelize at {here.label()}"))
    if loaded and maybe and certain and len(ctx.unknown) > unknown_before:
        # the budget counts an unknown client as 1 per pod: say what the modules the
        # entry does load hold for certain, so that floor is not taken for the count
        ctx.notices.append(
            f"{ctx.container.name}: at least "
            f"{sum(p.per_pod() for p in certain):g} connections per pod from the "
            "Sequelize instances its entry loads ("
            + ", ".join(f"{p.label} {p.size.value:g}, {p.note or p.size.source.label()}"
                        for p in certain)
            + "); one it may load is not read, so the client is unknown")
    return pools


def _options_arg(args: list[Val | None]) -> Val | None:
    """The options argument of `new Sequelize(...)`: the second of (url, options), the
    fourth of (database, username, password, options), the only one of (options) or
    (url); Val(None) for none. sequelize v6 src/sequelize.js constructor: one object
    argument is the options, (URI) or (URI, options) when the second is an object, else
    the fourth (`options = options || {}`)."""
    if len(args) == 3:
        return Val(None, Source())  # (database, username, password): no options
    if not args or len(args) > 4:
        return Val(None, Source())
    last = args[-1] if len(args) != 1 else args[0]
    if len(args) == 1 and last is not None and (
            isinstance(last.value, str) or last.hidden or last.from_default):
        return Val(None, Source())  # a URL (process.env.X is a string, set or not)
    return last


def _other_branch(toks: list, first: int, second: int) -> bool:
    """Two constructions a few lines apart with `else` between them: if/else branches,
    of which one runs (one pool per process, not two)."""
    if toks[second].line - toks[first].line > 20:
        return False
    between = [t.text for t in toks[first:second]]
    return "else" in between
