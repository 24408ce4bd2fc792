"""The files a container of a pod reads, as the pod gives them: pure, over the workload
and the repository's ConfigMaps and Secrets (no I/O).

- A ConfigMap or Secret key at its mount path (the volume's `items` and the mount's
  `subPath` honoured) is held: its text, cited at the object's own lines.
- Not held, so what it says is not known here: a ConfigMap or Secret the repository does
  not hold (a Secret a Job or an operator creates at run time), a key it may hold but
  does not name, a persistentVolumeClaim or hostPath, a path on no volume (a file of the
  image), or a file on an emptyDir written by nothing read here.
- A file on an emptyDir is what a container of the pod writes there before the
  container reads it (an init container, or the container's own shell before it execs
  its program), written in one of these ways:
  - matrix-tools `render-config -output OUT IN...`: the YAML files IN, in the order
    given, deep-merged (element-hq/ess-helm matrix-tools/internal/cmd/render-config
    ParseArgs, Go `flag`; internal/pkg/renderer/renderer.go RenderConfig and
    deepMergeMaps: maps merge key by key, a later value wins, arrays are appended);
  - a shell `cat IN... > OUT`, possibly through `sed -e 's/TEXT/NEW/'` substitutions of
    literal text, or `cp IN OUT`: the files' texts one after the other.
  Anything else writing there leaves the file not held.
  Only the last write of a file is read, each (writer, volume, path, depth) once; a file
  whose tree would take more than MAX_READS file reads (`cat A A A ... > A` fans out
  per level) is not held, said in a notice (PodFiles.notices), never a default.

`PodFiles(workload, index).view(container)` gives a container's `read(path)` and
`listdir(path)`; readers get it as StackContext.pod_files.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
import shlex
from typing import TYPE_CHECKING, Literal

from advisor.model import Container, Frozen, Source
from advisor.read.apps.source import AppFile
from advisor.read.shellwords import bounded

if TYPE_CHECKING:
    from advisor.read.workloads import ConfigIndex, Workload

MAX_DEPTH = 4  # writers whose inputs another writer wrote, followed this deep
MAX_READS = 1000  # file reads one written file's tree may take, each part as often as used


class PodText(Frozen, kw_only=True):
    """A file's content as the container sees it: `held` (one file's text), `deep` (the
    deep merge of `parts`, matrix-tools render-config), `concat` (`parts` one after the
    other, `cat`), or `unheld` (not in the repository: `why`)."""

    kind: Literal["held", "deep", "concat", "unheld"]
    file: AppFile | None = None
    parts: tuple[PodText, ...] = ()
    why: str = ""
    where: Source | None = None  # the command that wrote it (deep, concat)
    # the file reads its tree stands for, each part counted as often as it is used (a
    # reader walks a shared part once per use)
    reads: int = 1

    def describe(self) -> str:
        if self.kind == "held" and self.file is not None:
            return self.file.path
        if self.kind == "unheld":
            return self.why
        return f"{self.kind} of {', '.join(p.describe() for p in self.parts)}"


def unheld(why: str) -> PodText:
    return PodText(kind="unheld", why=why)


class _Write(Frozen, kw_only=True):
    """A file a container writes: at `out` (its path in that container), from `inputs`
    (paths in that container) merged as `mode`, or not read (`why`)."""

    out: str
    mode: Literal["deep", "concat", "unheld"]
    inputs: tuple[str, ...] = ()
    seds: tuple[tuple[str, str, bool], ...] = ()  # (text, new, every occurrence)
    why: str = ""
    where: Source


class PodFiles:
    """The files of one pod, per container (`view`)."""

    def __init__(self, workload: Workload, index: ConfigIndex) -> None:
        self.w = workload
        self.index = index
        self._writes: dict[str, list[_Write]] = {}
        # what a writer's last write of a file makes: (writer, volume, path, depth)
        self._made: dict[tuple[str, str, str, int], PodText] = {}
        self.notices: list[str] = []  # files not read past MAX_READS

    def view(self, container: str, depth: int = 0) -> ContainerFiles:
        return ContainerFiles(self, container, depth)

    def container(self, name: str) -> Container | None:
        return next((c for c in self.w.containers if c.name == name), None)

    def writes(self, name: str) -> list[_Write]:
        if name not in self._writes:
            c = self.container(name)
            self._writes[name] = _container_writes(c) if c is not None else []
        return self._writes[name]


class ContainerFiles:
    """What one container of the pod sees at a path."""

    def __init__(self, pod: PodFiles, container: str, depth: int) -> None:
        self.pod = pod
        self.name = container
        self.depth = depth

    def _mounts(self) -> list[tuple[str, str, str]]:
        """(volume, mount path, subPath) of the container's mounts."""
        mounts = self.pod.w.mounts.get(self.name, [])
        subs = self.pod.w.sub_paths.get(self.name, [])
        return [(vol, path.rstrip("/") or "/", subs[i] if i < len(subs) else "")
                for i, (vol, path) in enumerate(mounts)]

    def _mount_of(self, path: str) -> tuple[str, str] | None:
        """(volume, path inside it) of `path`: the deepest mount at or above it."""
        best = None
        for vol, mount, sub in self._mounts():
            under = path == mount or path.startswith(mount.rstrip("/") + "/")
            if under and (best is None or len(mount) > len(best[1])):
                best = (vol, mount, sub)
        if best is None:
            return None
        vol, mount, sub = best
        rest = path[len(mount):].strip("/")
        inside = posixpath.join(sub.strip("/"), rest) if sub else rest
        return vol, inside.strip("/")

    def read(self, path: str) -> PodText:
        """The file at `path` (absolute, in this container)."""
        if not path.startswith("/"):
            return unheld(f"{path}: a path relative to the image's working directory, "
                          "a file not in the repository")
        path = posixpath.normpath(path)
        found = self._mount_of(path)
        if found is None:
            return unheld(f"{path} is on no volume of the pod: the image's own file, not "
                          "in the repository")
        vol, inside = found
        spec = self.pod.w.volume_specs.get(vol)
        if spec is None:
            return unheld(f"{path}: volume {vol} is not declared in the pod")
        if spec.sources or spec.kind in ("configMap", "secret", "projected"):
            return self._from_objects(path, vol, inside)
        if spec.kind == "emptyDir":
            written = self._written(vol, inside)
            if written is not None:
                return written
            return unheld(f"{path} is on emptyDir {vol}, written at run time by nothing "
                          "pool-advisor reads")
        return unheld(f"{path} is on volume {vol} ({spec.kind}), whose files are not in the "
                      "repository")

    def _from_objects(self, path: str, vol: str, inside: str) -> PodText:
        from advisor.read.workloads import lookup

        spec = self.pod.w.volume_specs[vol]
        for kind, name, items in spec.sources:
            data = lookup(self.pod.index, kind, self.pod.w.namespace, name)
            title = "Secret" if kind == "secret" else "ConfigMap"
            if data is None:
                return unheld(f"{path}: {title} {name} (volume {vol}) is not in the "
                              "repository")
            keys = {p.strip("/"): k for k, p in items} if items is not None else \
                {k: k for k in data.data}
            key = keys.get(inside)
            if key is None:
                if items is None and data.open:
                    return unheld(f"{path}: {title} {name} may hold key {inside} "
                                  f"({data.open})")
                continue
            if key in data.data:
                shown, offset = data.text_origin(key)
                return PodText(kind="held", file=AppFile(
                    path=shown, rel=path.lstrip("/"), kind="pod-file", text=data.data[key],
                    line_offset=offset, places=data.text_places(key)))
            why = data.remote(key)
            return unheld(f"{path}: {title} {name} key {key} " +
                          (f"is not in the repository ({why})" if why else "is not set"))
        return unheld(f"{path}: no key of volume {vol} is mounted there")

    def is_dir(self, path: str) -> bool:
        """Whether `path` is a folder: written with a trailing slash, a volume mounted
        whole, a folder of a volume's keys or files written, or holding a mount."""
        from advisor.read.workloads import lookup

        if path.endswith("/"):
            return True
        path = posixpath.normpath(path)
        for _vol, mount, sub in self._mounts():
            if mount.startswith(path.rstrip("/") + "/") or (mount == path and not sub):
                return True
        found = self._mount_of(path)
        if found is None:
            return False
        vol, inside = found
        spec = self.pod.w.volume_specs.get(vol)
        if spec is None:
            return False
        if spec.kind == "emptyDir":
            return any(name for name in self._written_names(vol, inside))
        prefix = inside + "/" if inside else ""
        for kind, name, items in spec.sources:
            data = lookup(self.pod.index, kind, self.pod.w.namespace, name)
            paths = [p.strip("/") for _k, p in items] if items is not None else \
                list(data.data) if data is not None else []
            if any(p.startswith(prefix) for p in paths):
                return True
        return False

    def listdir(self, path: str) -> tuple[list[tuple[str, PodText]], PodText | None]:
        """The files directly in the directory `path` known here, by name, sorted; and
        why further files there are not known (None: there are no others)."""
        if not path.startswith("/"):
            return [], unheld(f"{path}: a path relative to the image's working directory")
        path = posixpath.normpath(path)
        names: dict[str, PodText] = {}
        found = self._mount_of(path)
        if found is None:
            rest: PodText | None = unheld(f"{path} is on no volume of the pod: the image's "
                                          "own folder, not in the repository")
        else:
            rest = self._list_volume(path, *found, names)
        for _vol, mount, _sub in self._mounts():  # a file mounted into it (subPath)
            if posixpath.dirname(mount) == path and mount != path:
                names[posixpath.basename(mount)] = self.read(mount)
        if rest is not None and found is None and names:
            # the image's folder with files mounted into it: its own files are the image's
            rest = unheld(f"{path}: the image's own files there are not in the repository")
        return sorted(names.items()), rest

    def _list_volume(self, path: str, vol: str, inside: str,
                     names: dict[str, PodText]) -> PodText | None:
        from advisor.read.workloads import lookup

        spec = self.pod.w.volume_specs.get(vol)
        if spec is None:
            return unheld(f"{path}: volume {vol} is not declared in the pod")
        if spec.kind == "emptyDir":
            written = self._written_names(vol, inside)
            if not written:
                return unheld(f"{path} is emptyDir {vol}, whose files are written at run "
                              "time by nothing pool-advisor reads")
            for name in written:
                names[name] = self.read(posixpath.join(path, name))
            return None
        if not spec.sources:
            return unheld(f"{path} is on volume {vol} ({spec.kind}), whose files are not in "
                          "the repository")
        for kind, name, items in spec.sources:
            data = lookup(self.pod.index, kind, self.pod.w.namespace, name)
            if data is None:
                title = "Secret" if kind == "secret" else "ConfigMap"
                return unheld(f"{path}: {title} {name} (volume {vol}) is not in the "
                              "repository")
            if items is None and data.open:
                return unheld(f"{path}: {name} may hold further keys ({data.open})")
            paths = [p.strip("/") for _k, p in items] if items is not None else list(data.data)
            for p in paths:
                if posixpath.dirname(p) == inside:
                    names[posixpath.basename(p)] = self.read(
                        posixpath.join(path, posixpath.basename(p)))
        return None

    def _writers(self) -> list[str]:
        """The containers whose writes this one sees when it starts, in the order they
        run, then itself (its own shell before it execs its program): the init
        containers before an init container; every init container for the others."""
        me = self.pod.container(self.name)
        if me is None:
            return [self.name]
        before = []
        for c in self.pod.w.containers:
            if me.role == "init" and c.name == self.name:
                break
            if c.role in ("init", "sidecar") and c.name != self.name:
                before.append(c.name)
        return [*before, self.name]

    def _written(self, vol: str, inside: str) -> PodText | None:
        """What the last container to write the emptyDir file `inside` of `vol` wrote."""
        if self.depth >= MAX_DEPTH:
            return unheld(f"written from files other containers write, more than "
                          f"{MAX_DEPTH} deep: not read")
        last = None  # (view, write): the last write wins, only it is read
        for writer in self._writers():
            view = self if writer == self.name else self.pod.view(writer, self.depth + 1)
            for write in self.pod.writes(writer):
                target = view._mount_of(posixpath.normpath(write.out)) \
                    if write.out.startswith("/") else None
                if target == (vol, inside):
                    last = view, write
        if last is None:
            return None
        view, write = last
        key = (view.name, vol, inside, view.depth)
        made = self.pod._made.get(key)
        if made is None:
            made = self.pod._made[key] = view._made(write)
        return made

    def _written_names(self, vol: str, inside: str) -> list[str]:
        names = []
        for writer in self._writers():
            view = self if writer == self.name else self.pod.view(writer, self.depth + 1)
            for write in self.pod.writes(writer):
                target = view._mount_of(posixpath.normpath(write.out)) \
                    if write.out.startswith("/") else None
                if target is not None and target[0] == vol and \
                        posixpath.dirname(target[1]) == inside:
                    names.append(posixpath.basename(target[1]))
        return sorted(set(names))

    def _made(self, write: _Write) -> PodText:
        """The content `write` makes, its inputs read in this container."""
        if write.mode == "unheld":
            return unheld(write.why)
        deeper = ContainerFiles(self.pod, self.name, self.depth + 1)
        parts: list[PodText] = []
        for name in write.inputs:
            if any(ch in name for ch in "*?["):
                listed, rest = deeper.listdir(posixpath.dirname(name) or "/")
                pattern = posixpath.basename(name)
                parts += [text for entry, text in listed
                          if fnmatch.fnmatchcase(entry, pattern) and not entry.startswith(".")]
                if rest is not None:
                    parts.append(rest)  # the folder's other files are not known
            else:
                parts.append(deeper.read(name))
        reads = sum(p.reads for p in parts)
        if reads > MAX_READS:
            why = (f"{write.out} (written at {write.where.label()}) is made of {reads} "
                   "file reads, counting those of the files its inputs are written from: "
                   f"more than {MAX_READS}, not read")
            if why not in self.pod.notices:
                self.pod.notices.append(why)
            return unheld(why)
        if write.seds:
            parts = [_sed(p, write.seds) for p in parts]
        return PodText(kind=write.mode, parts=tuple(parts), where=write.where, reads=reads)


