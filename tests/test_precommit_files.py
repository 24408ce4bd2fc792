"""The hook's `files:` pattern covers every kind of file pool-advisor reads: a commit
that changes only a Dockerfile's worker count, a Procfile or a .env is still checked."""

from __future__ import annotations

import os
import re

import pytest
import yaml

from tests.cli_helpers import REPO

HOOK = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())[0]
FILES = re.compile(HOOK["files"])  # pre-commit compiles it with re.search


@pytest.mark.parametrize("path", [
    "Dockerfile", "services/api/Dockerfile", "api/Dockerfile.prod", "Procfile", ".env",
    "services/web/.env.production", "package.json", "src/Api/appsettings.json", "mix.exs",
    "config/runtime.exs", "src/Db.cs", "charts/api/templates/_helpers.tpl", "src/db.mjs",
    "src/db.cjs", "app/page.tsx", "k8s/hpa.yaml", "pgbouncer.ini", "db/postgresql.conf",
    "prisma/schema.prisma", "pom.xml", "charts/api/charts/postgresql-12.1.0.tgz",
    "config/puma.rb", "gunicorn.conf.py", "go.mod", "Gemfile",
])
def test_the_hook_runs_for_every_file_kind_the_tool_reads(path):
    assert FILES.search(path), path


def test_every_fixture_file_is_covered():
    missed = []
    for top in ("fixtures", "tests/fixtures_apps", "tests/realworld"):
        for folder, dirs, files in os.walk(REPO / top):
            # bytecode other tests leave when they import the fixture apps is not committed,
            # nor the parse cache their checks leave (it ignores itself)
            dirs[:] = [d for d in dirs if d not in ("__pycache__", ".pool-advisor-cache")]
            for name in files:
                rel = os.path.relpath(os.path.join(folder, name), REPO)
                if not name.endswith(".md") and not FILES.search(rel):
                    missed.append(rel)
    assert missed == []


def test_the_hook_checks_the_whole_repository_for_the_files_it_gets():
    assert HOOK["entry"].split()[:3] == ["pool-advisor", "check", "--changed-files"]
    assert HOOK["pass_filenames"] is True and HOOK["language"] == "python"
