"""What every stack reader gets, and small helpers they share."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from msgspec import Struct, field
from msgspec.structs import replace

from advisor.model import ASSUMED_NODE_CPUS as _ASSUMED_NODE_CPUS
from advisor.model import (
    ConfigProblem,
    Container,
    CpuFormula,
    EnvVar,
    Location,
    NodeCpus,
    Pool,
    Route,
    Source,
    Term,
)
from advisor.read.apps.envfrom import env_from_hidden, env_from_label
from advisor.read.apps.source import AppFile, AppSource

if TYPE_CHECKING:
    from advisor.read.apps.podfiles import ContainerFiles
    from advisor.read.apps.processes import ProcessInfo
    from advisor.read.apps.pyeval import Val

# re-exported: the readers' assumed node size lives with NodeCpus
ASSUMED_NODE_CPUS = _ASSUMED_NODE_CPUS


class InitWriter(Struct, frozen=True):
    """An init container of the pod whose script writes the application's configuration
    file from its own env (the Gitea and Forgejo charts' init-app-ini:
    config_environment.sh, environment-to-ini), for the readers of that application."""

    container: str  # the init container's name
    env: tuple[EnvVar, ...]
    path: str | None  # the file it writes, in its own filesystem (None: not known)
    # whether the application container reads that file (the same volume at that path);
    # `why` when it does not, or when that is not known
    shared: bool
    why: str = ""


class StackContext(Struct):
    """One container (and its application source, when known) being read for pools.
    Readers append to `problems`/`notices`; they do no I/O."""

    container: Container
    app: AppSource | None
    profile: str | None
    # the nodes' CPUs (NodeCpus: node-cpus, threads-per-core, where each is set), or
    # their logical count alone (tests)
    node_cpus: int | NodeCpus | None = None
    problems: list[ConfigProblem] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    # Why a pool's size cannot be known here (it is set where the repository does not
    # hold the value, e.g. a Secret it does not contain): the client's connections are
    # then unknown, never a default's.
    unknown: list[str] = field(default_factory=list)
    # Why where some of its connections go is not known (hidden_route): set where the
    # repository does not hold the value. Said even when no pool is returned (its size
    # hidden too): the workload may connect to any server, so each peak is a floor.
    unrouted: list[str] = field(default_factory=list)
    # The files the container sees (advisor/read/apps/podfiles.py ContainerFiles), for
    # the readers of programs that read their configuration files from the pod
    pod_files: ContainerFiles | None = None
    # The pod's init containers that write the configuration file this container reads
    init_writers: tuple[InitWriter, ...] = ()
    _processes: ProcessInfo | None = None
    cache: dict[str, object] = field(default_factory=dict)  # per-container parse results

    @property
    def node(self) -> NodeCpus:
        n = self.node_cpus
        return n if isinstance(n, NodeCpus) else NodeCpus(cpus=n)

    @property
    def cpus(self) -> int:
        """The nodes' logical CPUs (node-cpus, else the assumed size)."""
        return self.node.logical

    @property
    def cpus_assumed(self) -> bool:
        return self.node.assumed

    def cpus_term(self) -> Term:
        return self.node.logical_term()

    def cpu_size(self, formula: CpuFormula) -> tuple[float, CpuFormula]:
        """What `formula` gives on the nodes, and the formula with the node's threads per
        core (for PA103's other node sizes): one conversion for the budget and PA103."""
        model = self.node.formula(formula)
        return model.on_node(self.cpus), model

    def processes_read(self) -> ProcessInfo | None:
        """processes(), when a reader has asked for it already (None otherwise): what
        needs it only when a reader did (a Python stack's) does not run the detection
        for every container (it imports the process readers)."""
        return self._processes

    def processes(self) -> ProcessInfo:
        if self._processes is None:
            from advisor.read.apps.processes import detect_processes

            self._processes = detect_processes(self, self.cpus, self.cpus_assumed)
            self.notices.extend(self._processes.notes)
            # a count set from a Secret leaves every pool of the container unknown
            self.unknown.extend(self._processes.hidden)
        return self._processes

    def env(self, name: str) -> EnvVar | None:
        return next((e for e in self.container.env if e.name == name), None)

    def env_map(self) -> dict[str, EnvVar]:
        return {e.name: e for e in self.container.env}

    def hidden_size(self, label: str, name: str, source: Source) -> None:
        """Pool `label`'s size is set by the variable `name` from a Secret or reference
        whose value the repository does not hold: the client's connections are then
        unknown (PA106), never a default's or a lower-precedence value's. A value cited at
        an envFrom source not held (its marker, env_from_hidden) only may be set there:
        the source may not hold `name`."""
        from advisor.read.apps.pyeval import hidden_note

        marker = self.env_from_marker(source)
        self.unknown.append(hidden_note(label, name, source) if marker is None
                            else f"{label}: {name} may be set by {env_from_label(marker)}")

    def env_from_marker(self, source: Source) -> EnvVar | None:
        """The envFrom marker (`<prefix>*`, no value) a value was read at: its source is
        the marker's, keyed by the marker's name (pyeval's pydantic settings reader
        reads a field there)."""
        if not (source.key or "").endswith("*"):
            return None
        return next((e for e in self.container.env if e.value is None and e.name == source.key
                     and replace(e.source, key=e.name) == source), None)

    def hidden_route(self, pools: list[Pool], label: str, name: str, source: Source, *,
                     more: str = "") -> list[Pool]:
        """`pools` (those of `label`), whose database the variable `name` names, set from a
        Secret or reference whose value the repository does not hold: marked as connecting
        where the repository does not say (Pool.route_unknown), never to the URL another
        variable of the container names, and said in `unrouted` (also when `pools` is
        empty: their size was not read either)."""
        why = (f"{label}: {name} ({source.label()}) is set from a reference whose value "
               "is not held here, so where it connects is not known"
               + (f" ({more})" if more else ""))
        if why not in self.unrouted:
            self.unrouted.append(why)
        return [replace(p, route=None, route_unknown=why) for p in pools]

    def unread_size(self, label: str, where: Source) -> None:
        """Pool `label`'s size is set in the code, at `where`, to an expression not read
        statically: unknown (PA106), not the library's default, which does not apply."""
        why = f"{label} at {where.label()} is set to an expression not read statically"
        if why not in self.unknown:
            self.unknown.append(why)

    def hidden_read(self, label: str, *values: Val | None) -> bool:
        """Whether one of `values` (a size as the code computes it) reads a variable set
        from a Secret or reference whose value the repository does not hold; if so, pool
        `label`'s size is unknown (hidden_size), not the expression's fallback."""
        from advisor.read.apps.pyeval import hidden_of  # loaded by whoever made `values`

        v = hidden_of(*values)
        if v is None:
            return False
        self.hidden_size(label, v.hidden, v.source)
        return True

    def env_from_hidden(self, *names: str, fold_case: bool = False) -> EnvVar | None:
        """The envFrom source whose keys the repository does not hold (a Secret or
        ConfigMap not in it, an ExternalSecret whose keys are fetched when applied) that
        may set one of `names` the container's env does not set: its marker
        (workloads._env writes it as `<prefix>*` without a value). None when each name
        is set here (an explicit `env` entry wins over every envFrom source) or no such
        source may set it. `fold_case`: the program reads the name in any case (.NET
        configuration keys). A name a held envFrom source sets, which a later source not
        held could set again, is read as set (the env does not keep which came last)."""
        return env_from_hidden(self.container.env, *names, fold_case=fold_case)

    def env_from_unknown(self, label: str, what: str, names: tuple[str, ...],
                         marker: EnvVar) -> None:
        """`what` (whether the program uses PostgreSQL at all) is not known: the
        variables that decide it are unset here, and the envFrom source `marker`
        (env_from_hidden), whose keys are not held, may set them. Its pools are then
        unknown (PA106; the workload unplaced when nothing else names its server), never
        read as the program's default database (SQLite) and no pool."""
        why = f"{label}: {what} is not known: {' or '.join(names)} may be set by " \
              f"{env_from_label(marker)}"
        if why not in self.unknown:
            self.unknown.append(why)

    def env_value(self, name: str) -> str | None:
        var = self.env(name)
        return var.value if var is not None else None

    def env_source(self, name: str) -> Source:
        var = self.env(name)
        base = var.source if var is not None else self.container.source
        return replace(base, key=name)

    def env_int(self, label: str, name: str, *, least: int | None = None
                ) -> tuple[int, Source] | Literal[False] | None:
        """The variable `name` as a number for pool `label`, and where: None when unset;
        False when it cannot be read (a Secret's value, or not a number, or below
        `least`), said in `unknown` so the pool's size is unknown, never a default."""
        from advisor.read.apps.numbers import parse_int

        var = self.env(name)
        if var is None:
            return None
        if var.value is None:
            self.hidden_size(label, name, self.env_source(name))
            return False
        n = parse_int(var.value)
        if n is None or (least is not None and n < least):
            self.unknown.append(f"{label}: {name} at {self.env_source(name).label()} is "
                                f"{var.value!r}, not a number pool-advisor can read")
            return False
        return n, self.env_source(name)

    def files(self, *kinds: str) -> list[AppFile]:
        return self.app.of_kind(*kinds) if self.app is not None else []

    def problem(self, source: Source, message: str, *, fatal: bool = False,
                program: str = "") -> None:
        location = source.location() or Location(path=self.container.source.path or "<input>")
        self.problems.append(ConfigProblem(location=location, message=message, fatal=fatal,
                                           program=program))

    def pool(self, label: str, size: float, source: Source, *, route: Route | None = None,
             bound: Literal["fixed", "default", "unbounded", "cpu"] = "fixed", note: str = "",
             cpu: CpuFormula | None = None, per_process: bool = True,
             size_label: str | None = None) -> Pool:
        """A Pool with this container's processes attached (per_process=False for
        runtimes that run one OS process: JVM, Go, .NET, BEAM)."""
        processes = self.processes().processes if per_process else None
        info = self.processes() if per_process else None
        if cpu is not None:
            bound = "cpu"
            cpu = replace(self.node.formula(cpu), applies_to="size")
        elif info is not None and info.cpu_formula is not None:
            bound = "cpu" if bound == "fixed" else bound
            cpu = info.cpu_formula
            note = (note + "; " if note else "") + \
                f"{processes.label if processes else 'processes'} from {cpu.text}"
        return Pool(label=label, size=Term(label=size_label or label, value=size, source=source),
                    processes=processes, route=route, bound=bound, note=note, cpu_formula=cpu,
                    cpus=self.cpus_term() if cpu is not None else None,
                    node=self.node if cpu is not None else None)


