"""Spring Boot's Environment, as far as pool settings need it: which value a property
has once every property source is applied, and where that value was written.

Precedence (Spring Boot reference, "Externalized Configuration", 2.4+ / 3.x; later
beats earlier): config data files < OS environment variables < Java system properties
(`-D`, also through JAVA_TOOL_OPTIONS / JDK_JAVA_OPTIONS, which the JVM reads) <
SPRING_APPLICATION_JSON < command-line `--name=value` arguments.
Config data files, in order: application.* packaged in the jar
(src/main/resources, then its config/), profile-specific packaged ones, then the same
outside the jar (./, ./config/). In one location `.properties` beats `.yml`. Inside a
multi-document file later documents win; a document with
`spring.config.activate.on-profile` (legacy `spring.profiles`) applies only when that
profile is active. With no active profile the `default` profile is active.

Relaxed binding: `maximum-pool-size`, `maximumPoolSize`, `maximum_pool_size` are one
name (compared lower-case without `-`/`_`); env SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE
and the legacy form SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE both bind
(spring-boot SystemEnvironmentPropertyMapper.java: convertName and convertLegacyName).
`${NAME:default}` placeholders resolve against the same sources.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterable
from functools import lru_cache

from msgspec.structs import replace

from advisor.lazyregex import lazy
from advisor.model import ConfigProblem, Container, EnvVar, Frozen, Location, Record, Source
from advisor.read import jsontext
from advisor.read.apps.source import AppFile, AppSource
from advisor.read.shellwords import bounded

_ELEMENT = re.compile(r"\[[^\]]*\]|[^.\[\]]+")


@lru_cache(maxsize=4096)  # pure; asked for the same few names per client, per workload
def canonical(name: str) -> str:
    """Relaxed-binding form: `spring.datasource.hikari.maximum-pool-size` and
    `Spring.DataSource.Hikari.maximumPoolSize` both give
    `spring.datasource.hikari.maximumpoolsize`."""
    parts = []
    for element in _ELEMENT.findall(name):
        if element.startswith("["):
            parts.append(element)
        else:
            parts.append(re.sub(r"[^a-z0-9]", "", element.lower()))
    return ".".join(p for p in parts if p)


@lru_cache(maxsize=4096)
def env_names(dashed: str) -> tuple[str, ...]:
    """Env names Spring binds to a property (both mappings of SystemEnvironmentPropertyMapper)."""
    elements = [e for e in _ELEMENT.findall(dashed) if not e.startswith("[")]
    uniform = "_".join(re.sub(r"[^a-z0-9]", "", e.lower()).upper() for e in elements)
    legacy = "_".join(e.replace("-", "_").upper() for e in elements)
    return (uniform,) if uniform == legacy else (uniform, legacy)


class PropValue(Frozen, kw_only=True):
    name: str  # as written
    value: str | None
    source: Source
    origin: str  # "config", "env", "system-property", "application-json", "argument"


class SpringProps(Frozen, kw_only=True):
    """Resolved view. Layers are kept apart so env names can be matched the way Spring
    maps them (both mapper forms) rather than through a lossy reverse mapping."""

    config: dict[str, PropValue]  # canonical name -> winning config-data value
    upper: tuple[dict[str, PropValue], ...]  # argument, application-json, system-property
    env: dict[str, EnvVar]
    profiles: tuple[str, ...]
    profiles_source: str
    # Micronaut's placeholders: `${NAME:default}` of an environment-style NAME whose
    # variable is set empty takes the default (micronaut-core
    # inject/src/main/java/io/micronaut/context/env/DefaultPropertyPlaceholderResolver.java
    # @01c688bd resolveExpression: `if (StringUtils.isNotEmpty(envVar))`, else null, and
    # PlaceholderSegment.getValue falls to defaultValue); Spring takes "" as the value
    empty_env_unset: bool = False

    def lookup(self, dashed: str) -> tuple[PropValue | None, list[PropValue]]:
        """(winning value, higher sources skipped because their value is unknown)."""
        c = canonical(dashed)
        skipped: list[PropValue] = []
        for layer in self.upper:
            if c in layer:
                return layer[c], skipped
        for name in env_names(dashed):
            var = self.env.get(name)
            if var is None:
                continue
            found = PropValue(name=name, value=var.value, origin="env",
                              source=replace(var.source, key=name))
            if var.value is None:
                skipped.append(found)
                continue
            return found, skipped
        return self.config.get(c), skipped

    def get(self, dashed: str) -> PropValue | None:
        return self.lookup(dashed)[0]

    def names_under(self, prefix: str) -> set[str]:
        """Canonical names below `prefix` in files, arguments and JSON (not env)."""
        head = canonical(prefix) + "." if prefix else ""
        names = set(self.config)
        for layer in self.upper:
            names |= set(layer)
        return {n for n in names if n.startswith(head)}

    def resolve(self, prop: PropValue, problems: list[ConfigProblem],
                hidden: list[EnvVar] | None = None) -> PropValue:
        """Replace ${...} placeholders; the Source becomes whatever supplied the value.
        A placeholder naming a variable the container sets from a Secret or reference
        whose value is not here takes its default, and the variable goes in `hidden`:
        a caller for whom that matters (a pool size) says the value is unknown."""
        if prop.value is None or "${" not in prop.value:
            return prop
        sources: list[Source] = []
        text = self._expand(prop.value, prop, sources, problems, depth=0,
                            hidden=hidden if hidden is not None else [])
        if text is None:
            return replace(prop, value=None)
        if len(sources) == 1 and prop.value.strip().startswith("${") \
                and prop.value.strip().endswith("}"):
            return replace(prop, value=text, source=sources[0])
        return replace(prop, value=text)

    def _lookup(self, name: str) -> tuple[str | None, Source | None]:
        var = self.env.get(name)
        if var is not None:
            return var.value, replace(var.source, key=var.name)
        found = self.get(name)
        if found is not None and found.value is not None:
            return found.value, found.source
        return None, None

    def _expand(self, text: str, prop: PropValue, sources: list[Source],
                problems: list[ConfigProblem], depth: int, hidden: list[EnvVar]
                ) -> str | None:
        if depth > 10:
            _problem(problems, prop.source, f"placeholder nesting too deep in {prop.name}")
            return None
        out: list[str] = []
        i = 0
        while i < len(text):
            start = text.find("${", i)
            if start < 0:
                out.append(text[i:])
                break
            out.append(text[i:start])
            end = _matching_brace(text, start + 2)
            if end < 0:
                out.append(text[start:])
                break
            body = text[start + 2 : end]
            name, colon, default = body.partition(":")
            value, source = self._lookup(name.strip())
            var = self.env.get(name.strip())
            if value == "" and self.empty_env_unset and var is not None \
                    and _ENV_NAME.fullmatch(name.strip()):
                value = None  # Micronaut: an empty variable is no value (above)
            if var is not None and var.value is None:
                hidden.append(var)
            if value is not None and "${" in value:
                value = self._expand(value, prop, [], problems, depth + 1, hidden)
            if value is None and colon:
                value = self._expand(default, prop, [], problems, depth + 1, hidden)
                source = replace(
                    prop.source, key=f"{prop.source.key or prop.name} (placeholder default)")
            if value is None:
                _problem(problems, prop.source,
                         f"{prop.name}: placeholder ${{{name}}} has no value in the "
                         "repository and no default")
                return None
            if source is not None:
                sources.append(source)
            out.append(value)
            i = end + 1
        return "".join(out)


# micronaut-core NameUtils.isEnvironmentName: upper case, digits and `_`
_ENV_NAME = lazy(r"[A-Z0-9_]+")


def _matching_brace(text: str, pos: int) -> int:
    depth = 1
    while pos < len(text):
        if text.startswith("${", pos):
            depth += 1
            pos += 2
            continue
        if text[pos] == "}":
            depth -= 1
            if depth == 0:
                return pos
        pos += 1
    return -1


def _problem(problems: list[ConfigProblem], source: Source, message: str,
             fatal: bool = False) -> None:
    location = source.location() or Location(path="<environment>")
    problems.append(ConfigProblem(location=location, message=message, fatal=fatal,
                                  program="Spring Boot"))


# --- reading config files ---------------------------------------------------------------


class _Doc(Record, kw_only=True):
    file: AppFile
    entries: list[tuple[str, str | None, int]]  # (name, value, line)
    on_profile: str | None = None


def _documents(f: AppFile, problems: list[ConfigProblem]) -> list[_Doc]:
    # imported here: a run with no Spring configuration file never needs either reader
    from advisor.read.apps.javaprops import PropError, parse_properties
    from advisor.read.apps.yamlflat import YamlError, load_documents

    raw: list[list[tuple[str, str | None, int]]] = []
    try:
        if f.rel.endswith(".properties"):
            raw = [[(e.key, e.value, e.line) for e in doc] for doc in parse_properties(f.text)]
        else:
            raw = [[(e.key, e.value, e.line) for e in doc] for doc in load_documents(f.text)]
    except (PropError, YamlError) as exc:
        at = f.cite(exc.line)
        problems.append(ConfigProblem(location=Location(path=at.path, line=at.line),
                                      message=exc.message, fatal=True, program="Spring Boot"))
        return []
    docs = []
    for entries in raw:
        on_profile = None
        for name, value, _ in entries:
            c = canonical(name)
            if c in ("spring.config.activate.onprofile", "spring.profiles") and value:
                on_profile = value
        docs.append(_Doc(file=f, entries=entries, on_profile=on_profile))
    return docs


def profile_matches(expression: str, active: Iterable[str]) -> bool:
    """Spring profile expressions: `a`, `!a`, `a | b`, `a & b`, comma lists (any)."""
    names = set(active)

    def term(t: str) -> bool:
        t = t.strip().strip("()").strip()
        if "|" in t:
            return any(term(x) for x in t.split("|"))
        if "&" in t:
            return all(term(x) for x in t.split("&"))
        if t.startswith("!"):
            return not term(t[1:])
        return t in names

    return any(term(part) for part in expression.split(","))


def _location_rank(f: AppFile) -> tuple[int, int]:
    """(outside the jar?, location order) per Spring Boot's config data locations."""
    rel = f.rel
    if "src/main/resources/config/" in rel:
        return 0, 1
    if "src/main/resources/" in rel or rel.startswith("resources/"):
        return 0, 0
    if rel.startswith("config/") or "/config/" in rel:
        return 1, 1
    return 1, 0


