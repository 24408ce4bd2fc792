"""`helm install` / `helm upgrade --install` commands, in a repository's scripts and
READMEs, that install a PostgreSQL server's chart the repository does not hold (Bitnami's
postgresql or postgresql-ha from a chart repository): a server this tool does not
budget, which is said, never a silent "no PostgreSQL server found".

Five of ten repositories sampled in audit 13e install their database so
(toporischev/lesson6's README `helm install pg bitnami/postgresql -f postgres/values.yaml`,
mattfenwick/scaling's dev/deploy.sh `helm upgrade "$REL" postgresql --install --repo
https://charts.bitnami.com/bitnami`); mattfenwick/scaling said "no findings (no PostgreSQL
server found)", exit 0.

Pure functions over text; the caller reads the files.
"""

from __future__ import annotations

import re

from msgspec import Struct
from msgspec.structs import replace

# `helm install` / `helm upgrade` options that take a value (helm v3.17 `helm install
# --help`, `helm upgrade --help`); any other option is taken as a flag
_VALUED = frozenset({
    "-f", "--values", "--set", "--set-string", "--set-file", "--set-json", "--set-literal",
    "-n", "--namespace", "--version", "--repo", "--timeout", "--kube-context",
    "--kubeconfig", "-o", "--output", "--post-renderer", "--post-renderer-args",
    "--description", "--username", "--password", "--ca-file", "--cert-file", "--key-file",
    "--keyring", "--labels", "-l", "--name-template", "--kube-apiserver", "--kube-as-user",
    "--kube-as-group", "--kube-token", "--registry-config", "--repository-config",
    "--repository-cache", "--history-max", "--wait-for"})
_COMMAND = re.compile(r"\bhelm\s+(install|upgrade)\s+(.*)$")
_COMMAND_END = frozenset({";", "&&", "||", "|", "&", ")", "`"})
# the charts that are a PostgreSQL server (advisor.link.releases _SERVER_CHARTS)
SERVER_CHARTS = ("postgresql", "postgresql-ha")


class HelmInstall(Struct, frozen=True, kw_only=True):
    line: int
    release: str  # as written: may hold a shell variable
    chart: str  # as written (bitnami/postgresql, oci://.../postgresql, postgresql)
    namespace: str = ""
    values: tuple[str, ...] = ()  # -f / --values files, as written
    sets: tuple[tuple[str, str], ...] = ()  # --set key=value pairs
    version: str = ""  # --version, as written ("" : the newest the repository has)
    repo: str = ""  # --repo URL
    # its --namespace is also the one the text installs the repository's own charts
    # into (mattfenwick/scaling's "${SCALING_NS}"): they are rendered in no namespace
    # here, so the server's namespace is dropped too (namespace "")
    shares_namespace: bool = False
    via: str = "helm install"  # or "helmfile" (a release of a helmfile.yaml)


def chart_name(chart: str) -> str:
    """The chart's own name: the last path segment, without a version (oci://r/postgresql,
    bitnami/postgresql@16.0.0, postgresql-16.0.0.tgz is not one: a file)."""
    return chart.rstrip("/").rsplit("/", 1)[-1].split("@", 1)[0].lower()


def server_installs(text: str) -> list[HelmInstall]:
    """The `helm install|upgrade` commands of `text` that install a PostgreSQL server's
    chart by name from a chart repository (a folder or a .tgz is a chart of the
    repository, rendered as one, and not taken here)."""
    if "helm" not in text:
        return []
    out = []
    commands = [replace(c, namespace=_VARIABLE.sub(r"$\1", _script_default(c.namespace, text)))
                for c in _commands(text)]
    # the namespaces the text installs the repository's own charts into (a folder or a
    # .tgz), which this tool renders in none
    own = {c.namespace for c in commands if c.namespace and _local(c.chart)}
    for found in commands:
        if found.namespace in own:
            found = replace(found, namespace="", shares_namespace=True)
        if "$" in found.release:
            found = replace(found, release=_script_default(found.release, text))
        if "$" in found.version:
            found = replace(found, version=_script_default(found.version, text))
        if chart_name(found.chart) in SERVER_CHARTS and not _local(found.chart):
            out.append(found)
    return out


def _commands(text: str) -> list[HelmInstall]:
    from advisor.read.apps.locate import logical_lines

    out = []
    for number, line in logical_lines(text):
        if line.lstrip().startswith("#"):  # a shell comment (a command left out)
            continue
        m = _COMMAND.search(line)
        found = _parse(m.group(1), m.group(2), number) if m is not None else None
        if found is not None:
            out.append(found)
    return out


def _local(chart: str) -> bool:
    """A chart of the repository (a folder or a packaged .tgz), not one by name."""
    return chart.startswith((".", "/", "~")) or chart.endswith((".tgz", ".tar.gz"))


