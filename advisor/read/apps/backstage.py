"""Backstage's backend (`node packages/backend`, the backstage/charts chart's command; its
default image ghcr.io/backstage/backstage): one knex pool per backend plugin. Read in
backstage/backstage packages/backend-defaults/src/entrypoints:

- database/DatabaseManager.ts (29bd574b) forPlugin/getDatabase: a knex client per plugin
  id, cached (`databaseCache`), from database/connectors/postgres.ts (40580ab0)
  PgConnector.getClient -> createPgDatabaseClient(knexFactory(config)): its own pool.
  getConfigForPlugin merges `backend.database.knexConfig` with
  `backend.database.plugin.<pluginId>.knexConfig` (lodash merge, the plugin's wins); no
  pool default of Backstage's, so knex's `{ min: 2, max: 10 }` (knex 3.x lib/client.js
  getPoolSettings, advisor/read/apps/knex.py). pluginDivisionMode 'database' (default)
  or 'schema' changes the database or the search path, not the pool count.
- auth/authServiceFactory.ts: each plugin's auth service (instantiated for every plugin
  that has an HTTP router, through httpAuth) awaits createPluginKeySource, which with the
  default `backend.auth.pluginKeyStore` (database) runs DatabaseKeyStore.create:
  `await database.getClient()` (auth/plugin/keys/DatabaseKeyStore.ts 0a6aef8e) and its
  migrations. So every backend plugin opens its knex pool at start, whether or not it
  keeps data of its own: one pool per `backend.add(...)` of a plugin (a module, named
  `-backend-module-`, joins its plugin's), at most; the count is an upper bound for a
  plugin without a router under pluginKeyStore static.
- Configuration: the files given with `--config` (else app-config.yaml and
  app-config.local.yaml of the working directory), then APP_CONFIG_<path> variables
  (JSON values) over them; `backend.database.client` other than pg opens no PostgreSQL
  pool.

The plugin list is the backend's own source, packages/backend/src/index.ts: read when the
repository holds it; a chart that runs a published image (the chart's default demo image
ghcr.io/backstage/backstage, tag latest) does not, and its count is then unknown (PA106),
with the pool size per plugin named.
"""

from __future__ import annotations

import posixpath
import re
from typing import Literal

from advisor.model import Pool, Source, Term
from advisor.read import jsontext
from advisor.read.apps.base import StackContext, image_is, option_values
from advisor.read.apps.source import AppFile

IMAGES = ("backstage/backstage",)
KNEX_MAX = 10
LABEL = "Backstage knex pool max, one pool per backend plugin"
_BASE = "backend.database.knexConfig.pool.max"
_DEFAULT_CONFIGS = ("app-config.yaml", "app-config.local.yaml")
_PLUGIN_ID = (re.compile(r"@[^/]+/(?:backstage-)?plugin-(.+?)-backend"),
              re.compile(r"backstage-plugin-(.+?)-backend"))


def _runs_backend(ctx: StackContext) -> bool:
    words = " ".join((*ctx.container.command, *ctx.container.args))
    return "packages/backend" in words or (image_is(ctx.container.image, IMAGES) and (
        not ctx.container.command or "node" in words))


class _Config:
    """Backstage's merged configuration, the values pool-advisor needs, each with where."""

    def __init__(self) -> None:
        self.values: dict[str, tuple[str | None, Source]] = {}
        self.unread: list[str] = []  # configuration files not in the repository

    def add_file(self, f: AppFile, ctx: StackContext) -> None:
        from advisor.read.apps.yamlflat import YamlError, load_documents

        try:
            docs = load_documents(f.text)
        except YamlError as exc:
            ctx.problem(f.cite(exc.line), f"Backstage configuration is not valid YAML: "
                        f"{exc.message}", program="Backstage")
            return
        for doc in docs:
            for e in doc:
                if e.key.startswith("backend.database."):
                    self.values[e.key] = (e.value, f.cite(e.line, e.key))

    def add_env(self, ctx: StackContext) -> None:
        for var in ctx.container.env:
            if not var.name.startswith("APP_CONFIG_backend_database_"):
                continue
            key = var.name[len("APP_CONFIG_"):].replace("_", ".")
            value = var.value
            if value is not None:
                try:
                    parsed = jsontext.loads(value)
                    value = str(parsed) if not isinstance(parsed, dict | list) else None
                except ValueError:
                    pass  # the config loader keeps a value that is no JSON as a string
            self.values[key] = (value, ctx.env_source(var.name))

    def get(self, key: str) -> tuple[str | None, Source] | None:
        return self.values.get(key)