# Where Spring Boot looks for application*.{yml,properties} by default
# (spring-projects/spring-boot v3.3.4 (8e9dc7b) ConfigDataEnvironment.java:91-92:
# optional:classpath:/;optional:classpath:/config/ then
# optional:file:./;optional:file:./config/;optional:file:./config/*/; before 2.4,
# v2.2.5.RELEASE ConfigFileApplicationListener.java:110 "classpath:/,classpath:/config/,
# file:./,file:./config/"): the jar's resources, and the folder the app runs in.
_LOADED = lazy(r"(?:(?:.*/)?src/main/resources/|resources/)(?:config/)?[^/]+"
               r"|(?:config/(?:[^/]+/)?)?[^/]+")


def _loaded(f: AppFile, named: list[str], workdir: str | None = None) -> bool:
    """Whether Spring Boot reads `f`: at a default location, or in a folder
    spring.config.location / additional-location / import names (its last folder
    name). A file mounted in the pod: in the image's WORKDIR (`workdir`, the process's
    directory: file:./, ./config/, ./config/*/) or a named location; anywhere when no
    Dockerfile says the WORKDIR (a buildpack's /workspace). JHipster's
    src/main/docker/central-server-config/application.yml is served by the JHipster
    registry, never read by the app."""
    if f.mounted:
        if workdir is None or _in_workdir(f.rel, workdir):
            return True
    elif _LOADED.fullmatch(f.rel):
        return True
    folder = f.rel.rsplit("/", 1)[0].rsplit("/", 1)[-1] if "/" in f.rel else ""
    return any(f.rel in n or (folder and n.rsplit("/", 1)[-1] == folder) for n in named)


