"""discover.LazyGitignore answers as pathspec's GitIgnoreSpec does for every path, and
imports pathspec only when a path holds the literal text of one of the patterns."""

import subprocess
import sys

import pathspec
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.read.discover import LazyGitignore

SEGMENT = st.sampled_from(["build", "dist", ".venv", "node_modules", "a", "b.yaml", "x.py",
                           "deploy", "charts", "tmp", "values.yaml", "build.yaml"])
GLOB = st.sampled_from(["*", "**", "?", "*.yaml", "b*", "*ist", "a?", "[ab]", "\\#x", "x\\"])
PIECE = st.one_of(SEGMENT, GLOB)
PATTERN = st.builds(
    lambda neg, lead, parts, dirmark, trail: (
        ("!" if neg else "") + ("/" if lead else "") + "/".join(parts)
        + ("/" if dirmark else "") + trail),
    st.booleans(), st.booleans(), st.lists(PIECE, min_size=0, max_size=3), st.booleans(),
    st.sampled_from(["", " ", "\t"]))
LINES = st.lists(st.one_of(PATTERN, st.sampled_from(["", "# c", "/", "!", " "])),
                 max_size=6)
PATH = st.builds(lambda parts, is_dir: "/".join(parts) + ("/" if is_dir else ""),
                 st.lists(SEGMENT, min_size=1, max_size=4), st.booleans())


def _git_lines(lines):
    """The lines pathspec accepts: one it refuses (a lone `!`, a pattern ending in a
    backslash) matches nothing in git 2.39 (`git check-ignore`), so it is left out."""
    kept = []
    for line in lines:
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except ValueError:
            continue
        kept.append(line)
    return kept


@settings(max_examples=600, deadline=None)
@given(LINES, st.lists(PATH, min_size=1, max_size=8))
def test_same_answers_as_pathspec(lines, paths):
    """As pathspec answers for the lines git takes; never an error (audit 10a D8: a
    lone `!` stopped the whole run)."""
    spec = pathspec.GitIgnoreSpec.from_lines(_git_lines(lines))
    lazy = LazyGitignore(lines)
    for path in paths:
        assert lazy.match_file(path) == spec.match_file(path), (lines, path)


def test_typical_gitignore_does_not_import_pathspec():
    code = ("import sys\nfrom advisor.read.discover import LazyGitignore\n"
            "g = LazyGitignore(['.venv/', '__pycache__/', '*.egg-info/', '!keep.yaml', '# x'])\n"
            "assert not g.match_file('k8s/deployment.yaml')\n"
            "assert 'pathspec' not in sys.modules\n"
            "assert g.match_file('svc/.venv/lib/x.yaml')\n"
            "assert 'pathspec' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_pattern_without_literal_text_compiles_at_once():
    lazy = LazyGitignore(["**/*"])
    assert lazy.spec is not None
    assert lazy.match_file("anything.yaml")


def test_a_bare_star_is_a_simple_pattern_read_without_pathspec():
    lazy = LazyGitignore(["*"])
    assert lazy.simple is not None and lazy.spec is None
    assert lazy.match_file("anything.yaml") and lazy.match_file("a/b/")
