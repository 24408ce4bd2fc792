"""Servers: PostgreSQL from workloads (config files, command-line options, Bitnami and
Harbor images), declared servers, standalone postgresql.conf files, and the PostgreSQL
major version each is read as."""

from __future__ import annotations

import posixpath
from functools import partial
from typing import TYPE_CHECKING

from msgspec.structs import replace

from advisor.facts.pg_version import declared_major, image_major, option_major
from advisor.guard import guarded
from advisor.link.inputs import Inputs, merge_suppressions, suppressed_codes, workload_id
from advisor.model import (
    ConfigProblem,
    Container,
    Location,
    Server,
    Setting,
    Source,
    Term,
    Topology,
)
from advisor.read.apps.locate import BuildHints, built_from
from advisor.read.apps.urls import declared_hosts
from advisor.read.workloads import (
    ConfigIndex,
    ConfigMapData,
    Workload,
    image_repository,
    is_postgres_image,
    lookup,
    patroni_runner,
    postgres_arguments,
)

if TYPE_CHECKING:
    from advisor.config.schema import ServerDecl
    from advisor.read.sources.pgconf import MountedDir, MountedFile

DEFAULT_PG_VERSION = 15


def as_built(inputs: Inputs, c: Container) -> tuple[Container, Source | None]:
    """`c`, or `c` with the image its own image is built FROM when the repository builds
    it on a PostgreSQL image (a Dockerfile `FROM postgres:16` that adds init scripts):
    that container runs the PostgreSQL server. The Source is that FROM line."""
    hints = inputs.build_hints
    if not isinstance(hints, BuildHints) or not hints.bases or is_postgres_image(c.image):
        return c, None
    found = built_from(hints, c.image)
    if found is None or not is_postgres_image(found[0]):
        return c, None
    base, shown, line = found
    return replace(c, image=base), Source(path=shown, line=line, key=f"FROM {base}")


def pg_version(inputs: Inputs, c: Container | None, fallback: float | None = None,
               built: Source | None = None) -> Term:
    if inputs.pg_version_override:
        return Term(label="PostgreSQL major version",
                    value=option_major(inputs.pg_version_override),
                    source=Source(default="--pg-version", key="pg_version"))
    if c is not None and (major := image_major(c.image)) is not None:
        return Term(label="PostgreSQL major version", value=major,
                    source=built or c.image_default or Source(
                        path=c.source.path, line=c.source.line, key=f"image {c.image}"))
    if fallback is not None:
        return Term(label="PostgreSQL major version", value=fallback,
                    source=Source(default="declared version", key="version"))
    if inputs.settings.pg_version:
        return Term(label="PostgreSQL major version",
                    value=option_major(inputs.settings.pg_version),
                    source=Source(path=inputs.settings.origin, key="pg-version"))
    why = (f"image {c.image} names no PostgreSQL version" if c is not None
           else "no version in the repository")
    return Term(label="PostgreSQL major version", value=DEFAULT_PG_VERSION,
                source=Source.default_of(f"assumed PostgreSQL {DEFAULT_PG_VERSION}: {why} "
                                         "(set --pg-version)"))


