"""Dropwizard (dropwizard-db's DataSourceFactory: a tomcat-jdbc pool per data source).

The application starts as `java -jar app.jar server <config.yml>` (in the container's
command, its image's CMD/ENTRYPOINT or a script they run); that YAML file, as the pod
sees it (a ConfigMap mounted there) or as the image holds it (copied from the source
folder), binds each DataSourceFactory field of the Configuration class: a mapping with
`driverClass`, `url`, `maxSize`, ... (`db:`, `database:`, any name; several fields are
several pools). One pool per such mapping whose url is jdbc:postgresql or whose
driverClass is org.postgresql.Driver.

Read in dropwizard/dropwizard at v2.1.12 (908e31e)
dropwizard-db/src/main/java/io/dropwizard/db/DataSourceFactory.java: `initialSize = 10`
(:375), `minSize = 10` (:378), `maxSize = 100` (:381); build() passes
`poolConfig.setMaxActive(maxSize)` (:906): the pool opens up to maxSize connections. The
same 100 at v1.3.29 (:376), v2.0.0 (:378) and v4.0.10 (:381).

`${VAR}` and `${VAR:-default}` in the file are replaced only when the Application wraps
its configuration source: `bootstrap.setConfigurationSourceProvider(new
SubstitutingSourceProvider(..., new EnvironmentVariableSubstitutor(...)))` (dropwizard-
configuration EnvironmentVariableSubstitutor.java, commons-text StringSubstitutor: `:-`
is the default's delimiter, `$${X}` an escaped literal). Without it the text is the value
(a `${...}` maxSize then fails to bind as an int: the application does not start).
"""

from __future__ import annotations

import posixpath
import re

from msgspec.structs import replace

from advisor.lazyregex import lazy
from advisor.model import EnvVar, Pool, Route, Source
from advisor.read.apps.base import StackContext
from advisor.read.apps.numbers import parse_int
from advisor.read.apps.source import AppFile, AppSource
from advisor.read.fs import InputError

DEFAULT_MAX_SIZE = 100
LABEL = "Dropwizard DataSourceFactory maxSize"
DEFAULT_SOURCE = Source.default_of(
    "Dropwizard default maxSize 100 (dropwizard-db DataSourceFactory.java:381 at v2.1.12, "
    "100 from 1.3 to 4.0; tomcat-jdbc maxActive)", key="maxSize")

# the Dropwizard modules that bring DataSourceFactory (jdbi and hibernate depend on db)
_DB_MODULE = lazy(r"\bdropwizard-(?:db|jdbi3?|hibernate)\b")
_VAR = lazy(r"\$(\$?)\{([^}:]+)(?::-([^}]*))?\}")
_PG_DRIVER = "org.postgresql.Driver"


def db_module(files: list[AppFile]) -> tuple[str, Source] | None:
    """The dropwizard-db module a build file names (io.dropwizard group), and where."""
    for f in files:
        if f.kind != "build" or "io.dropwizard" not in f.text:
            continue
        for n, line in enumerate(f.text.splitlines(), 1):
            m = _DB_MODULE.search(line)
            if m:
                return m.group(0), f.cite(n, m.group(0), m.group(0))
    return None


def _substitutor(ctx: StackContext) -> Source | None:
    """Where the application enables EnvironmentVariableSubstitutor through a
    SubstitutingSourceProvider, or None (the file's text is then taken as written)."""
    for f in ctx.files("java"):
        if "SubstitutingSourceProvider" not in f.text:
            continue
        for n, line in enumerate(f.text.splitlines(), 1):
            if "EnvironmentVariableSubstitutor(" in line and "import" not in line:
                return f.cite(n, "EnvironmentVariableSubstitutor")
    return None


