"""Project configuration: `[tool.pool-advisor]` in pyproject.toml or `.pool-advisor.toml`.

Validated by pydantic (advisor.config.schema, imported only when a file exists); unknown
keys are errors reported at their file:line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec
from msgspec import field

from advisor.model import NodeCpus, Record, Source
from advisor.read.fs import InputError

if TYPE_CHECKING:
    from advisor.config.schema import ChartDecl, ProxyDecl, ServerDecl, WorkloadDecl

CONFIG_NAMES = (".pool-advisor.toml", "pyproject.toml")


class Settings(Record, kw_only=True):
    """The settings the engine reads: these defaults, or what a configuration file set
    (validated by advisor.config.schema.SettingsFile, whose fields these are)."""

    fail_on: Literal["error", "warning", "info"] = "warning"
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    pg_version: int | None = None
    headroom: int = 0  # connections kept free on every server unless it says otherwise
    count_surge: bool = True
    # SQL hazards in test/, spec/, __tests__, fixtures and example folders (off: that
    # code does not run in production)
    scan_test_code: bool = False
    # Logical CPUs of the nodes pods run on: pool sizes derived from the CPU count (pgx,
    # Prisma, gunicorn's 2 x cores + 1) are computed for it; unset, the readers assume 4.
    node_cpus: int | None = None
    # Logical CPUs per physical core of those nodes (Prisma <= 6, deadpool < 0.12.3 count
    # physical cores); unset, 1 is assumed (no SMT: the larger pool).
    threads_per_core: int | None = None
    servers: list[ServerDecl] = field(default_factory=list)
    proxies: list[ProxyDecl] = field(default_factory=list)
    workloads: list[WorkloadDecl] = field(default_factory=list)
    charts: list[ChartDecl] = field(default_factory=list)
    rules: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Where these came from, for messages; not a user key.
    origin: str | None = None
    # The configuration file's folder relative to the repository root ("" at the root):
    # the paths it names (charts, values, sources, excludes) are relative to it. Not a
    # user key.
    folder: str = ""
    # Where node-cpus and threads-per-core are set (key -> Source), for the figures
    # computed from them. Not a user key.
    cpu_sources: dict[str, Source] = field(default_factory=dict)

    def node(self) -> NodeCpus:
        """The nodes' CPUs the readers size CPU-derived defaults for."""
        return NodeCpus(cpus=self.node_cpus, cpus_at=self.cpu_sources.get("node-cpus"),
                        threads_per_core=self.threads_per_core,
                        threads_at=self.cpu_sources.get("threads-per-core"))


def find_config(start: Path) -> Path | None:
    """The nearest config file at `start` or above (stops at a .git folder)."""
    here = start if start.is_dir() else start.parent
    for folder in (here, *here.parents):
        for name in CONFIG_NAMES:
            candidate = folder / name
            if candidate.is_symlink():
                continue  # never followed: `symlinked_configs` says so
            if candidate.is_file() and (name != "pyproject.toml" or _has_tool_table(candidate)):
                return candidate
        if (folder / ".git").exists():
            return None
    return None


def symlinked_configs(start: Path) -> list[Path]:
    """Configuration files `find_config` passed over because they are symlinks (one could
    point anywhere on the machine), from `start` up to the first .git folder."""
    here = start if start.is_dir() else start.parent
    found: list[Path] = []
    for folder in (here, *here.parents):
        found += [folder / n for n in CONFIG_NAMES if (folder / n).is_symlink()]
        if (folder / ".git").exists():
            break
    return found


def _has_tool_table(path: Path) -> bool:
    try:
        from advisor.read.fs import read_regular

        return "[tool.pool-advisor" in read_regular(path).decode("utf-8", "replace")
    except OSError:
        return False


def load_settings(path: Path | None, shown: str | None = None) -> Settings:
    """Read and validate; InputError with file:line for any problem."""
    if path is None:
        return Settings()
    shown = shown or str(path)
    try:
        from advisor.read.fs import read_regular

        text = read_regular(path).decode("utf-8")  # never a FIFO, never 1 GB
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(shown, f"cannot read configuration: {exc}") from None
    import tomllib  # here: only a run that found a configuration file reads TOML

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None) or _line_from_message(str(exc))
        raise InputError(shown, f"invalid TOML: {exc}", line) from None
    prefix: tuple[str, ...] = ()
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("pool-advisor", {})
        prefix = ("tool", "pool-advisor")
    from pydantic import ValidationError

    from advisor.config.schema import SettingsFile

    try:
        validated = SettingsFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(str(p) for p in err["loc"])
        if len(loc) >= 3 and loc[0] == "proxies" and loc[2] in ("rds-proxy", "pgbouncer"):
            loc = loc[:2] + loc[3:]  # the kind pydantic chose the block's model by
        elif len(loc) == 2 and loc[0] == "proxies" and err["type"].startswith("union_tag"):
            loc = (*loc, "kind")  # no kind, or one no model has
        what = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        line = _line_of_key(text, prefix + loc)
        if len(loc) >= 2 and loc[0] == "proxies" and loc[1].isdigit():
            # the Nth [[proxies]] block, not the first one naming the key
            blocks = _array_table_lines(text, (*prefix, "proxies"))
            if int(loc[1]) < len(blocks):
                block = blocks[int(loc[1])]
                line = block.get(loc[2] if len(loc) > 2 else "", block[""])
        dotted = ".".join(loc)
        raise InputError(shown, f"{what}: {dotted}", line) from None
    settings = Settings(**{name: getattr(validated, name) for name in Settings.__struct_fields__
                           if name not in ("origin", "folder", "cpu_sources")}, origin=shown)
    for table in ("servers", "proxies", "workloads"):
        for decl, lines in zip(getattr(settings, table),
                               _array_table_lines(text, (*prefix, table)), strict=False):
            decl._lines = lines
    _one_declaration_per_workload(settings, shown)
    return _cpu_settings(settings, text, prefix, shown)