def server_from_workload(inputs: Inputs, topo: Topology, w: Workload, c: Container,
                          index: ConfigIndex, replicas: Term, built: Source | None = None
                          ) -> Server:
    """The server `c` runs; `built`: the Dockerfile FROM line its image is built on (then
    `c.image` is that base image, see `as_built`)."""
    from advisor.read.sources.pgconf import parse_postgres_args_checked, start_errors

    version = pg_version(inputs, c, built=built)
    read_from = len(topo.problems)  # what the server itself reads starts here
    settings, conf_end = _conf_settings(inputs, topo, w, c, index, version.int_value)
    # Command-line -c settings override the file, as on a real server.
    # -c settings only when the process is postgres itself (not a shell's -c)
    args = postgres_arguments(c) or []
    for chunk, src in _args_at_their_lines(c, args):
        found, problems = parse_postgres_args_checked(chunk, src, version.int_value)
        settings.update(found)
        topo.problems.extend(problems)
    for env in c.env:
        if env.name == "POSTGRESQL_MAX_CONNECTIONS" and env.value:  # Bitnami image
            found, problems = parse_postgres_args_checked(
                [f"--max_connections={env.value}"], env.source, version.int_value)
            settings.update(found)
            topo.problems.extend(problems)
    if image_repository(c.image) == "harbor-db":
        settings.update(_harbor_db_max_connections(c, version.int_value, topo))
    # its file, its includes and its options; not Spilo's parameters below, which
    # Patroni checks and drops when invalid rather than pass them on
    refusing = start_errors(topo.problems[read_from:])
    held = []
    spilo = is_spilo_image(c.image)
    if spilo:
        settings = {**_spilo_settings(c, built, version.int_value, topo), **settings}
    # Spilo, and whatever else runs Patroni (timescaledb-ha, `command: patroni`): its
    # own superuser sessions hold slots on each instance (review s25 F10)
    if spilo or (runner := patroni_runner(c)) is not None:
        from advisor.facts.patroni import patroni_sessions

        held.append(patroni_sessions(None if spilo else runner))
    wid = workload_id(w)
    return Server(
        id=wid, name=w.name, kind="workload", namespace=w.namespace, version=version,
        settings=settings, conf_end=conf_end, instances=replicas, held=held,
        start_errors=refusing,
        memory_limit=c.memory_limit,
        cpu_limit=c.cpu_limit, location=w.obj.location(), suppressed=suppressed_codes(w.obj))


def _conf_settings(inputs: Inputs, topo: Topology, w: Workload, c: Container,
                   index: ConfigIndex, version: int) -> tuple[dict[str, Setting], Source | None]:
    """The settings of the postgresql.conf `c` reads, and where its main file ends (for
    a line advise adds). The file `-c config_file=P` names, or for the official image
    (and those built on it) $PGDATA/postgresql.conf, read where the container mounts it
    from the repository (its includes resolved in the container: the ConfigMaps it
    mounts, advisor.read.sources.pgmounts); a mounted .conf file that file does not
    read is said, not read. For other images without config_file (whose entrypoint may
    place a file anywhere), the first .conf key of each ConfigMap or Secret it mounts
    (postgresql.conf first) that an earlier one's includes did not read."""
    from advisor.read.sources.pgconf import mount_holding
    from advisor.read.sources.pgmounts import config_file_arg, workload_conf_mounts

    mounts = workload_conf_mounts(w, c.name, partial(_find, index, w.namespace))
    mounted = mounts.mounted_files()
    args = postgres_arguments(c) or []
    named = config_file_arg(args)
    config_file = posixpath.normpath(named) if named and named.startswith("/") else None
    why = "config_file"
    if config_file is None and (own := _image_config_file(c)) is not None:
        config_file, why = own  # the image's own file: read when mounted, else said
    pgdata = _library_pgdata(c, args, version) if config_file is None else None
    main = config_file or (posixpath.join(pgdata, "postgresql.conf") if pgdata else None)
    if main is not None and main in mounts.files:
        data, key = mounts.files[main]
        read: set[str] = {main}
        found = _read_conf(inputs, topo, data, key, main, mounts.dirs, mounted, read, version)
        topo.problems.extend(_unused_conf(c, mounts.files, read, main, named=bool(config_file)))
        return found
    if config_file is not None and "configmaps" not in inputs.refused:
        holding = mount_holding(mounts.dirs, config_file)
        where = (f"mounted from {holding.why}" if holding is not None and holding.files is None
                 else "which no volume mounts from the repository" + (
                     " (a file of the image, or none)" if why == "config_file" else ""))
        topo.problems.append(ConfigProblem(
            location=Location(path=c.source.path, line=c.source.line),
            program="pool-advisor",
            message=f"{c.name}: the server reads {config_file} ({why}), {where}: "
                    "the settings it holds are unknown"
                    + ("; its settings are counted at PostgreSQL's defaults, which that file "
                       "may change" if why != "config_file" else "")))
    if main is not None:
        topo.problems.extend(_unused_conf(c, mounts.files, set(), main,
                                          named=bool(config_file)))
        return {}, None
    # An image whose entrypoint may use a mounted file anywhere: each ConfigMap's main file.
    settings: dict[str, Setting] = {}
    conf_end: Source | None = None
    read = set()  # container paths of the files read through includes
    where_at = {(id(data.obj), key): path for path, (data, key) in mounts.files.items()}
    for cm_kind, cm_name in w.config_sources(c.name):
        cm = lookup(index, cm_kind, w.namespace, cm_name)
        if cm is None:
            continue
        keys = [k for k in cm.data if _is_conf_key(k)]
        for key in sorted(keys, key=lambda k: (k != "postgresql.conf", k)):
            path = where_at.get((id(cm.obj), key))
            if path is not None and path in read:
                break  # an earlier file included it
            found, end = _read_conf(inputs, topo, cm, key, path, mounts.dirs, mounted, read,
                                    version)
            settings.update(found)
            conf_end = end or conf_end
            break  # the main file; its includes pull in the others
    return settings, conf_end