def _server_config(ctx: StackContext) -> tuple[str, Source] | None:
    """The configuration file `server <file>` names in the command the container runs
    (its own command, the image's, or a script either runs)."""
    from advisor.read.apps.cmdline import command_line, script_run

    line = command_line(ctx.container, ctx.app, [])
    segments = [list(s) for s in line.segments()]
    segments += [list(s) for c in script_run(ctx.container, ctx.app, line).commands
                 for s in c.line.segments()]
    for words in segments:
        texts = [w.text for w in words]
        for i, text in enumerate(texts[:-1]):
            before = texts[:i]
            if text == "server" and any(t.endswith(".jar") or t.rsplit("/", 1)[-1] == "java"
                                        for t in before):
                return texts[i + 1], words[i + 1].source
    return None


def _workdir(ctx: StackContext) -> str:
    """The image's final WORKDIR (the process's directory), "/" when not read."""
    if ctx.app is None:
        return "/"
    from advisor.read.apps.cmdline import dockerfile_copies, pick_dockerfile

    dockerfile, _ = pick_dockerfile(ctx.app, ctx.container.image)
    return dockerfile_copies(dockerfile.text)[1] if dockerfile is not None else "/"


def _config_file(ctx: StackContext, path: str) -> tuple[AppFile | None, str]:
    """The file at `path` as the container sees it: mounted in the pod, else copied from
    the source folder into the image; (None, why) when not read."""
    full = posixpath.normpath(posixpath.join(_workdir(ctx), path))
    why = f"{full} is not read"
    if ctx.pod_files is not None:
        text = ctx.pod_files.read(full)
        if text.kind == "held" and text.file is not None:
            return text.file, ""
        why = text.why or why
    if ctx.app is not None:
        from advisor.read.apps.cmdline import copied_from

        for rel in copied_from(ctx.app, ctx.container.image, full):
            found = next((f for f in ctx.app.files if f.rel == rel), None) or \
                _source_file(ctx.app, rel)
            if found is not None:
                return found, ""
    return None, why


def _source_file(app: AppSource, rel: str) -> AppFile | None:
    """The app folder's file `rel` a Dockerfile copies into the image, read when the
    folder scan did not keep it (a root-level config.yml is no kind source.classify
    knows: commafeed's `COPY commafeed-server/config.yml.example config.yml`)."""
    if rel.startswith("../") or not rel.endswith((".yml", ".yaml")):
        return None
    path = posixpath.join(app.directory, rel) if app.directory else rel
    try:
        full = app.root.resolve(path)
        if not full.is_file():
            return None
        text = app.root.read_text(full, keep=True)
    except (InputError, OSError):
        return None
    return AppFile(path=app.root.rel(full), rel=rel, kind="dropwizard-config", text=text)


def dropwizard_pools(ctx: StackContext) -> list[Pool]:
    module = db_module(ctx.files("build"))
    if module is None:
        return []
    name, where = module
    found = _server_config(ctx)
    if found is None:
        ctx.unknown.append(f"{LABEL}: the build names {name} ({where.label()}), but no "
                           "`server <config.yml>` command is read, so its data sources "
                           "are not known")
        return []
    path, at = found
    config, why = _config_file(ctx, path)
    if config is None:
        ctx.unknown.append(f"{LABEL}: the configuration file {path} (`server {path}`, "
                           f"{at.label()}) is not read: {why}")
        return []
    from advisor.read.apps.yamlflat import YamlError, load_documents

    try:
        docs = load_documents(config.text)
    except YamlError as exc:
        ctx.problem(config.cite(exc.line), exc.message, fatal=True, program="Dropwizard")
        return []
    entries = {e.key: e for doc in docs[:1] for e in doc}
    substitutor = _substitutor(ctx)
    ctx.notices.append(f"Dropwizard configuration {config.path} (`server {path}`, "
                       f"{at.label()}); ${{VAR}} "
                       + (f"substituted from the env (EnvironmentVariableSubstitutor, "
                          f"{substitutor.label()})" if substitutor is not None
                          else "not substituted (no EnvironmentVariableSubstitutor)"))
    pools: list[Pool] = []
    for prefix in _datasource_prefixes(entries):
        pool = _datasource_pool(ctx, config, prefix, entries, substitutor is not None)
        if pool is not None:
            pools.append(pool)
    return pools