def _sed(text: PodText, seds: tuple[tuple[str, str, bool], ...]) -> PodText:
    """`text` through literal `s/TEXT/NEW/[g]` substitutions, each line on its own as
    sed does (NEW never holds a newline, so the lines stay where they were)."""
    if text.kind == "unheld":
        return text
    if text.kind != "held" or text.file is None:
        return PodText(kind=text.kind, parts=tuple(_sed(p, seds) for p in text.parts),
                       where=text.where, why=text.why, reads=text.reads)
    lines = text.file.text.split("\n")
    for old, new, every in seds:
        lines = [line.replace(old, new) if every else line.replace(old, new, 1)
                 for line in lines]
    from msgspec.structs import replace

    return PodText(kind="held", file=replace(text.file, text="\n".join(lines)))


# -- what a container writes ------------------------------------------------------------

_SHELLS = ("sh", "bash", "ash", "dash", "zsh")


def _container_writes(c: Container) -> list[_Write]:
    words = [*c.command, *c.args]
    env = {e.name: e for e in c.env}
    from advisor.read.apps.cmdline import _expand_k8s
    from advisor.read.apps.locate import image_name

    words = [_expand_k8s(w, env)[0] for w in words]
    where = c.source
    if image_name(c.image).lower() == "matrix-tools" and "render-config" in words:
        return _render_config(words[words.index("render-config") + 1:], where)
    for i, word in enumerate(words[:-2]):
        if word.rsplit("/", 1)[-1] in _SHELLS and words[i + 1].startswith("-") and \
                "c" in words[i + 1]:
            return _shell_writes(words[i + 2], env, where)
    return []


