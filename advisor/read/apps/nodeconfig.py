"""node-config (`require("config")`): `config.get("db.poolMax")` / `config.db.poolMax`
resolved for one container, as node-config resolves it (pure).

Precedence, highest first (node-config@4c1c619 = v3.3.9 lib/config.js:548-705, the same
order in lib/util.js of v4):
1. custom-environment-variables.EXT: a key mapped to an env variable the container sets
   to a non-empty value (`substituteDeep`, lib/config.js:1101) takes that value;
2. $NODE_CONFIG, JSON, when the container sets it;
3. the files of NODE_CONFIG_DIR (default ./config), later ones winning:
   default, each of NODE_CONFIG_ENV or NODE_ENV (comma-separated, default
   "development"), local, local-{env}; each also as {name}-{NODE_APP_INSTANCE}; each
   name in the extension order of parser.js (js, cjs, mjs, ts, json, jsonc, json5, ...,
   yaml, yml, ...). {hostname}.EXT files are not looked for: a pod's hostname is its
   generated name, which no repository file is named for.
JSON and YAML files are read; a file of another format (a .js one) that could set the
key ahead of where it is found leaves it unknown.
"""

from __future__ import annotations

import json
from typing import Any

from msgspec.structs import replace

from advisor.model import EnvVar, Source
from advisor.read.apps.jsparse import UNKNOWN
from advisor.read.apps.pyeval import Val
from advisor.read.apps.source import AppFile

# parser.js's getFilesOrder (v3.3.9 parser.js:317, v4 parser.js:285; mjs and jsonc are
# v4's, iced v3's): a later extension of one name loads later, so wins
EXTENSIONS = ("js", "cjs", "mjs", "ts", "json", "jsonc", "json5", "hjson", "toml", "coffee",
              "iced", "yaml", "yml", "cson", "properties", "xml")
_READ = frozenset({"json", "jsonc", "json5", "yaml", "yml"})
DEFAULT_DIR = "config"


class NodeConfig:
    """One container's node-config: its files (the app's config-folder files, JSON/YAML
    and JS alike) and environment."""

    def __init__(self, files: list[AppFile], env: dict[str, EnvVar]) -> None:
        self.env = env
        self.files = files
        self._docs: dict[str, Any] = {}

    def _env(self, name: str) -> tuple[str | None, EnvVar | None]:
        """(value, variable): value None when unset or empty (node-config skips both),
        UNKNOWN-marked by a variable with value None (set from a Secret)."""
        var = self.env.get(name)
        if var is None or var.value == "":
            return None, None
        return var.value, var

    def _dir(self) -> tuple[str | None, str]:
        """The config folder relative to the app (None: not known) and why not."""
        value, var = self._env("NODE_CONFIG_DIR")
        if var is None:
            return DEFAULT_DIR, ""
        if value is None:
            return None, f"NODE_CONFIG_DIR is set from a Secret ({var.source.label()})"
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
        for name in ("NODE_CONFIG_ENV", "NODE_ENV"):
            value, var = self._env(name)
            if var is not None and value is None:
                return None, f"{name} is set from a Secret ({var.source.label()})"
            if value is not None:
                return value.split(","), ""
        return ["development"], ""

    def _load_order(self, folder: str, envs: list[str]) -> list[AppFile]:
        """The folder's files in the order node-config loads them (later wins)."""
        instance, _ = self._env("NODE_APP_INSTANCE")
        bases = ["default", *envs]
        for env in envs:
            bases += ["local", f"local-{env}"]
        here = {f.rel.rsplit("/", 1)[-1]: f for f in self.files
                if (f.rel.rsplit("/", 1)[0] if "/" in f.rel else "") == folder}
        out: list[AppFile] = []
        for base in bases:
            for ext in EXTENSIONS:
                for name in (f"{base}.{ext}", *([f"{base}-{instance}.{ext}"] if instance
                                                else [])):
                    if name in here and here[name] not in out:
                        out.append(here[name])
        return out

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
        envs, why_env = self._envs()
        if folder is None or envs is None:
            return _unknown(shown, why or why_env)
        files = {f.rel.rsplit("/", 1)[-1]: f for f in self.files
                 if (f.rel.rsplit("/", 1)[0] if "/" in f.rel else "") == folder}
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
                    return Val(UNKNOWN, replace(var.source, key=name), hidden=name)
                return Val(value, replace(var.source, key=f"{name}, node-config {key}"))
        value, var = self._env("NODE_CONFIG")
        if var is not None:
            if value is None:
                return Val(UNKNOWN, replace(var.source, key="NODE_CONFIG"), hidden="NODE_CONFIG")
            try:
                data = json.loads(value)
            except ValueError:
                data = None
            found = _walk(data, path)
            if found is not None and _scalar(found[0]):
                return Val(found[0], replace(var.source, key=f"NODE_CONFIG, node-config {key}"))
        for f in reversed(self._load_order(folder, envs)):
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


def _unknown(shown: str, why: str) -> Val:
    return Val(UNKNOWN, Source(), unread=f"node-config's {shown}: {why}")


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
    docs, problems = load_yaml_stream(text, f.path)
    if not problems and docs:
        return docs[0][0] if isinstance(docs[0][0], dict) else None
    if f.rel.endswith(".json"):
        try:
            data = json.loads(f.text)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None
    return None


