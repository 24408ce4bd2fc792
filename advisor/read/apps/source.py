"""An application's source directory as the pool readers need it: which files exist and
their text. `scan_app_dir` is the only I/O here; everything downstream is pure.

Files are classified by name only. Python is later read with `ast` and JS/TS/Go/Ruby
with token-level scanners: nothing from the repository is imported or executed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from msgspec.structs import replace

from advisor.lazyregex import lazy
from advisor.model import ConfigProblem, Frozen, Location, Source, TextPlaces
from advisor.read.fs import InputError, Root, walk

MAX_APP_FILES = 10_000  # source files read per application directory (~1 s)
MAX_SOURCE_BYTES = 1024 * 1024  # larger source files are generated or vendored

# Directories that never hold the deployed configuration (tests, dependencies, builds).
SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", "node_modules", "vendor", "venv", ".venv", "env", "__pycache__",
    "target", "build", "dist", "out", ".tox", ".nox", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", "site-packages", ".gradle", ".idea", ".next", "coverage", "obj",
    "test", "tests", "spec", "__tests__", "testdata", "e2e", "_build", "deps",
    "docs", "examples", "example", "samples", "benchmarks", "bench",
})

_SPRING_CONFIG = lazy(r"application(?:-(?P<profile>[^./]+))?\.(?:ya?ml|properties)")

_BY_NAME = {
    "database.yml": "database-yml",
    "gunicorn.conf.py": "gunicorn-conf",
    "gunicorn_conf.py": "gunicorn-conf",
    "Procfile": "procfile",
    "package.json": "package-json",
    "puma.rb": "puma",
    "sidekiq.yml": "sidekiq-yml",
    "schema.prisma": "prisma",
    "pnpm-workspace.yaml": "pnpm-workspace",  # its catalogs (apps/jssource.dependency_spec)
    # TypeORM's ormconfig (ormconfig.js/.ts are "js"; apps/ormconfig.py)
    "ormconfig.json": "ormconfig", "ormconfig.yml": "ormconfig", "ormconfig.yaml": "ormconfig",
    "ormconfig.xml": "ormconfig", "ormconfig.env": "ormconfig",
    "pom.xml": "build",
    "build.gradle": "build",
    "build.gradle.kts": "build",
    "go.mod": "go-mod",
    "Dockerfile": "dockerfile",
    "ecosystem.config.js": "pm2",
    "ecosystem.config.cjs": "pm2",
    "pm2.json": "pm2",
    "process.yml": "pm2",
    "www.conf": "php-fpm",
    "php-fpm.conf": "php-fpm",
    "mix.exs": "mix",
    ".env": "dotenv",
    "sonar.properties": "sonar-properties",  # SonarQube's conf/ (apps/images.py)
    "config.properties": "config-properties",  # Piped's backend, /app (apps/piped.py)
    "airflow.cfg": "airflow-cfg",  # $AIRFLOW_HOME/airflow.cfg (apps/airflow.py)
    "grafana.ini": "grafana-ini",  # Grafana's /etc/grafana (apps/images.py)
    "app.ini": "gitea-app-ini",  # Gitea's custom/conf (apps/images.py)
    "pgpool.conf": "pgpool-conf",  # Pgpool-II's configuration (apps/pgpool.py)
    "zitadel-config-yaml": "zitadel-config",  # the Zitadel chart's --config file (images.py)
    # dependency manifests: which driver/framework the app uses (advisor/read/apps/identify.py)
    "requirements.txt": "deps", "Pipfile": "deps", "pyproject.toml": "deps",
    "Gemfile": "deps", "Gemfile.lock": "deps", "setup.cfg": "deps",
    # lock files: the version installed, for the version a default is cited at (pydeps,
    # npmlock); not "deps", whose names say which stack the app is (transitive ones too)
    "uv.lock": "py-lock", "poetry.lock": "py-lock", "package-lock.json": "npm-lock",
    "yarn.lock": "yarn-lock",
    # Rust: the crates a package depends on and the versions locked (apps/rust.py)
    "Cargo.toml": "cargo", "Cargo.lock": "cargo-lock",
    # PHP: Composer's dependencies (Laravel, apps/laravel.py)
    "composer.json": "composer", "database.php": "laravel-config",
    "horizon.php": "laravel-config",  # Horizon's supervisors (apps/laravel_horizon.py)
    "octane.php": "laravel-config",  # Octane's default server (apps/laravel.py)
}
_BY_SUFFIX = {
    ".py": "python",
    ".js": "js", ".mjs": "js", ".cjs": "js", ".ts": "js", ".mts": "js", ".cts": "js",
    ".go": "go",
    ".rb": "ruby",
    ".exs": "elixir", ".ex": "elixir",
    ".cs": "csharp",
    ".rs": "rust",
    ".java": "java", ".kt": "java",
    ".sh": "shell",  # a wrapper script a command runs (apps/cmdline.wrapped_command)
    ".conf": "conf",  # a configuration a command names (apps/supervisord.py: -c worker.conf)
    ".cfg": "cfg",  # Python a Flask app loads (apps/sqlalchemy.py: config.from_pyfile)
}

# node-config's file formats other than JS (a config/*.js file is "js"); apps/nodeconfig.py
_NODE_CONFIG_SUFFIXES = frozenset({".json", ".jsonc", ".json5", ".hjson", ".toml", ".yaml",
                                   ".yml", ".cson", ".properties", ".xml"})


class AppFile(Frozen, kw_only=True):
    path: str  # as shown to users: relative to the scanned root
    rel: str  # relative to the application directory
    kind: str  # "spring-config", "python", "js", "database-yml", ...
    text: str
    profile: str | None = None  # Spring profile of application-<profile>.yml
    # For text embedded in another file (a ConfigMap key): add to its line numbers.
    line_offset: int = 0
    # Where its lines are cited when not at line_offset + n (ConfigMapData.text_places).
    places: TextPlaces | None = None
    # The workspace package (its folder relative to the application directory) the file
    # was read from, "" for the application's own (apps/workspaces.py)
    package: str = ""
    # Placed by a mount (a ConfigMap key at its mount path), not read from the folder
    mounted: bool = False

    @property
    def name(self) -> str:
        return PurePosixPath(self.rel).name

    def cite(self, n: int | None, key: str | None = None, name: str | None = None) -> Source:
        """The Source of the value of `name` (default: `key`'s last dotted part) on line
        `n` (1-based) of the text: line_offset + n, or where `places` says for a text
        not in the file line for line (a values line traced into it, the data key's
        line), never a line of something else."""
        if n is None:
            return Source(path=self.path, key=key)
        written = Source(path=self.path, line=n + self.line_offset, key=key)
        if self.places is None:
            return written
        lines = self.text.splitlines()
        line = lines[n - 1] if 1 <= n <= len(lines) else ""
        return self.places.cite(n, line, name or (key or "").rsplit(".", 1)[-1], written)


class AppSource(Frozen, kw_only=True):
    """The files of one application directory (text already read, safely)."""

    root: Root
    directory: str  # relative to root, "" for the root itself
    files: tuple[AppFile, ...] = ()
    problems: tuple[ConfigProblem, ...] = ()
    notices: tuple[str, ...] = ()
    # (image, Dockerfile from the root) of the workload read with it: which of the
    # folder's Dockerfiles builds each image (apps/cmdline._dockerfile_command)
    image_dockerfiles: tuple[tuple[str, str], ...] = ()

    def of_kind(self, *kinds: str) -> list[AppFile]:
        return [f for f in self.files if f.kind in kinds]

    def with_files(self, extra: list[AppFile]) -> AppSource:
        return replace(self, files=(*self.files, *extra))


def mounted_app_file(display_path: str, key: str, text: str, *, mount_path: str,
                     line_offset: int = 0, places: TextPlaces | None = None
                     ) -> AppFile | None:
    """An AppFile for a ConfigMap key mounted into the container (e.g. application.yml
    at /workspace/config): classified by the key's name, placed at its mount path, so a
    Spring `config/` mount ranks as the outside-the-jar ./config/ location.
    `display_path`/`line_offset` say where the text sits in the manifest, `places`
    where its lines are when not there line for line."""
    rel = f"{mount_path.strip('/')}/{key}" if mount_path.strip("/") else key
    found = classify(rel)
    if found is None:
        return None
    kind, profile = found
    return AppFile(path=display_path, rel=rel, kind=kind, text=text, profile=profile,
                   line_offset=line_offset, places=places, mounted=True)


def classify(rel: str) -> tuple[str, str | None] | None:
    """(kind, spring profile) for a path relative to the app directory, or None."""
    p = PurePosixPath(rel)
    name = p.name
    m = _SPRING_CONFIG.fullmatch(name)
    if m:
        return "spring-config", m.group("profile")
    if name.startswith("appsettings") and name.endswith(".json"):
        return "appsettings", None
    if (name.startswith("requirements") or "requirements/" in rel) and \
            name.endswith((".txt", ".in")):
        return "deps", None
    if name.startswith("database.yml.") and "/config/" in f"/{rel}":
        return "database-yml", None  # a sample a Dockerfile copies into place
    if re.fullmatch(r"(docker-)?entrypoint(\.sh)?|docker-entrypoint\.\w+", name):
        return "entrypoint", None  # the image's ENTRYPOINT script (commands per argument)
    if name == "config_template.yaml":
        return "temporal-config", None  # Temporal server persistence (apps/temporal.py)
    if name.endswith(".ini") and "uwsgi" in rel.lower():
        return "uwsgi", None
    if name.startswith(".env"):
        return "dotenv", None
    if "env-to-ini-mounts/" in f"/{rel}":
        # the Gitea chart's section files (inlines/database, additionals/0/server), which
        # its init container writes app.ini from (apps/images.py)
        return "gitea-env-to-ini", None
    if name.endswith(".conf") and f"/{rel}".startswith("/etc/apache2/"):
        return "apache-conf", None  # Apache's configuration (apps/nextcloud.py)
    if name in _BY_NAME:
        return _BY_NAME[name], None
    if name.endswith(".prisma"):
        return "prisma", None  # a multi-file schema (schema/main.prisma, prismaSchemaFolder)
    if name.startswith("app-config") and re.fullmatch(r"app-config(?:\.[\w-]+)?\.ya?ml", name):
        return "backstage-config", None  # Backstage's configuration (apps/backstage.py)
    if name.endswith(".conf") and "php-fpm" in rel:
        return "php-fpm", None
    if name.startswith("Dockerfile") or name.lower().endswith(".dockerfile"):
        # any case, as locate.is_dockerfile_name (Kludex/fastapi-microservices:
        # users/docker/worker.dockerfile, which its Tiltfile builds an image with)
        return "dockerfile", None
    if name.endswith(".d.ts") or name.endswith(".min.js"):
        return None
    if p.parent.name == "config" and p.suffix in _NODE_CONFIG_SUFFIXES:
        return "node-config", None  # node-config's files (apps/nodeconfig.py)
    kind = _BY_SUFFIX.get(p.suffix)
    return (kind, None) if kind else None


# A script with no extension (Rails' bin/docker-entrypoint, `CMD ["./docker/run"]`) is
# known by its first line: `#!/bin/sh`, `#!/usr/bin/env bash`, `#!/bin/bash -e`, ...
_SHELL_SHEBANG = re.compile(rb"#!\s*(?:/usr)?/bin/(?:env\s+(?:-\S+\s+)*)?(?:ba|da|a|z)?sh\b")
_MAX_SCRIPT_BYTES = 64 * 1024


def _shebang_script(full: str) -> tuple[str, str | None] | None:
    """("shell", None) for a small file with no extension whose first line runs a shell
    (only its first bytes are read to tell); None for any other file."""
    from advisor.read.fs import read_regular

    try:
        head = read_regular(Path(full), _MAX_SCRIPT_BYTES)[:64]  # a FIFO is never opened
    except OSError:
        return None
    return ("shell", None) if _SHELL_SHEBANG.match(head) else None


def scan_app_dir(root: Root, directory: str) -> AppSource:
    """Read the application files under `directory` (relative to the root). Unreadable
    files become ConfigProblems; the walk never leaves the root or follows symlinks."""
    try:
        base = root.resolve(directory or ".")
    except InputError as exc:
        problem = ConfigProblem(location=Location(path=exc.path), message=exc.message)
        return AppSource(root=root, directory=directory, problems=(problem,))
    files: list[AppFile] = []
    problems: list[ConfigProblem] = []
    notices: list[str] = []
    if not base.is_dir():
        problem = ConfigProblem(location=Location(path=root.rel(base)),
                                message="application directory not found")
        return AppSource(root=root, directory=directory, problems=(problem,))
    count = 0
    for dirpath, dirnames, filenames in walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS
                             and not (d.startswith(".") and d != ".config"))
        for filename in sorted(filenames):
            full = os.path.join(dirpath, filename)
            rel = PurePosixPath(os.path.relpath(full, base)).as_posix()
            found = classify(rel)
            if found is None and "." not in filename and not os.path.islink(full):
                found = _shebang_script(full)  # `./docker/run`, `bin/docker-entrypoint`
            if found is None or os.path.islink(full):
                continue
            kind, profile = found
            if kind in _BY_SUFFIX.values() and os.path.getsize(full) > MAX_SOURCE_BYTES:
                continue
            count += 1
            if count > MAX_APP_FILES:
                notices.append(f"{root.rel(base)}: more than {MAX_APP_FILES} source files; "
                               "the rest were not read for pool settings")
                break
            try:
                text = root.read_text(full, keep=True)  # the SQL scan reads it too
            except InputError as exc:
                problems.append(ConfigProblem(location=Location(path=exc.path, line=exc.line),
                                              message=exc.message))
                continue
            shown = root.rel(full)
            if root.once is not None:
                root.once.note_marks(shown, text)
            files.append(AppFile(path=shown, rel=rel, kind=kind, text=text, profile=profile))
        if count > MAX_APP_FILES:
            break
    if any(f.kind == "go" for f in files) and not any(f.kind == "go-mod" for f in files):
        files.extend(_go_imported_files(root, base, files, problems))
    if any(f.kind == "package-json" for f in files) and count <= MAX_APP_FILES:
        from advisor.read.apps.workspaces import SourceRules, workspace_files

        own = [f.text for f in files if f.kind == "package-json"]
        rules = SourceRules(classify, SKIP_DIRS, MAX_SOURCE_BYTES)
        for shown, rel, text, package in workspace_files(
                root, base, own, MAX_APP_FILES - count, problems, notices, rules):
            found = classify(rel)
            files.append(AppFile(path=shown, rel=rel, kind=found[0] if found else "js",
                                 text=text, package=package))
    if not any(f.kind == "backstage-config" for f in files) and any(
            f.kind == "package-json" and "@backstage/backend-" in f.text for f in files):
        files.extend(_backstage_workspace_configs(root, base, problems))
    return AppSource(root=root, directory=directory, files=tuple(files),
                     problems=tuple(problems), notices=tuple(notices))


def _backstage_workspace_configs(root: Root, base: Path, problems: list[ConfigProblem]
                                 ) -> list[AppFile]:
    """A Backstage backend package (packages/backend of a create-app monorepo) runs with
    the monorepo's root as its working directory (its Dockerfile copies app-config*.yaml
    there; `node packages/backend --config app-config.yaml`): the app-config*.yaml files of
    the nearest folder above it, inside the repository, whose package.json declares
    workspaces, each with `rel` its name there (apps/backstage.py)."""
    folder = base.parent
    while folder != root.path and root.path in folder.parents:
        pkg = folder / "package.json"
        if pkg.is_file() and not pkg.is_symlink():
            try:
                text = root.read_text(pkg, keep=True)
            except InputError:
                return []
            if '"workspaces"' in text:
                break
        folder = folder.parent
    else:
        if folder != root.path:
            return []
    out = []
    try:
        names = sorted(e.name for e in os.scandir(folder) if e.is_file(follow_symlinks=False))
    except OSError:
        return []
    for name in names:
        if classify(name) != ("backstage-config", None):
            continue
        try:
            text = root.read_text(folder / name, keep=True)
        except InputError as exc:
            problems.append(ConfigProblem(location=Location(path=exc.path, line=exc.line),
                                          message=exc.message))
            continue
        out.append(AppFile(path=root.rel(folder / name), rel=name, kind="backstage-config",
                           text=text))
    return out


_GO_MODULE = lazy(r"^module\s+\"?([^\s\"]+)", re.M)
_GO_IMPORT_BLOCK = lazy(r"^import\s*\(([^)]*)\)", re.M)
_GO_IMPORT_LINE = lazy(r"^import\s+(?:[\w.]+\s+)?\"([^\"]+)\"", re.M)
_GO_QUOTED = lazy(r"\"([^\"]+)\"")


def go_imports(text: str) -> set[str]:
    """The import paths of a Go file (both `import "x"` and the parenthesised block)."""
    found = set(_GO_IMPORT_LINE.findall(text))
    for block in _GO_IMPORT_BLOCK.findall(text):
        found.update(_GO_QUOTED.findall(block))
    return found


def _go_imported_files(root: Root, base: Path, files: list[AppFile],
                       problems: list[ConfigProblem]) -> list[AppFile]:
    """A Go main package below its module's go.mod (cmd/api of a module at the root, as
    ko and `go build ./cmd/$SERVICE` build it): the packages of the same module it
    imports, transitively, and the go.mod. Its pool is opened there (pkg/db), not in
    main.go; the module's other commands' packages are not read."""
    if base == root.path:
        return []
    module_dir = base.parent
    while True:
        if (module_dir / "go.mod").is_file():
            break
        if module_dir == root.path or module_dir == module_dir.parent:
            return []
        module_dir = module_dir.parent
    try:
        go_mod = root.read_text(module_dir / "go.mod", keep=True)
    except InputError:
        return []
    m = _GO_MODULE.search(go_mod)
    if m is None:
        return []
    module = m.group(1)
    out = [AppFile(path=root.rel(module_dir / "go.mod"),
                   rel=os.path.relpath(module_dir / "go.mod", base), kind="go-mod",
                   text=go_mod)]
    seen = {base}
    pending = [f.text for f in files if f.kind == "go"]
    count = len(files)
    while pending:
        for path in sorted(go_imports(pending.pop())):
            rest = path[len(module) + 1:]
            if not path.startswith(module + "/") or \
                    any(part in ("", ".", "..") for part in rest.split("/")):
                continue  # another module's, or a path that would leave this one
            package = module_dir / rest
            if package in seen or base in package.parents:
                # below the folder: walked already (huangyingting/bingo-microservices'
                # go/app/bi imports go/app/bi/internal/data: its sql.Open was read twice,
                # two pools, PA102 twice)
                continue
            seen.add(package)
            try:
                names = sorted(e.name for e in os.scandir(package) if e.is_file()
                               and e.name.endswith(".go") and not e.name.endswith("_test.go"))
            except OSError:
                continue
            for name in names:
                full = package / name
                count += 1
                if count > MAX_APP_FILES or full.is_symlink() or \
                        full.stat().st_size > MAX_SOURCE_BYTES:
                    continue
                try:
                    text = root.read_text(full, keep=True)
                except InputError as exc:
                    problems.append(ConfigProblem(location=Location(path=exc.path,
                                                                    line=exc.line),
                                                  message=exc.message))
                    continue
                shown = root.rel(full)
                if root.once is not None:
                    root.once.note_marks(shown, text)
                out.append(AppFile(path=shown, rel=os.path.relpath(full, base), kind="go",
                                   text=text))
                pending.append(text)
    return out


# Folders of scripts that are not the deployed process: load tests, benchmarks, examples
# and demos (perfTest/, benchmarks/, load-tests/, examples/...). Their pools are not a pod's.
_AUXILIARY_DIR = lazy(r"(?i)^(?:perf|bench|load[-_]?test|stress|example|demo|sample|"
                            r"fixture|test|e2e|spec|__tests__|cypress|playwright)")


def auxiliary_script(rel: str) -> bool:
    """A file under a benchmark/test/example folder (any level below the app folder)."""
    parts = rel.split("/")[:-1]
    return any(_AUXILIARY_DIR.match(p) for p in parts)


_DOTENV_LINE = re.compile(r"\s*(?:export\s+)?([A-Za-z_]\w*)\s*=\s*(.*?)\s*$")


def dotenv_values(f: AppFile) -> dict[str, tuple[str, int]]:
    """A dotenv file's `NAME=value` lines (`export` allowed, quotes taken off, a ` #`
    comment after an unquoted value dropped), each name's last value and its line."""
    out: dict[str, tuple[str, int]] = {}
    for n, line in enumerate(f.text.splitlines(), 1):
        m = _DOTENV_LINE.match(line)
        if m and not line.lstrip().startswith("#"):
            value = m.group(2)
            if len(value) > 1 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            elif " #" in value:
                value = value.split(" #", 1)[0].rstrip()
            out[m.group(1)] = (value, n)
    return out