def _render_config(rest: list[str], where: Source) -> list[_Write]:
    """matrix-tools render-config's flags (Go `flag`: -name value, -name=value, either
    with one or two dashes, up to the first argument that is no flag) and files."""
    out = None
    j = 0
    while j < len(rest) and rest[j].startswith("-") and rest[j] not in ("-", "--"):
        name, eq, value = rest[j].lstrip("-").partition("=")
        if name not in ("output", "array-overwrite-keys"):
            return []  # a flag render-config refuses: it does not run
        if not eq:
            if j + 1 >= len(rest):
                return []
            j += 1
            value = rest[j]
        if name == "output":
            out = value
        j += 1
    if rest[j:j + 1] == ["--"]:
        j += 1
    if not out:
        return []
    return [_Write(out=out, mode="deep", inputs=tuple(rest[j:]), where=where)]


_SEPARATORS = (";", "&&", "||", "&")


def _shell_writes(script: str, env: dict, where: Source) -> list[_Write]:
    from advisor.read.apps.cmdline import _expand_shell

    out: list[_Write] = []
    for line in script.replace("\\\n", " ").split("\n"):
        text, _used, _cpu = _expand_shell(line, env)
        try:
            lexer = shlex.shlex(bounded(text), posix=True, punctuation_chars=";&|<>")
            lexer.whitespace_split = True
            lexer.commenters = "#"
            tokens = list(lexer)
        except ValueError:
            continue
        command: list[list[str]] = [[]]
        for token in [*tokens, ";"]:
            if token in _SEPARATORS:
                write = _pipeline_write([cmd for cmd in command if cmd], where)
                if write is not None:
                    out.append(write)
                command = [[]]
            elif token == "|":
                command.append([])
            else:
                command[-1].append(token)
    return out


