"""report/json: the text is json.dumps(to_dict(result), indent=2) byte for byte, made
from json's C encoder laid out by msgspec, in pieces (render and write)."""

from __future__ import annotations

import io
import json

import pytest

from advisor.report import json as json_report

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

# Every kind of value a report holds, and the ones json writes its own way: floats of
# any size (1e+16, 1e-07, -0.0), NaN and Infinity (not JSON), non-ASCII, DEL, controls,
# astral characters and lone surrogates (written as escapes), big ints, empty containers.
scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=2**63)
           | st.floats(allow_nan=True, allow_infinity=True)
           | st.sampled_from([1e16, 1e-7, 2.5e-05, 1e22, -0.0, 5e-324, 100.0])
           | st.text(st.characters(codec=None), max_size=12)
           | st.sampled_from(["é\x7f\x01\n\"\\/\u2028\U0001f600", "\ud800", ""]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=4), inner, max_size=4),
                      max_leaves=30)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.dictionaries(st.text(max_size=6), values, max_size=6))
def test_chunks_are_json_dumps_indent_2(data):
    assert "".join(json_report._chunks(data)) == json.dumps(data, indent=2)


@settings(max_examples=50, derandomize=True, deadline=None)
@given(st.dictionaries(st.integers() | st.booleans() | st.none(), values, max_size=3))
def test_other_keys_as_json_writes_them(data):
    assert "".join(json_report._chunks(data)) == json.dumps(data, indent=2)


def test_render_and_write_give_json_dumps_of_a_fixture():
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions
    from advisor.rules import load_rules

    reg = load_rules()
    result = run_check(["fixtures/acme-shop"], CheckOptions(cache=False), reg)
    expected = json.dumps(json_report.to_dict(result), indent=2) + "\n"
    assert json_report.render(result, reg) == expected
    out = io.StringIO()
    json_report.write(result, reg, out)
    assert out.getvalue() == expected
    assert json.loads(expected)["budgets"]  # the fixture has something to lay out


# What a finding or a notice holds: no float (report/json.FLOATLESS), any text.
floatless_scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=2**63)
                     | st.text(st.characters(codec=None), max_size=12)
                     | st.sampled_from(["é\x7f\x01\n\"\\/\u2028\U0001f600", "\ud800", "",
                                        "\x7f", "plain ascii", "tab\there"]))
floatless_values = st.recursive(
    floatless_scalars, lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=30)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(json_report.FLOATLESS)),
                       st.lists(floatless_values, min_size=1, max_size=4), max_size=3))
def test_floatless_lists_through_msgspec_are_json_dumps_indent_2(data):
    assert "".join(json_report._chunks(data)) == json.dumps(data, indent=2)


def _floats(value) -> list[float]:
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        return [f for k, v in value.items() for f in _floats(k) + _floats(v)]
    if isinstance(value, list | tuple):
        return [f for v in value for f in _floats(v)]
    return []


@pytest.mark.parametrize("fixture", ["fixtures/acme-shop", "tests/realworld/flux-gitops"])
def test_findings_and_notices_hold_no_float(fixture):
    """What FLOATLESS claims, on reports with findings of every kind the fixtures give
    (fixes with replacements, related locations): were a float to appear in a finding,
    msgspec would write it its own way."""
    from pathlib import Path

    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions
    from advisor.rules import load_rules

    if not Path(fixture).is_dir():
        pytest.skip(f"{fixture} is not here")
    data = json_report.to_dict(run_check([fixture], CheckOptions(cache=False), load_rules()))
    assert data["findings"]
    assert [f for key in json_report.FLOATLESS for f in _floats(data[key])] == []
    assert _floats(data["budgets"])  # the walk finds floats where there are some