def _one_declaration_per_workload(settings: Settings, shown: str) -> None:
    """A workload declared twice is refused: the links take one declaration per name, so
    the later replaced the earlier unsaid (audit 13d: Sourcegraph's frontend declared
    once per database it uses kept only the last, and the other two servers lost its
    connections, then advise proposed their max_connections 500 -> 15 and 100 -> 10)."""
    first: dict[str, int | None] = {}
    for decl in settings.workloads:
        line = decl.line_of("")
        if decl.name in first:
            at = f" (line {first[decl.name]})" if first[decl.name] else ""
            raise InputError(shown, f"[[workloads]] {decl.name!r} is declared twice{at}: one "
                             "declaration per workload (its connections = N are per pod, on "
                             "the server its route or target names)", line)
        first[decl.name] = line


# PA103's options that name the node size the budget is computed for: read as the
# top-level keys, so PA103 and the budget never count one node two ways
_PA103_CPU_KEYS = {"node_cpus": "node-cpus", "threads_per_core": "threads-per-core"}


def _cpu_settings(settings: Settings, text: str, prefix: tuple[str, ...],
                  shown: str) -> Settings:
    """`settings` with node-cpus and threads-per-core located (file:line), taken from
    [rules.PA103] node_cpus / threads_per_core where the top level does not set them;
    both set to different values is an error at the rule option's line."""
    sources: dict[str, Source] = {}
    values: dict[str, int | None] = {"node-cpus": settings.node_cpus,
                                     "threads-per-core": settings.threads_per_core}
    for key in values:
        if values[key] is not None:
            sources[key] = Source(path=shown, line=_line_of_key(text, (*prefix, key)), key=key)
    for table in ("PA103", "cpu-dependent-pool-size"):
        options = settings.rules.get(table) or {}
        for option, key in _PA103_CPU_KEYS.items():
            value = options.get(option)
            if type(value) is not int:
                continue  # not a number: PA103's options validation reports it
            line = _line_of_key(text, (*prefix, "rules", table, option))
            if values[key] is not None and values[key] != value:
                raise InputError(shown, f"[rules.{table}] {option} = {value} contradicts "
                                        f"{key} = {values[key]}: set only {key}", line)
            if values[key] is None:
                values[key] = value
                sources[key] = Source(path=shown, line=line, key=f"rules.{table}.{option}")
    return msgspec.structs.replace(settings, node_cpus=values["node-cpus"],
                                   threads_per_core=values["threads-per-core"],
                                   cpu_sources=sources)


def _array_table_lines(text: str, table: tuple[str, ...]) -> list[dict[str, int]]:
    """For each `[[a.b]]` block of `table`: its keys' lines ("" is the header's line),
    those of a sub-table of the block (`[a.b.settings]` after it) as `settings.key`."""
    name = r"\s*\.\s*".join(rf"[\"']?{re.escape(part)}[\"']?" for part in table)
    header = re.compile(r"^\s*\[\[\s*" + name + r"\s*\]\]")
    sub = re.compile(r"^\s*\[\s*" + name + r"\s*\.\s*[\"']?([A-Za-z0-9_-]+)[\"']?\s*\]")
    key = re.compile(r"^\s*[\"']?([A-Za-z0-9_.-]+?)[\"']?\s*=")
    blocks: list[dict[str, int]] = []
    current: dict[str, int] | None = None
    under = ""  # the sub-table the keys are in
    for number, line in enumerate(text.splitlines(), start=1):
        if header.match(line):
            current, under = {"": number}, ""
            blocks.append(current)
        elif current is not None and (m := sub.match(line)):
            under = f"{m.group(1)}."
            current.setdefault(m.group(1), number)
        elif line.lstrip().startswith("["):
            current = None
        elif current is not None and (m := key.match(line)):
            current.setdefault(under + m.group(1), number)
    return blocks


def _line_from_message(message: str) -> int | None:
    m = re.search(r"line (\d+)", message)
    return int(m.group(1)) if m else None


def _line_of_key(text: str, loc: tuple[str, ...]) -> int | None:
    """Best line for a dotted key path: the last key's `name =` line after its table."""
    keys = [k for k in loc if not k.isdigit()]
    if not keys:
        return None
    last = keys[-1]
    pattern = re.compile(rf"^\s*[\"']?{re.escape(last)}[\"']?\s*=")
    header_seen = len(keys) == 1
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("[") and len(keys) > 1 and keys[-2] in stripped:
            header_seen = True
        if header_seen and pattern.match(line):
            return number
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line) or (line.strip().startswith("[") and last in line):
            return number
    return None
