"""node-config (`require("config")`): `config.get("db.poolMax")` / `config.db.poolMax`
resolved for one container, as node-config resolves it (pure).

Precedence, highest first (node-config@4c1c619 = v3.3.9 lib/config.js:548-705; v4 and
later: lib/util.js, b4dfbd2 loadFileConfigs :311-365):
1. custom-environment-variables.EXT: a key mapped to an env variable the container sets
   to a non-empty value (`substituteDeep`, lib/config.js:1101) takes that value;
2. $NODE_CONFIG, JSON, when the container sets it;
3. the files of NODE_CONFIG_DIR (default ./config), later ones winning: default, each
   of NODE_CONFIG_ENV or NODE_ENV (comma-separated, default "development"), with HOST
   or HOSTNAME set {host}, {host}-{env} for each env, then local, local-{env} for each
   env; each also as {name}-{NODE_APP_INSTANCE}. A name met again takes its later
   place (the index is re-assigned: NODE_ENV=a,b loads local-a, local, local-b). v4 on
   loops name, then {name, name-instance}, then extension (util.js :350-361); v3 loops
   name, then extension, then {name, name-instance} (config.js:638-645); the
   extension order is parser.js getFilesOrder (js, cjs, mjs, ts, json, jsonc, json5,
   ..., yaml, yml, ...). Without HOST or HOSTNAME in the manifest the hostname is the
   pod's generated name, which no repository file is named for.
The variables are the manifest's, then those an envFrom source not held may set (not
known), then the image's Dockerfile ENV (cmdline.dockerfile_env). When NODE_ENV is not
known, the value is the one every environment gives, else unknown.
JSON and YAML files are read; a file of another format (a .js one) that could set the
key ahead of where it is found leaves it unknown.
"""

from __future__ import annotations

import json
from typing import Any

from msgspec.structs import replace

from advisor.model import EnvVar, Source
from advisor.read.apps.envfrom import env_from_hidden, env_from_label
from advisor.read.apps.jsparse import UNKNOWN
from advisor.read.apps.pyeval import Val
from advisor.read.apps.source import AppFile

# parser.js's getFilesOrder (v3.3.9 parser.js:317, v4 parser.js:285; mjs and jsonc are
# v4's, iced v3's): a later extension of one name loads later, so wins
EXTENSIONS = ("js", "cjs", "mjs", "ts", "json", "jsonc", "json5", "hjson", "toml", "coffee",
              "iced", "yaml", "yml", "cson", "properties", "xml")
_READ = frozenset({"json", "jsonc", "json5", "yaml", "yml"})
DEFAULT_DIR = "config"


# a stand-in environment no file is named for: what any such NODE_ENV loads
_NO_FILE_ENV = "\0"
# the file stems that are no environment's (custom-environment-variables is the map)
_NOT_ENVS = frozenset({"default", "local", "custom-environment-variables", "runtime"})


