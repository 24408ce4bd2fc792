"""`@Bean` methods that make a DataSource, and the configuration properties bound to them,
read from Java and Kotlin sources (pure: text in, records out).

How Spring Boot binds them (spring-projects/spring-boot v3.3.4, 8e9dc7b):
- `@ConfigurationProperties("P")` on a `@Bean` method binds P.* onto the object the method
  returns (ConfigurationPropertiesBean.java:207 `withExistingValue(bean)`), as the class
  of that object, not the declared return type (JavaBeanBinder.java:257
  `instance.getClass()`): a method declared `DataSource` returning a HikariDataSource
  takes P.maximum-pool-size through HikariDataSource.setMaximumPoolSize.
- a DataSourceProperties bean under `@ConfigurationProperties("X")` holds X.url,
  X.username, ... only; it has no `hikari` property (DataSourceProperties.java), so
  X.hikari.* is bound by nothing unless the DataSource's own @Bean names that prefix
  (spring.datasource.hikari is bound only on Boot's own bean,
  DataSourceConfiguration.java:115). `initializeDataSourceBuilder()` builds HikariCP
  when it is on the class path (DataSourceBuilder.java:404, lookupPooled).
- any DataSource bean makes Boot's own back off
  (DataSourceAutoConfiguration.java:66,74 `@ConditionalOnMissingBean({ DataSource.class,
  XADataSource.class })`).
"""

from __future__ import annotations

import re

from advisor.lazyregex import lazy
from advisor.model import Frozen
from advisor.read.apps.spring import canonical, profile_matches

# Java: `public DataSource name(@Qualifier("x") DataSourceProperties p) ... {`;
_JAVA_METHOD = lazy(r"\b([A-Z][\w.]*)\s+(\w+)\s*\(((?:[^()]|\([^()]*\))*)\)\s*"
                    r"(?:throws\s[^{;]*)?\{")
# Kotlin: `fun name(p: DataSourceProperties): DataSource`, `fun name() = Type()`
_KOTLIN_METHOD = lazy(r"\bfun\s+(\w+)\s*\(((?:[^()]|\([^()]*\))*)\)\s*"
                      r"(?::\s*([A-Z][\w.]*)|=\s*([A-Z][\w.]*)\s*\()")
_PREFIX = lazy(r"@ConfigurationProperties\s*\(\s*(?:(?:prefix|value)\s*=\s*)?"
               r"(?:\[\s*)?(?:\"([^\"]+)\"|([\w.]+))")
_BEAN = lazy(r"@Bean\b(?:\s*\(\s*(?:(?:name|value)\s*=\s*)?[\[{]?\s*\"([^\"]+)\")?")
_PROFILE = lazy(r"@Profile\s*\(\s*(?:value\s*=\s*)?[\[{]?\s*"
                r"((?:(?:\"[^\"]*\"|[\w.]+)\s*,?\s*)+)")
_CONSTANT = lazy(r"\b(?:static\s+final\s+String|const\s+val)\s+(\w+)\s*(?::\s*String\s*)?="
                 r"\s*\"([^\"]*)\"")
_QUALIFIED = lazy(r"@Qualifier\s*\(\s*(?:value\s*=\s*)?\"([^\"]+)\"\s*\)\s*"
                  r"(?:(?:final\s+)?(\w+)\s+\w+|\w+\s*:\s*(\w+))")
# What builds a HikariCP pool in a bean's body; `.type(X)` names another pool
_BUILDS = lazy(r"DataSourceBuilder|initializeDataSourceBuilder|\bHikariDataSource\s*\(")
_TYPE = lazy(r"\.type\s*\(\s*([\w.]+)")
_DATASOURCE_TYPES = frozenset({"DataSource", "HikariDataSource"})


class Bean(Frozen, kw_only=True):
    method: str
    names: tuple[str, ...]  # the method and @Bean's names
    type: str  # declared return type's simple name
    prefix: str | None  # @ConfigurationProperties on the method
    primary: bool
    path: str
    line: int
    body: str  # text up to the next method: what it calls
    params: str
    qualifiers: tuple[tuple[str, str], ...]  # (qualifier, parameter type)


def _annotations(text: str, start: int) -> str:
    """The annotations written before a declaration at `start`: its own line's text
    before it, and the lines above that are annotations or inside one's parentheses."""
    line_start = text.rfind("\n", 0, start) + 1
    block = [text[line_start:start]]
    depth = 0
    for line in reversed(text[:line_start].splitlines()):
        s = line.strip()
        closes = s.count(")") - s.count("(")
        if depth > 0 or closes > 0 or s.startswith("@") or not s \
                or s.startswith(("//", "*", "/*")):
            block.append(s)
            depth = max(0, depth + closes)
            continue
        break
    return "\n".join(reversed(block))


def _file_profile(text: str, constants: dict[str, str]) -> str | None:
    """@Profile on the class: written before `class`."""
    at = re.search(r"\bclass\s", text)
    m = _PROFILE.search(text[: at.start()]) if at else None
    return _profile_expr(m.group(1), constants) if m else None


def _profile_expr(written: str, constants: dict[str, str]) -> str:
    """The profile expression, with String constants of the code resolved; one not
    read (JHipsterConstants.SPRING_PROFILE_CLOUD, from a library) is a profile of its
    own name, so it is not active: what it guards is not counted."""
    out = []
    for item in re.findall(r"\"([^\"]*)\"|([\w.]+)", written):
        literal, name = item
        out.append(literal if not name else constants.get(name.rsplit(".", 1)[-1],
                                                         f"<{name}>"))
    return ",".join(out)