# Images whose command runs the server on a configuration file of their own, not
# $PGDATA/postgresql.conf: image -> (that file, why). supabase/postgres Dockerfile-17@
# eeea0682 (its last line): CMD ["postgres", "-D", "/etc/postgresql"], the file built
# from ansible/files/postgresql_config/postgresql.conf.j2 with includes under
# /etc/postgresql-custom.
_OWN_CONFIG_IMAGES = {
    "supabase/postgres": ("/etc/postgresql/postgresql.conf",
                          "the supabase/postgres image's own file: its CMD is postgres -D "
                          "/etc/postgresql (supabase/postgres Dockerfile-17@eeea0682)"),
}


def _image_config_file(c: Container) -> tuple[str, str] | None:
    """(file, why) for a container of an image that ships its own postgresql.conf and
    runs its own command (no command or args set here, so its CMD runs); else None."""
    from advisor.read.apps.base import image_is

    if c.command or c.args:
        return None
    return next((own for image, own in _OWN_CONFIG_IMAGES.items()
                 if image_is(c.image, (image,))), None)


def _is_conf_key(key: str) -> bool:
    """A key that may hold postgresql.conf settings (not pg_hba.conf or pg_ident.conf)."""
    return key.endswith(".conf") and "hba" not in key and "ident" not in key


# The official image, and images built on it keeping its entrypoint and PGDATA
# (docker-library/postgres docker-entrypoint.sh: the server runs with -D unset, so it
# reads $PGDATA/postgresql.conf unless config_file is given).
_LIBRARY_IMAGES = ("library/postgres", "postgis/postgis", "pgvector/pgvector",
                   "ankane/pgvector", "timescale/timescaledb")


def _library_pgdata(c: Container, args: list[str], version: int) -> str | None:
    """The data directory of a server run by the official postgres image (whose
    postgresql.conf it reads): `-D`, else PGDATA, else the image's default
    (/var/lib/postgresql/data; /var/lib/postgresql/<major>/docker from 18, the
    Dockerfiles' ENV PGDATA). None for another image, or a PGDATA not written here."""
    from advisor.read.apps.base import image_is, image_path

    path = image_path(c.image)
    first, _, rest = path.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        path = rest  # the registry
    if path != "postgres" and not image_is(path, _LIBRARY_IMAGES):
        return None
    for i, arg in enumerate(args):
        if arg == "-D" and i + 1 < len(args):
            return posixpath.normpath(args[i + 1]) if args[i + 1].startswith("/") else None
        if arg.startswith("-D") and len(arg) > 2:
            return posixpath.normpath(arg[2:]) if arg[2:].startswith("/") else None
    env = next((e for e in reversed(c.env) if e.name == "PGDATA"), None)
    if env is not None:
        ok = env.value and env.value.startswith("/") and "$" not in env.value
        return posixpath.normpath(env.value) if ok and env.value else None
    return "/var/lib/postgresql/data" if version < 18 else f"/var/lib/postgresql/{version}/docker"