class NodeConfig:
    """One container's node-config: its files (the app's config-folder files, JSON/YAML
    and JS alike) and environment. `image_env`: the image's Dockerfile ENV (below the
    manifest's env); `major`: the major version of config the app's lock installs."""

    def __init__(self, files: list[AppFile], env: dict[str, EnvVar],
                 image_env: dict[str, EnvVar] | None = None, major: int | None = None) -> None:
        self.env = env
        self.image_env = image_env or {}
        self.major = major
        self.files = files
        self._docs: dict[str, Any] = {}

    def _env(self, name: str, env_from: bool = True) -> tuple[str | None, EnvVar | None]:
        """(value, variable): value None when unset or empty (node-config skips both),
        UNKNOWN-marked by a variable with value None (set from a Secret, maybe set by an
        envFrom source not held: its marker, or an image ENV of a build argument).
        `env_from` False: an envFrom source not held is not taken to set it (a config
        folder or a whole NODE_CONFIG in an app's env Secret would leave every app with
        one unknown; what is in the manifest or the image is read)."""
        var = self.env.get(name)
        if var is None:
            var = (env_from_hidden(self.env.values(), name) if env_from else None) \
                or self.image_env.get(name)
        if var is None or var.value == "":
            return None, None
        return var.value, var

    @staticmethod
    def _why(name: str, var: EnvVar) -> str:
        """Why the variable `name` (read as `var`, value None) is not known."""
        if var.name.endswith("*"):
            return f"{name} may be set by {env_from_label(var)}"
        if var.from_ref == "dockerfile":
            return f"{name} is set in the Dockerfile from a build argument ({var.source.label()})"
        return f"{name} is set from a Secret ({var.source.label()})"

    @staticmethod
    def _hidden(var: EnvVar, name: str) -> Source:
        """Where a value not held is cited: an envFrom marker at itself (keyed by its
        name, as StackContext.env_from_marker reads), else at the variable."""
        return replace(var.source, key=var.name if var.name.endswith("*") else name)

    def _dir(self) -> tuple[str | None, str]:
        """The config folder relative to the app (None: not known) and why not."""
        value, var = self._env("NODE_CONFIG_DIR", env_from=False)
        if var is None:
            return DEFAULT_DIR, ""
        if value is None:
            return None, self._why("NODE_CONFIG_DIR", var)
        if ":" in value:
            return None, f"NODE_CONFIG_DIR={value} names several folders"
        path = value.strip().rstrip("/")
        if path.startswith("./"):
            path = path[2:]
        if path.rsplit("/", 1)[-1] != "config":
            # only a folder named config is scanned for its files (source.classify)
            return None, f"NODE_CONFIG_DIR={value}: its files are not read"
        if not path.startswith("/"):
            return path, ""
        # an absolute path: the app folder it ends in (/app/config -> config)
        parts = path.strip("/").split("/")
        for k in range(len(parts)):
            rel = "/".join(parts[k:])
            if any(f.rel.rsplit("/", 1)[0] == rel for f in self.files if "/" in f.rel):
                return rel, ""
        return None, f"NODE_CONFIG_DIR={value} is not a folder of the app"

    def _envs(self) -> tuple[list[str] | None, str]:
        """The environments (None: not known, and why)."""
        for name in ("NODE_CONFIG_ENV", "NODE_ENV"):
            value, var = self._env(name)
            if var is not None and value is None:
                return None, self._why(name, var)
            if value is not None:
                return value.split(","), ""
        return ["development"], ""

    def _host(self) -> str | None:
        """HOST, else HOSTNAME, as the manifest or the image sets it (util.js :1396)."""
        for name in ("HOST", "HOSTNAME"):
            value, _ = self._env(name, env_from=False)
            if value:
                return value
        return None

    def _here(self, folder: str) -> dict[str, AppFile]:
        return {f.rel.rsplit("/", 1)[-1]: f for f in self.files
                if (f.rel.rsplit("/", 1)[0] if "/" in f.rel else "") == folder}

    def _load_order(self, folder: str, envs: list[str], instance: str | None = None,
                    v3: bool = False) -> list[AppFile]:
        """The folder's files in the order node-config loads them (later wins)."""
        return load_order(self._here(folder), envs, instance, self._host(), v3)

    def _scenarios(self, folder: str, envs: list[str] | None
                   ) -> tuple[list[tuple[list[str], str | None, bool]], str]:
        """Each (environments, instance, v3 order) the container may load with, and why
        there are several: NODE_ENV not known (each environment a file is named for,
        and one no file is named for), NODE_APP_INSTANCE not known, config's major
        version not known when an instance is set (v3 and v4 order files apart)."""
        whys: list[str] = []
        stems = {n.rsplit(".", 1)[0] for n in self._here(folder)
                 if n.rsplit(".", 1)[-1] in EXTENSIONS}
        if envs is None:
            found = {s.removeprefix("local-") for s in stems
                     if s not in _NOT_ENVS and not s.startswith("default-")}
            env_sets = [["development"], *([e] for e in sorted(found - {"development"})),
                        [_NO_FILE_ENV]]
        else:
            env_sets = [envs]
        value, var = self._env("NODE_APP_INSTANCE")
        instances: list[str | None] = [value]
        if var is not None and value is None:
            bases = {"default", "local", *(e for es in env_sets for e in es)}
            instances = [None, *sorted({s[len(b) + 1:] for s in stems for b in bases
                                        if s.startswith(f"{b}-")})]
            if len(instances) > 1:  # else no file is named for an instance
                whys.append(self._why("NODE_APP_INSTANCE", var))
        orders = [False] if self.major is not None and self.major >= 4 else \
            [True] if self.major is not None else [False, True]
        if any(instances) and len(orders) > 1:
            whys.append("NODE_APP_INSTANCE is set and the version of config installed "
                        "(v3 and v4 order its files apart) is not known")
        else:
            orders = orders[:1]
        return [(es, i, v3) for es in env_sets for i in instances for v3 in orders], \
            "; ".join(whys)

    def _doc(self, f: AppFile) -> Any:
        """The file's data (positioned mappings), or None when not read."""
        if f.path not in self._docs:
            self._docs[f.path] = _parse(f)
        return self._docs[f.path]

    def get(self, key: str, shown: str) -> Val | None:
        """The value of dotted `key` (config.get(key)); `shown` is the expression as
        written. None when no file sets it (config.get throws then); UNKNOWN, saying
        why, when what sets it is not read."""
        path = key.split(".")
        folder, why = self._dir()
        if folder is None:
            return _unknown(shown, why)
        envs, why_env = self._envs()
        files = self._here(folder)
        for ext in reversed(EXTENSIONS):
            mapping = files.get(f"custom-environment-variables.{ext}")
            if mapping is None:
                continue
            if ext not in _READ or (doc := self._doc(mapping)) is None:
                return _unknown(shown, f"{mapping.path} is not read")
            found = _walk(doc, path)
            if found is None:
                continue
            name = found[0]
            if isinstance(name, dict) and "__name" in name:
                name = name["__name"]  # {__name, __format}: a parsed value
                if self._env(str(name))[1] is not None:
                    return _unknown(shown, f"{name} is parsed by its __format "
                                    f"({mapping.path})")
            if not isinstance(name, str):
                continue
            value, var = self._env(name)
            if var is not None:
                if value is None:
                    return Val(UNKNOWN, self._hidden(var, name), hidden=name)
                return Val(value, replace(var.source, key=f"{name}, node-config {key}"))
        value, var = self._env("NODE_CONFIG", env_from=False)
        if var is not None:
            if value is None:
                return Val(UNKNOWN, self._hidden(var, "NODE_CONFIG"), hidden="NODE_CONFIG")
            try:
                data = json.loads(value)
            except (ValueError, RecursionError):
                data = None
            found = _walk(data, path)
            if found is not None and _scalar(found[0]):
                return Val(found[0], replace(var.source, key=f"NODE_CONFIG, node-config {key}"))
        scenarios, why_more = self._scenarios(folder, envs)
        results = [self._from_files(folder, key, path, shown, *one) for one in scenarios]
        first = results[0]
        if len(results) == 1 or all(_same(r, first) for r in results):
            return first
        sets = "; ".join(dict.fromkeys(
            "no file sets it" if r is None else r.unread.split(": ", 1)[-1] if r.unread
            else f"{r.source.label()} sets {r.value}" for r in results))
        return _unknown(shown, f"{'; '.join(w for w in (why_env, why_more) if w)}, and "
                        f"what it loads decides {key} ({sets})")

    def _from_files(self, folder: str, key: str, path: list[str], shown: str,
                    envs: list[str], instance: str | None, v3: bool) -> Val | None:
        """`key` as the config folder's files give it, loaded for `envs` and `instance`
        in v3's or v4's order."""
        for f in reversed(self._load_order(folder, envs, instance, v3)):
            ext = f.rel.rsplit(".", 1)[-1]
            doc = self._doc(f) if ext in _READ else None
            if doc is None:
                return _unknown(shown, f"{f.path}, which may set {key}, is not read")
            found = _walk(doc, path)
            if found is None:
                continue
            value, line = found
            if not _scalar(value):
                return _unknown(shown, f"{key} in {f.path} is not a string or number")
            return Val(value, f.cite(line, f"node-config {key}", path[-1]))
        return None