def _pipeline_write(pipeline: list[list[str]], where: Source) -> _Write | None:
    """The file one pipeline writes (`cat A B | sed ... > OUT`, `cp A OUT`), or None."""
    if not pipeline:
        return None
    first = pipeline[0]
    if first and first[0] == "cp" and len(pipeline) == 1 and ">" not in first:
        args = [a for a in first[1:] if not a.startswith("-")]
        if len(args) != 2:
            return None
        src, dst = args
        if dst.endswith("/"):
            dst += posixpath.basename(src)
        return _Write(out=dst, mode="concat", inputs=(src,), where=where)
    target = None
    for cmd in pipeline:
        for i, token in enumerate(cmd):
            if token in (">", ">>", ">|") and i + 1 < len(cmd):
                target = (token, cmd[i + 1])
                del cmd[i:i + 2]
                break
    if target is None:
        return None
    op, out = target
    shown = " | ".join(" ".join(cmd) for cmd in pipeline)
    if op == ">>" or not first or first[0] != "cat" or \
            any(token.startswith("<") for token in first[1:]):
        return _Write(out=out, mode="unheld", where=where,
                      why=f"{out} is written by `{shown}` ({where.label()}), which "
                          "pool-advisor does not read")
    seds: list[tuple[str, str, bool]] = []
    for cmd in pipeline[1:]:
        found = _sed_expressions(cmd)
        if found is None:
            return _Write(out=out, mode="unheld", where=where,
                          why=f"{out} is written by `{shown}` ({where.label()}), whose "
                              f"`{' '.join(cmd)}` pool-advisor does not read")
        seds += found
    inputs = tuple(a for a in first[1:] if not a.startswith("-"))
    return _Write(out=out, mode="concat", inputs=inputs, seds=tuple(seds), where=where)


