"""Which directory holds a workload's application source, when the configuration does
not say (`[[workloads]] source = "..."`). Inferred, in order, from:

1. build contexts that name the image: skaffold.yaml `build.artifacts[].image/context`,
   docker-compose `services.<name>.image` + `build` (also matched by service name,
   and by the build's `tags` and `cache_from` images); then `docker build -t IMAGE
   FOLDER` commands in shell scripts, Makefiles and READMEs;
2. a directory with a Dockerfile whose name equals the image's repository name
   (registry, path and tag stripped: ghcr.io/acme/orders-api:2.3 -> orders-api) or the
   workload's name;
3. the only Dockerfile in the repository.

Steps 2-3 read BuildHints.dockerfile_dirs, which only scan_build_hints fills: the engine's
hints (engine/repository.build_contexts) leave it empty on purpose. Filled, step 2 found
the folders the linker's own name match finds (advisor.link.clients), and step 3 gave the
only Dockerfile's folder to published programs (RSO-12/core-backend's elasticsearch,
grafana, kibana, prometheus; HealthGate's quay.io/keycloak; jdost/homelab-manifests'
twenty apps took backup/): audit 24, work/task1-*.txt. The linker's fallback
(fallback_app_dir) takes the only application folder instead, with its guards.

Every inference carries a reason, for a notice: the mapping is a guess the user can
pin in configuration.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import PurePosixPath

from advisor.lazyregex import lazy
from advisor.model import Frozen
from advisor.read import jsontext
from advisor.read.apps.source import SKIP_DIRS
from advisor.read.bitnami_names import BITNAMI_OWNERS
from advisor.read.fs import InputError, Root, rel_inside, walk

MAX_DIRS = 20_000


class BuildHints(Frozen, kw_only=True):
    """What the repository says about images and their build directories (I/O done)."""

    dockerfile_dirs: tuple[str, ...] = ()  # relative to the root, "" for the root
    contexts: tuple[tuple[str, str, str], ...] = ()  # (image or service, context, where)
    # (folder, the image its Dockerfile's last stage is FROM, the Dockerfile as shown,
    # the FROM line): what a custom image is built on (a PostgreSQL server's own image)
    bases: tuple[tuple[str, str, str, int], ...] = ()
    # (compose file as shown, service, image, the service's line or 0) of compose
    # services that run PostgreSQL or PgBouncer: a deployment this tool does not budget,
    # which a notice says (a PA901 warning when no server is budgeted at all)
    compose_databases: tuple[tuple[str, str, str, int], ...] = ()
    # (image or service, Dockerfile from the root, file that says so): skaffold's
    # artifact `docker.dockerfile` (default Dockerfile, in the context), compose's
    # `build.dockerfile`: the file that builds that image, of several in one folder
    dockerfiles: tuple[tuple[str, str, str], ...] = ()
    # every Dockerfile of the repository (path from the root), with the image its last
    # stage is FROM ("" when not read): `<image>.Dockerfile` is that image's
    dockerfile_files: tuple[tuple[str, str], ...] = ()
    # (build folder, compose file:line, service, the names its `environment` sets) of
    # each compose service that builds: a pod given all those names runs that build
    compose_env: tuple[tuple[str, str, str, tuple[str, ...]], ...] = ()
    # those of `dockerfiles` that are not in the tree: a build that cannot run as written
    # (DimaJoyti/HackAI's compose names deployments/docker/Dockerfile.api-gateway, absent)
    missing_dockerfiles: tuple[tuple[str, str, str], ...] = ()


class AppDirGuess(Frozen, kw_only=True):
    directory: str
    reason: str


def image_name(image: str) -> str:
    """Repository basename of an image reference, without registry, tag or digest."""
    ref = image.split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    return last.split(":", 1)[0]


# docker-compose.yml, compose.yaml and their variants (docker-compose.override.yml,
# docker-compose-developer.yml, compose.dev.yaml)
_COMPOSE_FILE = lazy(r"^(?:docker-)?compose(?:[.-][\w.-]+)?\.ya?ml$")


def is_dockerfile_name(name: str) -> bool:
    """Dockerfile, Dockerfile.<variant> or <variant>.Dockerfile, in any case
    (heilrake/go-microservice: infra/development/docker/auth-service.DockerFile)."""
    if "ocker" not in name and "OCKER" not in name:
        return False  # most names: no lower() (the walk asks it of every file)
    lower = name.lower()
    return lower == "dockerfile" or lower.startswith("dockerfile.") or \
        lower.endswith(".dockerfile")


def dockerfile_label(path: str) -> str | None:
    """What a Dockerfile's name says it builds: docker/backups.Dockerfile and
    Dockerfile.backups -> backups; None for a plain Dockerfile."""
    lower = path.rsplit("/", 1)[-1].lower()
    if lower.endswith(".dockerfile"):
        return lower[: -len(".dockerfile")] or None
    if lower.startswith("dockerfile."):
        return lower[len("dockerfile."):] or None
    return None


def is_build_file(name: str) -> bool:
    """A file that maps images to build folders: skaffold.yaml or a compose file."""
    return name == "skaffold.yaml" or _COMPOSE_FILE.match(name) is not None


def is_build_script(name: str) -> bool:
    """A file whose `docker build -t IMAGE FOLDER` commands map images to build folders:
    a shell script, a Makefile, a README (flask-vue-kubernetes' README.md: `docker build
    -t mjhea0/flask-kubernetes ./services/server`, its compose service named otherwise)."""
    lower = name.lower()
    return name.endswith(".sh") or lower.endswith(_WINDOWS_SCRIPTS) or lower in (
        "makefile", "gnumakefile") or (lower.startswith("readme") and lower.endswith(".md"))


# Windows build scripts (DeepakGiri2/GoConnect's scripts/k8s/build-images.bat: `docker
# build -t goconnect-auth:latest -f build\docker\Dockerfile.auth .`): read with / for \
_WINDOWS_SCRIPTS = (".bat", ".cmd", ".ps1")


# Files of build commands read at most (the shallowest first): a repository of many
# scripts is not read whole for this.
MAX_BUILD_SCRIPTS = 200
_BUILD_CMD = lazy(r"\b(?:docker|podman)\s+(?:buildx\s+|image\s+)?build\s+(.*)$")
# `docker build` / `docker buildx build` options that take a value (docker CLI v28 and
# buildx v0.2x reference); any other option stops the reading of that command (its
# folder is not guessed)
_VALUED = frozenset({
    "-t", "--tag", "-f", "--file", "--build-arg", "--target", "--platform", "--label",
    "--cache-from", "--cache-to", "-o", "--output", "--secret", "--ssh", "--network",
    "--progress", "--iidfile", "--add-host", "--build-context", "--allow", "--attest",
    "--annotation", "--cgroup-parent", "--metadata-file", "--shm-size", "--ulimit", "-m",
    "--memory", "--memory-swap", "--cpu-shares", "-c", "--cpuset-cpus", "--cpuset-mems",
    "--cpu-period", "--cpu-quota", "--isolation", "--security-opt", "--provenance",
    "--sbom", "--builder", "--call"})
_FLAGS = frozenset({"--no-cache", "--pull", "--push", "--load", "-q", "--quiet", "--rm",
                    "--force-rm", "--squash", "--compress", "--disable-content-trust",
                    "--check"})
_COMMAND_END = frozenset({";", "&&", "||", "|", "&", ")", "`"})


def build_command(text: str) -> tuple[list[str], str] | None:
    """The (tags, context) of a `docker build` command line, or None when it is not
    one that names both plainly (a variable, an option not known, no or two folders)."""
    found = build_command_file(text)
    return None if found is None else (found[0], found[1])


def shell_words(text: str) -> list[str] | None:
    """A command line's words as the shell splits them, its operators (`;`, `&&`, `|`,
    `)`, a backtick) words of their own; None for an unclosed quote."""
    import shlex

    from advisor.read.shellwords import bounded

    try:
        lexer = shlex.shlex(bounded(text), posix=True, punctuation_chars=";&|()`")
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:  # an unclosed quote
        return None


def build_command_file(text: str) -> tuple[list[str], str, str | None] | None:
    """build_command, and the Dockerfile the command names (-f/--file), None when it
    names none: docker then reads <context>/Dockerfile."""
    m = _BUILD_CMD.search(text)
    if m is None:
        return None
    words = shell_words(m.group(1))
    if words is None:
        return None
    tags: list[str] = []
    positional: list[str] = []
    named_file: str | None = None
    i = 0
    while i < len(words) and words[i] not in _COMMAND_END:
        word = words[i]
        name, eq, value = word.partition("=")
        if word.startswith("-") and len(word) > 1:
            if name in _VALUED and eq:
                got = value
            elif word in _VALUED and i + 1 < len(words):
                got, i = words[i + 1], i + 1
            elif word in _FLAGS:
                got = None
            else:
                return None
            if name in ("-t", "--tag") and got is not None:
                tags.append(got)
            if name in ("-f", "--file") and got is not None:
                named_file = got
        else:
            positional.append(word)
        i += 1
    if not tags or len(positional) != 1:
        return None
    context = positional[0]
    if any("$" in x or "{{" in x for x in (*tags, context)) or "://" in context \
            or context == "-" or context.startswith(("git@", "/")):
        return None
    return tags, context, named_file


# `cd DIR` on a line of its own, or before `&&` (a README's step "cd ./backend", then
# `docker build -t node-backend:latest .`): where the following build commands run
_CD = lazy(r"\s*(?:\$\s+)?cd\s+([^\s;&|$`'\"]+)\s*(?:&&\s*(.*))?$")


def _cd_folder(root: Root, here: str, to: str, dockerfile_dirs: tuple[str, ...]) -> str | None:
    """The folder a `cd` moves to: under the file's folder or the root (one only); when
    neither holds it, the repository's one folder of that name with a Dockerfile
    (annachemicz/cpu_ram_monitoring's kubernetes/README.md says `cd ./backend` of
    project/backend, its image's only source); else None (not known)."""
    found = {f for b in sorted({"", here})
             if (f := rel_inside(f"{b}/{to}" if b else to)) is not None
             and os.path.isdir(os.path.join(root.path, f) if f else root.path)}
    if len(found) == 1:
        return found.pop()
    if found:
        return None
    name = PurePosixPath(to).name
    if not name or name in (".", "..") or "/" in to.strip("./").rstrip("/"):
        return None
    named = [d for d in dockerfile_dirs if PurePosixPath(d).name == name]
    return named[0] if len(named) == 1 else None


def script_contexts(root: Root, path: str, dockerfile_dirs: tuple[str, ...] = (),
                    dockerfile_paths: tuple[str, ...] = (),
                    dockerfiles: list[tuple[str, str, str]] | None = None
                    ) -> list[tuple[str, str, str]]:
    """(image, build folder, file:line) of the `docker build -t IMAGE FOLDER` commands
    a script, Makefile or README holds; (image, the -f Dockerfile from the root,
    file:line) of those naming one found in the tree are added to `dockerfiles` (the
    file that builds that image: humble92/todo-pg builds its API from the root with
    Dockerfile.fastapi, which copies main.py only, not the worker/ beside it).
    A folder is taken when it is one only: of the Makefile's own folder (make runs
    there), else of the repository root or the file's folder (a script or README may
    be run from either): `.` in a subfolder's script names two folders, and is taken
    for the one that holds the Dockerfile a command without -f reads
    (<context>/Dockerfile), else skipped. A command's `-f FILE` is read from where it
    runs, so that folder must hold FILE (see _runs_where). A script's variable
    assigned once a plain value (`IMAGE_NAME="web:latest"`) is read as that value."""
    try:
        text = root.read_text(path)
    except InputError:
        return []
    if "build" not in text:
        return []
    if path.lower().endswith(_WINDOWS_SCRIPTS):
        text = text.replace("\\", "/")
    shown = root.rel(path)
    here = PurePosixPath(shown).parent.as_posix()
    here = "" if here == "." else here
    make = os.path.basename(path).lower() in ("makefile", "gnumakefile")
    values = shell_constants(text) if path.endswith(".sh") else {}
    out: list[tuple[str, str, str]] = []
    cwd: str | None = None  # the folder a `cd` before moved to ("?": one not known)
    for number, line in logical_lines(text):
        if not make and (moved := _CD.match(line)) is not None:
            cwd = _cd_folder(root, here, moved.group(1), dockerfile_dirs) or "?"
            line = moved.group(2) or ""
        found = build_command_file(_substitute(line, values) if values else line)
        if found is None:
            continue
        tags, context, named_file = found
        if cwd == "?":
            continue  # run where a `cd` went, a folder not known here
        bases = [cwd] if cwd is not None else [here] if make else sorted({"", here})
        if named_file is not None and _checkable(named_file):
            bases = _runs_where(root, bases, named_file, cwd is None, dockerfile_paths)
        folders = {f for b in bases
                   if (f := rel_inside(f"{b}/{context}" if b else context)) is not None
                   and os.path.isdir(os.path.join(root.path, f) if f else root.path)}
        if named_file is None:
            # docker reads <context>/Dockerfile: a folder without one cannot be it, even
            # when it is the only one (yao780913/dotnet-kubernetes' root README builds
            # `.` after a bulleted `cd myWebApp2`: the root holds no Dockerfile)
            folders = {f for f in folders if has_default_build_file(root, f)}
        if len(folders) != 1:
            continue
        folder = folders.pop()
        if named_file is not None and _checkable(named_file):
            # -f a Dockerfile that runs `go build ./cmd/auth`: that package, read with
            # the module's packages it imports, not the whole shared context
            files = [f for b in bases if (f := rel_inside(f"{b}/{named_file}" if b
                                                          else named_file)) is not None
                     and os.path.isfile(os.path.join(root.path, f))]
            package = _go_build_folder(root, folder, files[0]) if len(files) == 1 else None
            folder = package if package is not None else folder
            if dockerfiles is not None and len(files) == 1:
                dockerfiles += [(tag, files[0], f"{shown}:{number}") for tag in tags]
        out += [(tag, folder, f"{shown}:{number}") for tag in tags]
    return out


def _checkable(file: str) -> bool:
    """A `-f` value whose place can be looked up: relative, no variable, not stdin."""
    return file != "-" and "$" not in file and not file.startswith(("/", "~"))


def _runs_where(root: Root, bases: list[str], file: str, guessed: bool,
                dockerfile_paths: tuple[str, ...]) -> list[str]:
    """The folders among `bases` a `docker build -f FILE` can run from: docker reads a
    local build's -f file relative to the current directory, not the context (docker/cli
    cli/command/image/build/context.go@0997f5a GetContextFromLocalDir), so the folder
    it runs from holds FILE. YonathanGuez/to_do_8200AC's README runs `docker build -f
    Dockerfile.prod .` for its server and its client: the root holds no Dockerfile.prod,
    so neither is the root's build. When the folder was only guessed (no `cd` said it)
    and none holds FILE, the repository's one folder that does (of the Dockerfiles
    found), else none."""
    held = [b for b in bases
            if os.path.isfile(os.path.join(root.path, b, file) if b
                              else os.path.join(root.path, file))]
    if held or not guessed:
        return held
    want = rel_inside(file)
    if not want:
        return []
    where = {rel_inside(p[: -len(want)]) for p in dockerfile_paths
             if p == want or p.endswith(f"/{want}")}
    return [w for w in where if w is not None] if len(where) == 1 else []


_SHELL_ASSIGN = lazy(r"^\s*(?:export\s+|readonly\s+|local\s+|declare\s+)?"
                     r"([A-Za-z_]\w*)=(.*)$", re.M)
_SHELL_REF = lazy(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))")