_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def _script_default(word: str, text: str) -> str:
    """`word` with a shell variable the script sets once replaced by that value:
    `POSTGRES_RELEASE_NAME=${POSTGRES_RELEASE_NAME:-"my-pg"}` or `NAME="my-pg"`
    (mattfenwick/scaling's dev/deploy.sh); unchanged when set otherwise or not once."""
    m = _VARIABLE.fullmatch(word)
    if m is None:
        return word
    name = re.escape(m.group(1))
    found = re.findall(rf"^\s*(?:export\s+)?{name}=(?:\$\{{{name}:-([^}}]*)\}}|(\S+))\s*$",
                       text, re.M)
    if len(found) != 1:
        return word
    value = (found[0][0] or found[0][1]).strip("\"'")
    return value if value and "$" not in value else word


def _parse(verb: str, rest: str, number: int) -> HelmInstall | None:
    from advisor.read.apps.locate import shell_words

    words = shell_words(rest)
    if words is None:
        return None
    positional: list[str] = []
    values: list[str] = []
    sets: list[tuple[str, str]] = []
    namespace = version = repo = ""
    generate = False
    i = 0
    while i < len(words) and words[i] not in _COMMAND_END and not words[i].startswith("#"):
        word = words[i]
        name, eq, value = word.partition("=")
        if word.startswith("-") and len(word) > 1:
            got: str | None = None
            if name in _VALUED and eq:
                got = value
            elif word in _VALUED and i + 1 < len(words):
                got, i = words[i + 1], i + 1
            elif word in ("-g", "--generate-name"):
                generate = True
            if got is not None:
                if name in ("-f", "--values"):
                    values += [v for v in got.split(",") if v]
                elif name in ("--set", "--set-string"):
                    for pair in got.split(","):
                        key, _eq, val = pair.partition("=")
                        sets.append((key.strip(), val.strip().strip("\"'")))
                elif name in ("-n", "--namespace"):
                    namespace = got
                elif name == "--version":
                    version = got
                elif name == "--repo":
                    repo = got
        else:
            positional.append(word)
        i += 1
    if verb == "install" and generate and len(positional) == 1:
        return HelmInstall(line=number, release="", chart=positional[0], namespace=namespace,
                           values=tuple(values), sets=tuple(sets), version=version, repo=repo)
    if len(positional) != 2:
        return None
    return HelmInstall(line=number, release=positional[0], chart=positional[1],
                       namespace=namespace, values=tuple(values), sets=tuple(sets),
                       version=version, repo=repo)


def service_name(install: HelmInstall, values: dict) -> str | None:
    """The Service clients reach, as the chart names it, from the command's --set pairs
    over its values files' `values`. Bitnami postgresql (templates/_helpers.tpl
    postgresql.v1.primary.fullname): common.names.fullname, with `-primary` under
    architecture=replication; postgresql-ha: `<fullname>-pgpool` (templates/pgpool/
    service.yaml). common.names.fullname is fullnameOverride, else the release name when it
    holds the chart's name, else `<release>-<chart>`. None when the release name is a
    shell variable or generated."""
    sets = dict(install.sets)
    chart = chart_name(install.chart)
    override = values.get("fullnameOverride")
    full = sets.get("fullnameOverride") or (override if isinstance(override, str) else None)
    if not full:
        release = install.release
        if not release or "$" in release or "{{" in release:
            return None
        full = release if chart in release else f"{release}-{chart}"
    if chart == "postgresql-ha":
        return f"{full}-pgpool"
    if (sets.get("architecture") or values.get("architecture")) == "replication":
        return f"{full}-primary"
    return full


_REPO_ADD = re.compile(r"\bhelm\s+repo\s+add\s+(?:--?[\w-]+(?:=\S+)?\s+)*([\w.-]+)\s+(\S+)")


def is_bitnami(install: HelmInstall, text: str) -> bool:
    """Whether the chart is Bitnami's: `bitnami/postgresql`, an OCI reference under
    bitnamicharts, `--repo https://charts.bitnami.com/bitnami`, or `<alias>/postgresql`
    where the same text runs `helm repo add <alias> <a bitnami URL>`."""
    chart = install.chart.lower()
    if chart.startswith("oci://") or install.repo:
        return "bitnami" in (chart if chart.startswith("oci://") else install.repo.lower())
    alias = chart.split("/", 1)[0] if "/" in chart else ""
    if alias == "bitnami":
        return True
    return bool(alias) and any(name.lower() == alias and "bitnami" in url.lower()
                               for name, url in _REPO_ADD.findall(text))


_HF_KEY = re.compile(r"^(\s*)(-\s+)?([A-Za-z_]\w*):\s*(.*?)\s*$")