_SED_META = re.compile(r"[.\[\]*^$\\]")


def _sed_expressions(cmd: list[str]) -> list[tuple[str, str, bool]] | None:
    """`sed -e 's/A/B/' -e ...` (or `sed 's/A/B/g'`) of literal substitutions; None
    for any other sed or command."""
    if not cmd or cmd[0] != "sed":
        return None
    exprs: list[str] = []
    args = cmd[1:]
    i = 0
    while i < len(args):
        if args[i] in ("-e", "--expression") and i + 1 < len(args):
            exprs.append(args[i + 1])
            i += 2
        elif args[i].startswith("-"):
            return None  # -i, -n, -f ...: not a plain filter of substitutions
        elif not exprs:
            exprs.append(args[i])
            i += 1
        else:
            return None  # a file argument: sed reads it, not its input
    out = []
    for expr in exprs:
        found = _substitution(expr)
        if found is None:
            return None
        out.append(found)
    return out


def _substitution(expr: str) -> tuple[str, str, bool] | None:
    if len(expr) < 4 or expr[0] != "s":
        return None
    d = expr[1]
    fields: list[str] = []
    cur = ""
    i = 2
    while i < len(expr):
        ch = expr[i]
        if ch == "\\" and i + 1 < len(expr):
            cur += expr[i:i + 2]
            i += 2
            continue
        if ch == d:
            fields.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    fields.append(cur)
    if len(fields) != 3 or fields[2] not in ("", "g"):
        return None
    old, new = (f.replace("\\" + d, d) for f in fields[:2])
    if _SED_META.search(old) or "&" in new.replace("\\&", "") or "\\" in new.replace(
            "\\&", "").replace("\\\\", "") or "\n" in new:
        return None
    return old, new.replace("\\&", "&").replace("\\\\", "\\"), fields[2] == "g"
