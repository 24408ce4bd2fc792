"""PostgreSQL parameter (GUC) types and value parsing, exactly as the server does it.

The parameter tables are advisor/facts/data/pg_settings_<major>.json, one per major 10..18,
each generated from a real server of that major's pg_settings by
scripts/gen_pg_settings.py. The parsing below follows
PostgreSQL 15 src/backend/utils/misc/guc.c: parse_int, parse_real,
convert_to_base_unit, memory_unit_conversion_table / time_unit_conversion_table,
parse_and_validate_value (range and enum messages), and parse_bool in
src/backend/utils/adt/bool.c. C library behaviour it relies on (strtol with base 0:
octal and hex; strtod: hex floats, inf, nan, ERANGE; isspace in the C locale; rint's
round-half-even) is reproduced here. tests/test_pgconf_oracle.py checks it against
`postgres -C`.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path

import msgspec.json
from msgspec import Struct, field

from advisor.lazyregex import lazy

INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)
_C_SPACE = " \t\n\v\f\r"  # isspace() in the C locale
MAX_UNIT_LEN = 3  # guc.c

MEMORY_UNITS_HINT = 'Valid units for this parameter are "B", "kB", "MB", "GB", and "TB".'
TIME_UNITS_HINT = 'Valid units for this parameter are "us", "ms", "s", "min", "h", and "d".'
INT_RANGE_HINT = "Value exceeds integer range."

# The base units pg_settings reports, mapped to guc.c's GUC_UNIT_* groups.
_MEMORY_BASES = ("B", "kB", "MB", "8kB")
_TIME_BASES = ("ms", "s", "min")
_BLCKSZ = 8192  # Debian builds; "8kB" units are BLCKSZ (and XLOG_BLCKSZ) blocks

# guc.c memory_unit_conversion_table, in its order (the order matters: a fractional
# value is rounded to the next smaller unit of the same base). Written the way guc.c
# writes the multipliers so the doubles are the same.
_MEMORY_TABLE: list[tuple[str, str, float]] = []
for _base, _b in (("B", 1.0), ("kB", 1024.0), ("MB", 1024.0 * 1024.0), ("8kB", float(_BLCKSZ))):
    for _unit, _bytes in (
        ("TB", 1024.0 * 1024.0 * 1024.0 * 1024.0),
        ("GB", 1024.0 * 1024.0 * 1024.0),
        ("MB", 1024.0 * 1024.0),
        ("kB", 1024.0),
        ("B", 1.0),
    ):
        # Every factor is a power of two, so bytes/base is exact like guc.c's.
        _MEMORY_TABLE.append((_unit, _base, _bytes / _b))

_TIME_TABLE: list[tuple[str, str, float]] = [
    ("d", "ms", 1000 * 60 * 60 * 24),
    ("h", "ms", 1000 * 60 * 60),
    ("min", "ms", 1000 * 60),
    ("s", "ms", 1000),
    ("ms", "ms", 1),
    ("us", "ms", 1.0 / 1000),
    ("d", "s", 60 * 60 * 24),
    ("h", "s", 60 * 60),
    ("min", "s", 60),
    ("s", "s", 1),
    ("ms", "s", 1.0 / 1000),
    ("us", "s", 1.0 / (1000 * 1000)),
    ("d", "min", 60 * 24),
    ("h", "min", 60),
    ("min", "min", 1),
    ("s", "min", 1.0 / 60),
    ("ms", "min", 1.0 / (1000 * 60)),
    ("us", "min", 1.0 / (1000 * 1000 * 60)),
]


class Param(Struct, frozen=True):
    """One parameter's row of pg_settings (plus accepted enum spellings)."""

    name: str
    type: str  # bool, integer, real, string, enum
    context: str  # internal, postmaster, sighup, ...
    unit: str | None = None
    min: int | float | None = None  # as the table has it: 100 stays an int
    max: int | float | None = None
    boot: str | int | float | None = None
    values: tuple[str, ...] = ()  # visible enum options, in guc.c order
    spellings: dict[str, str] = field(default_factory=dict)  # lower(spelling) -> shown


