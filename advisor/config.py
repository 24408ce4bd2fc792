"""Project configuration: `[tool.pool-advisor]` in pyproject.toml or `.pool-advisor.toml`.

Validated by pydantic; unknown keys are errors reported at their file:line.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from advisor.fs import InputError

CONFIG_NAMES = (".pool-advisor.toml", "pyproject.toml")

_SIZE = re.compile(
    r"^\s*(\d+(?:\.\d+)?)\s*(B|KB|KiB|kB|MB|MiB|GB|GiB|TB|TiB|Ki|Mi|Gi|Ti|K|M|G|T)?\s*$")
_SIZE_FACTORS = {
    None: 1, "B": 1, "K": 1000, "KB": 1000, "kB": 1024, "KiB": 1024, "Ki": 1024,
    "M": 1000**2, "MB": 1024**2, "MiB": 1024**2, "Mi": 1024**2,
    "G": 1000**3, "GB": 1024**3, "GiB": 1024**3, "Gi": 1024**3,
    "T": 1000**4, "TB": 1024**4, "TiB": 1024**4, "Ti": 1024**4,
}


def parse_size(text: str | int | float) -> int:
    """Bytes from `16GiB`, `16Gi`, `512MB` (PostgreSQL meaning: 1024-based) or a number."""
    if isinstance(text, int | float):
        return int(text)
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (examples: 16GiB, 512Mi, 8GB)")
    return int(float(m.group(1)) * _SIZE_FACTORS[m.group(2)])


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ServerDecl(Strict):
    """A server that is not in the repository (RDS, Cloud SQL, a VM)."""

    name: str
    hosts: list[str] = Field(default_factory=list)
    max_connections: int | None = None
    superuser_reserved_connections: int | None = None
    reserved_connections: int | None = None
    version: int = 15
    memory: int | None = None  # bytes
    cpus: float | None = None
    headroom: int | None = None
    settings: dict[str, str | int | float] = Field(default_factory=dict)
    instances: int = 1

    @field_validator("memory", mode="before")
    @classmethod
    def _size(cls, v: Any) -> Any:
        return None if v is None else parse_size(v)


class ProxyDecl(Strict):
    """A managed connection proxy in front of a declared server (AWS RDS Proxy).

    Defaults are AWS's (ConnectionPoolConfiguration, RDS API reference):
    MaxConnectionsPercent 100 for PostgreSQL, MaxIdleConnectionsPercent half of
    MaxConnectionsPercent (50 when that is not given), 0 <= idle <= max."""

    name: str
    kind: Literal["rds-proxy"]
    hosts: list[str] = Field(default_factory=list)
    target: str  # the name of a declared server
    max_connections_percent: int = Field(default=100, ge=1, le=100)
    max_idle_connections_percent: int | None = Field(default=None, ge=0, le=100)
    # key -> line in the configuration file, for Sources; filled by load_settings.
    _lines: dict[str, int] = PrivateAttr(default_factory=dict)

    @field_validator("max_idle_connections_percent")
    @classmethod
    def _idle_within_max(cls, v: int | None, info: ValidationInfo) -> int | None:
        top = info.data.get("max_connections_percent")
        if v is not None and top is not None and v > top:
            raise ValueError(f"must be at most max_connections_percent ({top}), as AWS requires")
        return v

    def line_of(self, key: str) -> int | None:
        return self._lines.get(key) or self._lines.get("")


class WorkloadDecl(Strict):
    """An explicit per-workload declaration; overrides what was read from files."""

    name: str
    namespace: str | None = None
    pool_size: int | None = Field(default=None, alias="pool-size")
    processes: int | None = None
    replicas: int | None = None
    target: str | None = None  # a server or pooler name
    source: str | None = None  # the application's source directory
    # For `advise`: its share of a server's budget, and the pool it must keep.
    weight: float | None = Field(default=None, gt=0)
    min_pool_size: int | None = Field(default=None, alias="min-pool-size", ge=1)


class ChartDecl(Strict):
    """How a Helm chart is deployed: values files and --set values, release, namespace."""

    path: str  # chart folder, relative to the scanned root
    values: list[str] = Field(default_factory=list)  # relative to the chart folder or root
    set: list[str] = Field(default_factory=list)
    release: str = "release"
    namespace: str | None = None


class RuleOptions(Strict):
    model_config = ConfigDict(extra="allow")


class Settings(Strict):
    fail_on: Literal["error", "warning", "info"] = Field(default="warning", alias="fail-on")
    select: list[str] = Field(default_factory=list)
    ignore: list[str] = Field(default_factory=list)
    exclude: list[str] = Field(default_factory=list)
    pg_version: int | None = Field(default=None, alias="pg-version")
    headroom: int = 0  # connections kept free on every server unless it says otherwise
    count_surge: bool = Field(default=True, alias="count-surge")
    # CPUs of the nodes pods run on: pool sizes derived from the CPU count (pgx, Prisma,
    # gunicorn's 2 x cores + 1) are computed for it; unset, the readers assume 4.
    node_cpus: int | None = Field(default=None, alias="node-cpus", ge=1)
    servers: list[ServerDecl] = Field(default_factory=list)
    proxies: list[ProxyDecl] = Field(default_factory=list)
    workloads: list[WorkloadDecl] = Field(default_factory=list)
    charts: list[ChartDecl] = Field(default_factory=list)
    rules: dict[str, dict[str, Any]] = Field(default_factory=dict)

    # Where these came from, for messages; not a user key.
    origin: str | None = Field(default=None, exclude=True)


def find_config(start: Path) -> Path | None:
    """The nearest config file at `start` or above (stops at a .git folder)."""
    here = start if start.is_dir() else start.parent
    for folder in (here, *here.parents):
        for name in CONFIG_NAMES:
            candidate = folder / name
            if candidate.is_file() and (name != "pyproject.toml" or _has_tool_table(candidate)):
                return candidate
        if (folder / ".git").exists():
            return None
    return None


def _has_tool_table(path: Path) -> bool:
    try:
        return "[tool.pool-advisor" in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def load_settings(path: Path | None, shown: str | None = None) -> Settings:
    """Read and validate; InputError with file:line for any problem."""
    if path is None:
        return Settings()
    shown = shown or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(shown, f"cannot read configuration: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None) or _line_from_message(str(exc))
        raise InputError(shown, f"invalid TOML: {exc}", line) from None
    prefix: tuple[str, ...] = ()
    if path.name == "pyproject.toml":
        data = data.get("tool", {}).get("pool-advisor", {})
        prefix = ("tool", "pool-advisor")
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(str(p) for p in err["loc"])
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
    settings.origin = shown
    for proxy, lines in zip(settings.proxies, _array_table_lines(text, (*prefix, "proxies")),
                            strict=False):
        proxy._lines = lines
    return settings


def _array_table_lines(text: str, table: tuple[str, ...]) -> list[dict[str, int]]:
    """For each `[[a.b]]` block of `table`: its keys' lines ("" is the header's line)."""
    header = re.compile(r"^\s*\[\[\s*" + r"\s*\.\s*".join(
        rf"[\"']?{re.escape(part)}[\"']?" for part in table) + r"\s*\]\]")
    key = re.compile(r"^\s*[\"']?([A-Za-z0-9_-]+)[\"']?\s*=")
    blocks: list[dict[str, int]] = []
    current: dict[str, int] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if header.match(line):
            current = {"": number}
            blocks.append(current)
        elif line.lstrip().startswith("["):
            current = None
        elif current is not None and (m := key.match(line)):
            current.setdefault(m.group(1), number)
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
