"""TypeORM's ormconfig: the options `createConnection()`, `createConnection(name)`,
`createConnections()` and `getConnectionOptions()` read when given none (typeorm 0.2.x
and 0.3.x, src/globals.ts; they are gone in 1.0.0). Read as ConnectionOptionsReader.load
does (src/connection/ConnectionOptionsReader.ts@0.3.31:92-173, @0.2.45:85-139):

- at the app root (app-root-path: the folder of the app's package.json), the first of
  ormconfig.{env,js,mjs,cjs,ts,mts,cts,json,yml,yaml,xml} that exists (yml, yaml and
  xml up to 0.3.13: options-reader/ConnectionOptionsYmlReader.ts is gone in 0.3.14);
- ormconfig.env is loaded into the environment (dotenv, which keeps variables already
  set); then TYPEORM_CONNECTION or TYPEORM_URL in the environment wins over any file:
  ConnectionOptionsEnvReader (type = TYPEORM_CONNECTION or TYPEORM_URL's scheme, extra =
  JSON.parse(TYPEORM_DRIVER_EXTRA); no variable sets poolSize);
- a file may hold one connection or a list; `name` absent is "default".

Pure: reads the app's files and the container's env, never runs the file.
"""

from __future__ import annotations

import warnings

from msgspec import Struct

from advisor.model import Source
from advisor.read import jsontext
from advisor.read.apps.base import StackContext
from advisor.read.apps.jsparse import UNKNOWN, Tok
from advisor.read.apps.jssource import JsModule
from advisor.read.apps.pyeval import Val
from advisor.read.apps.source import AppFile, dotenv_values

FORMATS = ("env", "js", "mjs", "cjs", "ts", "mts", "cts", "json", "yml", "yaml", "xml")
YML_UNTIL = (0, 3, 14)  # first version without the yml/yaml/xml readers


class Options(Struct):
    """One connection's options as read, where they are written, and its name."""

    cfg: Val
    where: Source
    name: str


def find_file(ctx: StackContext, root: str, yml: bool) -> AppFile | None:
    """The ormconfig file TypeORM picks in the folder `root` ("" for the app's)."""
    by_name = {f.rel: f for f in ctx.files("js", "ormconfig")}
    for ext in FORMATS:
        if not yml and ext in ("yml", "yaml", "xml"):
            continue
        f = by_name.get(f"{root}ormconfig.{ext}")
        if f is not None:
            return f
    return None


def _env_value(ctx: StackContext, name: str, file_env: dict[str, tuple[str, int]],
               f: AppFile | None) -> Val | None:
    """A variable as ConnectionOptionsEnvReader sees it: the container's (its value None
    when set from a Secret not held: then `hidden`), else ormconfig.env's."""
    var = ctx.env(name)
    if var is not None:
        src = ctx.env_source(name)
        if var.value is None:
            return Val(UNKNOWN, src, hidden=name)
        return Val(var.value, src)
    if name in file_env and f is not None:
        value, line = file_env[name]
        return Val(value, f.cite(line, name, name))
    return None


def _from_env(ctx: StackContext, f: AppFile | None) -> Val | None:
    """ConnectionOptionsEnvReader's options, when TYPEORM_CONNECTION or TYPEORM_URL is
    set; None when neither is."""
    file_env = dotenv_values(f) if f is not None and f.rel.endswith(".env") else {}
    kind = _env_value(ctx, "TYPEORM_CONNECTION", file_env, f)
    url = _env_value(ctx, "TYPEORM_URL", file_env, f)
    if kind is None and url is None:
        return None
    where = (kind or url).source  # type: ignore[union-attr]
    if kind is None and url is not None:
        scheme = url.value.split("://", 1)[0] if isinstance(url.value, str) else UNKNOWN
        kind = Val(scheme, url.source, hidden=url.hidden)
    cfg: dict[str, Val] = {"type": kind}  # type: ignore[dict-item]
    if url is not None:
        cfg["url"] = url
    extra = _env_value(ctx, "TYPEORM_DRIVER_EXTRA", file_env, f)
    if extra is not None:
        cfg["extra"] = _json_extra(extra)
    return Val(cfg, where)


