"""PA106 says why a pool-sizing variable seen in the env was not used: chatwoot's chart
sets RAILS_MAX_THREADS 5, which sizes the Rails pool only through the image's
config/database.yml (not in the repository); the message said only that the env "names
no pool size of a known stack" (audit 10c, chatwoot/charts@8533479)."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, deployment, write


def test_rails_max_threads_in_env_is_said_not_taken(tmp_path):
    root = write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/web.yaml": deployment(
        "web", "chatwoot/chatwoot:v4", {"POSTGRES_HOST": "db", "RAILS_MAX_THREADS": "5"})})
    result = run_check([str(root)], CheckOptions(cache=False))
    (finding,) = [f for f in result.findings if f.code == "PA106"]
    assert "RAILS_MAX_THREADS=5 (k8s/web.yaml:" in finding.message
    assert "sizes a Rails pool only through config/database.yml's `pool:`" in finding.message
    assert "not taken for the pool size" in finding.message
