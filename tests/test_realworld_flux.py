"""Flux and Argo CD releases of charts that are not in the repository
(tests/realworld/flux-gitops, written in the shape of Flux home-lab repositories):
their values say where they connect, their pods and pools are in a chart that is not
rendered, so each is a client of unknown size, never 0, and the budget never "fits"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

FIXTURE = Path(__file__).resolve().parent / "realworld" / "flux-gitops"
CONNECTING = ["bookshelf", "ledger", "notekeeper"]  # the releases whose values reach pg-main


def check_json(path: Path, root: Path | None = None) -> dict:
    from advisor.cli import app

    result = CliRunner().invoke(app, ["check", str(path), "--format", "json", "--no-cache",
                                      "--root", str(root or path)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output[result.output.index("{"):])


def budget(report: dict, server: str) -> dict:
    return next(b for b in report["budgets"] if b["server"] == server)


def test_releases_are_clients_of_unknown_size_and_the_budget_is_a_floor():
    report = check_json(FIXTURE)
    b = budget(report, "pg-main")
    # usable = max_connections "200" (cluster.yaml) - 3 superuser_reserved_connections
    assert b["usable"] == 197
    # every client is a release whose pods and pools are not read: each counted as 1,
    # the least a release that connects holds (a floor, never 0)
    assert sorted(b["unknown_clients"]) == CONNECTING
    assert b["peak"] == len(CONNECTING) and b["peak_is_floor"] is True and b["fits"] is False
    contributions = {c["who"]: c for c in b["terms"]["contributions"]}
    assert sorted(contributions) == CONNECTING
    assert all(c["unknown"] and c["total"] == 1 and not c["factors"]
               for c in contributions.values())
    # photoframe connects to nothing (its Secret app-db holds a cache host): no client
    assert "photoframe" not in json.dumps(b)


def test_pa106_names_each_release_and_asks_for_connections_and_replicas():
    report = check_json(FIXTURE)
    found = {f["message"].split(":", 1)[0]: f for f in report["findings"]
             if f["code"] == "PA106"}
    assert sorted(found) == CONNECTING
    for name, f in found.items():
        assert "connections per pod and replicas unknown" in f["message"]
        assert "counted as 1 connection (one pod) in the budget of server pg-main" \
            in f["message"]
        assert f'[[workloads]] name = "{name}" connections = N (per pod) replicas = N' \
            in f["message"]
    assert found["bookshelf"]["location"] == {
        "path": "kubernetes/apps/media/bookshelf/app/helmrelease.yaml", "line": 2}
    assert "chart app-template from HelmRepository app-charts" in \
        found["bookshelf"]["message"]
    assert "chart app-template from OCIRepository app-template" in \
        found["notekeeper"]["message"]
    assert "Application ledger (chart ledger from Helm repository" in \
        found["ledger"]["message"]
    # where each connects: the values line, the Secret's line, the valuesObject line
    related = {n: f["related"][0]["location"] for n, f in found.items()}
    assert related["bookshelf"] == {
        "path": "kubernetes/apps/media/bookshelf/app/helmrelease.yaml", "line": 27}
    assert related["notekeeper"] == {
        "path": "kubernetes/apps/office/notekeeper/app/secret.yaml", "line": 9}
    assert related["ledger"] == {
        "path": "kubernetes/apps/finance/ledger/application.yaml", "line": 22}
    assert not [f for f in report["findings"] if f["code"] == "PA107"]


def test_one_notice_names_the_releases_not_rendered():
    notices = [n for n in check_json(FIXTURE)["notices"] if "not rendered" in n]
    assert len(notices) == 1
    (notice,) = notices
    assert notice.startswith("5 chart releases not rendered")
    for name in ("Application finance/ledger", "HelmRelease media/bookshelf",
                 "HelmRelease office/notekeeper", "HelmRelease photos/photoframe",
                 "HelmRelease tools/gitchart"):
        assert name in notice
    assert "1 of them names a chart path of a git repository that is not in the scanned " \
        "repository (gitchart)" in notice


def test_flux_target_namespace_places_the_secrets_and_the_server():
    # Without targetNamespace the Cluster is in no namespace (pg-main-rw.database.svc
    # would lead nowhere: PA107) and the two apps' Secret app-db would be one object
    # (read as alternatives of one another, names qualified by overlay).
    report = check_json(FIXTURE)
    b = budget(report, "pg-main")
    assert b["server_id"] == "cnpg:database/pg-main"
    assert not any("[" in name for name in b["unknown_clients"])


def test_root_below_the_git_top_strips_the_flux_path_prefix():
    # checked from kubernetes/ (the git top is its parent): spec.path
    # ./kubernetes/apps/... is that folder's apps/...
    report = check_json(FIXTURE / "kubernetes")
    assert sorted(budget(report, "pg-main")["unknown_clients"]) == CONNECTING


def test_declared_connections_and_replicas_count_a_release(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURE, repo)
    (repo / ".pool-advisor.toml").write_text(
        '[[workloads]]\nname = "bookshelf"\nconnections = 10\nreplicas = 2\n\n'
        '[[workloads]]\nname = "notekeeper"\nconnections = 5\n')
    report = check_json(repo)
    b = budget(report, "pg-main")
    # bookshelf: 2 declared replicas x 10 declared connections = 20, counted;
    # notekeeper: its replicas are still unknown, so it stays a floor, one pod of its 5;
    # ledger: nothing known, 1
    totals = {c["who"]: c["total"] for c in b["terms"]["contributions"]}
    assert (totals["bookshelf"], totals["notekeeper"], totals["ledger"]) == (20, 5, 1)
    assert sorted(b["unknown_clients"]) == ["ledger", "notekeeper"]
    assert b["peak"] == 20 + 5 + 1 and b["fits"] is False
    pa106 = [f["message"] for f in report["findings"] if f["code"] == "PA106"]
    notekeeper = next(m for m in pa106 if m.startswith("notekeeper"))
    assert "notekeeper: replicas unknown" in notekeeper
    assert notekeeper.endswith('name = "notekeeper" replicas = N (pods at peak)')
