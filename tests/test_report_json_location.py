"""The JSON report's locations: the fields that are set, in Location's field order,
whichever way they are built (a path and a line, the common case, built directly)."""

import msgspec
import pytest

from advisor.model import Location
from advisor.report.json import _location


@pytest.mark.parametrize("loc", [
    Location(path="k8s/a.yaml"),
    Location(path="k8s/a.yaml", line=3),
    Location(path="k8s/a.yaml", line=3, column=5),
    Location(path="k8s/a.yaml", end_line=9),
    Location(path="k8s/a.yaml", line=0, column=0, end_line=0),
])
def test_location_keeps_the_set_fields_in_order(loc):
    expected = {k: v for k, v in msgspec.structs.asdict(loc).items() if v is not None}
    got = _location(loc)
    assert got == expected
    assert list(got) == list(expected)


@pytest.mark.parametrize("number", [0.0, -0.0, 1.0, 40.0, 0.0001, 1e-4 * 0.9999, 1e-5,
                                    5e-324, 0.1, 1 / 3, 9999999999999998.0, 1e16, 2.5e17,
                                    -1e16, 1e308, float("inf"), float("-inf"), float("nan")])
def test_a_budget_with_floats_is_written_as_json_writes_it(number):
    """_indented takes msgspec's encoder for a value whose floats it writes as json does
    (_plain_floats), json's for any other: the text is json.dumps(indent=2)'s."""
    import json

    from advisor.report.json import _indented, _plain_floats

    value = {"usable": number, "terms": [{"label": "x", "value": number, "source": {
        "path": "a.yaml", "line": 3, "key": None}}], "fits": False, "n": 2**70}
    assert _indented(value) == json.dumps(value, indent=2)
    del value["n"]  # beyond 64 bits: msgspec refuses it
    assert _indented(value) == json.dumps(value, indent=2)
    plain = number == 0 or 1e-4 <= abs(number) < 1e16
    assert _plain_floats(value) is plain
    assert _plain_floats({1: "a"}) is False and _plain_floats({"a": (1,)}) is False
