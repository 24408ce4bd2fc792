"""The exact version a Python app pins a package at (advisor/read/apps/pydeps.py): the
version a library default is cited at (gunicorn's workers default)."""

from __future__ import annotations

import pytest

from advisor.read.apps import scan_app_dir
from advisor.read.apps.pydeps import python_pin
from advisor.read.fs import Root

# in the shape uv writes (our own lines, no real project's)
UV_LOCK = """version = 1
requires-python = ">=3.12"

[[package]]
name = "flask"
version = "3.1.0"

[[package]]
name = "Gunicorn"
version = "26.0.0"
source = { registry = "https://pypi.org/simple" }
dependencies = [{ name = "packaging" }]
"""

POETRY_LOCK = """[[package]]
name = "click"
version = "8.1.7"
optional = false

[[package]]
name = "gunicorn"
version = "20.1.0"
description = "WSGI HTTP Server for UNIX"
"""

CASES = [
    ("requirements.txt", "Flask==1.1.2\ngunicorn==20.1.0\n", ("20.1.0", 2)),
    ("requirements.txt", "gunicorn[gevent]==21.2.0 ; python_version>'3'  # web\n",
     ("21.2.0", 1)),
    ("requirements.txt", "gunicorn==22.0.0 \\\n    --hash=sha256:abc\n", ("22.0.0", 1)),
    ("requirements.txt", "Gunicorn === 19.9.0\n", ("19.9.0", 1)),
    ("requirements.txt", "gunicorn>=20\n", None),  # a range is no version
    ("requirements.txt", "gunicorn-foo==1.0\n", None),
    ("requirements/prod.txt", "gunicorn==20.0.4\n", ("20.0.4", 1)),
    ("pyproject.toml", 'dependencies = ["gunicorn==23.0.0", "flask"]\n', ("23.0.0", 1)),
    ("pyproject.toml", '[tool.poetry.dependencies]\ngunicorn = "20.1.0"\n', ("20.1.0", 2)),
    ("pyproject.toml", 'gunicorn = "^20.1.0"\n', None),
    ("pyproject.toml", 'gunicorn = {version = "==20.0.4", extras = ["gevent"]}\n',
     ("20.0.4", 1)),
    ("Pipfile", '[packages]\ngunicorn = "==19.9.0"\n', ("19.9.0", 2)),
    ("Pipfile", '[packages]\ngunicorn = "*"\n', None),
    ("setup.cfg", "[options]\ninstall_requires =\n    gunicorn==20.1.0\n", ("20.1.0", 3)),
    # lock files: the version installed, cited at its version line (audit 6a D7)
    ("uv.lock", UV_LOCK, ("26.0.0", 10)),
    ("poetry.lock", POETRY_LOCK, ("20.1.0", 8)),
    ("uv.lock", UV_LOCK.replace('version = "26.0.0"', 'version = "26.1.0b1"'), None),
    ("uv.lock", "[[package]\nname = ", None),  # not TOML: no version
]


@pytest.mark.parametrize(("name", "text", "want"), CASES)
def test_an_exact_pin_is_read_with_its_line(tmp_path, name, text, want):
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text(text)
    found = python_pin(scan_app_dir(Root.of(tmp_path), ""), "gunicorn")
    got = (found[0], found[1].line) if found else None
    assert got == want


def test_two_manifests_that_disagree_give_no_version(tmp_path):
    (tmp_path / "requirements.txt").write_text("gunicorn==20.1.0\n")
    (tmp_path / "requirements-dev.txt").write_text("gunicorn==23.0.0\n")
    assert python_pin(scan_app_dir(Root.of(tmp_path), ""), "gunicorn") is None


def test_a_lock_and_a_manifest_that_disagree_give_no_version(tmp_path):
    (tmp_path / "uv.lock").write_text(UV_LOCK)
    (tmp_path / "requirements.txt").write_text("gunicorn==23.0.0\n")
    assert python_pin(scan_app_dir(Root.of(tmp_path), ""), "gunicorn") is None
    (tmp_path / "requirements.txt").write_text("gunicorn==26.0.0\n")
    found = python_pin(scan_app_dir(Root.of(tmp_path), ""), "gunicorn")
    assert found is not None and found[1].label() == "uv.lock:10"
