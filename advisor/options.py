"""Rule options: plain dataclasses, validated by pydantic only when a configuration
file sets them (`[rules.PA301]`), so a check without one never builds a pydantic
schema (see advisor/model.py for why).

An options class is an `options_class` dataclass with `__pydantic_config__ = OPTIONS_CONFIG`
(pydantic reads it from stdlib dataclasses: unknown keys are errors) and its bounds
checked in `__post_init__` with the helpers below, which pydantic reports as
validation errors like its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OPTIONS_CONFIG = {"extra": "forbid"}

# Stdlib dataclasses, not msgspec Structs like the rest of advisor.model: pydantic
# validates these from the configuration file.
options_class = dataclass(kw_only=True)


def at_least(options: object, name: str, low: float) -> None:
    value = getattr(options, name)
    if value is not None and value < low:
        raise ValueError(f"{name}: Input should be greater than or equal to {low}")


def in_range(options: object, name: str, low: float, high: float) -> None:
    at_least(options, name, low)
    value = getattr(options, name)
    if value is not None and value > high:
        raise ValueError(f"{name}: Input should be less than or equal to {high}")


def validate_options(options: type, values: dict[str, Any]) -> Any:
    """An options instance from a configuration table; pydantic.ValidationError if bad."""
    from pydantic import TypeAdapter

    return TypeAdapter(options).validate_python(values)


def error_text(exc: Any) -> str:
    """`key: message` of a pydantic ValidationError's first error."""
    err = exc.errors()[0]
    where = ".".join(str(x) for x in err["loc"])
    message = err["msg"].removeprefix("Value error, ")
    return f"{where}: {message}" if where else message
