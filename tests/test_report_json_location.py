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
