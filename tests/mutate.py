"""Wrong-typed manifests: every value of a fixture repository's YAML replaced, one at a
time, by a value of another type or an absurd one. Shared by the CI fuzz tests
(tests/test_hostile_fuzz.py) and the local campaign (scripts/fuzz_campaign.py)."""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

WRONG: list[Any] = [
    "1.2.3Gi", "", "x", "-5", -5, 0, -1, 10**400, "9" * 400, 1e308, float("inf"),
    float("nan"), True, None, [], {}, [1, 2], {"a": 1}, "a\x00b", "line\nbreak",
    "::error::x", "\x1b[31mred", "@someone", "100m", "0.5", 2**63, -(2**63) - 1, "1e400",
    "${VAR}", "{{ .Values.x }}", [None], [[]], {"": None}, 3.5, "٣",  # Arabic-Indic digit
]


def yaml_files(repo: Path) -> list[Path]:
    return sorted(p for p in repo.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def paths_of(node: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every key path in a loaded YAML document."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths_of(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths_of(v, (*prefix, i))


def replaced(node: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    head, *rest = path
    if isinstance(node, dict):
        return {k: (replaced(v, tuple(rest), value) if k == head else v) for k, v in node.items()}
    return [replaced(v, tuple(rest), value) if i == head else v for i, v in enumerate(node)]


def dump(docs: list[Any]) -> str:
    def clean(v: Any) -> Any:  # PyYAML cannot dump big ints as ints in all loaders: keep them
        return v
    return yaml.safe_dump_all([clean(d) for d in docs], sort_keys=False, allow_unicode=True)


def mutants(repo: Path, rng: random.Random, count: int) -> Iterator[tuple[Path, str]]:
    """(file, new text) pairs: one value of one document replaced by a wrong one."""
    files = yaml_files(repo)
    loaded = {}
    for f in files:
        try:
            loaded[f] = [d for d in yaml.safe_load_all(f.read_text()) if d is not None]
        except yaml.YAMLError:
            continue
    candidates = [(f, i, p) for f, docs in loaded.items() for i, d in enumerate(docs)
                  for p in paths_of(d) if p]
    if not candidates:
        return
    for _ in range(count):
        f, i, path = rng.choice(candidates)
        docs = list(loaded[f])
        docs[i] = replaced(docs[i], path, rng.choice(WRONG))
        yield f, dump(docs)


def copy_repo(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, dirs_exist_ok=True)
    return dst
