"""discover.LazyGitignore answers as pathspec's GitIgnoreSpec does for every path, and
imports pathspec only when a path holds the literal text of one of the patterns."""

import subprocess
import sys

import pathspec
import pytest
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


# What git 2.39 `git check-ignore --no-index` ignores by each line, among these paths
# (a reversed range: wildmatch compares its first character before the range, which
# matches nothing; a `-` after a range is itself). pathspec's regex refuses a reversed
# range with re.error, which is not a ValueError: the run stopped (review s26 F6).
NAMES = ["z", "a", "b", "m", "d/z", "]", "q", "Z", "-", "c"]


@pytest.mark.parametrize(("line", "ignored"), [
    ("**/[z-a]", ["z", "d/z"]),
    ("[z-a]", ["z", "d/z"]),
    ("[z-ab]", ["z", "b", "d/z"]),
    ("[!z-a]", ["a", "b", "m", "d/z", "]", "q", "Z", "-", "c"]),
    ("[]z-a]", ["z", "d/z", "]"]),
    ("[z-a-c]", ["z", "d/z", "-", "c"]),
    ("[!z-a-c]", ["a", "b", "m", "d/z", "]", "q", "Z"]),
    ("[Z-A]", ["Z"]),
    ("[", []),
    ("[!]", []),
    ("a[z-a", []),
])
def test_a_line_pythons_regex_refuses_is_read_as_git_reads_it(line, ignored):
    lazy = LazyGitignore([line, "*.yaml"])
    assert [n for n in NAMES if lazy.match_file(n)] == ignored


def test_a_reversed_range_does_not_stop_the_run(tmp_path):
    (tmp_path / ".gitignore").write_text("**/[z-a]\n")
    (tmp_path / "z").mkdir()
    (tmp_path / "z" / "pg.yaml").write_text("kind: ConfigMap\n")
    done = subprocess.run([sys.executable, "-m", "advisor", "check", str(tmp_path),
                           "--no-cache"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "internal error" not in done.stderr
