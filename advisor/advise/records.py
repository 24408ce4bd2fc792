"""The records of the advise plan and the small helpers that fill them: the options
(AdviseOptions), one proposed change (Proposal) with its edit at a file line (Edit) or
the file it adds (NewFile), the advice for one server (ServerAdvice); a number as
written in a proposal (num), the edit of a value at its source line (edit_at) and where an
inserted setting will be (added_at)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from advisor.live.usl import Sweep
from advisor.model import Source, at_field_key


class AdviseOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    all_servers: bool = False  # advise on servers that already fit too
    weights: dict[str, float] = Field(default_factory=dict)  # client or pooler name -> weight
    minimums: dict[str, int] = Field(default_factory=dict)  # client name -> min pool size
    sweep: Sweep | None = None
    spindles: float = 1
    force: bool = False  # use a sweep whose fit is unreliable
    new_pooler: bool = True  # may propose a PgBouncer where pools would shrink too far
    min_r2: float = 0.8  # below it a sweep's fit is unreliable
    memory: object | None = None  # advisor.budget.slots.MemoryOptions
    # The folders (repository-relative, posix) of the Helm charts read: a manifest advise
    # adds for a server one of them makes goes in its templates/, the one folder of a
    # chart Helm deploys (a file beside values.yaml is never applied)
    chart_dirs: list[str] = Field(default_factory=list)
    # The kustomizations of the repository: folder (relative, posix) -> (the
    # kustomization file, the line of the last item of its `resources:` list, None when
    # it has no block list there). kustomize builds only what a kustomization lists: a
    # manifest advise adds to such a folder is listed there too, else never deployed.
    kustomizations: dict[str, tuple[str, int | None]] = Field(default_factory=dict)


class Edit(BaseModel):
    """One value changed in one file at one line."""

    model_config = ConfigDict(extra="forbid")

    path: str
    line: int  # the line holding the value; for an insert, the line to add it after
    key: str
    old: str  # "" for an insert
    new: str  # the new value; for an insert, the whole line to add (its indentation
    #          taken from the line it follows)
    insert: bool = False
    # An insert into a YAML list: the item line whose indentation (up to its `- `) the
    # added line takes; None: the nearest non-blank line at or above the insert point.
    indent_from: int | None = None


class NewFile(BaseModel):
    """A file advise proposes to add; never written over an existing one."""

    model_config = ConfigDict(extra="forbid")

    path: str
    text: str


class Proposal(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["client-pool", "pooler", "server"]
    subject: str  # "checkout HikariCP", "pgbouncer", "postgres"
    key: str
    old: str  # the current value with its source
    new: str
    reason: str
    assumption: str = ""
    edit: Edit | None = None  # None: the value is a default or not at a file line
    manual: str = ""  # what to do when there is no edit (add the key, ...)
    new_file: NewFile | None = None  # a file to add (a proposed PgBouncer's manifest)


class ServerAdvice(BaseModel):
    model_config = ConfigDict(extra="forbid")

    server: str
    server_id: str
    fits_before: bool
    usable_before: float
    peak_before: float
    # Clients whose connections are not known: the peak is only a floor (proposals withheld)
    unknown: list[str] = Field(default_factory=list)
    # The peak before is a floor for any reason (unknown clients, an unplaced client, a
    # file not read): a floor within the usable slots is neither "fits" nor "does not fit"
    floor_before: bool = False
    # Clients that cannot connect through their PgBouncer before (PA213): a fit is not
    # theirs, and the header says so
    unserved: int = 0
    # PostgreSQL refuses to start the server (PA109): what to change first, and no pool
    # fitted into slots it does not have ("" for a server that starts)
    will_not_start: str = ""
    before: list[str] = Field(default_factory=list)
    proposals: list[Proposal] = Field(default_factory=list)
    fits_after: bool
    usable_after: float
    peak_after: float
    after: list[str] = Field(default_factory=list)
    # The proposals (1-based) the diff does not make, left to be done by hand: `after`
    # and fits_after assume them done (advisor.advise.assumed)
    by_hand: list[int] = Field(default_factory=list)
    sizing: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    memory_before: str = ""
    memory_after: str = ""


def added_at(edit: Edit | None) -> Source | None:
    """Where an inserted setting will be, for the after-budget's labels."""
    if edit is None or not edit.insert:
        return None
    return Source(path=edit.path, key=f"{edit.key} (added after line {edit.line})")


def edit_at(source: Source, old: str, new: str) -> Edit | None:
    """`old` replaced by `new` at the source's line; None when it is at no line, or at a
    ConfigMap/Secret key whose text is not in the file line for line (a template's
    `include`, base64): that line does not hold the value as such, and the same token
    there may be another setting's."""
    if source.path is None or source.line is None or at_field_key(source):
        return None
    return Edit(path=source.path, line=source.line, key=source.key or "", old=old, new=new)


def by_hand_at(source: Source, new: str) -> str:
    """What to do by hand for a value edit_at refuses at a ConfigMap/Secret key's line;
    "" for any other source."""
    if not at_field_key(source):
        return ""
    return (f"set {source.key} to {new} where the template writes it ({source.label()}: "
            "the text is not in the file line for line)")


def num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
