"""The INI files Go applications read with gopkg.in/ini.v1 (Grafana's grafana.ini,
Gitea's app.ini), and the one-section files of Gitea's Helm chart that its init
container turns into app.ini (`KEY=VALUE` lines, the file named after the section).

Only what a pool reader asks is kept: the last value of each key of each section, with
its line. A value is taken as written, less the quotes ini.v1 strips (`"..."`,
`` `...` ``, `\"\"\"...\"\"\"` on one line); an inline comment or an expansion
(`$__env{X}`, `%(key)s`) stays in it, so a reader that wants a number reads none.
"""

from __future__ import annotations

from msgspec import Struct


class IniValue(Struct, frozen=True):
    value: str
    line: int  # 1-based, in the file's own text


def _unquote(value: str) -> str:
    for quote in ('"""', '"', "`"):
        if len(value) >= 2 * len(quote) and value.startswith(quote) and value.endswith(quote):
            return value[len(quote):-len(quote)]
    return value


def parse_ini(text: str) -> dict[str, dict[str, IniValue]]:
    """section -> key -> the last value written; keys before any section are in ""."""
    out: dict[str, dict[str, IniValue]] = {"": {}}
    section = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and "]" in line:
            section = line[1:line.index("]")].strip()
            out.setdefault(section, {})
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        if cut < 0:
            continue
        key = line[:cut].strip()
        out[section][key] = IniValue(_unquote(line[cut + 1:].strip()), number)
    return out


def parse_env_to_ini(text: str) -> dict[str, IniValue]:
    """A section file of the Gitea chart's env-to-ini mounts: `KEY=VALUE` per line, the
    key upper-cased (it becomes GITEA__SECTION__KEY) and the value everything after the
    first `=` less the spaces before it (config_environment.sh
    env2ini::read_config_to_env, `^${setting}(\\s*)=(\\s*)(.*)`)."""
    out: dict[str, IniValue] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        key, eq, value = raw.partition("=")
        if eq and key.strip():
            out[key.strip().upper()] = IniValue(value.lstrip(), number)
    return out