def _unused_conf(c: Container, files: dict[str, tuple[ConfigMapData, str]], read: set[str],
                 main: str, *, named: bool) -> list[ConfigProblem]:
    """A notice for each ConfigMap or Secret whose mounted .conf files the server does
    not read: its settings are not applied (and are not taken for the server's)."""
    unread: dict[int, tuple[ConfigMapData, list[str]]] = {}
    for path, (data, key) in files.items():
        if path not in read and _is_conf_key(key):
            unread.setdefault(id(data.obj), (data, []))[1].append(path)
    why = (f"the server reads {main} (config_file) and its includes" if named else
           f"no -c config_file names it; the postgres image's server reads {main}")
    out = []
    for data, paths in unread.values():
        paths.sort()
        shown, offset = data.text_origin(files[paths[0]][1])
        title = "Secret" if data.secret else "ConfigMap"
        listed = ", ".join(paths[:3]) + (", ..." if len(paths) > 3 else "")
        verb = "is" if len(paths) == 1 else "are"
        out.append(ConfigProblem(
            location=Location(path=shown, line=max(offset, 1)), program="pool-advisor",
            message=f"{c.name}: {listed} ({title} {data.obj.name}) {verb} mounted but not "
                    f"read ({why}): the settings {'it holds' if verb == 'is' else 'they hold'}"
                    " are not applied"))
    return out


def _find(index: ConfigIndex, namespace: str | None, kind: str, name: str
          ) -> ConfigMapData | None:
    return lookup(index, kind, namespace, name)


def _read_conf(inputs: Inputs, topo: Topology, cm: ConfigMapData, key: str,
               container_path: str | None, dirs: list[MountedDir],
               mounted: dict[str, MountedFile], read: set[str], version: int
               ) -> tuple[dict[str, Setting], Source | None]:
    """One main file, a ConfigMap key: at `container_path` in the container, its includes
    resolved there among the mounted `dirs` and `mounted` files; else (not mounted where
    known) its includes resolve to the ConfigMap's other keys. Adds what its includes
    read to `read`."""
    from advisor.read.sources.pgconf import placed, read_pgconf

    shown, offset = cm.text_origin(key)
    if container_path is not None:
        conf = read_pgconf(inputs.root, key, text=cm.data[key], line_offset=offset,
                           display_path=shown, version=version,
                           container_path=container_path, mounts=dirs,
                           mounted_files=mounted)
        read.update(conf.mounted_files_read)
        read.update(posixpath.join(d, n) for d in conf.mounted_read
                    for n in (next((m.files for m in dirs if m.path == d), None) or {}))
    else:
        siblings = {k: (cm.data[k], cm.text_origin(k)[1]) for k in cm.data}
        conf = read_pgconf(inputs.root, key, text=cm.data[key], line_offset=offset,
                           display_path=shown, siblings=siblings, version=version)
    places = cm.text_places(key)
    conf = placed(conf, shown, offset, cm.data[key], places)
    topo.problems.extend(conf.problems)
    merge_suppressions(topo, conf.suppressions)
    lines = cm.data[key].splitlines()
    end = None
    if lines and (places is None or places.flat is None):
        # no line is added after a text the file does not hold line for line
        end = Source(path=shown, line=offset + len(lines), key=key)
    return dict(conf.settings), end