def constants(texts: list[str]) -> dict[str, str]:
    """`static final String NAME = "..."` / `const val NAME = "..."` of the code."""
    return {m.group(1): m.group(2) for t in texts for m in _CONSTANT.finditer(t)}


def beans(path: str, text: str, profiles: tuple[str, ...],
          consts: dict[str, str] | None = None) -> list[Bean]:
    """The @Bean methods of a Java/Kotlin file, less those of profiles not active."""
    if "@Bean" not in text:
        return []
    found: list[tuple[int, int, str, str, str]] = []  # (start, end, name, params, type)
    for m in _JAVA_METHOD.finditer(text):
        if m.group(1) not in ("new", "return", "class", "else"):
            found.append((m.start(), m.end(), m.group(2), m.group(3), m.group(1)))
    for m in _KOTLIN_METHOD.finditer(text):
        found.append((m.start(), m.end(), m.group(1), m.group(2),
                      m.group(3) or m.group(4)))
    found.sort()
    consts = consts or {}
    whole = _file_profile(text, consts)
    if whole and not profile_matches(whole, profiles):
        return []
    out = []
    for i, (start, end, name, params, rtype) in enumerate(found):
        notes = _annotations(text, start)
        bean = _BEAN.search(notes)
        if bean is None:
            continue
        profile = _PROFILE.search(notes)
        if profile and not profile_matches(_profile_expr(profile.group(1), consts),
                                           profiles):
            continue
        m = _PREFIX.search(notes)
        prefix = (m.group(1) or consts.get(m.group(2).rsplit(".", 1)[-1])) if m else None
        nxt = found[i + 1][0] if i + 1 < len(found) else len(text)
        qualifiers = tuple((q.group(1), q.group(2) or q.group(3) or "")
                           for q in _QUALIFIED.finditer(params))
        out.append(Bean(method=name, names=(name, *((bean.group(1),) if bean.group(1)
                                                     else ())),
                        type=rtype.rsplit(".", 1)[-1], prefix=prefix,
                        primary="@Primary" in notes, path=path,
                        line=text[:start].count("\n") + 1, body=text[end:nxt],
                        params=params, qualifiers=qualifiers))
    return out


class DataSourceBean(Frozen, kw_only=True):
    """One DataSource @Bean: where its URL and its pool size are bound from."""

    bean: Bean
    hikari: bool  # builds HikariCP (DataSourceBuilder, initializeDataSourceBuilder, new)
    size_prefix: str | None  # P of P.maximum-pool-size; None: nothing binds one
    url_prefix: str | None  # X of X.url (a DataSourceProperties bean) or the size prefix
    other_type: str | None = None  # `.type(BasicDataSource.class)`: not HikariCP


def _uses(bean: Bean, other: Bean) -> bool:
    """`bean` calls `other`'s method or takes it as a (qualified) parameter."""
    if re.search(rf"\b{re.escape(other.method)}\s*\(", bean.body):
        return True
    return any(q in other.names and t == other.type for q, t in bean.qualifiers)


def _linked(bean: Bean, kind: str, all_beans: list[Bean]) -> Bean | str | None:
    """The `kind` bean (DataSourceProperties, HikariConfig) a DataSource bean uses: one
    it calls or names (qualifier, parameter name), else the @Primary one when it takes
    that type; "boot" when it takes one and the code declares none (Boot's own,
    spring.datasource); None when it takes none or Spring could not choose (two and no
    primary: NoUniqueBeanDefinitionException)."""
    candidates = [b for b in all_beans if b.type == kind]
    for other in candidates:
        if _uses(bean, other):
            return other
    if not re.search(rf"\b{kind}\b", bean.params):
        return None
    if not candidates:
        return "boot"
    for other in candidates:  # a parameter named like the bean (Spring's fallback)
        if re.search(rf"\b{re.escape(other.method)}\b", bean.params):
            return other
    return next((b for b in candidates if b.primary), None)


def datasource_beans(all_beans: list[Bean]) -> list[DataSourceBean]:
    out = []
    for bean in all_beans:
        if bean.type not in _DATASOURCE_TYPES:
            continue
        hikari = bool(_BUILDS.search(bean.body))
        kind = _TYPE.search(bean.body)
        other = kind.group(1) if kind and "Hikari" not in kind.group(1) else None
        props = _linked(bean, "DataSourceProperties", all_beans)
        config = _linked(bean, "HikariConfig", all_beans)
        size = bean.prefix or (config.prefix if isinstance(config, Bean) else None)
        url = "spring.datasource" if props == "boot" else \
            props.prefix if isinstance(props, Bean) else None
        out.append(DataSourceBean(bean=bean, hikari=hikari and other is None,
                                  size_prefix=size, url_prefix=url or size,
                                  other_type=other))
    return out


def covered(prefix: str, beans_: list[DataSourceBean]) -> bool:
    """A key-inferred DataSource prefix that a bean read here already binds."""
    c = canonical(prefix)
    for b in beans_:
        for p in (b.size_prefix, b.url_prefix):
            if p and (c == canonical(p) or c.startswith(canonical(p) + ".")
                      or canonical(p).startswith(c + ".")):
                return True
    return False
