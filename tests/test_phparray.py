"""advisor/read/apps/phparray.py: the literal array a PHP config file returns."""

from __future__ import annotations

from advisor.read.apps.phparray import EnvCall, Opaque, returned_array

TEXT = """\
<?php
/* a header; return [] here is a comment */
return array(
    'a' => 1, # one
    "b" => ['x', 'y'],
    'c' => env('C_VAR', "d'e"),
    'd' => 60 * 2,
    'e' => true,
);
"""


def test_literals_env_calls_and_opaque_expressions():
    doc = returned_array(TEXT)
    assert doc is not None and doc.line == 3
    items = doc.value
    assert (items["a"].value, items["a"].line) == (1, 4)
    assert [v.value for v in items["b"].value.values()] == ["x", "y"]
    env = items["c"].value
    assert isinstance(env, EnvCall) and env.name == "C_VAR" and env.default.value == "d'e"
    assert isinstance(items["d"].value, Opaque) and items["e"].value is True
    assert returned_array("<?php echo 1;") is None


def test_arrays_nested_too_deep_are_opaque_not_a_crash():
    doc = returned_array("<?php return " + "[" * 20000 + "]" * 20000 + ";")
    assert doc is not None and isinstance(doc.value, Opaque)