class _Table(Struct):
    """A data/pg_settings_N.json file, as far as pg_params reads it."""

    params: dict[str, Param]


class Parsed(Struct, frozen=True):
    """A parsed value, or PostgreSQL's error message (and HINT) for it."""

    value: str | int | float | None = None
    error: str | None = None
    hint: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def message(self) -> str:
        return self.error if not self.hint else f"{self.error}; HINT: {self.hint}"


# The majors whose pg_settings table was generated from a real server of that major
# (scripts/gen_pg_settings.py; each file names the release and package it came from).
TABLE_MAJORS = (10, 11, 12, 13, 14, 15, 16, 17, 18)
TABLE_VERSION = 15  # the default major (and Debian's, the one tests run a server of)


def table_major(version: int) -> int:
    """The major whose table serves `version`: its own, else the nearest one (9.6 uses
    10's, a major after 18 uses 18's)."""
    if version in TABLE_MAJORS:
        return version
    return min(TABLE_MAJORS, key=lambda m: (abs(m - version), -m))


def has_table(version: int) -> bool:
    """Whether `version`'s own parameter table is here (names can be checked exactly)."""
    return version in TABLE_MAJORS


def _table_path(major: int) -> Path:
    # package data beside this module (msgspec reads JSON without importing json)
    return Path(__file__).with_name("data") / f"pg_settings_{major}.json"


@functools.cache
def table_source(version: int) -> str:
    """Where the table used for `version` came from (release and package)."""
    doc = msgspec.json.decode(_table_path(table_major(version)).read_bytes())
    return str(doc.get("source", ""))


@functools.cache
def pg_params(version: int = TABLE_VERSION) -> dict[str, Param]:
    """Parameter table of PostgreSQL `version` by lower-case name (the nearest generated
    major's for a version without one: see has_table)."""
    # decoded straight into Param rows (msgspec's C decoder; no dict per row first)
    raw = _table_path(table_major(version)).read_bytes()
    return msgspec.json.decode(raw, type=_Table).params


def lookup(name: str, version: int = TABLE_VERSION) -> Param | None:
    return pg_params(version).get(name.lower())


def majors_having(name: str) -> list[int]:
    """The generated majors whose table has parameter `name` (to say when it was added
    or removed)."""
    key = name.lower()
    return [m for m in TABLE_MAJORS if key in pg_params(m)]


def version_note(name: str, version: int) -> str | None:
    """Why `name` is not a parameter of `version` when another major has it:
    "removed in PostgreSQL 16 (last in 15)" or "added in PostgreSQL 17"."""
    having = majors_having(name)
    if not having or version in having:
        return None
    earlier = [m for m in having if m < version]
    later = [m for m in having if m > version]
    if earlier and not later:
        last = max(earlier)
        removed = min(m for m in TABLE_MAJORS if m > last)
        return f"removed in PostgreSQL {removed} (a parameter up to {last})"
    if later and not earlier:
        return f"added in PostgreSQL {min(later)}"
    return None


# --- C library number parsing -------------------------------------------------------


def _skip_space(s: str, i: int) -> int:
    while i < len(s) and s[i] in _C_SPACE:
        i += 1
    return i


_HEX = "0123456789abcdefABCDEF"


