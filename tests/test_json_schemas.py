"""The published contracts: every fixture's JSON report validates against
schemas/pool-advisor-report.schema.json (integers for counts), and
schemas/pool-advisor-config.schema.json is the configuration's current schema."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from advisor.report import json as json_report
from tests.cli_helpers import REPO

SCHEMAS = REPO / "schemas"


def _load(name: str) -> dict:
    schema = json.loads((SCHEMAS / name).read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def test_every_fixture_report_validates(monkeypatch):
    from tests.test_report_sarif import _fixture_results

    monkeypatch.chdir(REPO)
    validator = jsonschema.Draft202012Validator(_load("pool-advisor-report.schema.json"))
    registry, results = _fixture_results()
    for name, result in results:
        doc = json.loads(json_report.render(result, registry))
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
                  for e in validator.iter_errors(doc)]
        assert errors == [], name
        assert all(type(v) is int for v in doc["summary"].values())


def test_the_schema_rejects_a_count_that_is_not_an_integer():
    validator = jsonschema.Draft202012Validator(_load("pool-advisor-report.schema.json"))
    doc = {"schema_version": 1, "tool": {"name": "pool-advisor", "version": "0"}, "roots": [],
           "budgets": [], "findings": [], "suppressed": [], "notices": [],
           "summary": {k: 0 for k in ("findings", "error", "warning", "info", "suppressed",
                                      "notices", "servers", "over", "cannot_tell",
                                      "cannot_connect")}}
    assert not list(validator.iter_errors(doc))
    doc["summary"]["error"] = 1.5
    assert list(validator.iter_errors(doc))


def test_config_schema_is_current_and_accepts_the_readme_example():
    import tomllib

    from scripts.gen_config_schema import config_schema

    schema = _load("pool-advisor-config.schema.json")
    assert schema == json.loads(json.dumps(config_schema())), \
        "run scripts/gen_config_schema.py"
    readme = (REPO / "README.md").read_text()
    example = re.search(r"```toml\n(fail-on.*?)```", readme, re.S).group(1)
    jsonschema.validate(tomllib.loads(example), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"fail-on": "warning", "no-such-key": 1}, schema)
