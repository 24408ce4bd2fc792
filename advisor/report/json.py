"""JSON output. Schema (version 1), documented in docs/json-schema.md:

{"schema_version": 1, "tool": {"name", "version"}, "roots": [...],
 "budgets": [{"server", "server_id", "version", "max_connections", "usable", "peak",
              "fits", "terms": {"max_connections": Term, "reserved": [Term],
              "contributions": [Contribution], "not_subtracted": [...]}, "memory"}],
 "findings": [{"code", "name", "severity", "message", "location": {"path", "line"},
               "related": [{"location", "message"}], "fix": {"description",
               "replacement"}, "fingerprint", "subject"}],
 "notices": [...]}
A Term is {"label", "value", "source": {"path", "line", "key", "default"}}.
"""

from __future__ import annotations

import json

from advisor.model import CheckResult
from advisor.rules import Registry

SCHEMA_VERSION = 1


def to_dict(result: CheckResult) -> dict:
    budgets = []
    for b in result.budgets:
        budgets.append({
            "server": b.server,
            "server_id": b.server_id,
            "version": b.version.value,
            "max_connections": b.max_connections.value,
            "usable": b.usable,
            "peak": b.peak,
            "total_peak": b.total_peak,
            "fits": b.fits,
            "terms": {
                "version": b.version.model_dump(),
                "max_connections": b.max_connections.model_dump(),
                "reserved": [t.model_dump() for t in b.reserved],
                "contributions": [c.model_dump() for c in b.contributions],
                "not_subtracted": [n.model_dump() for n in b.not_subtracted],
                "spread_over": b.spread_over.model_dump() if b.spread_over else None,
            },
            "memory": b.memory.model_dump() if b.memory else None,
            "location": b.location.model_dump(exclude_none=True),
        })
    findings = []
    for f in result.findings:
        findings.append({
            "code": f.code, "name": f.name, "severity": f.severity.value,
            "message": f.message,
            "location": f.location.model_dump(exclude_none=True),
            "related": [{"location": r.location.model_dump(exclude_none=True),
                         "message": r.message} for r in f.related],
            "fix": f.fix.model_dump() if f.fix else None,
            "fingerprint": f.fingerprint,
            "subject": f.subject,
        })
    return {"schema_version": SCHEMA_VERSION,
            "tool": {"name": "pool-advisor", "version": result.tool_version},
            "roots": result.roots, "budgets": budgets, "findings": findings,
            "notices": result.notices}


def render(result: CheckResult, registry: Registry) -> str:
    return json.dumps(to_dict(result), indent=2) + "\n"


def load(text: str) -> CheckResult:
    """Read this module's output back into a CheckResult (for `comment`, `--base`)."""
    from advisor.model import Budget, Finding

    data = json.loads(text)
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"unsupported pool-advisor JSON schema_version "
                         f"{data.get('schema_version')!r} (expected {SCHEMA_VERSION})")
    budgets = [Budget(server=b["server"], server_id=b["server_id"], usable=b["usable"],
                      peak=b["peak"], total_peak=b.get("total_peak"),
                      spread_over=b["terms"].get("spread_over"),
                      version=b["terms"]["version"],
                      max_connections=b["terms"]["max_connections"],
                      reserved=b["terms"]["reserved"],
                      contributions=b["terms"]["contributions"],
                      not_subtracted=b["terms"]["not_subtracted"], memory=b["memory"],
                      location=b["location"]) for b in data["budgets"]]
    findings = [Finding(code=f["code"], name=f["name"], severity=f["severity"],
                        message=f["message"], location=f["location"],
                        related=tuple(f["related"]), fix=f["fix"],
                        subject=f.get("subject", "")) for f in data["findings"]]
    return CheckResult(tool_version=data["tool"]["version"], roots=data["roots"],
                       budgets=budgets, findings=findings, notices=data["notices"])
