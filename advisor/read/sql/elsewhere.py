"""Application folders a hosting platform deploys, outside the cluster: Vercel.

A `vercel.json` marks the folder Vercel builds and runs as serverless functions: its
own folder, or the one its buildCommand/installCommand enters (`cd nexus/frontend &&
npm run build` in a monorepo's root vercel.json). That code runs on Vercel's machines,
which do not reach a pooler's cluster-internal Service (valueskins' Prisma app, audit 36
N3): its hazards are not checked against the repository's poolers. A root vercel.json
that enters no folder deploys the whole repository and is not read as one: the
repository's own workloads may run that code too.

    vercel_folders(root, paths) -> {folder: "vercel.json:line"}
"""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

from advisor.lazyregex import lazy
from advisor.read.fs import InputError, Root

_CD = lazy(r"(?:^|&&|;)\s*cd\s+['\"]?([\w./-]+)")


def vercel_folders(root: Root, paths: list[Path]) -> dict[str, str]:
    found: dict[str, str] = {}
    for path in paths:
        shown = root.rel(path)
        try:
            text = root.read_text(path)
            data = json.loads(text)
        except (InputError, OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        here = PurePosixPath(shown).parent.as_posix()
        here = "" if here == "." else here
        for key in ("buildCommand", "installCommand"):
            command = data.get(key)
            m = _CD.search(command) if isinstance(command, str) else None
            if m is not None:
                line = text.count("\n", 0, text.find(f'"{key}"')) + 1
                inside = PurePosixPath(here, m.group(1)).as_posix().strip("/")
                if inside and not inside.startswith(".."):
                    found.setdefault(inside.removeprefix("./"), f"{shown}:{line}")
                break
        else:
            if here:
                found.setdefault(here, f"{shown}:1")
    return found