def _json_extra(extra: Val) -> Val:
    """TYPEORM_DRIVER_EXTRA, JSON.parse'd: its `max` cited at the variable."""
    if not isinstance(extra.value, str):
        return Val(UNKNOWN, extra.source, hidden=extra.hidden)
    try:
        data = jsontext.loads(extra.value)
    except ValueError:
        return Val(UNKNOWN, extra.source)
    if not isinstance(data, dict):
        return Val(UNKNOWN, extra.source)
    return Val({k: Val(v, extra.source) for k, v in data.items()
                if isinstance(v, (int, str, float, bool))}, extra.source)


def _exported(module: JsModule) -> Val | None:
    """`module.exports = ...`, `export default ...`, `export = ...` of a JS/TS file."""
    toks: list[Tok] = module.toks
    for i, t in enumerate(toks):
        start = None
        if t.text == "module" and i + 3 < len(toks) and toks[i + 2].text == "exports" \
                and toks[i + 3].text == "=":
            start = i + 4
        elif t.text == "export" and i + 1 < len(toks) and toks[i + 1].text in ("default",
                                                                                 "="):
            start = i + 2
        if start is not None:
            return module.parser.expr(start)[0]
    return None


def _yaml_val(node: object, f: AppFile, line: int, key: str | None = None) -> Val:
    src = f.cite(line, key)
    if isinstance(node, dict):
        lc = getattr(node, "lc", None)
        out = {}
        for k, v in node.items():
            at = lc.key(k)[0] + 1 if lc is not None and k in lc.data else line
            out[str(k)] = _yaml_val(v, f, at, str(k))
        return Val(out, src)
    if isinstance(node, list):
        return Val([_yaml_val(v, f, line) for v in node], src)
    return Val(node if isinstance(node, (int, float, str, bool)) else None, src)


def _from_file(ctx: StackContext, f: AppFile) -> Val | None:
    ext = f.rel.rsplit(".", 1)[-1]
    if ext in ("json", "js", "mjs", "cjs", "ts", "mts", "cts"):
        module = JsModule(f, ctx)
        if ext == "json":  # a JSON document is a JS expression
            return module.parser.expr(0)[0] if module.toks else None
        return _exported(module)
    if ext in ("yml", "yaml"):
        from ruamel.yaml import YAML
        from ruamel.yaml.error import YAMLError

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                data = YAML(typ="rt").load(f.text)
            from advisor.read.sources.k8s import too_big

            if too_big(data):  # an alias bomb: not expanded
                return Val(UNKNOWN, f.cite(1))
            return _yaml_val(data, f, 1)
        except (YAMLError, RecursionError):
            return Val(UNKNOWN, f.cite(1))
    return Val(UNKNOWN, f.cite(1))  # xml: not read


def connections(ctx: StackContext, f: AppFile | None) -> list[Options] | Val | None:
    """Every connection the ormconfig holds (or the env reader makes); a Val of UNKNOWN
    (where) when they are not read; None when there is none."""
    cfg = _from_env(ctx, f)
    if cfg is None:
        if f is None or f.rel.endswith(".env"):
            return None  # ormconfig.env without TYPEORM_CONNECTION: TypeORM finds none
        cfg = _from_file(ctx, f)
    if cfg is None or cfg.value is UNKNOWN:
        return cfg if cfg is not None else Val(UNKNOWN, f.cite(1)) if f else None
    items = cfg.value if isinstance(cfg.value, list) else [cfg]
    out: list[Options] = []
    for item in items:
        if item is None or not isinstance(item.value, dict):
            return Val(UNKNOWN, cfg.source)
        name = item.value.get("name")
        label = str(name.value) if name is not None and isinstance(name.value, str) \
            else "default"
        out.append(Options(cfg=item, where=item.source, name=label))
    return out