def shell_constants(text: str) -> dict[str, str]:
    """A script's variables assigned exactly once, to a plain value (no expansion,
    substitution or space): `IMAGE_NAME="your-backend-image:latest"`. One assigned
    twice, or to `${IMAGE:-default}` (the caller's environment may set it), is not."""
    seen: dict[str, list[str]] = {}
    for m in _SHELL_ASSIGN.finditer(text):
        seen.setdefault(m.group(1), []).append(m.group(2))
    out: dict[str, str] = {}
    for name, assigned in seen.items():
        if len(assigned) != 1:
            continue
        raw = re.sub(r"\s+#.*$", "", assigned[0]).strip()
        value = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"" \
            else raw
        if value and not any(c in value for c in "$`'\"\\ ;&|()<>"):
            out[name] = value
    return out


def _substitute(line: str, values: dict[str, str]) -> str:
    """`$NAME` and `${NAME}` of the known constants replaced; others left (unknown)."""
    return _SHELL_REF.sub(lambda m: values.get(m.group(1) or m.group(2), m.group(0)), line)


# GitHub Actions' docker/build-push-action: `context` (default: the repository at the
# ref, its root) and `tags` (a list or newline/comma-separated) name what it builds
# (docker/build-push-action README, inputs)
_BUILD_PUSH = "docker/build-push-action@"


def workflow_contexts(root: Root) -> list[tuple[str, str, str]]:
    """(image, build folder, file:line) of the docker/build-push-action steps of the
    repository's .github/workflows: the image a CI job publishes, built from that folder
    (Only-Juice/OJ-API's workflow pushes heavenmanysugar/orangejuice-api from `.`, the
    image its Deployment runs). A tag or context that is an expression is not read."""
    from advisor.read.sources.k8s import load_yaml_stream

    folder = os.path.join(root.path, ".github", "workflows")
    try:
        names = sorted(e.name for e in os.scandir(folder)
                       if e.is_file() and e.name.endswith((".yml", ".yaml")))
    except OSError:
        return []
    out: list[tuple[str, str, str]] = []
    for name in names:
        path = os.path.join(folder, name)
        try:
            text = root.read_text(path)
        except InputError:
            continue
        if _BUILD_PUSH not in text:
            continue
        shown = root.rel(path)
        docs, _ = load_yaml_stream(text, shown)
        for doc, _line in docs:
            jobs = doc.get("jobs") if isinstance(doc, dict) else None
            top = _workflow_env(doc, {})
            for job in (jobs.values() if isinstance(jobs, dict) else ()):
                steps = job.get("steps") if isinstance(job, dict) else None
                env = _workflow_env(job, top)
                for step in (steps if isinstance(steps, list) else ()):
                    out += _build_push_step(step, text, shown, _workflow_env(step, env))
    return out


# `${{ env.NAME }}`: a value of the workflow's, job's or step's `env` (GitHub Actions
# contexts, env: the step's overrides the job's, the job's the workflow's)
_ENV_EXPR = lazy(r"\$\{\{\s*env\.([A-Za-z_]\w*)\s*\}\}")


def _workflow_env(node: object, outer: dict[str, str]) -> dict[str, str]:
    """`outer` with the plain values (no expression) of `node`'s `env` laid over it."""
    env = node.get("env") if isinstance(node, dict) else None
    if not isinstance(env, dict):
        return outer
    return {**outer, **{str(k): str(v) for k, v in env.items()
                        if isinstance(v, str | int) and "${{" not in str(v)}}


def _build_push_step(step: object, text: str, shown: str,
                     env: dict[str, str] | None = None) -> list[tuple[str, str, str]]:
    """jdost/homelab-manifests' workflow tags `${{ env.REGISTRY }}/${{ env.IMAGE_NAME
    }}:latest` from its `env`: ghcr.io/jdost/homelab-backup:latest, built from backup/."""
    if not isinstance(step, dict) or not str(step.get("uses", "")).startswith(_BUILD_PUSH):
        return []
    values = env or {}

    def fill(value: str) -> str:
        return _ENV_EXPR.sub(lambda m: values.get(m.group(1), m.group(0)), value)

    given = step.get("with") if isinstance(step.get("with"), dict) else {}
    context = fill(str(given.get("context", ".")))
    folder = None if "${{" in context or "://" in context else rel_inside(context)
    tags = given.get("tags")
    listed = tags if isinstance(tags, list) else re.split(r"[\n,]", str(tags or ""))
    images = [t for t in (fill(x).strip() for x in listed if isinstance(x, str))
              if t and "${{" not in t and "$" not in t]
    if folder is None:
        return []
    out = []
    for image in images:
        at = text.find(image) if image in text else text.find("tags:", text.find(_BUILD_PUSH))
        out.append((image, folder, f"{shown}:{text.count(chr(10), 0, at) + 1}"
                    if at >= 0 else shown))
    return out


def scan_build_hints(root: Root) -> BuildHints:
    dirs: list[str] = []
    contexts: list[tuple[str, str, str]] = []
    environments: list[tuple[str, str, str, tuple[str, ...]]] = []
    scripts: list[str] = []
    files: list[str] = []  # every Dockerfile, Dockerfile.<variant>, <variant>.Dockerfile
    for seen, (dirpath, dirnames, filenames) in enumerate(walk(root.path)):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        if seen >= MAX_DIRS:
            break
        rel = PurePosixPath(os.path.relpath(dirpath, root.path)).as_posix()
        rel = "" if rel == "." else rel
        if any(f == "Dockerfile" or f.endswith(".Dockerfile") for f in filenames):
            dirs.append(rel)
        files += [f"{rel}/{n}" if rel else n for n in filenames if is_dockerfile_name(n)]
        for name in filenames:
            if is_build_file(name):
                contexts.extend(_contexts(root, os.path.join(dirpath, name), rel,
                                          environments=environments))
            elif is_build_script(name):
                scripts.append(os.path.join(dirpath, name))
            elif name == "Tiltfile":
                contexts.extend(tilt_builds(root, os.path.join(dirpath, name))[0])
    # after skaffold and compose: a command written in a script or README says less
    contexts += build_script_contexts(root, scripts, tuple(dirs), tuple(files))
    contexts += workflow_contexts(root)
    return BuildHints(dockerfile_dirs=tuple(dirs), contexts=tuple(contexts),
                      compose_env=tuple(environments))