def _in_workdir(rel: str, workdir: str) -> bool:
    """Whether the mounted file at /`rel` is in Spring Boot's file:./, file:./config/ or
    file:./config/*/ under the process's directory `workdir`."""
    folder = posixpath.dirname("/" + rel.strip("/"))
    config = posixpath.join(workdir, "config")
    return folder in (workdir, config) or posixpath.dirname(folder) == config


def image_workdir(container: Container | None, app: AppSource | None) -> str | None:
    """The final WORKDIR of the Dockerfile that builds the container's image (the
    directory `java -jar` runs in), None when no Dockerfile is known to build it."""
    if container is None or app is None:
        return None
    from advisor.read.apps.cmdline import dockerfile_copies, pick_dockerfile

    dockerfile, _ = pick_dockerfile(app, container.image)
    return dockerfile_copies(dockerfile.text)[1] if dockerfile is not None else None


def _config_locations(upper: tuple[dict[str, PropValue], ...],
                      env: dict[str, EnvVar]) -> list[str]:
    """The paths spring.config.location, additional-location and import name in the
    arguments, JSON, system properties or the environment (`optional:`, `file:`,
    `classpath:` dropped)."""
    higher = SpringProps(config={}, upper=upper, env=env, profiles=(), profiles_source="")
    out = []
    for key in ("spring.config.location", "spring.config.additional-location",
                "spring.config.import"):
        prop = higher.get(key)
        for item in re.split(r"[,;]", prop.value if prop and prop.value else ""):
            out.append(re.sub(r"^(?:optional:)?(?:file:|classpath:)?", "", item.strip()))
    return [p.strip("/") for p in out if p.strip("/")]


