"""The configuration files a PostgreSQL container finds at its paths: the ConfigMaps and
Secrets it mounts, as the kubelet lays them out, for advisor.read.sources.pgconf to
resolve `config_file`, `include`, `include_if_exists` and `include_dir` the way the
server does in its container.

- A configMap, secret or projected volume mounted whole is a directory holding one file
  per key (or per `items` entry, at its `path`): pgconf.MountedDir. Mounted with
  `subPath`, the one file (or folder) of the volume named there.
- A volume whose files are not in the repository (a ConfigMap or Secret it does not
  hold, an emptyDir, a persistentVolumeClaim) is a directory whose files are not known
  (MountedDir.files None, with why): what it may hold is said, never read as empty.

Used for the Bitnami chart's StatefulSets (advisor.read.sources.operators.bitnami) and
for any other PostgreSQL container (advisor.link.servers.server_from_workload).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from msgspec import Struct, field

from advisor.read.sources.pgconf import MountedDir, MountedFile

if TYPE_CHECKING:
    from advisor.read.sources.k8s import K8sObject
    from advisor.read.workloads import ConfigMapData, VolumeSpec

# Finds a "configmap" or "secret" by name in the pod's namespace; None: not held.
Finder = Callable[[str, str], "ConfigMapData | None"]


class ConfMounts(Struct):
    """What a container mounts, by path in the container: its directories (`dirs`),
    every file a repository object holds there (`files`: the object and key), and the
    object each mounted directory shows (`holders`)."""

    dirs: list[MountedDir] = field(default_factory=list)
    files: dict[str, tuple[ConfigMapData, str]] = field(default_factory=dict)
    holders: dict[str, K8sObject] = field(default_factory=dict)

    def mounted_files(self) -> dict[str, MountedFile]:
        """`files` as pgconf reads them (their text, cited where written)."""
        out = {}
        for path, (data, key) in self.files.items():
            display, offset = data.text_origin(key)
            out[path] = MountedFile(data.data[key], display, offset)
        return out

    def dir_at(self, path: str) -> MountedDir | None:
        return next((d for d in self.dirs if d.path == path), None)


def conf_mounts(mounts: Iterable[tuple[str, str, str]], volumes: Mapping[str, VolumeSpec],
                find: Finder) -> ConfMounts:
    """The ConfMounts of a container's mounts, each (volume, mountPath, subPath), the
    pod's volumes by name, and `find` for the objects they show."""
    out = ConfMounts()
    for vol, at, sub in mounts:
        if not at.startswith("/"):
            continue  # the API server refuses a relative mountPath
        at = posixpath.normpath(at)
        sub = sub.strip("/")
        spec = volumes.get(vol)
        if spec is None:
            continue
        if not spec.sources:
            if not sub:  # (a subPath of it may be a file or a folder: not known)
                out.dirs.append(MountedDir(at, None, why=f"volume {vol} ({spec.kind}), "
                                           "whose files are not in the repository"))
            continue
        shown = _volume_files(spec, find)
        if isinstance(shown, str):
            if not sub:
                out.dirs.append(MountedDir(at, None, why=shown))
            continue
        if sub in shown:
            out.files[at] = shown[sub]  # one key mounted as a file
            continue
        if sub:  # a folder of the volume (items with a path below it)
            shown = {p[len(sub) + 1:]: v for p, v in shown.items() if p.startswith(sub + "/")}
            if not shown:
                continue
        _add_dir(out, at, shown, _first_object(spec, find))
    return out


def _add_dir(out: ConfMounts, at: str, shown: dict[str, tuple[ConfigMapData, str]],
             holder: K8sObject | None) -> None:
    held: dict[str, MountedFile] = {}
    for name, (data, key) in shown.items():
        out.files[posixpath.join(at, name)] = (data, key)
        if "/" not in name:  # (a subdirectory of the volume is no file of it)
            display, offset = data.text_origin(key)
            held[name] = MountedFile(data.data[key], display, offset)
    out.dirs.append(MountedDir(at, held))
    if holder is not None:
        out.holders[at] = holder


def _first_object(spec: VolumeSpec, find: Finder) -> K8sObject | None:
    """The first object a volume shows (a projected volume may show several)."""
    for kind, name, _items in spec.sources:
        data = find(kind, name)
        if data is not None:
            return data.obj
    return None


def _volume_files(spec: VolumeSpec, find: Finder
                  ) -> dict[str, tuple[ConfigMapData, str]] | str:
    """File path in the volume -> (object, key); or why its files are not known."""
    files: dict[str, tuple[ConfigMapData, str]] = {}
    for kind, name, items in spec.sources:
        data = find(kind, name)
        title = "Secret" if kind == "secret" else "ConfigMap"
        if data is None:
            return f"{title} {name}, which is not in the repository"
        if items is None and data.open:
            return f"{title} {name}, which may hold keys not in the repository ({data.open})"
        chosen = [(k, k) for k in data.data] if items is None else list(items)
        for key, path in chosen:
            if key in data.data:
                files.setdefault(path.strip("/"), (data, key))
            elif (why := data.remote(key)) is not None:
                return f"{title} {name} key {key}, which is not in the repository ({why})"
    return files


def workload_conf_mounts(w: object, container: str, find: Finder) -> ConfMounts:
    """ConfMounts of `container` of a linked workload (advisor.read.workloads.Workload)."""
    mounts = w.mounts.get(container, [])  # type: ignore[attr-defined]
    subs = w.sub_paths.get(container, [])  # type: ignore[attr-defined]
    triples = [(vol, path, subs[i] if i < len(subs) else "")
               for i, (vol, path) in enumerate(mounts)]
    return conf_mounts(triples, w.volume_specs, find)  # type: ignore[attr-defined]


def config_file_arg(argv: Iterable[str]) -> str | None:
    """The config_file a postgres command line names (`-c config_file=P`,
    `--config-file=P`; postmaster.c reads `-` in a long option's name as `_`), the last
    one when several."""
    words = [str(a) for a in argv]
    found = None
    for i, arg in enumerate(words):
        if arg == "-c" and i + 1 < len(words):
            option = words[i + 1]
        elif arg.startswith(("-c", "--")):  # `-cname=value`, `--name=value`
            option = arg[2:]
        else:
            continue
        name, eq, value = option.partition("=")
        if eq and name.replace("-", "_") == "config_file" and value:
            found = value
    return found


def unread_conf_d(mounts: ConfMounts, config_file: str, read: list[str]
                  ) -> K8sObject | None:
    """The ConfigMap mounted at conf.d next to the file the server starts with, when
    that file's includes did not read it and it holds a .conf file."""
    path = posixpath.join(posixpath.dirname(config_file), "conf.d")
    holder = mounts.holders.get(path)
    if holder is None or path in read:
        return None
    found = mounts.dir_at(path)
    files = found.files if found is not None else None
    return holder if files and any(n.endswith(".conf") for n in files) else None