# Tilt's docker_build(ref, context, ...) (Starlark): ref and context positional or named
_TILT_BUILD = lazy(r"""\bdocker_build\(\s*(?:ref\s*=\s*)?(["'])([^"']+)\1\s*,\s*"""
                   r"""(?:context\s*=\s*)?(["'])([^"']+)\3""")


_TILT_DOCKERFILE = lazy(r"""\bdockerfile\s*=\s*(["'])([^"']+)\1""")


def _tilt_builds(root: Root, path: str) -> list[tuple[str, str | None, str | None, str]]:
    """(image, build folder, Dockerfile, Tiltfile:line) of each `docker_build(IMAGE,
    FOLDER[, dockerfile="..."])` call not in a comment, both paths taken relative to the
    Tiltfile's folder as Tilt does, from the root (None: outside it, or no dockerfile=)."""
    try:
        text = root.read_text(path)
    except InputError:
        return []
    shown = root.rel(path)
    here = PurePosixPath(shown).parent.as_posix()
    here = "" if here == "." else here
    out: list[tuple[str, str | None, str | None, str]] = []
    for m in _TILT_BUILD.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if text[line_start:m.start()].lstrip().startswith("#"):
            continue
        end = text.find(")", m.end())
        named = _TILT_DOCKERFILE.search(text, m.end(), end if end >= 0 else len(text))
        dockerfile = None if named is None else \
            rel_inside(f"{here}/{named.group(2)}" if here else named.group(2))
        out.append((m.group(2), rel_inside(f"{here}/{m.group(4)}" if here else m.group(4)),
                    dockerfile or None, f"{shown}:{text.count(chr(10), 0, m.start()) + 1}"))
    return out


def tilt_builds(root: Root, path: str
                ) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """A Tiltfile's `docker_build` calls, read once: (image, build folder, Tiltfile:line)
    of each whose folder is in the tree (Tilt builds IMAGE from FOLDER and deploys it
    wherever a manifest runs IMAGE: truclk/django-k8s-poc's chart runs
    upload-service:<appVersion>, which `docker_build("upload-service", ".")` builds from
    the root), and (image, Dockerfile from the root, Tiltfile:line) of those that name a
    `dockerfile=` (Kludex/fastapi-microservices builds users-worker from users/ with
    users/docker/worker.dockerfile, whose CMD runs the arq worker, not the API)."""
    builds = _tilt_builds(root, path)
    return ([(image, folder, where) for image, folder, _file, where in builds
             if folder is not None
             and os.path.isdir(os.path.join(root.path, folder) if folder else root.path)],
            [(image, file, where) for image, _folder, file, where in builds if file])


def build_script_contexts(root: Root, paths: list[str], dockerfile_dirs: tuple[str, ...] = (),
                          dockerfile_paths: tuple[str, ...] = (),
                          dockerfiles: list[tuple[str, str, str]] | None = None
                          ) -> list[tuple[str, str, str]]:
    """script_contexts of the shallowest MAX_BUILD_SCRIPTS of these files."""
    chosen = sorted(paths, key=lambda p: (str(p).count(os.sep), str(p)))[:MAX_BUILD_SCRIPTS]
    return [c for p in chosen
            for c in script_contexts(root, str(p), dockerfile_dirs, dockerfile_paths,
                                     dockerfiles)]


def _contexts(root: Root, path: str, base: str,
              databases: list[tuple[str, str, str, int]] | None = None,
              dockerfiles: list[tuple[str, str, str]] | None = None,
              environments: list[tuple[str, str, str, tuple[str, ...]]] | None = None
              ) -> list[tuple[str, str, str]]:
    """(image or service, build folder, file) of a skaffold or compose file; the compose
    services that run PostgreSQL or PgBouncer are added to `databases`, the Dockerfile
    each build names (relative to its context) to `dockerfiles`, the environment names
    each build's service sets to `environments`."""
    from advisor.read.sources.k8s import load_yaml_stream

    try:
        text = root.read_text(path)
    except InputError:
        return []
    shown = root.rel(path)
    docs, _ = load_yaml_stream(text, shown)
    out: list[tuple[str, str, str]] = []
    dotenv = _dotenv(root, os.path.join(os.path.dirname(path), ".env")) \
        if "services" in text else {}

    def expand(value: object) -> str:
        """`${VAR}`, `${VAR:-default}` and `$VAR` as compose fills them from the .env
        beside the file (opentelemetry-demo: `image: ${POSTGRES_IMAGE}`, `dockerfile:
        ${ACCOUNTING_DOCKERFILE}`); a variable it lacks keeps its default, or stays."""
        return _VAR.sub(lambda m: dotenv.get(m.group(1) or m.group(3), m.group(2)
                                             if m.group(2) is not None else m.group(0)),
                        str(value))

    def join(ctx: str) -> str:
        p = PurePosixPath(base) / ctx if base else PurePosixPath(ctx)
        parts: list[str] = []
        for part in p.parts:
            if part == "..":
                if parts:
                    parts.pop()
            elif part != ".":
                parts.append(part)
        return "/".join(parts)

    for doc, _line in docs:
        if not isinstance(doc, dict):
            continue
        profiles = doc.get("profiles")
        builds = [doc.get("build"), *(p.get("build") for p in profiles if isinstance(p, dict))
                  ] if isinstance(profiles, list) else [doc.get("build")]
        for build in builds:  # skaffold: the top level's and each profile's artifacts
            if not isinstance(build, dict) or not isinstance(build.get("artifacts"), list):
                continue
            for art in build["artifacts"]:
                if isinstance(art, dict) and isinstance(art.get("image"), str):
                    context = str(art.get("context", "."))
                    jib = art.get("jib")
                    if isinstance(jib, dict) and isinstance(jib.get("project"), str):
                        # Jib builds one module of a multi-module build from its root
                        context = f"{context.rstrip('/')}/{jib['project']}"
                    where = shown
                    if isinstance(art.get("ko"), dict):
                        found = _ko_package(root, base, join(context), art["ko"])
                        if found is None:
                            continue  # what it builds is not in the tree: no folder said
                        context, where = found[0], f"{shown}{found[1]}"
                        out.append((art["image"], context, where))
                        continue
                    out.append((art["image"], join(context), where))
                    if dockerfiles is not None and \
                            (file := _artifact_dockerfile(art)) is not None:
                        dockerfiles.append((art["image"], join(f"{context}/{file}"), shown))
        services = doc.get("services")
        if isinstance(services, dict):  # compose
            if databases is not None:
                databases += _compose_databases(shown, services, expand, text)
            for name, svc in services.items():
                if not isinstance(svc, dict) or "build" not in svc:
                    continue
                b = svc["build"]
                ctx = expand(b.get("context", ".")) if isinstance(b, dict) else expand(b)
                # the Dockerfile compose builds with: build.dockerfile, relative to the
                # context (compose-spec build.md), default Dockerfile
                named = expand(b.get("dockerfile") or "Dockerfile") \
                    if isinstance(b, dict) else "Dockerfile"
                file = None if "$" in named or "$" in ctx or named.startswith("/") \
                    else join(f"{ctx}/{named}")
                if isinstance(b, dict) and b.get("dockerfile"):
                    # One context for every service (the repository's root), each with a
                    # Dockerfile of its own (opentelemetry-demo: context ./, dockerfile
                    # ./src/accounting/Dockerfile): the Dockerfile's folder is the app's.
                    dockerfile = PurePosixPath(expand(b["dockerfile"]))
                    if "$" not in str(dockerfile) and not dockerfile.is_absolute() and \
                            str(dockerfile.parent) not in ("", "."):
                        ctx = _dockerfile_app_folder(root, join(ctx), ctx, dockerfile)
                if environments is not None and (env := _env_names(svc.get("environment"))):
                    environments.append((join(str(ctx)), f"{shown}:{_service_line(text, name)}",
                                         str(name), env))
                keys = {str(name), expand(svc.get("image", ""))}
                if isinstance(b, dict):
                    # images this build is published as: its extra tags, and the
                    # images it takes cache from (grafana/oncall built from ./engine)
                    for listed in (b.get("tags"), b.get("cache_from")):
                        if isinstance(listed, list):
                            keys.update(str(x) for x in listed if isinstance(x, str))
                for key in sorted(keys - {""}):
                    out.append((key, join(str(ctx)), shown))
                    if dockerfiles is not None and file is not None:
                        dockerfiles.append((key, file, shown))
    return out


# `go build` flags that take the next word as their value (cmd/go: build flags)
_GO_BUILD_VALUED = frozenset({"-o", "-ldflags", "-gcflags", "-asmflags", "-tags", "-mod",
                              "-p", "-installsuffix", "-buildmode", "-pkgdir", "-modfile",
                              "-overlay", "-pgo", "-compiler", "-gccgoflags", "-C"})
_GO_BUILD = lazy(r"\bgo\s+build\s+([^&;|]*)")


def _go_build_packages(line: str) -> list[str]:
    """The package arguments of the `go build` commands of a RUN line (./services/user)."""
    out: list[str] = []
    for m in _GO_BUILD.finditer(line):
        words = m.group(1).split()
        i = 0
        while i < len(words):
            word = words[i]
            if word.startswith("-"):
                i += 2 if word in _GO_BUILD_VALUED else 1
                continue
            out.append(word.strip("\"'"))
            i += 1
    return out


def _go_build_folder(root: Root, context: str, dockerfile: str) -> str | None:
    """The Go package (from the root) the Dockerfile `dockerfile` (from the root) builds
    with `go build ./pkg` (or `./pkg/main.go`) in a RUN line, when the build context
    `context` (from the root) holds it; None when it names none or several."""
    try:
        # kept: build_contexts reads each Dockerfile's FROM next, the app scan its CMD
        text = root.read_text(os.path.join(root.path, dockerfile), keep=True)
    except (InputError, OSError):
        return None
    found: set[str] = set()
    for _number, line in logical_lines(text):
        if not line.lstrip().upper().startswith("RUN"):
            continue
        for word in _go_build_packages(line):
            package = word.removesuffix("/...").removeprefix("./").rstrip("/")
            if package.endswith(".go"):
                package = package.rpartition("/")[0]
            inside = rel_inside(f"{context}/{package}" if context else package)
            if package and package != "." and inside is not None and _go_package(root, inside):
                found.add(inside)
    return found.pop() if len(found) == 1 else None


def _dockerfile_app_folder(root: Root, joined: str, ctx: str, dockerfile: PurePosixPath) -> str:
    """The folder (relative to the compose file, as `ctx` is) a build with a shared
    context and a Dockerfile elsewhere builds: the Go package its `go build ./pkg` names,
    when the context holds it; the context itself when the Dockerfile's folder holds
    nothing but Dockerfiles (Chandu00756/Taskflow: context ., dockerfile
    deployments/docker/Dockerfile.user building ./services/user, took deployments/docker/
    and read no pool); else the Dockerfile's folder (opentelemetry-demo: context ./,
    src/accounting/Dockerfile, the service's own folder)."""
    folder = PurePosixPath(joined) / dockerfile.parent
    package = _go_build_folder(root, joined, str(PurePosixPath(joined) / dockerfile))
    if package is not None:
        rest = PurePosixPath(package).relative_to(joined) if joined else PurePosixPath(package)
        return str(PurePosixPath(ctx) / rest)
    try:
        names = [e.name for e in os.scandir(os.path.join(root.path, str(folder)))
                 if e.is_file()]
    except OSError:
        names = []
    if names and all(is_dockerfile_name(n) or n == ".dockerignore"
                     or n.endswith(".dockerignore") for n in names):
        return ctx
    return str(PurePosixPath(ctx) / dockerfile.parent)


