"""One arithmetic in every format: every fixture rendered in text (plain and -v),
markdown, the PR comment, JSON, SARIF, GitLab, rdjson and GitHub annotations; every
`expression = number` printed is evaluated and must hold. A format that printed
`20 x 5 = 25` for `20 + 5` (markdown did) fails here."""

from __future__ import annotations

import html
import json
import re
import urllib.parse

import pytest

from advisor.budget.arith import Style, formula
from advisor.model import Contribution, Location, Source, Term
from advisor.report import get_renderer
from advisor.report.text import render as render_text
from tests.cli_helpers import REPO

# A term's label in parentheses: "(HPA maxReplicas, k8s/hpa.yaml:12)". Its content does
# not start with a digit; "(40 + 1)" (pods plus surge) and "min(...)" are arithmetic.
_LABEL_START = re.compile(r"\((?!\s*[\d(])")
_EQUATION = re.compile(r"((?:min|[\d.\s+x\-(),])+)=\s*(\d+(?:\.\d+)?)")
_USABLE = re.compile(r"(\d+(?:\.\d+)?) usable = ([\d.\s\-]+)")


def _plain(text: str) -> str:
    """Markdown, HTML and workflow-command escaping undone; signs made ASCII."""
    text = urllib.parse.unquote(text) if "%0A" in text else text
    text = html.unescape(text).replace("<br>", "\n")
    text = re.sub(r"\\(.)", r"\1", text).replace("**", "").replace("`", "")
    text = text.replace("\u00d7", "x").replace("\u2212", "-").replace("\u2264", "<=")
    return re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)


def _strip_labels(line: str) -> str:
    """Remove every label group, nested groups in it included."""
    out, i = [], 0
    while i < len(line):
        m = _LABEL_START.match(line, i)
        if m is None:
            out.append(line[i])
            i += 1
            continue
        depth, j = 0, i
        while j < len(line):
            depth += {"(": 1, ")": -1}.get(line[j], 0)
            j += 1
            if depth == 0:
                break
        i = j
    return "".join(out)


def _evaluate(lhs: str) -> float | None:
    """The value of the arithmetic at the end of `lhs`, or None when it has no operator."""
    lhs = lhs.strip().rstrip(",")
    for start in range(len(lhs)):
        tail = lhs[start:].strip()
        if not tail or tail[0] in ")x,+-":
            continue
        if not re.search(r"\d\s*(x|\+|-)\s*[\d(]|min\(", tail):
            return None
        try:
            return eval(tail.replace("x", "*"), {"__builtins__": {}}, {"min": min})
        except SyntaxError:
            continue
    return None


def equations(text: str) -> list[tuple[str, float, float]]:
    """(expression, its value, the number printed after `=`) for every line."""
    found = []
    for raw in _plain(text).splitlines():
        for line in re.split(r"; |\. (?=[A-Za-z])", raw):
            line = _strip_labels(line)
            for m in _USABLE.finditer(line):
                value = _evaluate(m.group(2))
                if value is not None:
                    found.append((m.group(0), value, float(m.group(1))))
            for m in _EQUATION.finditer(line):
                value = _evaluate(m.group(1))
                if value is not None:
                    found.append((m.group(0).strip(), value, float(m.group(2))))
    return found


def _outputs(result, registry) -> dict[str, str]:
    from advisor.ci.comment import build_body

    out = {fmt: get_renderer(fmt)(result, registry)
           for fmt in ("json", "sarif", "gitlab", "rdjson", "github", "markdown")}
    out["text"] = render_text(result, registry, width=10_000)
    out["text -v"] = render_text(result, registry, verbose=True, width=60)
    out["comment"] = build_body(result, registry)
    # Wrapped text is one logical line per indented block: join continuation lines.
    out["text -v"] = re.sub(r"\n {4,}(?=\S)", " ", out["text -v"])
    for fmt in ("json", "sarif", "gitlab", "rdjson"):
        out[fmt] = "\n".join(_strings(json.loads(out[fmt])))
    return out


def _strings(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _strings(v)]
    if isinstance(node, list):
        return [s for v in node for s in _strings(v)]
    return []


@pytest.fixture(scope="module")
def fixture_outputs():
    import os

    from tests.test_report_sarif import _fixture_results

    here = os.getcwd()
    os.chdir(REPO)
    try:
        registry, results = _fixture_results()
        return [(name, result, _outputs(result, registry)) for name, result in results]
    finally:
        os.chdir(here)


def test_every_printed_equation_holds_in_every_format(fixture_outputs):
    checked = 0
    for name, result, outputs in fixture_outputs:
        for fmt, text in outputs.items():
            for expr, value, printed in equations(text):
                assert value == pytest.approx(printed), f"{name} {fmt}: {expr}"
                checked += 1
            if result.budgets and fmt in ("text", "text -v", "markdown", "json", "comment"):
                assert equations(text), f"{name} {fmt}: no arithmetic found"
    assert checked > 100


def test_every_contribution_is_printed_with_its_operator(fixture_outputs):
    """Each contribution's own equation (operator included) is in the formats that
    show budgets, so a product printed for a sum cannot pass as another line."""
    for name, result, outputs in fixture_outputs:
        for b in result.budgets:
            stack = list(b.contributions)
            while stack:
                c = stack.pop()
                stack.extend(c.parts)
                sign = {"x": " x ", "+": " + ", "min": "min("}[c.op]
                for fmt in ("text", "markdown", "json", "comment"):
                    exprs = [e for e, _, _ in equations(outputs[fmt])]
                    if len(c.factors) > 1 or (c.op == "min" and c.factors):
                        assert any(sign.strip() in e for e in exprs), f"{name} {fmt} {c.who}"


def test_findings_with_a_derivation_carry_it_in_every_format(fixture_outputs):
    seen = 0
    for name, result, outputs in fixture_outputs:
        for f in result.findings:
            steps = [x.strip() for x in f.detail.splitlines() if x.strip()]
            for fmt in ("sarif", "gitlab", "rdjson", "github", "json", "text -v", "comment"):
                text = " ".join(_plain(outputs[fmt]).split())
                for step in steps:
                    assert " ".join(_plain(step).split()) in text, f"{name} {fmt}: {step}"
                    seen += 1
    assert seen > 20


def _term(label: str, value: float) -> Term:
    return Term(label=label, value=value, source=Source(path="p.ini", line=1))


@pytest.mark.parametrize(("op", "expected"), [
    ("+", "20 (default_pool_size, p.ini:1) + 5 (reserve_pool_size, p.ini:1)"),
    ("x", "20 (default_pool_size, p.ini:1) x 5 (reserve_pool_size, p.ini:1)"),
])
def test_formula_honours_the_operator(op, expected):
    c = Contribution(who="shop", kind="pooler", op=op, total=25,
                     factors=[_term("default_pool_size", 20), _term("reserve_pool_size", 5)],
                     location=Location(path="p.ini"))
    assert formula(c) == expected
    md = Style(times="\u00d7")
    assert formula(c, md) == expected.replace(" x ", " \u00d7 ")


def test_the_checker_catches_a_wrong_operator():
    assert equations("shop: 20 (default_pool_size, p.ini:1) \u00d7 5 (reserve, p.ini:2) = 25") \
        == [("20  x 5  = 25", 100, 25.0)]
    assert equations("min(25 (a), 40 (max_db_connections, x.ini:3)) = 25")[0][1:] == (25, 25.0)