def load_order(here: dict[str, AppFile], envs: list[str], instance: str | None,
               host: str | None, v3: bool) -> list[AppFile]:
    """The files of `here` (name -> file) in the order node-config loads them: each name
    its index in allowedFiles, re-assigned when a name comes again (b4dfbd2 lib/util.js
    loadFileConfigs :324-361; v3.3.9 lib/config.js:614-645), sorted by it
    (locateMatchingFiles :381-402)."""
    bases = ["default", *envs]
    if host:
        first = host.split(".")[0]
        for env in envs:
            bases += [first, f"{first}-{env}"]
            if host != first:
                bases += [host, f"{host}-{env}"]
    for env in envs:
        bases += ["local", f"local-{env}"]
    index: dict[str, int] = {}
    at = 0
    for base in bases:
        names = [base, *([f"{base}-{instance}"] if instance else [])]
        pairs = [(n, e) for e in EXTENSIONS for n in names] if v3 else \
            [(n, e) for n in names for e in EXTENSIONS]
        for n, e in pairs:
            at += 1
            index[f"{n}.{e}"] = at
    return [here[n] for n in sorted((n for n in here if n in index), key=index.__getitem__)]


def _unknown(shown: str, why: str) -> Val:
    return Val(UNKNOWN, Source(), unread=f"node-config's {shown}: {why}")


def _same(a: Val | None, b: Val | None) -> bool:
    """Whether two resolutions give the same value (wherever each is cited)."""
    if a is None or b is None:
        return a is b
    return not a.unread and not b.unread and a.value == b.value and a.value is not UNKNOWN


def _scalar(value: object) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _walk(doc: Any, path: list[str]) -> tuple[Any, int | None] | None:
    """(value, 1-based line) at `path` of a positioned document, None when unset."""
    from advisor.read.sources.k8s import line_of

    cur = doc
    for key in path:
        if not isinstance(cur, dict) or key not in cur:
            return None
        cur = cur[key]
    line = line_of(doc, *path)
    return cur, line + 1 if line is not None else None


def _parse(f: AppFile) -> Any:
    """A JSON or YAML file's data, positioned (JSON is read as the YAML it is); None when
    it does not parse as either."""
    from advisor.read.sources.k8s import load_yaml_stream

    text = f.text
    if f.rel.endswith((".json", ".jsonc", ".json5")) and "\t" in text:
        text = text.replace("\t", " ")  # JSON allows tab indents, YAML does not
    try:
        docs, problems = load_yaml_stream(text, f.path)
    except RecursionError:
        docs, problems = [], ["too deeply nested"]
    if not problems and docs:
        return docs[0][0] if isinstance(docs[0][0], dict) else None
    if f.rel.endswith(".json"):
        try:
            data = json.loads(f.text)
        except (ValueError, RecursionError):
            # a file nested deeper than the parser's stack: not read (said by the
            # caller), never an internal error
            return None
        return data if isinstance(data, dict) else None
    return None