def _config(ctx: StackContext) -> _Config:
    cfg = _Config()
    given = option_values(ctx, "--config")
    by_name = {f.rel: f for f in ctx.files("backstage-config")}
    paths = [(p, src) for p, src in given] or [(n, ctx.container.source)
                                                for n in _DEFAULT_CONFIGS]
    for path, src in paths:
        f = by_name.get(path.lstrip("./")) or by_name.get(posixpath.basename(path))
        if path.startswith("/") and ctx.pod_files is not None:
            seen = ctx.pod_files.read(path)
            if seen.kind == "held" and seen.file is not None:
                f = seen.file
            elif f is None:
                cfg.unread.append(f"--config {path} ({src.label()}): {seen.describe()}")
                continue
        if f is None:
            if given:
                cfg.unread.append(f"--config {path} ({src.label()}): a file of the image, "
                                  "not in the repository")
            continue
        cfg.add_file(f, ctx)
    cfg.add_env(ctx)
    return cfg


def _package(spec: str) -> str:
    """The package of an import specifier (`@backstage/plugin-catalog-backend/alpha`)."""
    parts = spec.split("/")
    return "/".join(parts[:2]) if spec.startswith("@") else parts[0]


def plugin_id(package: str) -> str | None:
    for pattern in _PLUGIN_ID:
        m = pattern.fullmatch(package)
        if m:
            return m.group(1)
    return None


def _local_is_module(spec: str, index: AppFile, files: list[AppFile]) -> bool:
    """Whether the backend's own feature `spec` (`./extensions/docsBuildStrategy`) is a
    module: its file calls createBackendModule and not createBackendPlugin; else it is
    counted as a plugin (the upper bound)."""
    base = posixpath.normpath(posixpath.join(posixpath.dirname(index.rel), spec))
    for f in files:
        stem = f.rel.rsplit(".", 1)[0]
        if stem in (base, f"{base}/index"):
            return "createBackendModule" in f.text and "createBackendPlugin" not in f.text
    return "module" in spec.lower()


def backend_features(f: AppFile, files: list[AppFile] | None = None
                     ) -> list[tuple[str, bool, int]]:
    """(feature, is a module, line) for each `backend.add(...)` of a backend created with
    createBackend() in `f`: imported packages by name; the backend's own features by
    their file among `files` (createBackendModule), or an identifier, a module when its
    name says so."""
    from advisor.read.apps.jsparse import tokenize

    toks = tokenize(f.text)
    names = {toks[i - 2].text for i, t in enumerate(toks)
             if t.text == "createBackend" and i >= 2 and toks[i - 1].text == "="}
    out: list[tuple[str, bool, int]] = []
    for i, t in enumerate(toks[:-3]):
        if not (t.text in names and toks[i + 1].text == "." and toks[i + 2].text == "add"
                and toks[i + 3].text == "("):
            continue
        j = i + 4
        if j + 2 < len(toks) and toks[j].text in ("import", "require") and \
                toks[j + 1].text == "(" and toks[j + 2].kind == "str":
            spec = toks[j + 2].text[1:-1]
            if spec.startswith("."):
                out.append((spec, _local_is_module(spec, f, files or []), t.line))
                continue
            package = _package(spec)
            out.append((package, "-backend-module-" in package or
                        package.endswith("-module"), t.line))
        elif j < len(toks) and toks[j].kind == "id":
            out.append((toks[j].text, "module" in toks[j].text.lower(), t.line))
    return out