def _split_list(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def _list_entries(docs: list[_Doc], key: str) -> dict[str, tuple[list[str], str]]:
    """`key.<name>` (and `key.<name>[i]`) lists per name, from documents that apply
    whatever profile is active (a profile-specific document may not set them: Spring
    Boot 2.4+ throws InvalidConfigDataPropertyException); a later document's list
    replaces an earlier one's, as a higher property source does. With `key` itself a
    list (spring.profiles.include), the name is ""."""
    head = canonical(key)
    out: dict[str, tuple[list[str], str]] = {}
    for doc in docs:
        if doc.on_profile:
            continue
        seen: dict[str, list[str]] = {}
        for name, value, line in doc.entries:
            c = canonical(name)
            if c != head and not c.startswith(head + "."):
                continue
            # the map key as written: a profile name keeps its case and dashes
            elements = [e for e in _ELEMENT.findall(name) if not e.startswith("[")]
            depth = len(_ELEMENT.findall(key))
            tail = elements[depth] if len(elements) > depth else ""
            at = f"{doc.file.path}:{line + doc.file.line_offset}"
            if tail not in seen:
                seen[tail] = []
                out[tail] = (seen[tail], at)
            seen[tail].extend(_split_list(value))
    return out


def _included_profiles(docs: list[_Doc], upper: tuple[dict[str, PropValue], ...],
                       env: dict[str, EnvVar]) -> list[tuple[str, str]]:
    """(profile, where) named by spring.profiles.include in any property source: Spring
    Boot 2.4+ adds every one it finds (ConfigDataEnvironment.withProfiles), ahead of the
    active profiles, so an active profile's file beats an included one's
    (spring-boot f72ea48 Profiles.java: getActivatedProfiles, asUniqueItemList)."""
    found: list[tuple[str, str]] = []
    for doc in docs:  # every source's list is added, none replaces another's
        for names, at in _list_entries([doc], "spring.profiles.include").values():
            found += [(n, at) for n in names]
    higher = SpringProps(config={}, upper=upper, env=env, profiles=(), profiles_source="")
    prop = higher.get("spring.profiles.include")
    if prop is not None and prop.value:
        found += [(n, prop.source.label()) for n in _split_list(prop.value)]
    out: list[tuple[str, str]] = []
    for name, at in found:
        if name not in [n for n, _ in out]:
            out.append((name, at))
    return out


def _profile_groups(docs: list[_Doc], upper: tuple[dict[str, PropValue], ...]
                    ) -> dict[str, tuple[list[str], str]]:
    """spring.profiles.group.<name>: the profiles a group activates with it (Spring Boot
    2.4+), from the files and the arguments, JSON and system properties."""
    groups = _list_entries(docs, "spring.profiles.group")
    for layer in reversed(upper):  # lowest first: a higher source's list replaces
        for c, prop in sorted(layer.items()):
            elements = [e for e in _ELEMENT.findall(prop.name) if not e.startswith("[")]
            if c.startswith("spring.profiles.group.") and prop.value and len(elements) > 3:
                groups[elements[3]] = (_split_list(prop.value), prop.source.label())
    return {k: v for k, v in groups.items() if k}


def _expand_profiles(profiles: list[str], groups: dict[str, tuple[list[str], str]]
                     ) -> list[str]:
    """Each profile followed by its group's members, depth first, each once (spring-boot
    f72ea48 Profiles.java: expandProfiles). Later profiles' files win, so a group's
    member beats the group's own profile file."""
    stack = list(reversed(profiles))
    out: list[str] = []
    while stack:
        current = stack.pop()
        if current in out:
            continue
        out.append(current)
        stack.extend(reversed(groups.get(current, ([], ""))[0]))
    return out


def _group_of(profile: str, named: list[str], groups: dict[str, tuple[list[str], str]]
              ) -> list[str]:
    """The group that added `profile` (none when it was named itself)."""
    if profile in named:
        return []
    return [next(g for g, (members, _) in groups.items() if profile in members)]


# --- the other property sources ---------------------------------------------------------


# Text shlex would only split at its whitespace: no quote and no escape in it.
_SHLEX_PLAIN = lazy(r"[^'\"\\]*")
_SHLEX_SPACE = lazy(r"[ \t\r\n]+")


def _shell_words(text: str) -> list[str]:
    """shlex.split(text), or text.split() where shlex refuses it (an open quote). Most
    texts (JAVA_OPTS=-Xmx512m -XX:+UseG1GC) have no quote nor backslash: split at shlex's
    whitespace without its character-by-character lexer, which was a tenth of linking."""
    if _SHLEX_PLAIN.fullmatch(text):
        return [w for w in _SHLEX_SPACE.split(text) if w]
    try:
        return shlex.split(bounded(text))
    except ValueError:
        return text.split()


def _args_of(container: Container) -> list[tuple[str, Source]]:
    """Every word of command and args; `sh -c "java -D... -jar"` strings are split."""
    words: list[tuple[str, Source]] = []
    for field, items in (("command", container.command), ("args", container.args)):
        for index, item in enumerate(items):
            source = replace(container.source, key=f"{field}[{index}]")
            if " " in item:
                parts = _shell_words(item)
                words.extend((p, source) for p in parts)
            else:
                words.append((item, source))
    return words


def _system_props(container: Container) -> list[tuple[str, str, Source]]:
    out: list[tuple[str, str, Source]] = []
    for word, source in _args_of(container):
        if word.startswith("-D") and "=" in word:
            name, _, value = word[2:].partition("=")
            out.append((name, value, source))
    for var in container.env:
        if var.name in ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "JAVA_OPTS") and var.value:
            for word in _shell_words(var.value):
                if word.startswith("-D") and "=" in word:
                    name, _, value = word[2:].partition("=")
                    out.append((name, value, replace(var.source, key=var.name)))
    return out