_HelmfileItem = tuple[str, dict[str, str], list[str], int]  # (section, keys, values, line)


def _helmfile_entries(text: str) -> tuple[dict[str, str], list[_HelmfileItem]]:
    """The `repositories:` aliases (name -> URL) and the entries of every top-level list
    of a helmfile state file, read by lines (see helmfile_server_installs)."""
    repos: dict[str, str] = {}
    items: list[_HelmfileItem] = []
    section = ""
    item_indent = -1  # the column of the `- ` that starts an entry of the section
    values_indent = -1  # the column of the entry's `values:` while its list is read
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith(("#", "{{")):
            continue
        column = len(line) - len(line.lstrip())
        if 0 <= values_indent < column and line.lstrip().startswith("- ") and items:
            if column == values_indent or column == values_indent + 2:
                item = line.lstrip()[2:].strip().strip("\"'")
                # an inline mapping (`- primary:`) is values this reader does not take:
                # never a file, so the server is said, not built without them
                items[-1][2].append(f"(inline values, line {number})"
                                    if _HF_KEY.match(line) else item)
            continue
        values_indent = -1
        m = _HF_KEY.match(line)
        if m is None:
            continue
        dash, key, value = m.group(2), m.group(3), m.group(4)
        if not column and not dash:
            section, item_indent = key, -1
            continue
        if dash and (item_indent < 0 or column == item_indent):
            item_indent = column
            items.append((section, {}, [], number))
            key_column = column + len(dash)
        elif items and not dash:
            key_column = item_indent + 2 if item_indent >= 0 else -1
            if column != key_column:
                continue  # a key of a nested mapping (set:, a values mapping)
        else:
            continue
        if key == "values" and not value:
            values_indent = key_column
        items[-1][1].setdefault(key, value.strip("\"'"))
    for sec, keys, _values, _line in items:
        if sec == "repositories" and keys.get("name") and keys.get("url"):
            repos[keys["name"]] = keys["url"]
    return repos, items


def helmfile_server_installs(text: str) -> list[HelmInstall]:
    """The releases of a helmfile state file that install a PostgreSQL server's chart from
    a chart repository (`chart: bitnami/postgresql`, its `repositories:` alias resolved
    to `repo`), as `helm install` commands would: name, namespace, version and values
    files as written. Read by lines, as the file is a Go template before it is YAML
    (DTS-STN/BenefitsFinderBackend's helmfile/helmfile.yaml: `{{ if ... }}` lines,
    `name: cms-bakeoff-strapi-pg-{{ .Environment.Name }}`)."""
    repos, items = _helmfile_entries(text)
    out = []
    for sec, keys, values, number in items:
        chart = keys.get("chart", "")
        if sec != "releases" or chart_name(chart) not in SERVER_CHARTS or _local(chart):
            continue
        alias = chart.split("/", 1)[0] if "/" in chart and "://" not in chart else ""
        namespace = keys.get("namespace", "")
        out.append(HelmInstall(line=number, release=keys.get("name", ""), chart=chart,
                               # a templated namespace (`{{ .Values.namespace1 }}`) is
                               # not known: none, as the repository's charts rendered here
                               namespace="" if "{{" in namespace else namespace,
                               values=tuple(values),
                               version=keys.get("version", ""), repo=repos.get(alias, ""),
                               via="helmfile"))
    return out


def helmfile_chart_releases(text: str) -> list[HelmInstall]:
    """The releases of a helmfile state file of a chart from a chart repository that is no
    PostgreSQL server's (`chart: zitadel/zitadel`, `oci://...`): this tool does not render
    them, but their values may name the server a chart of the repository deploys (audit
    47 D1: zitadel/zitadel-charts examples/cloudnativepg's helmfile.yaml, whose Cluster
    "fitted, peak 0"). A chart folder (`./postgres-cluster`) is rendered as any chart of
    the repository and not taken; a templated chart is not known and not taken."""
    repos, items = _helmfile_entries(text)
    out = []
    for sec, keys, values, number in items:
        chart = keys.get("chart", "")
        alias = chart.split("/", 1)[0] if "://" not in chart else ""
        # helmfile takes `<alias>/<chart>` from a chart repository only when the alias
        # is one of its `repositories:`; any other path is a folder (a local chart)
        if sec != "releases" or not chart or "{{" in chart or _local(chart) \
                or chart_name(chart) in SERVER_CHARTS or (alias and alias not in repos) \
                or "/" not in chart:
            continue
        namespace = keys.get("namespace", "")
        out.append(HelmInstall(line=number, release=keys.get("name", ""), chart=chart,
                               namespace="" if "{{" in namespace else namespace,
                               values=tuple(values), version=keys.get("version", ""),
                               repo=repos.get(alias, "") if alias else chart,
                               via="helmfile"))
    return out