def _backend_index(ctx: StackContext) -> AppFile | None:
    for f in ctx.files("js"):
        if re.search(r"(?:^|/)src/index\.[cm]?[jt]s$", f.rel) and "createBackend" in f.text \
                and ".add(" in f.text:
            return f
    return None


def _size(cfg: _Config, key: str, ctx: StackContext) -> tuple[int, Source] | Literal[False] | None:
    """A pool.max the configuration sets at `key`: (n, where), None when unset, False
    when set to what is not read (a Secret's variable, not a number)."""
    found = cfg.get(key)
    if found is None:
        return None
    value, src = found
    if value is not None and value.strip().isdigit() and int(value) > 0:
        return int(value), src
    ctx.unknown.append(f"Backstage {key} at {src.label()} is "
                       + ("set from a Secret or reference the repository does not hold"
                          if value is None else f"{value!r}, not a pool size pool-advisor "
                                                "can read"))
    return False


def backstage_pools(ctx: StackContext) -> list[Pool]:
    c = ctx.container
    if c.role == "init" or not _runs_backend(ctx):
        return []
    cfg = _config(ctx)
    client = cfg.get("backend.database.client")
    if client is not None and client[0] is not None and client[0] not in ("pg",):
        ctx.notices.append(f"{c.name}: Backstage backend.database.client is {client[0]} "
                           f"({client[1].label()}): no PostgreSQL pool")
        return []
    base = _size(cfg, _BASE, ctx)
    if base is False:
        return []
    if cfg.unread and base is None:
        ctx.unknown.append(f"{c.name}: Backstage configuration not in the repository "
                           f"({'; '.join(cfg.unread)}) may set {_BASE}")
        return []
    max_src = base if base is not None else (KNEX_MAX, Source.default_of(
        "knex default pool { min: 2, max: 10 }: Backstage sets no pool of its own "
        "(backend-defaults database/connectors/postgres.ts)", key=_BASE))
    index = _backend_index(ctx)
    if index is None:
        ctx.unknown.append(
            f"{c.name}: Backstage backend ({c.image}) opens one knex pool per backend "
            f"plugin, max {max_src[0]} each ({max_src[1].label()}); which plugins it runs "
            "is in the backend's packages/backend/src/index.ts (backend.add), which the "
            "repository does not hold" + (" (the image tag names no commit)"
                                          if c.image.endswith(":latest") or ":" not in
                                          c.image.rsplit("/", 1)[-1] else ""))
        return []
    plugins = [(name, line) for name, module, line in backend_features(index, ctx.files("js"))
               if not module]
    if not plugins:
        ctx.unknown.append(f"{c.name}: Backstage backend {index.path} adds no plugin "
                           "pool-advisor can read (backend.add)")
        return []
    groups: dict[tuple[int, Source], list[tuple[str, int]]] = {}
    for name, line in dict((n, ln) for n, ln in plugins).items():
        pid = plugin_id(name)
        own = _size(cfg, f"backend.database.plugin.{pid}.knexConfig.pool.max", ctx) \
            if pid else None
        if own is False:
            return []
        groups.setdefault(own or max_src, []).append((name, line))
    pools = []
    for (size, src), members in groups.items():
        local = [n for n, _ in members if not (n.startswith("@") or plugin_id(n))]
        note = f"plugins {', '.join(n for n, _ in members)}" + (
            f"; {', '.join(local)} counted as plugins (local features)" if local else "")
        pools.append(Pool(
            label=LABEL, size=Term(label=LABEL, value=size, source=src),
            processes=Term(label="Backstage backend plugins, one knex pool each",
                           value=len(members), source=index.cite(members[0][1],
                                                                  "backend.add")),
            bound="fixed" if src.default is None else "default", note=note))
    return pools
