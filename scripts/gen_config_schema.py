"""Write schemas/pool-advisor-config.schema.json from the configuration's pydantic models
(advisor.config.schema); tests/test_json_schemas.py checks the file is current."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
OUT = REPO / "schemas" / "pool-advisor-config.schema.json"


def config_schema() -> dict:
    from advisor.config.schema import SettingsFile

    schema = SettingsFile.model_json_schema(by_alias=True)
    # `memory` is read by a validator that takes sizes as written ("16GiB") or bytes:
    # pydantic's schema only sees the resulting integer.
    memory = schema["$defs"]["ServerDecl"]["properties"]["memory"]
    memory["anyOf"].insert(1, {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*[A-Za-z]*\s*$"})
    memory["description"] = "Memory of the server: bytes, or a size such as \"16GiB\"."
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "pool-advisor-config.schema.json",
            "title": "pool-advisor configuration (.pool-advisor.toml, [tool.pool-advisor])",
            **schema}


if __name__ == "__main__":
    OUT.write_text(json.dumps(config_schema(), indent=2) + "\n", encoding="utf-8")
