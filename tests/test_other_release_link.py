"""A chart's workload whose env names the chart's own database Service under another
release name is linked to that server (audit 46 D1). sqlpad/sqlpad's sqlpad-charts (its
README: `helm -n sqlpad install sqlpad ./`) gives its Deployment
SQLPAD_CONNECTIONS__pgdemo__host=sqlpad-postgresql, the Service of its Bitnami postgresql
dependency when the release is `sqlpad`; rendered here as release 'release' that Service is
release-postgresql. No reader knows the variable and no source folder was found, so the
Deployment was dropped ("not counted in any budget") and the server said "fits, peak 0",
exit 0. The shapes below are written for this test, after that chart's layout."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.link.topology import other_release_aliases
from tests.tree_helpers import write

SQLPAD_SHAPE = {
    "sqlpad-charts/Chart.yaml": (
        "apiVersion: v2\nname: sqlpad\nversion: 0.1.0\ntype: application\n"
        "dependencies:\n  - name: postgresql\n    version: 13.2.24\n"
        "    repository: https://charts.bitnami.com/bitnami\n"
        "    condition: postgresql.enabled\n"),
    "sqlpad-charts/Chart.lock": (
        "dependencies:\n- name: postgresql\n  repository: https://charts.bitnami.com/bitnami\n"
        "  version: 13.2.24\ndigest: sha256:0\n"),
    "sqlpad-charts/values.yaml": (
        "replicaCount: 1\nimage:\n  repository: sqlpad/sqlpad\n  tag: \"5\"\n"
        "postgresql:\n  enabled: true\n"),
    "sqlpad-charts/templates/deployment.yaml": """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Chart.Name }}-deploy
  labels: {app: {{ .Chart.Name }}}
spec:
  replicas: {{ .Values.replicaCount }}
  selector: {matchLabels: {app: {{ .Chart.Name }}}}
  template:
    metadata: {labels: {app: {{ .Chart.Name }}}}
    spec:
      containers:
      - name: sqlpad
        image: {{ .Values.image.repository }}:{{ .Values.image.tag }}
        env:
          - {name: SQLPAD_CONNECTIONS__pgdemo__driver, value: postgres}
          - {name: SQLPAD_CONNECTIONS__pgdemo__host, value: sqlpad-postgresql}
          - {name: SQLPAD_CONNECTIONS__pgdemo__database, value: postgres}
""",
}


def test_a_dropped_workload_naming_the_charts_server_under_another_release_links(tmp_path):
    write(tmp_path, SQLPAD_SHAPE)
    r = run_check([str(tmp_path / "sqlpad-charts")], CheckOptions(cache=False, root=tmp_path))
    (budget,) = r.budgets
    assert budget.server == "release-postgresql"
    # was: peak 0, "no client or pooler in the repository connects to it", fits
    assert budget.unknown_clients == ["sqlpad-deploy"]
    assert budget.peak == 2  # (1 replica + 1 surge) x at least 1
    assert any("names host sqlpad-postgresql" in n and "release 'sqlpad'" in n
               and "--release sqlpad" in n for n in r.notices)
    assert not any("not counted in any budget" in n for n in r.notices)


def test_installed_as_that_release_the_same_budget(tmp_path):
    write(tmp_path, SQLPAD_SHAPE)
    r = run_check([str(tmp_path / "sqlpad-charts")],
                  CheckOptions(cache=False, root=tmp_path, release="sqlpad"))
    (budget,) = r.budgets
    assert budget.server == "sqlpad-postgresql"
    assert budget.unknown_clients == ["sqlpad-deploy"] and budget.peak == 2
    assert not any("as if installed so" in n for n in r.notices)


def test_other_release_aliases_is_exact():
    servers = [("sqlpad-charts", "release", ["release-postgresql", "release-postgresql-hl"],
                ("server", "s1"))]
    asked = [("sqlpad-charts", "sqlpad-postgresql", "w A"),
             ("other-chart", "shop-postgresql", "w B"),      # another chart's
             ("sqlpad-charts", "postgresql", "w C"),         # no release part
             ("sqlpad-charts", "db.example.com", "w D"),     # a dotted name: another host
             ("sqlpad-charts", "sqlpad-redis", "w E")]       # no server of that tail
    assert other_release_aliases(servers, asked) == [
        ("sqlpad-postgresql", ("server", "s1"), "release-postgresql", "sqlpad", "w A")]
    assert other_release_aliases([("c", "", ["x-postgresql"], ("server", "s"))],
                                 [("c", "y-postgresql", "w")]) == []
