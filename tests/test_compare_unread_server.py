"""Audit 13b (not fixed there): with `--base`, a commit that breaks a server's YAML made
its client's PA106 '1 fixed'. The finding is gone because the head did not read its
server's file (PA901), not because it was fixed: 'not known at head'."""

from __future__ import annotations

from advisor.ci.basecheck import change_text
from advisor.ci.comment import build_body
from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.report.compare import compare, new_findings
from advisor.rules import load_rules
from tests.tree_helpers import POSTGRES_DB, write

WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  template:
    spec:
      containers:
        - name: web
          image: example/web:1
          env:
            - {name: DATABASE_URL, value: "postgresql://app@db:5432/shop"}
"""


def _check(root):
    return run_check([str(root)], CheckOptions(cache=False, root=root))


def test_a_client_finding_whose_server_is_not_read_at_head_is_not_fixed(tmp_path):
    write(tmp_path / "base", {"k8s/db.yaml": POSTGRES_DB, "k8s/web.yaml": WEB})
    broken = POSTGRES_DB.replace('max_connections=50"]', 'max_connections=50"]]')
    write(tmp_path / "head", {"k8s/db.yaml": broken, "k8s/web.yaml": WEB})
    base, head = _check(tmp_path / "base"), _check(tmp_path / "head")
    assert [f.code for f in base.findings] == ["PA106"]  # web's connections unknown
    diff = compare(base, head)
    assert diff.fixed == []  # was [PA106]
    [unknown] = diff.not_known
    assert (unknown.finding.code, unknown.unread) == ("PA106", "k8s/db.yaml:18")
    text = change_text(diff, "main", "0" * 40)
    assert "0 fixed, 1 not known at head" in text, text
    assert "not known at head (PA901 k8s/db.yaml:18): k8s/web.yaml:1: PA106 web:" in text
    body = build_body(head, load_rules(), base=base)
    assert "#### Not known at head (1)" in body and "Fixed by this change" not in body
    assert "1 not known at head" in body
    # nothing of the head is new because of it (--new-only still judges the head alone)
    assert "PA106" not in [f.code for f in new_findings(base, head)]