def _ko_package(root: Root, base: str, context: str, ko: dict) -> tuple[str, str] | None:
    """The Go main package a skaffold ko artifact builds: <context>/<dir>/<main> (skaffold
    v2 KoArtifact: `dir`, where the go tool runs, relative to the context; `main`, the
    main package, relative to dir; both default "."), with what the reason adds. When
    the context does not hold it (a skaffold file moved below the folder its `../..` was
    written from: mattfenwick/scaling's dev/skaffold/loadgen, context ../../ is dev/,
    which has no cmd/), it is that package of the Go module the skaffold file lies in
    (the nearest go.mod above it), if that holds it; else None (not a folder to guess)."""
    tail = "/".join(str(ko.get(k, ".")) for k in ("dir", "main"))
    if "{{" in tail or "$" in tail:
        return None
    package = rel_inside(f"{context}/{tail}" if context else tail)
    if package is not None and _go_package(root, package):
        return package, ""
    module = base
    while not os.path.isfile(os.path.join(root.path, module, "go.mod")):
        if not module:
            return None
        module = module.rsplit("/", 1)[0] if "/" in module else ""
    moved = rel_inside(f"{module}/{tail}" if module else tail)
    if moved is None or not _go_package(root, moved):
        return None
    return moved, (f": ko builds {moved or '.'}/ of the Go module {module or '.'}/ the file "
                   f"is in, as its context {context or '.'}/ holds no {tail.rstrip('/.')}/")


def _go_package(root: Root, folder: str) -> bool:
    """Whether the folder holds Go files (stat only)."""
    try:
        return any(e.name.endswith(".go") and e.is_file()
                   for e in os.scandir(os.path.join(root.path, folder)))
    except OSError:
        return False


# skaffold artifact builders that take no Dockerfile (the docker builder is the default)
_NO_DOCKERFILE = ("jib", "bazel", "buildpacks", "ko", "custom")


def _artifact_dockerfile(art: dict) -> str | None:
    """The Dockerfile (relative to the context) a skaffold artifact is built with:
    docker.dockerfile or kaniko.dockerfile, default Dockerfile; None for a builder that
    takes none (skaffold v2 schema: DockerArtifact.DockerfilePath, default "Dockerfile")."""
    for builder in ("docker", "kaniko"):
        spec = art.get(builder)
        if isinstance(spec, dict):
            file = spec.get("dockerfile", "Dockerfile")
            return file if isinstance(file, str) and "{{" not in file else None
    return None if any(k in art for k in _NO_DOCKERFILE) else "Dockerfile"


def _compose_databases(shown: str, services: dict, expand: Callable[[object], str],
                       text: str = "") -> list[tuple[str, str, str, int]]:
    from advisor.read.workloads import is_postgres_image

    out = []
    for name, svc in services.items():
        image = svc.get("image") if isinstance(svc, dict) else None
        if not isinstance(image, str):
            continue
        image = expand(image)
        if is_postgres_image(image) or ("pgbouncer" in image_name(image)
                                        and "exporter" not in image):
            out.append((shown, str(name), image, _service_line(text, str(name))))
    return out


def _env_names(environment: object) -> tuple[str, ...]:
    """The variable names a compose service's `environment` sets (a mapping, or a list
    of NAME=value / NAME), sorted."""
    if isinstance(environment, dict):
        names = [str(k) for k in environment]
    elif isinstance(environment, list):
        names = [str(e).split("=", 1)[0] for e in environment if isinstance(e, str | int)]
    else:
        return ()
    return tuple(sorted({n.strip() for n in names if n.strip()}))


# A compose build's environment names are taken for a pod's only when it sets this many
# at least: one or two (NODE_ENV, PORT) say nothing of which program runs
MIN_SHARED_ENV = 3


def compose_env_dir(hints: BuildHints | None, env_names: set[str]) -> AppDirGuess | None:
    """Pure: the folder a compose service builds whose `environment` names (three at
    least) a pod's container sets every one of, when one folder only is so named
    (noureldien2021/nodejs-postgres-app: compose's `app` builds `.` with DB_USER,
    DB_HOST, DB_DATABASE, DB_PASSWORD, DB_PORT, the five the Deployment of image
    noureldien2023/nodejs-app sets: it runs that build, though its name is not the root
    project's)."""
    if hints is None:
        return None
    found = sorted((folder, where, service, names) for folder, where, service, names
                   in hints.compose_env
                   if len(names) >= MIN_SHARED_ENV and set(names) <= env_names)
    if len({f for f, *_ in found}) != 1:
        return None
    folder, where, service, names = found[0]
    shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
    return AppDirGuess(directory=folder, reason=f"compose service {service} ({where}) "
                       f"builds it and sets the same environment variables ({shown})")


def _service_line(text: str, service: str) -> int:
    """The line of `service:` under the compose file's `services:` (0 when not found):
    where a finding about that service points."""
    at = re.search(r"^services\s*:", text, re.M)
    key = re.compile(rf"^[ \t]+[\"']?{re.escape(service)}[\"']?\s*:", re.M)
    found = key.search(text, at.end()) if at else None
    return text.count("\n", 0, found.start()) + 1 if found else 0


def _dotenv(root: Root, path: str) -> dict[str, str]:
    """KEY=VALUE lines of a compose .env file (quotes taken off; comments and blank lines
    skipped); empty when there is none."""
    try:
        text = root.read_text(path)
    except InputError:
        return {}
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out[key.strip()] = value
    return out