def _command_line(container: Container) -> list[tuple[str, str, Source]]:
    out = []
    for word, source in _args_of(container):
        if word.startswith("--") and "=" in word and "." in word.split("=", 1)[0]:
            name, _, value = word[2:].partition("=")
            out.append((name, value, source))
    return out


def _flatten_json(node: object, prefix: str, out: list[tuple[str, str | None]]) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            _flatten_json(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            _flatten_json(v, f"{prefix}[{i}]", out)
    elif isinstance(node, bool):
        out.append((prefix, "true" if node else "false"))
    else:
        out.append((prefix, None if node is None else str(node)))


def spring_properties(container: Container | None, app: AppSource | None,
                      profile: str | None, problems: list[ConfigProblem],
                      notices: list[str]) -> SpringProps:
    env = {e.name: e for e in (container.env if container else ())}
    sysprops = {canonical(n): PropValue(name=n, value=v, source=s, origin="system-property")
                for n, v, s in (_system_props(container) if container else [])}
    app_json: dict[str, PropValue] = {}
    json_var = env.get("SPRING_APPLICATION_JSON")
    if json_var is not None and json_var.value:
        import json  # here: few workloads set it, and it is 3 ms of start-up

        try:
            flat: list[tuple[str, str | None]] = []
            _flatten_json(jsontext.loads(json_var.value), "", flat)
            src = replace(json_var.source, key="SPRING_APPLICATION_JSON")
            app_json = {canonical(n): PropValue(name=n, value=v, source=src,
                                                origin="application-json") for n, v in flat}
        except json.JSONDecodeError as exc:
            _problem(problems, json_var.source,
                     f"SPRING_APPLICATION_JSON is not valid JSON: {exc.msg}", fatal=True)
    args = {canonical(n): PropValue(name=n, value=v, source=s, origin="argument")
            for n, v, s in (_command_line(container) if container else [])}
    upper = (args, app_json, sysprops)  # highest first

    named_locations = _config_locations(upper, env)
    files = []
    spring_files = app.of_kind("spring-config") if app else []
    workdir = image_workdir(container, app) if any(f.mounted for f in spring_files) else None
    for f in spring_files:
        if _loaded(f, named_locations, workdir):
            files.append(f)
        elif f.mounted:
            notices.append(f"{f.path}: mounted at /{f.rel}, not where Spring Boot reads "
                           f"configuration (the image's WORKDIR {workdir}, its config/ "
                           "and config/*/, or a spring.config.location); not read")
        else:
            notices.append(f"{f.path}: not where Spring Boot reads configuration "
                           "(classpath:/, classpath:/config/, ./, ./config/, or a "
                           "spring.config.location); not read")
    files.sort(key=lambda f: (_location_rank(f), f.rel.endswith(".properties"), f.rel))
    docs_by_file = {f.path: _documents(f, problems) for f in files}
    base_docs = [d for f in files if f.profile is None for d in docs_by_file[f.path]]

    # Active profiles: the caller's choice, else the highest source naming them.
    profiles: list[str]
    if profile:
        profiles, where = _split_list(profile), "configuration"
    else:
        profiles, where = [], ""
        found = SpringProps(config={}, upper=upper, env=env, profiles=(),
                            profiles_source="").get("spring.profiles.active")
        if found is not None and found.value:
            profiles, where = _split_list(found.value), found.source.label()
        if not where:
            for doc in reversed(base_docs):
                if doc.on_profile:
                    continue
                hits = [(n, v, ln) for n, v, ln in doc.entries
                        if canonical(n) == "spring.profiles.active"
                        or canonical(n).startswith("spring.profiles.active.[")]
                if hits:
                    profiles = [p for _, v, _ in hits for p in _split_list(v)]
                    where = f"{doc.file.path}:{hits[-1][2] + doc.file.line_offset}"
                    break
    # spring.profiles.include adds profiles ahead of the active ones, and a group adds
    # its members after its own profile (Spring Boot 2.4+)
    active = profiles
    includes = [(p, at) for p, at in _included_profiles(base_docs, upper, env)
                if p not in active]
    named = [p for p, _ in includes] + active
    if not named:
        named, where = ["default"], "Spring Boot default profile"
    groups = _profile_groups(base_docs, upper)
    profiles = _expand_profiles(named, groups)
    if profiles != ["default"]:
        said = [where] if active else []
        said += [f"{p}: spring.profiles.include at {at}" for p, at in includes]
        said += [f"{p}: group {g} at {groups[g][1]}"
                 for p in profiles for g in _group_of(p, named, groups)]
        notices.append(f"Spring profiles {', '.join(profiles)} (from {'; '.join(said)})")

    # Config data in precedence order (lowest first).
    ordered: list[tuple[tuple, _Doc]] = []
    for f in files:
        outside, loc = _location_rank(f)
        if f.profile is not None and f.profile not in profiles:
            continue
        profile_index = profiles.index(f.profile) + 1 if f.profile is not None else 0
        for doc in docs_by_file[f.path]:
            if doc.on_profile and not profile_matches(doc.on_profile, profiles):
                continue
            ordered.append(((outside, profile_index > 0, profile_index, loc,
                             f.rel.endswith(".properties")), doc))
    ordered.sort(key=lambda item: item[0])  # stable: document order kept within a file
    values: dict[str, PropValue] = {}
    for _, doc in ordered:
        for name, value, line in doc.entries:
            values[canonical(name)] = PropValue(
                name=name, value=value,
                source=doc.file.cite(line, name, name),
                origin="config")
    return SpringProps(config=values, upper=upper, env=env, profiles=tuple(profiles),
                       profiles_source=where)
