"""Audit 36 N1 / audit 41: a hazard whose route is assumed (code tied to no workload, or
a workload whose URL is in a Secret) behind a pooler no workload of the repository is
known to connect through rests on an assumption: a warning that says so, not an error.
Once some workload is known to use that pooler, the same hazard is an error again."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from advisor.model import Severity, Topology
from tests.test_sql_hazards import client, hazard, pooler, run

pytest.importorskip("pglast")


def _secret_url_client():
    # a workload whose URL comes from a Secret the repository does not hold
    c = client("app", "app")
    pool = replace(c.pools[0], route=replace(c.pools[0].route, host=None))
    return replace(c, target_kind=None, target_id=None, pools=[pool])


def test_route_in_a_secret_behind_a_pooler_nobody_is_known_to_use_is_a_warning():
    topo = Topology(poolers=[pooler()], clients=[_secret_url_client()],
                    sql_hazards=[hazard("protocol-prepare", detail="asyncpg create_pool")])
    [found] = run("PA405", topo)
    assert found.severity == Severity.warning
    assert "route to a server is not resolved" in found.message
    assert "the route is assumed: no workload of the repository is known to connect " \
        "through pgbouncer" in found.message


def test_unmapped_code_is_an_error_while_a_workload_uses_the_pooler():
    unmapped = [hazard(client_id=None)]
    lone = Topology(poolers=[pooler()], clients=[_secret_url_client()], sql_hazards=unmapped)
    [found] = run("PA401", lone)
    assert found.severity == Severity.warning and "route is assumed" in found.message
    used = replace(client("app", "app"), id="api", name="api")  # linked to the pooler
    topo = Topology(poolers=[pooler()], clients=[_secret_url_client(), used],
                    sql_hazards=unmapped)
    [found] = run("PA401", topo)
    assert found.severity == Severity.error and "route is assumed" not in found.message