def _datasource_prefixes(entries: dict) -> list[str]:
    """The mappings that are DataSourceFactory blocks: a driverClass or a jdbc: url."""
    out: list[str] = []
    for key, e in entries.items():
        prefix, _, leaf = key.rpartition(".")
        if not prefix or prefix in out:
            continue
        if (leaf == "driverClass" and e.value) or (
                leaf == "url" and (e.value or "").startswith("jdbc:")):
            out.append(prefix)
    return out


def _substitute(ctx: StackContext, text: str, enabled: bool
                ) -> tuple[str | None, EnvVar | None]:
    """`text` with ${VAR} replaced from the container's env (when enabled); (None, var)
    when a variable's value is not held here (a Secret's) or is not set and has no
    default."""
    if not enabled:
        return text, None
    hidden: list[EnvVar] = []
    missing: list[str] = []

    def sub(m: re.Match[str]) -> str:
        if m.group(1):
            return m.group(0)[1:]  # $${X}: the literal ${X}
        var = ctx.env(m.group(2))
        if var is not None and var.value is None:
            hidden.append(var)
            return ""
        if var is not None:
            return var.value or ""
        if m.group(3) is not None:
            return m.group(3)
        missing.append(m.group(2))
        return m.group(0)

    out = _VAR.sub(sub, text)
    if hidden:
        return None, hidden[0]
    if missing:
        return None, None
    return out, None


def _datasource_pool(ctx: StackContext, config: AppFile, prefix: str, entries: dict,
                     substitute: bool) -> Pool | None:
    def value(leaf: str) -> tuple[str | None, EnvVar | None, Source] | None:
        e = entries.get(f"{prefix}.{leaf}")
        if e is None or e.value is None:
            return None
        text, hidden = _substitute(ctx, e.value, substitute)
        return text, hidden, config.cite(e.line, f"{prefix}.{leaf}", leaf)

    driver = value("driverClass")
    url = value("url")
    url_text = url[0] if url is not None else None
    raw = entries[f"{prefix}.url"].value if f"{prefix}.url" in entries else None
    if url_text is not None and url_text.startswith("jdbc:"):
        if not url_text.startswith("jdbc:postgresql:"):
            return None  # another database
    elif not ((driver is not None and driver[0] == _PG_DRIVER)
              or (raw or "").startswith("jdbc:postgresql:")):
        return None
    label = f"{LABEL} ({prefix})"
    route: Route | None = None
    if url_text is not None and url is not None:
        from advisor.read.apps.urls import route_from_url

        route = route_from_url(url_text, url[2])
        user = value("user")
        # DataSourceFactory.build() sets `poolConfig.setUsername(user)` (tomcat-jdbc
        # hands it to the driver as `user`); a user in the URL wins in pgjdbc
        # (Driver.parseURL: URL parameters over the given properties). Without it a
        # PgBouncer in front counted a (database, *) pool beside the (database, user)
        # the env's route names.
        if route is not None and route.user is None and user is not None and user[0] \
                and user[1] is None:
            route = replace(route, user=user[0])
    size = value("maxSize")
    if size is None:
        pool = ctx.pool(label, DEFAULT_MAX_SIZE, DEFAULT_SOURCE, route=route, bound="default",
                        per_process=False, note=f"{prefix} ({config.path}) sets no maxSize")
    elif size[1] is not None:
        ctx.hidden_size(label, size[1].name, size[1].source)
        return None
    elif size[0] is not None and (n := parse_int(size[0])) is not None:
        pool = ctx.pool(label, n, size[2], route=route, per_process=False)
    else:
        ctx.unread_size(label, size[2])
        return None
    if url is not None and url[1] is not None:
        return ctx.hidden_route([pool], label, url[1].name, url[1].source)[0]
    return pool