def c_strtol(s: str) -> tuple[int, int, bool]:
    """strtol(s, &end, 0): (value, end index, ERANGE). end == 0 when nothing parsed."""
    i = _skip_space(s, 0)
    sign = 1
    if i < len(s) and s[i] in "+-":
        sign = -1 if s[i] == "-" else 1
        i += 1
    if s[i : i + 2] in ("0x", "0X") and i + 2 < len(s) and s[i + 2] in _HEX:
        base, digits, i = 16, _HEX, i + 2
    elif s[i : i + 1] == "0":
        base, digits = 8, "01234567"
    else:
        base, digits = 10, "0123456789"
    start = i
    while i < len(s) and s[i] in digits:
        i += 1
    if i == start:
        return 0, 0, False
    value = sign * int(s[start:i], base)
    if value > LONG_MAX:
        return LONG_MAX, i, True
    if value < LONG_MIN:
        return LONG_MIN, i, True
    return value, i, False


_INF = lazy(r"inf(?:inity)?", re.IGNORECASE)
_NAN = lazy(r"nan(?:\([0-9A-Za-z_]*\))?", re.IGNORECASE)
_HEXFLOAT = lazy(
    r"0[xX](?:([0-9a-fA-F]+)(?:\.([0-9a-fA-F]*))?|\.([0-9a-fA-F]+))([pP][+-]?[0-9]+)?"
)
_DECFLOAT = lazy(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DBL_MIN = 2.2250738585072014e-308


def c_strtod(s: str) -> tuple[float, int, bool]:
    """strtod(s, &end) as glibc does it: (value, end index, ERANGE)."""
    i = _skip_space(s, 0)
    negative = False
    if i < len(s) and s[i] in "+-":
        negative = s[i] == "-"
        i += 1
    sign = -1.0 if negative else 1.0
    if m := _INF.match(s, i):
        return sign * math.inf, m.end(), False
    if m := _NAN.match(s, i):
        return math.nan, m.end(), False
    if m := _HEXFLOAT.match(s, i):
        whole, frac, only_frac, exp = m.groups()
        mantissa = f"{whole or ''}.{frac or only_frac or ''}"
        try:
            value = float.fromhex(f"0x{mantissa}p{exp[1:] if exp else '0'}")
        except OverflowError:
            return sign * math.inf, m.end(), True
        digits_nonzero = any(c not in "0." for c in mantissa)
        return sign * value, m.end(), _range_error(value, digits_nonzero)
    if m := _DECFLOAT.match(s, i):
        text = m.group(0)
        value = float(text)
        mantissa = re.split(r"[eE]", text)[0]
        digits_nonzero = any(c not in "0." for c in mantissa)
        return sign * value, m.end(), _range_error(value, digits_nonzero)
    return 0.0, 0, False


def _range_error(value: float, digits_nonzero: bool) -> bool:
    # glibc sets ERANGE on overflow and on underflow (a nonzero number that rounds to
    # zero or to a subnormal).
    if math.isinf(value):
        return True
    return digits_nonzero and abs(value) < _DBL_MIN


def c_rint(value: float) -> float:
    """rint() in the default rounding mode: to nearest, ties to even."""
    if math.isinf(value) or math.isnan(value):
        return value
    return float(round(value))


def format_g(value: float) -> str:
    """printf("%g") as PostgreSQL's own snprintf does it (Infinity, NaN spelled out)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return f"{value:g}"


# --- guc.c ------------------------------------------------------------------------------


def convert_to_base_unit(value: float, unit: str, base_unit: str) -> float | None:
    """guc.c convert_to_base_unit: `value` given in `unit` (possibly followed by
    spaces) as a multiple of `base_unit`; None for an unknown unit or trailing junk."""
    i = 0
    while i < len(unit) and unit[i] not in _C_SPACE and i < MAX_UNIT_LEN:
        i += 1
    unitstr = unit[:i]
    if _skip_space(unit, i) != len(unit):
        return None  # unit too long, or garbage after it
    table = _MEMORY_TABLE if base_unit in _MEMORY_BASES else _TIME_TABLE
    for n, (name, base, multiplier) in enumerate(table):
        if base == base_unit and name == unitstr:
            cvalue = value * multiplier
            # "30.1GB" is rounded to a multiple of the next smaller unit, if any.
            if n + 1 < len(table) and table[n + 1][1] == base_unit:
                smaller = table[n + 1][2]
                cvalue = c_rint(cvalue / smaller) * smaller
            return cvalue
    return None


def _units_hint(base_unit: str, version: int = 12) -> str:
    if base_unit in _MEMORY_BASES:
        if version < 11:  # "B" came in 11
            return 'Valid units for this parameter are "kB", "MB", "GB", and "TB".'
        return MEMORY_UNITS_HINT
    if version < 12:  # "us" came in 12
        return 'Valid units for this parameter are "ms", "s", "min", "h", and "d".'
    return TIME_UNITS_HINT


def _legacy_to_base_unit(value: int, unit: str, base_unit: str, version: int) -> int | None:
    """PostgreSQL 10/11 guc.c convert_to_base_unit: integers only; a unit larger than
    the base multiplies, a smaller one divides (C integer division, truncating)."""
    if (unit == "B" and version < 11) or unit == "us":
        return None
    table = _MEMORY_TABLE if base_unit in _MEMORY_BASES else _TIME_TABLE
    for name, base, multiplier in table:
        if base == base_unit and name == unit:
            if multiplier >= 1:
                return value * int(multiplier)
            divisor = round(1 / multiplier)
            quotient = abs(value) // divisor
            return quotient if value >= 0 else -quotient
    return None


def _parse_int_legacy(value: str, unit: str | None, version: int
                      ) -> tuple[int | None, str | None]:
    """PostgreSQL 10/11 guc.c parse_int: strtol only (no fractions, no exponent)."""
    ival, end, erange = c_strtol(value)
    if end == 0:
        return None, None
    if erange or ival > INT_MAX or ival < INT_MIN:
        return None, INT_RANGE_HINT
    end = _skip_space(value, end)
    if end < len(value):
        if unit is None:
            return None, None
        i = end
        while i < len(value) and value[i] not in _C_SPACE and i - end < MAX_UNIT_LEN:
            i += 1
        converted = None
        if _skip_space(value, i) == len(value):
            converted = _legacy_to_base_unit(ival, value[end:i], unit, version)
        if converted is None:
            return None, _units_hint(unit, version)
        ival = converted
    if ival > INT_MAX or ival < INT_MIN:
        return None, INT_RANGE_HINT
    return ival, None


def parse_int(value: str, unit: str | None, version: int = 12) -> tuple[int | None, str | None]:
    """guc.c parse_int: (result, None) or (None, hint-or-None). Before 12 it is
    _parse_int_legacy."""
    if version < 12:
        return _parse_int_legacy(value, unit, version)
    # strtol first (octal and hex allowed); at a '.', 'e' or overflow, re-parse as float.
    ival, end, erange = c_strtol(value)
    val: float = float(ival)
    if (end < len(value) and value[end] in ".eE") or erange:
        val, end, erange = c_strtod(value)
    if end == 0 or erange or math.isnan(val):
        return None, None  # no HINT for these cases
    end = _skip_space(value, end)  # whitespace is allowed between number and unit
    if end < len(value):
        if unit is None:
            return None, None  # this setting does not accept a unit
        converted = convert_to_base_unit(val, value[end:], unit)
        if converted is None:
            return None, _units_hint(unit)
        val = converted
    val = c_rint(val)
    if val > INT_MAX or val < INT_MIN:
        return None, INT_RANGE_HINT
    return int(val), None


def parse_real(value: str, unit: str | None, version: int = 12
               ) -> tuple[float | None, str | None]:
    """guc.c parse_real: (result, None) or (None, hint-or-None). Before 12 reals take
    no unit."""
    val, end, erange = c_strtod(value)
    if end == 0 or erange or math.isnan(val):
        return None, None
    end = _skip_space(value, end)
    if end < len(value):
        if unit is None or version < 12:
            return None, None
        converted = convert_to_base_unit(val, value[end:], unit)
        if converted is None:
            return None, _units_hint(unit)
        val = converted
    return val, None


def parse_bool(value: str) -> bool | None:
    """bool.c parse_bool: prefixes of true/false/yes/no, on/off (two letters at least),
    1/0; case-insensitive; no whitespace trimming."""
    n = len(value)
    low = value.lower()
    if n == 0:
        return None
    first = low[0]
    if first == "t" and "true".startswith(low):
        return True
    if first == "f" and "false".startswith(low):
        return False
    if first == "y" and "yes".startswith(low):
        return True
    if first == "n" and "no".startswith(low):
        return False
    if first == "o" and n >= 2:
        if "on".startswith(low):
            return True
        if "off".startswith(low):
            return False
    if value in ("1", "0"):
        return value == "1"
    return None


def _clean_ascii(value: str) -> str:
    """pg_clean_ascii (PostgreSQL 15): every byte outside 32..126 becomes '?'."""
    return "".join(chr(b) if 32 <= b <= 126 else "?" for b in value.encode("utf-8"))


# String parameters whose check hook rewrites the value (PostgreSQL 15 guc.c
# check_application_name / check_cluster_name call pg_clean_ascii).
_STRING_CLEANERS = {"application_name": _clean_ascii, "cluster_name": _clean_ascii}


def parse_value(param: Param, name_as_written: str, value: str, version: int = 15) -> Parsed:
    """Validate `value` for `param` the way set_config_option of PostgreSQL `version`
    does from a config file. Messages name the parameter as written (PostgreSQL does
    too); a range message names the unit from 12, of the bounds too from 17."""
    name = name_as_written
    if param.context == "internal":
        return Parsed(error=f'parameter "{name}" cannot be changed')
    if param.type == "bool":
        b = parse_bool(value)
        if b is None:
            return Parsed(error=f'parameter "{name}" requires a Boolean value')
        return Parsed(value="on" if b else "off")
    invalid = f'invalid value for parameter "{name}": "{value}"'
    if param.type == "integer":
        ival, hint = parse_int(value, param.unit, version)
        if ival is None:
            return Parsed(error=invalid, hint=hint)
        lo, hi = int(param.min or 0), int(param.max or 0)
        if ival < lo or ival > hi:
            unit = f" {param.unit}" if param.unit and version >= 12 else ""
            bound = unit if version >= 17 else ""  # 17 names the unit of the bounds too
            return Parsed(
                error=f'{ival}{unit} is outside the valid range for parameter "{name}" '
                f"({lo}{bound} .. {hi}{bound})"
            )
        return Parsed(value=ival)
    if param.type == "real":
        rval, hint = parse_real(value, param.unit, version)
        if rval is None and version < 12:  # 10/11 guc.c set_config_option's words
            return Parsed(error=f'parameter "{name}" requires a numeric value')
        if rval is None:
            return Parsed(error=invalid, hint=hint)
        lo_f, hi_f = float(param.min or 0.0), float(param.max or 0.0)
        if rval < lo_f or rval > hi_f:
            unit = f" {param.unit}" if param.unit and version >= 12 else ""
            bound = unit if version >= 17 else ""
            return Parsed(
                error=f"{format_g(rval)}{unit} is outside the valid range for parameter "
                f'"{name}" ({format_g(lo_f)}{bound} .. {format_g(hi_f)}{bound})'
            )
        return Parsed(value=rval)
    if param.type == "enum":
        shown = param.spellings.get(value.lower())
        if shown is None:
            return Parsed(error=invalid, hint="Available values: " + ", ".join(param.values) + ".")
        return Parsed(value=shown)
    cleaner = _STRING_CLEANERS.get(param.name.lower())
    return Parsed(value=cleaner(value) if cleaner else value)


def show(value: str | int | float | bool) -> str:
    """The value as `postgres -C` / GetConfigOption prints it."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return format_g(value)
    return str(value)