_FROM = lazy(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?\s*$", re.I)
_ARG = lazy(r"^\s*ARG\s+(\w+)=(\S+)\s*$", re.I)
_VAR = lazy(r"\$\{(\w+)(?::?-([^}]*))?\}|\$(\w+)")


def dockerfile_base(text: str) -> tuple[str, int] | None:
    """The image a Dockerfile's last stage is built FROM, and that FROM's line: a stage
    named earlier (`FROM postgres:16 AS base` ... `FROM base`) is followed to its image,
    `${ARG}` replaced by the default of an ARG declared before the first FROM. None
    without a FROM, or when the image is still a variable."""
    args: dict[str, str] = {}
    stages: dict[str, str] = {}
    found: tuple[str, int] | None = None
    for number, line in logical_lines(text):
        if found is None and (arg := _ARG.match(line)):
            args[arg.group(1)] = arg.group(2).strip("\"'")
            continue
        match = _FROM.match(line)
        if match is None:
            continue
        image = _VAR.sub(lambda m: args.get(m.group(1) or m.group(3), m.group(2) or m.group(0)),
                         match.group(1))
        image = stages.get(image.lower(), image)
        if match.group(2):
            stages[match.group(2).lower()] = image
        found = (image, number)
    if found is None or "$" in found[0]:
        return None
    return found


def logical_lines(text: str) -> list[tuple[int, str]]:
    """Lines with their continuations (a trailing backslash) joined, numbered by the line
    each starts on."""
    out: list[tuple[int, str]] = []
    start, parts = 0, []
    for number, line in enumerate(text.splitlines(), 1):
        if not parts:
            start = number
        if line.rstrip().endswith("\\"):
            parts.append(line.rstrip()[:-1])
            continue
        out.append((start, " ".join([*parts, line])))
        parts = []
    if parts:
        out.append((start, " ".join(parts)))
    return out


def built_from(hints: BuildHints, image: str) -> tuple[str, str, int] | None:
    """The (base image, Dockerfile as shown, FROM line) that `image` is built from in
    this repository: the Dockerfile of its skaffold/compose build context, else of the
    folder named like its repository (registry, path and tag stripped); None when the
    repository does not build it."""
    if not hints.bases or not image:
        return None
    by_dir = {d: (base, shown, line) for d, base, shown, line in hints.bases}
    name = image_name(image)
    for key, ctx, _where in hints.contexts:
        if (key == image or image_name(key) == name) and ctx in by_dir:
            return by_dir[ctx]
    named = [d for d in by_dir if d.rsplit("/", 1)[-1] == name]
    return by_dir[named[0]] if len(named) == 1 else None


def match_app_dir(hints: BuildHints, workload: str, images: list[str],
                  aliases: tuple[str, ...] = ()) -> AppDirGuess | None:
    """Pure: the best directory for a workload, with the reason, or None. `aliases`: the
    names its labels give it (a chart's app.kubernetes.io/name), as good as its own."""
    names = {image_name(i) for i in images if i} | {workload, *aliases}
    # One image repository built from several folders, told apart by tag
    # (ghcr.io/open-telemetry/demo:<version>-accounting, -ad, ...): its name says nothing.
    folders: dict[str, set[str]] = {}
    for key, ctx, _where in hints.contexts:
        folders.setdefault(image_name(key), set()).add(ctx)
    for key, ctx, where in hints.contexts:
        if key in images or (image_name(key) in names and len(folders[image_name(key)]) == 1
                             and not _other_version(key, images)):
            missing = next((f for k, f, w in hints.missing_dockerfiles
                            if k == key and w == where), None)
            return AppDirGuess(directory=ctx, reason=f"build context of {key} in {where}" + (
                f", whose Dockerfile {missing} is not in the repository: that build cannot "
                "run as written" if missing else ""))
    for d in hints.dockerfile_dirs:
        base = d.rsplit("/", 1)[-1] if d else ""
        if base and base in names:
            what = "workload name" if base == workload else f"image {base}"
            return AppDirGuess(directory=d, reason=f"{d}/Dockerfile: directory name matches "
                                                   f"the {what}")
    if len(hints.dockerfile_dirs) == 1:
        d = hints.dockerfile_dirs[0]
        return AppDirGuess(directory=d, reason=f"the repository's only Dockerfile "
                                               f"({d + '/' if d else ''}Dockerfile)")
    return None


def _image_tag(image: str) -> str:
    last = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return last.split(":", 1)[1] if ":" in last else ""


def _other_version(key: str, images: list[str]) -> bool:
    """Whether a build's tag and the tags of the workload's images of that name are all
    versions, and differ: gwarrior01/kubernetes-for-developers' Chapter07/timeserver5/
    build.sh builds timeserver:5, not the timeserver:1 of Chapter02/timeserver. A moving
    tag (latest, none) on either side says nothing against it."""
    tag = _image_tag(key)
    if tag in ("", "latest"):
        return False
    mine = [_image_tag(i) for i in images if image_name(i) == image_name(key)]
    return bool(mine) and all(t not in ("", "latest") and t != tag for t in mine)


# Files that make a folder an application's own (not only a Dockerfile or Procfile).
APP_FILES = ("Gemfile", "requirements.txt", "pyproject.toml", "Pipfile", "setup.py",
             "manage.py", "package.json", "go.mod", "mix.exs", "pom.xml", "build.gradle",
             "build.gradle.kts", "config/database.yml", "composer.json", "Cargo.toml")
# Folders that hold deployment or tooling, not the application deployed.
NOT_APP_DIRS = ("k8s", "kubernetes", "deploy", "deployment", "deployments", "helm", "charts",
                "chart", "manifests", "infra", "ops", "terraform", "scripts", "tools",
                "docs", "test", "tests", "e2e", "examples", "example", "bench", "benchmarks",
                "hack")
_COPY = lazy(r"^\s*(?:COPY|ADD)\s+(.+)$", re.I)
# Folders that hold a test suite's inputs at any depth: a project made there is a test's
# fixture, not an image the repository deploys (triggerdotdev/trigger.dev's
# packages/cli-v3/e2e/fixtures/monorepo-react-email/packages/trigger/ was taken as the
# source of its chart's every workload, whose app.kubernetes.io/name is trigger)
TEST_TREE_DIRS = frozenset(("test", "tests", "e2e", "fixtures", "__fixtures__", "__tests__",
                            "testdata", "test-fixtures", "test_fixtures"))


def in_test_tree(directory: str, manifest: str) -> bool:
    """Pure: whether an application folder lies under a test suite's folder (a segment in
    TEST_TREE_DIRS) that the workload's own manifest is not under: a fixture, never the
    deployed workload's source. A manifest in that same tree (a test's own deployment)
    keeps it."""
    parts = directory.split("/")
    for i, part in enumerate(parts[:-1]):
        if part.lower() in TEST_TREE_DIRS:
            tree = "/".join(parts[:i + 1]) + "/"
            return not manifest.startswith(tree)
    return False


DEPENDENCY_FILES = ("Gemfile", "requirements.txt", "pyproject.toml", "Pipfile", "setup.py",
                    "package.json", "go.mod", "mix.exs", "pom.xml", "build.gradle",
                    "build.gradle.kts", "composer.json", "Cargo.toml")


def app_files_in(root: Root, directory: str, names: tuple[str, ...] = APP_FILES) -> list[str]:
    """Which of `names` (APP_FILES) the folder holds (I/O: stat only)."""
    base = os.path.join(root.path, directory) if directory else str(root.path)
    return [f for f in names if os.path.isfile(os.path.join(base, f))]


# JavaScript front-end frameworks: a workload or image named for one serves a browser
# bundle (a Node dev server or static files), never a Python application's code
_FRONTEND_WORDS = frozenset({"react", "reactjs", "vue", "vuejs", "angular", "svelte",
                             "sveltekit", "nextjs", "nuxt", "nuxtjs", "vite", "gatsby"})
_PYTHON_ROOT_FILES = ("requirements.txt", "pyproject.toml", "Pipfile", "setup.py", "manage.py")


# what a workload serving a browser's pages is called, whatever builds it
# (k8s-url-shortener-frontend, web-ui)
_UI_WORDS = frozenset({"frontend", "ui", "webui", "spa"})


def frontend_word(names: set[str], *, ui: bool = False) -> str | None:
    """Pure: the JavaScript front-end framework a name says (react-app, acme/vue-ui);
    with `ui`, also a word that names a front end of any make (frontend, ui)."""
    words = _FRONTEND_WORDS | _UI_WORDS if ui else _FRONTEND_WORDS
    for name in sorted(names):
        for word in re.split(r"[^a-z0-9]+", name.lower().rsplit("/", 1)[-1].split(":", 1)[0]):
            if word in words:
                return word
    return None


def python_only_root(root: Root) -> bool:
    """The root's application is Python alone: its dependency files are Python's and no
    package.json is beside them (I/O: stat only)."""
    own = app_files_in(root, "")
    return bool(own) and "package.json" not in own and all(f in _PYTHON_ROOT_FILES
                                                           for f in own)


def _tooling_file(root: Root, name: str) -> bool:
    """A root dependency file that holds the repository's tooling, not an application's:
    a package.json with no runtime `dependencies` (an nx or lefthook workspace:
    aws-containers/retail-store-sample-app), a requirements.txt with no Python source
    beside it (mkdocs and ansible for a home-ops repository: damacus/home-ops). Its
    workloads were all given the root as their source, and one app's pool to each."""
    base = str(root.path)
    if name == "package.json":
        try:
            doc = jsontext.loads(root.read_text(os.path.join(base, name)))
        except (InputError, ValueError):
            return False
        return isinstance(doc, dict) and not doc.get("dependencies")
    if name == "requirements.txt":
        try:
            return not any(e.endswith(".py") for e in os.listdir(base))
        except OSError:
            return False
    if name == "go.mod":
        return chart_test_module(root)
    if name == "pyproject.toml":
        try:
            return lint_only_pyproject(root.read_text(os.path.join(base, name)))
        except InputError:
            return False
    if name == "Cargo.toml":
        try:
            return virtual_cargo_workspace(root.read_text(os.path.join(base, name)))
        except InputError:
            return False
    return False


def virtual_cargo_workspace(text: str) -> bool:
    """Pure: a Cargo.toml with [workspace] and no [package] is a virtual manifest (The
    Cargo Book, Workspaces: "a workspace ... without a root package"): it builds no
    program of its own, its members do. A published image beside it (confluentinc/
    cp-kafka of sima94/rust-microservices-architecture) was given every member's pools.
    Not TOML: not said to be tooling."""
    import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    return isinstance(doc.get("workspace"), dict) and "package" not in doc


def lint_only_pyproject(text: str) -> bool:
    """Pure: a pyproject.toml that declares no dependency (only [tool.black], [tool.ruff]
    and the like: netbox-community/netbox-chart@4d7c0a4's lint settings) is a repository's
    tooling; an application names its driver in [project] dependencies, Poetry's
    [tool.poetry.dependencies] or a dependency group. Not TOML: not said to be tooling."""
    import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return False
    project = doc.get("project")
    poetry = doc.get("tool", {}).get("poetry") if isinstance(doc.get("tool"), dict) else None
    declared = [
        project.get("dependencies"), project.get("optional-dependencies"),
        project.get("dynamic") and "dependencies" in project.get("dynamic", ())
    ] if isinstance(project, dict) else []
    if isinstance(poetry, dict):
        deps = poetry.get("dependencies")
        declared.append({k: v for k, v in deps.items() if k != "python"}
                        if isinstance(deps, dict) else None)
        declared.append(poetry.get("group"))
    declared.append(doc.get("dependency-groups"))
    return not any(declared)


# Go modules that test Helm charts (terratest's modules/helm renders and installs a chart).
_CHART_TEST_MODULES = ("github.com/gruntwork-io/terratest",)


def chart_test_module(root: Root) -> bool:
    """Whether the root go.mod is a Helm chart repository's test harness, not the
    application deployed (zitadel/zitadel-charts: go.mod requires terratest, its Go code
    is test/ and internal/gen generators; it was taken for Zitadel's source): the root
    holds charts/<name>/Chart.yaml, no Go program of its own (main.go at the root or a
    cmd/ folder, where a Go application keeps its commands) and the module requires a
    chart test framework."""
    base = str(root.path)
    if os.path.isfile(os.path.join(base, "main.go")) or \
            os.path.isdir(os.path.join(base, "cmd")):
        return False
    charts = os.path.join(base, "charts")
    try:
        if not any(os.path.isfile(os.path.join(charts, d, "Chart.yaml"))
                   for d in os.listdir(charts)):
            return False
        text = root.read_text(os.path.join(base, "go.mod"), keep=True)
    except (OSError, InputError):
        return False
    return any(re.search(rf"^\s*(?:require\s+)?{re.escape(m)}(?:/\S*)?\s+v", text, re.M)
               for m in _CHART_TEST_MODULES)


def builds_postgres(root: Root, directory: str) -> bool:
    """Whether the folder's Dockerfile builds a PostgreSQL server image (FROM spilo,
    postgres, ...): the server's folder, not an application's (twentyhq/twenty's
    twenty-postgres-spilo/ was taken for its server's and worker's source)."""
    from advisor.read.workloads import is_postgres_image

    memo = root.__dict__.setdefault("builds_postgres", {})  # asked per workload
    if directory not in memo:
        path = os.path.join(root.path, directory, "Dockerfile")
        found = None
        if os.path.isfile(path):
            try:
                found = dockerfile_base(root.read_text(path))
            except InputError:
                found = None
        memo[directory] = found is not None and is_postgres_image(found[0])
    return memo[directory]


def has_dockerfile(root: Root, directory: str) -> bool:
    base = os.path.join(root.path, directory) if directory else str(root.path)
    return os.path.isfile(os.path.join(base, "Dockerfile"))


# the files a build without -f reads in its context: docker's Dockerfile (moby
# builder/remotecontext/detect.go falls back to a lowercase `dockerfile`), podman's
# Containerfile before it
_DEFAULT_BUILD_FILES = ("Dockerfile", "dockerfile", "Containerfile", "containerfile")


def has_default_build_file(root: Root, directory: str) -> bool:
    """The folder holds a file `docker build` / `podman build` reads when no -f names one."""
    base = os.path.join(root.path, directory) if directory else str(root.path)
    return any(os.path.isfile(os.path.join(base, n)) for n in _DEFAULT_BUILD_FILES)


def dockerfile_copy_dirs(root: Root, directory: str) -> list[tuple[str, int]]:
    """Top folders a Dockerfile in `directory` copies from its context (COPY/ADD sources,
    not --from= stages), with the line: `COPY backend/ /app` -> ("backend", 7)."""
    path = os.path.join(root.path, directory, "Dockerfile") if directory else \
        os.path.join(root.path, "Dockerfile")
    try:
        text = root.read_text(path)
    except InputError:
        return []
    out: list[tuple[str, int]] = []
    for n, line in enumerate(text.splitlines(), 1):
        m = _COPY.match(line)
        if not m:
            continue
        words = [w for w in m.group(1).split() if not w.startswith("--")]
        if "--from" in m.group(1) or len(words) < 2:
            continue
        if words[0].startswith("["):
            continue  # JSON form: rare for sources, skipped
        for src in words[:-1]:
            top = src.strip("./").split("/", 1)[0]
            if top and "*" not in top and "$" not in top and \
                    os.path.isdir(os.path.join(root.path, directory, top)):
                out.append((f"{directory}/{top}" if directory else top, n))
    return out


def fallback_app_dir(root: Root, candidates: list[str], names: set[str],
                     images: tuple[str, ...] = (),
                     claimed: frozenset[str] = frozenset(),
                     local: bool = False, built_elsewhere: bool = False
                     ) -> AppDirGuess | None:
    """When no folder is named like the workload: the repository root when it holds an
    application's own files (Rails/Django/Node app with k8s/ beside it) — or the one
    application folder a root Dockerfile copies; else the repository's only application
    folder (app/ with the package one level down). The root is not taken for a
    workload whose image and name disagree with the root project's own name (a Helm
    chart repository's operator code is not the Keycloak it deploys), unless its images
    are `local` (pulled Never: built on the node, as a placeholder owner's are built
    here). Nor is it taken when the root is `built_elsewhere` (no Dockerfile of its own,
    and the repository's builds all run from other folders): a published image beside
    them (kibana, redpanda) does not run the root's workspace or parent build."""
    # a hidden top folder (.devcontainer/, .github/) holds tooling, not the application
    apps = [d for d in candidates if d and d.split("/", 1)[0].lower() not in NOT_APP_DIRS
            and not d.startswith(".") and not builds_postgres(root, d)]
    project = root_project_name(root)
    # an image of a placeholder owner (your-image-repository/node-app, a chart's values
    # left for the user to fill) is the one built here, whatever its name (audit 10b N1)
    placeholder = bool(images) and all(placeholder_image(i) for i in images)
    if "" in candidates and (placeholder or local or (names_the_project(project, names)
                             and not _another_publisher(project, images)
                             and not built_elsewhere)):
        own = [f for f in app_files_in(root, "") if not _tooling_file(root, f)]
        if own:
            why = (f"its image {images[0]} names a placeholder owner, not a publisher's"
                   if placeholder and not names_the_project(project, names)
                   else f"its image {images[0]} is pulled Never (imagePullPolicy), one "
                   "built on the node, not a publisher's"
                   if local and not names_the_project(project, names)
                   else "no folder is named like the workload or its image")
            return AppDirGuess(directory="", reason="the repository root holds the "
                               f"application's own files ({', '.join(own[:3])}) and {why}")
        copied = sorted({d for d, _ in dockerfile_copy_dirs(root, "") if d in apps})
        if len(copied) == 1:
            return AppDirGuess(directory=copied[0], reason="the root Dockerfile copies it "
                               "(COPY) and no folder is named like the workload or image")
    if _another_publisher(project, images):
        return None  # clamav/clamav-debian beside laa-apply-for-legal-aid: not built here
    # a gem's folder (its *.gemspec) is a library the application bundles, not an image;
    # a folder the repository builds as another image is that image's (`claimed`)
    apps = [d for d in apps if not _is_gem(root, d) and d not in claimed]
    with_docker = [d for d in apps if has_dockerfile(root, d)]
    if len(apps) == 1 or len(with_docker) == 1:
        d = apps[0] if len(apps) == 1 else with_docker[0]
        return AppDirGuess(directory=d, reason="the repository's only application folder"
                           + ("" if len(apps) == 1 else " with a Dockerfile"))
    return None


def root_image_owner(hints: BuildHints | None, build: str | None, project: str | None,
                     run: tuple[tuple[str, tuple[str, ...]], ...], names: set[str]
                     ) -> str | None:
    """Pure: why the repository root's application is another workload's, not the one
    whose image and workload names are `names`: the root is built as an image (a build
    with context `.`, or an image named as the root build's artifact or the root
    project) that another workload of the `run` ((workload, its images)) runs, and
    `names` include none of those images. Adam-Vincent/springboot-postgres-docker-k8s
    (settings.gradle rootProject.name user-service) deploys beyourcharon/user-service and
    beyourcharon/email-service, another project's image: email-service was given the
    root's Spring app and its 'localhost' datasource (a false PA107); humble92/todo-pg
    builds the root as humble92/todo-fastapi, and its frontend-app
    (humble92/todo-frontend) was given the root too. None when nothing says what the
    root is built as, or no other workload runs it (then the root stays the guess)."""
    built: dict[str, str] = {}  # image name -> why the root is built as it
    if hints is not None:
        for key, ctx, where in hints.contexts:
            if ctx in ("", ".") and ("/" in key or ":" in key):
                built.setdefault(image_name(key).lower(),
                                 f"the root is the build context of {key} ({where})")
    for _, images in run:
        for image in images:
            if named_as_build(image, build):
                built.setdefault(image_name(image).lower(), f"{image} is named as the root "
                                 f"build's artifact ({build})")
            elif project_image(image, project):
                built.setdefault(image_name(image).lower(), f"{image} is named as the root "
                                 f"project ({project})")
    if not built or {n.lower() for n in names} & built.keys() or \
            {image_name(n).lower() for n in names} & built.keys():
        return None
    for workload, images in run:
        for image in images:
            if (why := built.get(image_name(image).lower())) is not None:
                return f"{why}, and {workload} runs it"
    return None


# Published images that are never built from the repository being read.
_PUBLISHED = (*(f"{owner}/" for owner in BITNAMI_OWNERS),  # bitnamilegacy/x is Bitnami's too
              "docker.io/library/", "quay.io/keycloak", "keycloak/",
              "mattermost/", "goharbor/", "postgrest/", "temporalio/", "grafana/",
              "prom/", "redis", "memcached", "nginx", "busybox", "alpine", "curlimages/",
              "postgres", "pgbouncer", "edoburu/", "minio/", "rabbitmq", "elasticsearch",
              # Elastic's and Redpanda's own registries (skanehira/url-shortener's kibana,
              # benanaktaspusulait/keycloackkafkaevent's redpanda took the root's code)
              "docker.elastic.co/", "kibana", "docker.redpanda.com/", "redpandadata/",
              # proxies and agents run beside the application (bank-of-anthos' populate
              # Jobs took the root's pom.xml because of their Cloud SQL proxy)
              "cloudsql-docker/", "cloud-sql-connectors/", "cloud-sql-proxy", "istio/",
              "envoyproxy/", "otel/", "datadog/", "fluent/",
              # beside formbricks' chart (its one application folder is not what they run)
              "valkey", "cubejs/",
              # migration tools a Job runs beside the application (toporischev/lesson6:
              # flyway/flyway took its one folder, UserService, and its Npgsql pool)
              "flyway/", "liquibase/",
              # the Kubernetes project's registries hold its own programs only
              # (ajaisreenilayam/pythonDjangoApp's cluster-autoscaler took dokcer/Django)
              "k8s.gcr.io/", "registry.k8s.io/",
              # kaniko's executor builds images in a pod; it is not the application
              # it builds (GoogleContainerTools/kaniko README: gcr.io/kaniko-project/executor)
              "kaniko-project/",
              # Confluent's Kafka platform images (cp-kafka, cp-zookeeper, cp-schema-registry)
              # beside sima94/rust-microservices-architecture's Rust services
              "confluentinc/")
# Any of them inside a repository name, in one scan (linking asks it of every container
# whose folder it cannot tell: a generator over the names was ~3 us an image).
_PUBLISHED_IN = lazy("|".join(re.escape(p) for p in _PUBLISHED))


def claimed_folders(hints: BuildHints | None, names: set[str]) -> frozenset[str]:
    """Pure: the folders the repository builds as images none of `names` is (a build
    command's, CI's or compose's image: a tag with `/` or `:`, not a compose service's
    name): jdost/homelab-manifests' backup/, built as ghcr.io/jdost/homelab-backup, is
    not the folder of the vabene1111/recipes its tandoor StatefulSet runs."""
    if hints is None:
        return frozenset()
    wanted = {n.lower() for n in names}
    by_folder: dict[str, set[str]] = {}
    for key, ctx, _where in hints.contexts:
        by_folder.setdefault(ctx, set()).add(image_name(key).lower()
                                             if ("/" in key or ":" in key) else "")
    return frozenset(f for f, keys in by_folder.items()
                     if "" not in keys and not keys & wanted)


def ko_app_dir(root: Root, image: str) -> str | None:
    """The folder a ko image reference builds (`ko://github.com/tektoncd/results/cmd/api`
    is the Go main package at that import path): below the root go.mod's module, else
    the longest tail of the path (two parts at least) that is a folder of the root."""
    if not image.startswith("ko://"):
        return None
    path = image[len("ko://"):].split("@", 1)[0].strip("/")
    base = str(root.path)
    try:
        text = root.read_text(os.path.join(base, "go.mod"), keep=True) \
            if os.path.isfile(os.path.join(base, "go.mod")) else ""
    except InputError:
        text = ""
    m = re.search(r"^module\s+(\S+)", text, re.M)
    if m and (path == m.group(1) or path.startswith(m.group(1) + "/")):
        rest = path[len(m.group(1)):].strip("/")
        return rest if not rest or os.path.isdir(os.path.join(base, rest)) else None
    parts = path.split("/")
    for i in range(len(parts) - 1):
        rest = "/".join(parts[i:])
        if len(parts) - i >= 2 and os.path.isdir(os.path.join(base, rest)):
            return rest
    return None


def go_command_dir(root: Root, candidates: list[str], names: set[str]) -> str | None:
    """The Go main package named like the workload or its image in a module's cmd/
    folder (backend/cmd/sink for image sink, as `go build ./cmd/$SERVICE_NAME` builds
    it), when exactly one module holds one (I/O: stat only)."""
    commands = _go_commands(root, candidates)
    found = {folder for name in names for folder in commands.get(name, ())}
    return found.pop() if len(found) == 1 else None


def _go_commands(root: Root, candidates: list[str]) -> dict[str, list[str]]:
    """Command name -> the cmd/<name> folders holding Go files, of every module among
    `candidates`: listed once per root (asked per workload)."""
    memo = root.__dict__.setdefault("go_commands", {})
    key = tuple(candidates)
    if key in memo:
        return memo[key]
    out: dict[str, list[str]] = {}
    for d in candidates:
        if not os.path.isfile(os.path.join(root.path, d, "go.mod")):
            continue
        cmd = os.path.join(root.path, d, "cmd")
        try:
            entries = [e for e in os.scandir(cmd) if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for entry in entries:
            try:
                has_go = any(f.name.endswith(".go") and f.is_file()
                             for f in os.scandir(entry.path))
            except OSError:
                continue
            if has_go:
                out.setdefault(entry.name, []).append(f"{d}/cmd/{entry.name}" if d
                                                      else f"cmd/{entry.name}")
    memo[key] = out
    return out


def image_repository(image: str) -> str:
    """An image reference without its tag and digest: ghcr.io/acme/web:1.2@sha256:...
    -> ghcr.io/acme/web (a registry's port, localhost:5000/x, is kept)."""
    ref = image.split("@", 1)[0]
    last = ref.rsplit("/", 1)[-1]
    return ref[: len(ref) - len(last)] + last.split(":", 1)[0]  # the tag is not a name


def maybe_built_here(image: str) -> bool:
    """Whether an image could be built from this repository: not an official library
    image (`redis:7`, no organisation) nor a well-known published one."""
    repo = image_repository(image.lower())
    if variable_image(image):
        return True  # `${FHI_BASE}:${FHI_VERSION}`: named when deployed, as built here
    if not repo or "/" not in repo:
        return False  # official images have no organisation: postgres:16, redis
    if repo.split("/")[-2] == "library":
        # the same official images through a mirror: public.ecr.aws/docker/library/python
        return False
    return _PUBLISHED_IN.search(repo) is None


def project_image(image: str, project: str | None) -> bool:
    """Pure: whether an image with no organisation is named as the root project is
    (`k8s-demo:latest` beside the package.json named k8s-demo): the tag this repository
    builds and loads into the node, not an official library image such as `redis:7`
    (Shubham-hub278/nestjs-k8s-example: its pool was unknown)."""
    if not project or variable_image(image):
        return False
    repo = image_repository(image.lower())
    if "/" in repo or not _norm(project):
        return False
    if _norm(repo) == _norm(project):
        return True
    # the project's name and the part it plays (`hrm-app:latest` beside the go.mod of
    # module github.com/DiLRandI/hrm): no official library image is named so
    head = _role_head(repo)
    return head is not None and _norm(head) == _norm(project)


# what a project's own image adds to its name (<project>-app, -api, -server)
_ROLE_SUFFIXES = frozenset({"app", "api", "server", "service", "svc", "backend", "web"})


def role_named_image(image: str) -> bool:
    """Pure: an image with no organisation named for the part it plays in a project
    (`sulfone-zinc-api`, `shop-backend:1.2`): no official library image is so named, so
    it is one a project builds, not a published program."""
    if variable_image(image):
        return False
    repo = image_repository(image.lower())
    return "/" not in repo and bool(_role_head(repo))


def _role_head(repo: str) -> str | None:
    """`sulfone-zinc` of `sulfone-zinc-api`: the name before a _ROLE_SUFFIXES part, None
    when the name ends in none."""
    head, sep, role = repo.rpartition("-")
    return head if sep and role in _ROLE_SUFFIXES else None


def root_project_name(root: Root) -> str | None:
    """The name the root's own project declares (go.mod module, package.json name,
    pyproject.toml project name), normalised: miniflux.app/v2 -> miniflux. Kept: the app
    scan reads them too. Worked out once per root (linking asks it of every workload
    that no folder is named like: three stats each, 7% of a warm check of 1,200)."""
    if "project_name" not in root.__dict__:
        name = _root_project_name(root)
        # a workspace root's placeholder (Backstage's create-app writes "root") names no
        # project: it must not make every image "another publisher's"
        root.__dict__["project_name"] = None if name in _PLACEHOLDER_NAMES else name
    return root.__dict__["project_name"]


def root_build_name(root: Root) -> str | None:
    """The name the root's Maven or Gradle build gives its artifact, lowered: pom.xml's
    own artifactId (not its parent's), else settings.gradle(.kts)'s rootProject.name.
    Spring Boot's build-image names the image after it (spring-boot-maven-plugin's
    image.name default docker.io/library/${project.artifactId}; Gradle bootBuildImage's
    docker.io/library/${project.name}), as Jib does, and a push retags that name under
    the user's organisation. Kept apart from root_project_name, which decides whether a
    workload may run the root's code at all. Worked out once per root."""
    if "build_name" not in root.__dict__:
        root.__dict__["build_name"] = _root_build_name(root)
    return root.__dict__["build_name"]


_POM_COMMENT = lazy(r"<!--.*?-->", re.S)
_POM_PARENT = lazy(r"<parent>.*?</parent>", re.S)
_POM_ARTIFACT = lazy(r"<artifactId>\s*([\w.-]+)\s*</artifactId>")
_GRADLE_ROOT_NAME = lazy(r"^\s*rootProject\.name\s*=\s*['\"]([\w.-]+)['\"]", re.M)


def _root_build_name(root: Root) -> str | None:
    base = str(root.path)
    try:
        path = os.path.join(base, "pom.xml")
        if os.path.isfile(path):
            text = _POM_PARENT.sub("", _POM_COMMENT.sub("", root.read_text(path, keep=True)),
                                   count=1)
            # the project's own artifactId comes before its dependencies' in a POM
            m = _POM_ARTIFACT.search(text)
            return m.group(1).lower() if m else None
        for name in ("settings.gradle", "settings.gradle.kts"):
            path = os.path.join(base, name)
            if os.path.isfile(path):
                m = _GRADLE_ROOT_NAME.search(root.read_text(path, keep=True))
                return m.group(1).lower() if m else None
    except InputError:
        return None
    return None


def named_as_build(image: str, build: str | None) -> bool:
    """Pure: whether an image's name is the root build's artifact name
    (itssoumen/spring-postgres-k8s beside the pom.xml whose artifactId is
    spring-postgres-k8s): the image built here, whatever published program's name
    (postgres, redis, nginx) its name holds."""
    return bool(build) and not variable_image(image) and \
        _norm(image_name(image)) == _norm(build or "")


def root_mix_app(root: Root) -> str | None:
    """The OTP application the root's mix.exs declares (`app: :phoenixkubernetes` in
    `def project`), which `mix release` names the release and its bin/ script after.
    Worked out once per root (linking asks it of each image of each workload)."""
    if "mix_app" not in root.__dict__:
        root.__dict__["mix_app"] = _root_mix_app(root)
    return root.__dict__["mix_app"]


def _root_mix_app(root: Root) -> str | None:
    path = os.path.join(str(root.path), "mix.exs")
    if not os.path.isfile(path):
        return None
    try:
        m = re.search(r"^[^#\n]*\bapp:\s*:(\w+)", root.read_text(path, keep=True), re.M)
    except InputError:
        return None
    return m.group(1).lower() if m else None


_PLACEHOLDER_NAMES = frozenset(("root", "monorepo", "workspace", "workspaces", "app",
                                "project", "main"))


def _root_project_name(root: Root) -> str | None:
    base = str(root.path)
    try:
        path = os.path.join(base, "go.mod")
        if os.path.isfile(path):
            m = re.search(r"^module\s+(\S+)", root.read_text(path, keep=True), re.M)
            if m:
                parts = [p for p in m.group(1).split("/") if not re.fullmatch(r"v\d+", p)]
                last = parts[-1]
                return (last.split(".")[0] if len(parts) == 1 else last).lower()
        path = os.path.join(base, "package.json")
        if os.path.isfile(path):
            try:
                doc = jsontext.loads(root.read_text(path, keep=True))
            except ValueError:  # said where the package.json is read as the app's
                doc = None
            # a package.json that is an array or a number names nothing (audit 44)
            name = doc.get("name") if isinstance(doc, dict) else None
            if isinstance(name, str) and name:
                return name.rsplit("/", 1)[-1].lower()
        path = os.path.join(base, "pyproject.toml")
        if os.path.isfile(path):
            m = re.search(r"^\[(?:project|tool\.poetry)\][^\[]*?^name\s*=\s*['\"]([^'\"]+)",
                          root.read_text(path, keep=True), re.M | re.S)
            if m:
                return m.group(1).lower()
    except (InputError, ValueError, AttributeError):
        return None
    return None


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def loose_name(text: str) -> str:
    """A folder or image name without case and - _ . (core_application builds the
    image core-application)."""
    return _norm(text)


def _is_gem(root: Root, directory: str) -> bool:
    try:
        return any(n.endswith(".gemspec") for n in os.listdir(os.path.join(root.path,
                                                                            directory)))
    except OSError:
        return False


# An image owner a template leaves for the user to fill: your-registry, yourusername,
# <registry>; not yourls (a real owner).
_PLACEHOLDER_OWNER = lazy(r"^(?:your[-_].+|your(?:user(?:name)?|name|org|registry|repo|"
                          r"account|company|dockerhub(?:user(?:name)?)?)|<[^>]+>)$", re.I)


# an image written as variables only, filled in when the manifest is applied
# (`image: ${FHI_BASE}:${FHI_VERSION}` through envsubst, `$IMAGE`)
_VARIABLE_IMAGE = lazy(r"^(?:\$\{\w+\}|\$\w+)(?::(?:\$\{\w+\}|\$\w+|[\w.-]+))?$")


def variable_image(image: str) -> bool:
    """Whether the image reference is only variables (`${BASE}:${VERSION}`, `$IMAGE`)."""
    return _VARIABLE_IMAGE.match(image.strip()) is not None


def unfilled_image(image: str) -> bool:
    """Pure: a reference a chart rendered with values left for the deploy to fill: an
    empty tag (`acme/app:`), or a path part left empty or bare punctuation (PeterKneale/
    k8s-dotnet-microservices-monorepo-saas renders `.../{{ .Values.type }}_{{ .Values.name
    }}:{{ .Values.version }}` as `.../_:`). No published image is pulled so: it is the
    project's own, named where it is deployed."""
    ref = image.strip().split("@", 1)[0]
    if "${" in ref or "{{" in ref:
        return True
    name, colon, tag = ref.rpartition(":")
    if colon and "/" not in tag and not tag:
        return True
    path = name if colon and "/" not in tag else ref
    return any(not part.strip("_-.") for part in path.split("/")[1:])


def placeholder_image(image: str) -> bool:
    """Whether the image's owner (the path part before its name) is a placeholder, or
    the whole reference is variables a deploy script substitutes."""
    if variable_image(image):
        return True
    parts = [p for p in image.split("@", 1)[0].split("/") if p]
    return len(parts) >= 2 and _PLACEHOLDER_OWNER.match(parts[-2]) is not None


def _another_publisher(project: str | None, images: tuple[str, ...]) -> bool:
    """Whether the images name an organisation and a repository that are both unlike the
    root project (svix/svix-server deployed by OpenMeter's chart, whose workload name
    `openmeter-svix` carries the release's name), and none is like it: that pod does not
    run the code built here."""
    if not project:
        return False
    p = _norm(project)
    unlike = False
    for image in images:
        parts = [x for x in image.lower().split("@", 1)[0].split("/") if x]
        if len(parts) < 2:
            continue
        org, name = _norm(parts[-2]), _norm(parts[-1].split(":", 1)[0])
        if not org or not name:
            continue
        if p in org or org in p or p in name or name in p:
            # one of the pod's images is the project's: a sidecar of another publisher
            # (learningequality/studio's nginx beside its app) does not make it another's
            return False
        unlike = True
    return unlike


def names_the_project(project: str | None, names: set[str]) -> bool:
    """Whether a workload/image name and the root project's name plausibly agree (no
    project name: nothing says otherwise)."""
    if not project:
        return True
    p = _norm(project)
    return any(p and (p in _norm(n) or (_norm(n) and _norm(n) in p)) for n in names)


class ImageDockerfile(Frozen, kw_only=True):
    """The Dockerfile that builds a workload's image, and why it is taken for it."""

    path: str  # from the repository root
    reason: str
    base: str = ""  # the image its last stage is FROM, "" when not read
    # True when only a build's bare name (a compose service `wiki`) matched the last part
    # of an image with an owner (requarks/wiki): compose tags such a build
    # <project>-<service>, so that Dockerfile may well not be the image's
    by_bare_name: bool = False


def image_dockerfile(hints: BuildHints | None, images: list[str], names: set[str]
                     ) -> ImageDockerfile | None:
    """Pure: the Dockerfile that builds one of `images`: the one a skaffold or compose
    build of that image names, else the only Dockerfile named like the image or the
    workload (`docker/backups.Dockerfile` for thechangelog/backups); None when no
    build says and no name or several match (not determinable)."""
    if hints is None:
        return None
    bases = dict(hints.dockerfile_files)
    wanted = {image_name(i) for i in images if i}
    built = {(path, f"the build of {key} in {where} names it")
             for key, path, where in hints.dockerfiles
             if key in images or image_name(key) in wanted}
    if len({p for p, _ in built}) == 1:
        path, reason = min(built)
        exact = any(key in images or "/" in key for key, p, _where in hints.dockerfiles
                    if p == path and (key in images or image_name(key) in wanted))
        return ImageDockerfile(path=path, reason=reason, base=bases.get(path, ""),
                               by_bare_name=not exact and all("/" in i for i in images if i))
    if built:
        return None  # one image name built from several Dockerfiles
    lowered = {n.lower() for n in names | wanted if n}
    named = [p for p in bases if dockerfile_label(p) in lowered]
    if len(named) != 1:
        return None
    return ImageDockerfile(path=named[0], reason="its name is the image's or the workload's",
                           base=bases[named[0]])


def copied_folders(root: Root, path: str) -> tuple[list[str], bool]:
    """Folders (from the root) a Dockerfile anywhere in the repository copies (COPY/ADD
    sources, not --from= stages), read against the root (the usual context of a
    Dockerfile kept in infra/ or docker/: `docker build -f infra/x.Dockerfile .`) and
    against the Dockerfile's own folder; and whether it copies a whole context (`.`) or
    a project's own file (a Gemfile, mix.exs): an application, wherever it is."""
    try:
        text = root.read_text(os.path.join(root.path, path))
    except InputError:
        return [], False
    here = PurePosixPath(path).parent.as_posix()
    out: list[str] = []
    whole = False
    for _n, line in logical_lines(text):
        m = _COPY.match(line)
        if not m or "--from" in m.group(1):
            continue
        words = [w for w in m.group(1).split() if not w.startswith("--")]
        if len(words) < 2 or words[0].startswith("["):
            continue
        for src in words[:-1]:
            if src.strip("/") in (".", "./", "") or \
                    PurePosixPath(src).name in APP_FILES or src.endswith((".csproj", ".sln")):
                whole = True  # the whole context, or a project's own file (mix.exs)
                continue
            if "*" in src or "$" in src:
                continue
            for base in ("", "" if here == "." else here):
                folder = rel_inside(f"{base}/{src}" if base else src)
                if folder and folder not in out and \
                        os.path.isdir(os.path.join(root.path, folder)):
                    out.append(folder)
    return out, whole


def copied_sources(root: Root, path: str, directory: str) -> tuple[str, ...] | None:
    """The paths (from the root) the Dockerfile at `path` copies from the context
    `directory` in any stage (COPY/ADD sources, not --from= stages): what of the folder
    its image can hold. None when that is not known: it copies the whole context, a
    wildcard or a variable, uses the JSON form or a heredoc, or a source that is not
    in `directory` (the context is another folder), or copies nothing."""
    try:
        text = root.read_text(os.path.join(root.path, path))
    except InputError:
        return None
    out: list[str] = []
    for _n, line in logical_lines(text):
        m = _COPY.match(line)
        if not m or "--from" in m.group(1):
            continue
        words = [w for w in m.group(1).split() if not w.startswith("--")]
        if len(words) < 2 or words[0].startswith(("[", "<<")):
            return None
        for src in words[:-1]:
            if src.startswith(("http://", "https://", "git@")):
                continue  # ADD of a URL: nothing of the folder
            rel = rel_inside(f"{directory}/{src}" if directory else src)
            if not rel or rel == directory or any(c in src for c in "*?[$") or \
                    not os.path.exists(os.path.join(root.path, rel)):
                return None
            out.append(rel)
    return tuple(out) or None


# Folders a repository keeps one service each in, named like it (services/<name>/ of a
# root go.mod: heilrake/go-microservice; cmd/<name>; apps/<name> of a monorepo)
SERVICE_PARENTS = ("services", "cmd", "apps")


def project_part_dir(candidates: list[str], images: tuple[str, ...],
                     project: str | None) -> AppDirGuess | None:
    """Pure: the application folder <part>/ of an image named `<owner>/<project>-<part>`
    whose <project> is the owner's name or the root project's: a monorepo publishes one
    image per folder under its own name (MarquezProject/marquez: web/ is built and pushed
    as marquezproject/marquez-web, docker/build-and-push.sh; langfuse/langfuse's worker/
    is langfuse/langfuse-worker; Flagsmith/flagsmith's api/ is flagsmith/flagsmith-api).
    Only one folder of that name may hold an application."""
    own = _norm(project or "")
    for image in images:
        parts = [p for p in image_repository(image.lower()).split("/") if p]
        if len(parts) < 2 or "-" not in parts[-1]:
            continue
        owner, name = _norm(parts[-2]), parts[-1]
        for cut in [i for i, ch in enumerate(name) if ch == "-"]:
            prefix, part = _norm(name[:cut]), name[cut + 1:]
            if not prefix or not part or not (prefix in owner or (own and prefix == own)):
                continue
            found = [d for d in candidates if d and d.rsplit("/", 1)[-1].lower() == part
                     and d.split("/", 1)[0].lower() not in NOT_APP_DIRS]
            if len(found) == 1:
                return AppDirGuess(directory=found[0], reason=f"its image {image} is the "
                                   f"project's {part} part, the application folder "
                                   f"{found[0]}/")
    return None


def package_named_dir(root: Root, candidates: list[str], names: set[str]) -> str | None:
    """The one application folder whose package.json `name` (without an npm scope) is
    the workload's or its image's name: a folder named for its role (backend/) publishes
    under its package's name (s21aht/kubernetes: application/to-do/backend/package.json
    "todo-backend", built as s21aht/todo-backend for Deployment todo-backend, beside
    frontend/ with a Dockerfile of its own). Only a folder with a Dockerfile and a
    package that installs no command ("bin"). None when none or several are. I/O: each
    candidate's package.json is read once per root."""
    wanted = {n.lower() for n in names if n}
    # only a folder that builds an image (a Dockerfile of its own): packages/cli-v3 of
    # triggerdotdev/trigger.dev is the npm package trigger.dev, the image's name too,
    # but a command-line tool (its "bin") with no Dockerfile, not the webapp
    found = [d for d, name in _package_names(root, candidates).items()
             if name in wanted and has_dockerfile(root, d)]
    return found[0] if len(found) == 1 else None


def _package_names(root: Root, candidates: list[str]) -> dict[str, str]:
    """Candidate folder -> its package.json name, lowered, scope dropped (asked once per
    root and candidate list)."""
    memo = root.__dict__.setdefault("package_names", {})
    key = tuple(candidates)
    if key in memo:
        return memo[key]
    out: dict[str, str] = {}
    for d in candidates:
        if not d:
            continue  # the root's own name is root_project_name's
        path = os.path.join(str(root.path), d, "package.json")
        if not os.path.isfile(path):
            continue
        try:
            doc = jsontext.loads(root.read_text(path, keep=True))
        except (InputError, ValueError):
            continue  # said where the package.json is read as the app's
        name = doc.get("name") if isinstance(doc, dict) else None
        if isinstance(name, str) and name.strip() and not doc.get("bin"):
            # (a package with "bin" is a command-line tool it installs, not a service)
            out[d] = name.strip().rsplit("/", 1)[-1].lower()
    memo[key] = out
    return out


def named_service_dir(root: Root, candidates: list[str], names: set[str]) -> str | None:
    """The folder named like the workload or its image in services/, cmd/ or apps/ of an
    application folder (its project file above: the root's go.mod), when exactly one
    exists (I/O: listed once per root)."""
    folders = _service_folders(root, candidates)
    found = {f for name in names for f in folders.get(name, ())}
    return found.pop() if len(found) == 1 else None


def _service_folders(root: Root, candidates: list[str]) -> dict[str, list[str]]:
    """Name -> the <candidate>/{services,cmd,apps}/<name> folders (asked per workload)."""
    memo = root.__dict__.setdefault("service_folders", {})
    key = tuple(candidates)
    if key in memo:
        return memo[key]
    out: dict[str, list[str]] = {}
    for d in candidates:
        for parent in SERVICE_PARENTS:
            try:
                entries = [e.name for e in os.scandir(os.path.join(root.path, d, parent))
                           if e.is_dir(follow_symlinks=False)]
            except OSError:
                continue
            for name in entries:
                out.setdefault(name.lower(), []).append(
                    f"{d}/{parent}/{name}" if d else f"{parent}/{name}")
    memo[key] = out
    return out


def _owner_and_name(image: str) -> tuple[str, str] | None:
    """(owner, repository name) of an image with an owner, lowercased: airbyte/server:1.2
    -> (airbyte, server), ghcr.io/acme/orders -> (acme, orders); None for a bare name."""
    parts = [p for p in image.split("@", 1)[0].lower().split("/") if p]
    if len(parts) < 2:
        return None
    return parts[-2], parts[-1].split(":", 1)[0]


def prefixed_folder(candidates: list[str], images: list[str],
                    prefixes: tuple[str, ...] = ()) -> AppDirGuess | None:
    """Pure: the one application folder named `<P>-NAME` for an image `owner/NAME`, where
    P is the owner, a beginning of it, or the repository's own prefix (`prefixes`: the
    first word of its project's name): a monorepo names its service folders with the
    project's prefix and publishes them under the owner without it
    (airbytehq/airbyte-platform@310e6cb: airbyte-server/, airbyte-cron/, built as
    airbyte/server, airbyte/cron; gravitee-io/gravitee-api-management:
    gravitee-apim-gateway/, built as graviteeio/apim-gateway). None when none or
    several folders match."""
    found: dict[str, str] = {}
    for image in images:
        parsed = _owner_and_name(image)
        if parsed is None:
            continue
        owner, name = parsed
        if not name:
            continue
        for d in candidates:
            top = _app_top(d)
            base = top.rsplit("/", 1)[-1].lower()
            if not base.endswith(f"-{name}") or top.split("/", 1)[0].lower() in NOT_APP_DIRS:
                continue  # (examples/acme-server is a sample, not the image's source)
            prefix = base[: -len(name) - 1]
            if len(prefix) >= 3 and (owner.startswith(prefix) or prefix in prefixes):
                found[top] = image
    if len(found) != 1:
        return None
    top, image = found.popitem()
    return AppDirGuess(directory=top, reason=f"folder named like its image {image} with the "
                       "owner's or the repository's prefix")


def _app_top(directory: str) -> str:
    """The application folder of a candidate: the folder above src/main/ for a file in
    src/main/resources (JVM layout), else the candidate itself."""
    parts = directory.split("/")
    cut = next((i for i, p in enumerate(parts[:-1]) if p == "src" and parts[i + 1] == "main"),
               None)
    return "/".join(parts[:cut]) if cut is not None else directory


def project_prefixes(root: Root) -> tuple[str, ...]:
    """The first dash-separated word of the root project's name (airbyte-oss -> airbyte),
    three letters or more; not the root folder's name, which differs between checkouts."""
    word = (root_project_name(root) or "").split("-", 1)[0]
    return (word,) if len(word) >= 3 else ()