def _args_at_their_lines(c: Container, args: list[str]) -> list[tuple[list[str], Source]]:
    """postgres options each with the line of the list item holding its value (`-c`,
    `max_connections=200` on two lines: the second), when the arguments are the tail of
    the container's command/args; else all at the container's line."""
    argv = [*c.command, *c.args]
    start = len(argv) - len(args)
    whole = [(args, Source(path=c.source.path, line=c.source.line, key="args"))]
    if not args or len(c.word_sources) != len(argv) or argv[start:] != args:
        return whole
    out: list[tuple[list[str], Source]] = []
    for i, word in enumerate(args):
        if not word.startswith("-"):
            continue
        takes_next = len(word) == 2 and i + 1 < len(args) and not args[i + 1].startswith("-")
        at = i + 1 if takes_next else i
        out.append((args[i:at + 1], c.word_sources[start + at]))
    return out


def is_spilo_image(image: str) -> bool:
    """Zalando's Spilo (ghcr.io/zalando/spilo-16, registry.opensource.zalan.do/acid/spilo-15,
    the older unversioned .../spilo)."""
    repo = image_repository(image)
    return repo == "spilo" or (repo.startswith("spilo-") and repo[6:].isdigit())


def _spilo_settings(c: Container, built: Source | None, version: int, topo: Topology
                    ) -> dict[str, Setting]:
    """What Spilo's configure_spilo.py sets in a plain workload (no operator): from the
    container's memory limit (advisor.facts.spilo), then what SPILO_CONFIGURATION (else
    PATRONI_CONFIGURATION) sets in bootstrap.dcs.postgresql.parameters or
    postgresql.parameters, which configure_spilo.py merges over its own."""
    from advisor.facts.spilo import spilo_settings

    memory = c.memory_limit
    limit = f"{int(memory.value / 1048576)} MB memory limit ({memory.source.label()})" \
        if memory is not None else ""
    settings = spilo_settings(memory, limit)
    if built is not None:
        topo.notices.append(f"{c.name}: image {built.key} ({built.label()}) runs Spilo: "
                            "max_connections and shared_buffers as its configure_spilo.py "
                            "sets them from the container's memory limit")
    settings.update(_spilo_user_parameters(c, version, topo))
    return settings


def _spilo_user_parameters(c: Container, version: int, topo: Topology
                           ) -> dict[str, Setting]:
    """PostgreSQL parameters of the YAML in SPILO_CONFIGURATION (else
    PATRONI_CONFIGURATION): bootstrap.dcs.postgresql.parameters, then
    postgresql.parameters, each at the variable's line."""
    import yaml

    from advisor.read.sources.pgconf import parse_postgres_args_checked

    var = next((e for e in c.env if e.name == "SPILO_CONFIGURATION"), None) or \
        next((e for e in c.env if e.name == "PATRONI_CONFIGURATION"), None)
    if var is None:
        return {}
    if var.value is None:
        topo.notices.append(f"{c.name}: {var.name} ({var.source.label()}) comes from a "
                            "Secret or reference the repository does not hold: the "
                            "parameters it may set over Spilo's are not read")
        return {}
    try:
        data = yaml.safe_load(var.value)
    except yaml.YAMLError:
        data = None
    if not isinstance(data, dict):
        topo.notices.append(f"{c.name}: {var.name} ({var.source.label()}) is not a YAML "
                            "mapping: configure_spilo.py refuses it and the container does "
                            "not start")
        return {}
    found: dict[str, Setting] = {}
    dcs = ((data.get("bootstrap") or {}).get("dcs") or {}) \
        if isinstance(data.get("bootstrap"), dict) else {}
    for section in (dcs.get("postgresql") if isinstance(dcs, dict) else None,
                    data.get("postgresql")):
        params = section.get("parameters") if isinstance(section, dict) else None
        if not isinstance(params, dict):
            continue
        # scalars only: a nested value is no parameter (and str() of an alias bomb is big)
        args = [f"--{k}={str(v).lower() if isinstance(v, bool) else v}"
                for k, v in params.items() if isinstance(v, str | int | float)]
        parsed, problems = parse_postgres_args_checked(
            args, replace(var.source, key=var.name), version)
        found.update(parsed)
        topo.problems.extend(problems)
    return found


