"""Fix texts of PA501/PA504 name where the PgBouncer key is written for the way each
pooler is deployed (pgbouncer.ini, the image's variable, the operator's field), and
propose no PgBouncer key where the deployment offers none (the Zalando operator)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent


def fixes(folder: str) -> dict[str, list[str]]:
    from advisor.cli import app

    result = CliRunner().invoke(app, ["check", str(REPO / folder), "--format", "json",
                                      "--root", str(REPO / folder), "--no-cache"])
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.output[result.output.index("{"):])
    out: dict[str, list[str]] = {}
    for f in report["findings"]:
        if f["code"] in ("PA501", "PA504"):
            out.setdefault(f["code"], []).append(f["fix"]["description"])
    return out


@pytest.mark.parametrize(("folder", "place"), [
    # Bitnami image configured by environment: the variable, not a file it does not have
    ("fixtures/sidecar-pgbouncer", "the PGBOUNCER_{KEY} variable of api/pgbouncer's "
                                   "PgBouncer container"),
    ("tests/realworld/posthog", "the PGBOUNCER_{KEY} variable of "
                                "posthog-pgbouncer/posthog-pgbouncer's PgBouncer container"),
    # CloudNativePG: the Pooler's parameters (both keys are on its webhook's allow-list)
    ("fixtures/cnpg", "spec.pgbouncer.parameters of Pooler orders-db-pooler-rw"),
    # Crunchy PGO: the cluster's pgBouncer global config
    ("fixtures/crunchy", "spec.proxy.pgBouncer.config.global of PostgresCluster hippo"),
    # a chart that writes pgbouncer.ini
    ("tests/realworld/airflow-chart", "release-pgbouncer's pgbouncer.ini"),
])
def test_the_place_matches_the_deployment(folder: str, place: str):
    found = fixes(folder)
    assert found.get("PA504"), found
    expected = place.replace("{KEY}", "IDLE_TRANSACTION_TIMEOUT")
    assert any(text.endswith(f"or idle_transaction_timeout in {expected}")
               for text in found["PA504"]), found["PA504"]
    for text in found.get("PA501", []):
        if "pooler-example" in text or "orders-db-pooler-ro" in text:
            continue
        assert f"in {place.replace('{KEY}', 'QUERY_WAIT_TIMEOUT')} (below " in text, text
        assert "pgbouncer.ini" not in text or "pgbouncer.ini" in place


def test_zalando_pooler_gets_no_pgbouncer_key():
    """The Zalando operator's connectionPooler takes mode and maxDBConnections, nothing
    else: the fix stays on the server, or says the pooler cannot be given the key. (No
    PA504: the operator's pooler image sets idle_transaction_timeout = 600 itself.)"""
    found = fixes("fixtures/zalando")
    assert "PA504" not in found
    (wait,) = found["PA501"]
    assert "offers no query_wait_timeout setting" in wait and "pgbouncer.ini" not in wait
