"""advisor.read.yamlnodes: the positioned tree's node types live apart from PyYAML, so a
warm check that parses no YAML file decodes its cached trees without importing it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from advisor.read import yamlnodes, yamlpos
from tests.cli_helpers import REPO

RUN = ("import sys; from advisor.cli import run; "
       "code = run(['check', sys.argv[1], '--format', 'json']); "
       "print(code, 'yaml' in sys.modules, 'advisor.read.yamlpos' in sys.modules)")


def _check(tree: Path) -> str:
    proc = subprocess.run([sys.executable, "-c", RUN, str(tree)], capture_output=True,
                          text=True, check=False, cwd=REPO)
    return proc.stdout.strip().splitlines()[-1]


def test_a_warm_check_that_parses_no_yaml_does_not_import_pyyaml(tmp_path):
    tree = tmp_path / "repo"
    shutil.copytree(REPO / "fixtures" / "acme-shop", tree)
    (tree / ".git").mkdir()  # the repository root: the cache folder goes there
    first = _check(tree)
    assert first.split()[1:] == ["True", "True"], first  # cold: every file parsed
    warm = _check(tree)
    assert warm.split()[0] == first.split()[0]
    assert warm.split()[1:] == ["False", "False"], warm


def test_yamlpos_builds_the_node_types_of_yamlnodes():
    doc = yamlpos.load("a: {b: [1, 2]}\nc: |\n  text\n")
    assert type(doc) is yamlnodes.PosMap and type(doc["a"]["b"]) is yamlnodes.PosList
    assert type(doc["c"]) is yamlnodes.BlockStr
    assert isinstance(doc, yamlnodes.Positions) and isinstance(doc["a"]["b"], yamlnodes.Positions)
