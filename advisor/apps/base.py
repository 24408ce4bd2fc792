"""What every stack reader gets, and small helpers they share."""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.apps.source import AppSource
from advisor.model import ConfigProblem, Container, EnvVar, Location, Source, Term


@dataclass
class StackContext:
    """One container (and its application source, when known) being read for pools.
    Readers append to `problems`/`notices`; they do no I/O."""

    container: Container
    app: AppSource | None
    profile: str | None
    problems: list[ConfigProblem] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    def env(self, name: str) -> EnvVar | None:
        return next((e for e in self.container.env if e.name == name), None)

    def env_value(self, name: str) -> str | None:
        var = self.env(name)
        return var.value if var is not None else None

    def env_source(self, name: str) -> Source:
        var = self.env(name)
        base = var.source if var is not None else self.container.source
        return base.model_copy(update={"key": name})

    def problem(self, source: Source, message: str, *, fatal: bool = False,
                program: str = "") -> None:
        location = source.location() or Location(path=self.container.source.path or "<input>")
        self.problems.append(ConfigProblem(location=location, message=message, fatal=fatal,
                                           program=program))


def parse_int(text: str | None) -> int | None:
    """An integer as config binders accept it: surrounding whitespace, +/-, 0x hex."""
    if text is None:
        return None
    t = text.strip()
    try:
        if t.lower().startswith(("0x", "-0x", "+0x")):
            return int(t, 16)
        return int(t, 10)
    except ValueError:
        return None


def term(label: str, value: float, source: Source) -> Term:
    return Term(label=label, value=value, source=source)
