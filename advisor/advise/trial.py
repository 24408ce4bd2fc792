"""advise ends where check passes: the repository as it would be after advise's edits,
checked by the same engine as `check`. What is still reported at or above fail-on is
what advise could not fix, and advise says so and exits 1."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from advisor.model import Finding, Severity

# Not copied into the trial tree: nothing pool-advisor reads lives there.
_SKIP = shutil.ignore_patterns(".git", "node_modules", ".venv", "venv", "__pycache__",
                               ".tox", ".mypy_cache", ".ruff_cache", ".pytest_cache")


def remaining_after(paths: Sequence[Path], changes: Sequence[tuple[Path, str]], *,
                    config: Path | None, pg_version: int | None, root: Path,
                    values_files: Sequence[str] = (), set_values: Sequence[str] = (),
                    release: str | None = None, namespace: str | None = None) -> list[Finding]:
    """Findings at or above the project's fail-on that `check` would still report after
    writing `changes` ((file, new text) pairs): run on a copy of the repository `root`
    (what the paths read may be anywhere in it), nothing of the user's is touched.
    Symlinks are copied as links, never followed out of the tree."""
    from advisor.engine.check import project_settings, run_check
    from advisor.engine.options import CheckOptions

    base = root.resolve()
    with tempfile.TemporaryDirectory(prefix="pool-advisor-after-") as tmp:
        trial = Path(tmp) / base.name
        shutil.copytree(base, trial, symlinks=True, ignore=_SKIP)
        for real, text in changes:
            target = trial / real.resolve().relative_to(base)
            target.parent.mkdir(parents=True, exist_ok=True)  # a file advise adds
            target.write_text(text, encoding="utf-8")
        trial_paths = [str(trial / p.resolve().relative_to(base)) for p in paths]
        # values files as helm -f reads them, from the working directory: the copy's own
        # where they are in the repository (advise may have edited them)
        values = [str(trial / Path(v).resolve().relative_to(base))
                  if Path(v).resolve().is_relative_to(base) else v for v in values_files]
        options = CheckOptions(config=config, pg_version=pg_version, root=trial,
                               values_files=values, set_values=list(set_values),
                               release=release, namespace=namespace)
        settings = project_settings(trial_paths, options)
        result = run_check(trial_paths, options)
    floor = Severity(settings.fail_on).rank
    return [f for f in result.findings if f.severity.rank >= floor]