def term(label: str, value: float, source: Source) -> Term:
    return Term(label=label, value=value, source=source)


def image_path(image: str) -> str:
    """The image reference without its tag or digest, lower-cased
    (docker.io/supabase/gotrue:v2.1 -> docker.io/supabase/gotrue; a registry's port
    stays)."""
    ref = image.split("@", 1)[0].lower()
    repo, colon, tag = ref.rpartition(":")
    return repo if colon and "/" not in tag else ref


def image_is(image: str, paths: tuple[str, ...]) -> bool:
    """Whether the image is one of `paths` (`owner/name`), from any registry or mirror."""
    path = image_path(image)
    return any(path == p or path.endswith("/" + p) for p in paths)


def option_value(ctx: StackContext, option: str) -> tuple[str, Source] | None:
    """The value the command line gives `option`: the last one, as a later argument
    overrides an earlier one (option_values)."""
    found = option_values(ctx, option)
    return found[-1] if found else None


def option_values(ctx: StackContext, option: str) -> list[tuple[str, Source]]:
    """Each value the command line gives `option` (`--opt=V` or `--opt V`, also inside a
    shell string `sh -c "kc.sh start --opt=V"`), in order, with the word it is written
    in."""
    words = (*ctx.container.command, *ctx.container.args)
    sources = ctx.container.word_sources
    tokens = [(t, i) for i, w in enumerate(words) for t in w.split()]
    found: list[tuple[str, Source]] = []
    for n, (token, i) in enumerate(tokens):
        if token == option and n + 1 < len(tokens):
            value, i = tokens[n + 1]
        elif token.startswith(option + "="):
            value = token[len(option) + 1:]
        else:
            continue
        where = sources[i] if len(sources) == len(words) else ctx.container.source
        found.append((value.strip("'\""), replace(where, key=option)))
    return found


def tag_version(image: str) -> tuple[int, int] | None:
    """(major, minor) of an image tag (`v4.3.2`, `4.2`); None for another tag."""
    tag = image.split("@", 1)[0].rsplit("/", 1)[-1].partition(":")[2]
    m = re.match(r"v?(\d{1,9})\.(\d{1,9})", tag)
    return (int(m.group(1)), int(m.group(2))) if m else None