HARBOR_DB_WHO = ("goharbor/harbor-db docker-entrypoint.sh: postgres -c "
                 "max_connections=${POSTGRES_MAX_CONNECTIONS:-1024}")


def _harbor_db_max_connections(c: Container, version: int, topo: Topology) -> dict:
    """Harbor's database image starts `postgres -c max_connections=N`, N from
    POSTGRES_MAX_CONNECTIONS or 1024 (make/photon/db/docker-entrypoint.sh)."""
    from advisor.read.sources.pgconf import parse_postgres_args_checked

    var = next((e for e in c.env if e.name == "POSTGRES_MAX_CONNECTIONS" and e.value), None)
    value, source = (var.value, var.source) if var is not None else (
        "1024", Source.default_of(HARBOR_DB_WHO, "max_connections"))
    found, problems = parse_postgres_args_checked([f"--max_connections={value}"], source,
                                                  version)
    topo.problems.extend(problems)
    return found


def declared_server(decl: ServerDecl, inputs: Inputs, topo: Topology) -> Server:
    from advisor.read.sources.pgconf import parse_postgres_args_checked

    origin = inputs.settings.origin
    src = Source(path=origin, line=decl.line_of(""), key=f"servers.{decl.name}")

    def at(key: str) -> Source:  # the line of the block's key (audit s22: none was cited)
        return replace(src, line=decl.line_of(key))

    args = [f"--{k}={v}" for k, v in decl.settings.items()]
    written = {str(k).replace("-", "_").lower(): f"settings.{k}" for k in decl.settings}
    for name in ("max_connections", "superuser_reserved_connections", "reserved_connections"):
        value = getattr(decl, name)
        if value is not None:
            args.append(f"--{name}={value}")
            written[name] = name
    version = pg_version(inputs, None, declared_major(decl.version))
    settings, problems = parse_postgres_args_checked(args, src, version.int_value)
    settings = {k: replace(s, source=replace(s.source, line=decl.line_of(written.get(k, ""))))
                for k, s in settings.items()}
    topo.problems.extend(problems)
    return Server(
        id=f"declared/{decl.name}", name=decl.name, kind="external",
        version=version, settings=settings,
        instances=Term(label="instances", value=decl.instances, source=at("instances")),
        memory_limit=Term(label="declared memory", value=decl.memory, source=at("memory"))
        if decl.memory else None,
        cpu_limit=Term(label="declared CPUs", value=decl.cpus, source=at("cpus"))
        if decl.cpus else None,
        headroom=Term(label="declared headroom", value=decl.headroom, source=at("headroom"))
        if decl.headroom is not None else None,
        location=Location(path=origin or "configuration", line=decl.line_of("")),
        hosts=declared_hosts(decl.hosts))


def standalone_confs(inputs: Inputs, topo: Topology) -> None:
    """postgresql.conf files in the repository that no workload mounts: each is a
    server of its own (a VM, or a file the user keeps in git), reachable by no host
    unless declared."""
    if not inputs.pg_conf_files:
        return
    from advisor.read.sources.pgconf import read_pgconf, start_errors

    for path in inputs.pg_conf_files:
        if path.name == "postgresql.auto.conf" and (path.parent / "postgresql.conf").exists():
            continue  # read with its postgresql.conf
        shown = inputs.root.rel(path)
        version = pg_version(inputs, None)
        conf = guarded(topo.problems, shown, partial(
            read_pgconf, inputs.root, path, version=version.int_value), None)
        if conf is None:
            continue
        topo.problems.extend(conf.problems)
        merge_suppressions(topo, conf.suppressions)
        decl = next((d for d in inputs.settings.servers if shown in d.hosts), None)
        if decl is not None:
            continue
        topo.servers.append(Server(
            id=f"file/{shown}", name=shown, kind="external", version=version,
            settings=conf.settings, start_errors=start_errors(conf.problems),
            instances=Term(label="instances", value=1,
                           source=Source.default_of("one server per postgresql.conf")),
            location=Location(path=shown, line=1)))
