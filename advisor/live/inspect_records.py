"""What `inspect` read and concluded, as plain data (`LiveReport` and its parts): the
text and JSON reporters and the comparison with the repository are pure functions of it."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

_UNIT_BYTES = {"B": 1, "kB": 1024, "MB": 1024 * 1024}


def _bytes(n: int) -> str:
    for unit, size in (("TB", 1024**4), ("GB", 1024**3), ("MB", 1024**2), ("kB", 1024)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}"
    return f"{n}B"


class LiveError(Exception):
    """A live server or pooler could not be read; the message is for the user."""


class Signal(BaseModel):
    """One observation worth acting on, with the numbers behind it."""

    model_config = ConfigDict(extra="forbid")

    severity: Literal["error", "warning", "info"]
    subject: str  # "server", "pgbouncer appdb/app", ...
    message: str


class LiveSetting(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    setting: str
    unit: str | None = None
    source: str | None = None  # pg_settings.source: default, configuration file, ...
    sourcefile: str | None = None  # visible to superusers and pg_read_all_settings
    sourceline: int | None = None

    def label(self) -> str:
        where = self.source or "unknown"
        if self.sourcefile:
            where = f"{self.sourcefile}:{self.sourceline}" if self.sourceline else self.sourcefile
        return f"{self.shown()}, {where}"

    def shown(self) -> str:
        """The value with its unit: 16384 x 8kB = 128MB, 4096kB = 4MB, 0ms."""
        if not self.unit:
            return self.setting
        m = re.fullmatch(r"(\d*)(B|kB|MB)", self.unit)
        if m is None or not self.setting.lstrip("-").isdigit():
            return f"{self.setting}{self.unit}"
        size = int(self.setting) * int(m.group(1) or 1) * _UNIT_BYTES[m.group(2)]
        base = f"{self.setting} x {self.unit}" if m.group(1) else f"{self.setting}{self.unit}"
        return f"{base} = {_bytes(size)}" if size > 0 else base


class ActivityGroup(BaseModel):
    model_config = ConfigDict(extra="forbid")

    usename: str | None
    application_name: str | None
    state: str | None
    backend_type: str | None
    datname: str | None = None
    count: int
    peak: int = 0  # largest count seen over the samples


class IdleInTransaction(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pid: int
    usename: str | None
    application_name: str | None
    datname: str | None
    seconds: float  # since the state changed to idle in transaction
    xact_seconds: float | None


class Slots(BaseModel):
    """Client connection slots: max_connections less the reserved ones, and use of them."""

    model_config = ConfigDict(extra="forbid")

    max_connections: int
    superuser_reserved: int
    reserved: int  # reserved_connections, PostgreSQL 16+; 0 before
    usable: int
    client_backends: int  # now (last sample)
    client_backends_peak: int  # most seen over the samples
    walsenders: int
    other_backends: dict[str, int] = Field(default_factory=dict)

    @property
    def arithmetic(self) -> str:
        parts = [
            f"{self.max_connections} max_connections",
            f"{self.superuser_reserved} superuser_reserved_connections",
        ]
        if self.reserved:
            parts.append(f"{self.reserved} reserved_connections")
        return " - ".join(parts) + f" = {self.usable} usable"


class ServerLive(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target: str
    version: str
    version_num: int
    current_user: str
    superuser: bool
    settings: dict[str, LiveSetting] = Field(default_factory=dict)
    slots: Slots
    groups: list[ActivityGroup] = Field(default_factory=list)
    idle_in_transaction: list[IdleInTransaction] = Field(default_factory=list)
    can_see_all: bool = True  # pg_read_all_stats: else other roles' state shows as null
    samples: int = 1


class BouncerPool(BaseModel):
    model_config = ConfigDict(extra="forbid")

    database: str
    user: str
    cl_active: int = 0
    cl_waiting: int = 0
    sv_active: int = 0
    sv_idle: int = 0
    sv_used: int = 0
    sv_tested: int = 0
    sv_login: int = 0
    maxwait_seconds: float = 0.0  # maxwait + maxwait_us, the oldest waiting client
    pool_mode: str | None = None
    cl_waiting_peak: int = 0
    maxwait_peak_seconds: float = 0.0

    @property
    def server_connections(self) -> int:
        return self.sv_active + self.sv_idle + self.sv_used + self.sv_tested + self.sv_login


class BouncerDatabase(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    host: str | None = None
    port: int | None = None
    database: str | None = None
    pool_size: int | None = None
    reserve_pool: int | None = None
    max_connections: int | None = None  # max_db_connections
    current_connections: int | None = None
    pool_mode: str | None = None


class BouncerLive(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target: str
    version: str = ""
    config: dict[str, str] = Field(default_factory=dict)
    pools: list[BouncerPool] = Field(default_factory=list)
    databases: list[BouncerDatabase] = Field(default_factory=list)
    stats: list[dict[str, Any]] = Field(default_factory=list)
    samples: int = 1


class Disagreement(BaseModel):
    """A value the repository declares that the live system does not have."""

    model_config = ConfigDict(extra="forbid")

    subject: str  # "server checkout-db", "pgbouncer checkout-pgbouncer"
    key: str
    repo_value: str
    repo_source: str
    live_value: str


class PoolProposal(BaseModel):
    """A pool size to change, from what the pool did while inspect watched it."""

    model_config = ConfigDict(extra="forbid")

    database: str
    user: str
    key: str = "pool_size"  # or default_pool_size, where the repository sets it
    current: int
    proposed: int
    reason: str
    where: str = ""  # the file:line that holds the setting (with --repo)


class LiveReport(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    tool_version: str
    taken_at: str
    server: ServerLive | None = None
    pgbouncer: BouncerLive | None = None
    signals: list[Signal] = Field(default_factory=list)
    disagreements: list[Disagreement] = Field(default_factory=list)
    proposals: list[PoolProposal] = Field(default_factory=list)
    notices: list[str] = Field(default_factory=list)
