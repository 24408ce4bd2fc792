"""helmfile releases of an application's chart from a chart repository (not a chart folder
of the repository, not a PostgreSQL server's chart) whose values name the server a
chart of the repository deploys. Audit 47 D1 (zitadel/zitadel-charts
examples/cloudnativepg: helmfile.yaml releases ./postgres-cluster, a CloudNativePG
Cluster with max_connections "100", and zitadel/zitadel from charts.zitadel.com with
zitadel-values.yaml naming Database.Postgres.Host zitadel-pg-rw): the check of the
folder said the Cluster "fits, peak 0 (no client or pooler in the repository connects
to it)", exit 0, and named no release left unread. Written in that example's shape."""

from __future__ import annotations

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from tests.tree_helpers import write

HELMFILE = """\
repositories:
  - name: cnpg
    url: https://cloudnative-pg.github.io/charts
  - name: shopapp
    url: https://charts.example.org

releases:
  - name: cnpg
    namespace: cnpg-system
    chart: cnpg/cloudnative-pg
    version: 0.22.1

  - name: shop-db
    namespace: default
    chart: ./shop-db
    needs:
      - cnpg-system/cnpg

  - name: shop
    namespace: default
    chart: shopapp/shop
    version: 3.1.0
    values:
      - shop-values.yaml
    needs:
      - default/shop-db
"""

CLUSTER = """\
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: shop-pg
spec:
  instances: 1
  storage:
    size: 1Gi
  postgresql:
    parameters:
      max_connections: "100"
"""

VALUES = """\
shop:
  configmapConfig:
    Database:
      Postgres:
        Host: shop-pg-rw.default.svc.cluster.local
        Port: 5432
        Database: shop
        User:
          Username: shop
"""

TREE = {"deploy/helmfile.yaml": HELMFILE,
        "deploy/shop-db/Chart.yaml": "apiVersion: v2\nname: shop-db\nversion: 0.1.0\n",
        "deploy/shop-db/templates/cluster.yaml": CLUSTER,
        "deploy/shop-values.yaml": VALUES}


def test_a_helmfile_release_of_a_chart_not_here_is_a_client_of_unknown_size(tmp_path):
    write(tmp_path, TREE)
    r = run_check([tmp_path / "deploy"], CheckOptions(root=tmp_path))
    (budget,) = r.budgets
    assert budget.server == "shop-pg"
    # the release's values lead to the Cluster: its connections are unknown, so the peak
    # is a floor, never "fits, peak 0"
    assert budget.unknown_clients == ["shop"], budget
    notice = next(n for n in r.notices if "not rendered" in n)
    assert "helmfile default/shop" in notice
    # the repository's chart folder is rendered, not such a release
    assert "shop-db" not in notice


def test_a_helmfile_release_whose_values_name_no_database_is_named_not_rendered(tmp_path):
    write(tmp_path, {**TREE, "deploy/shop-values.yaml": "shop:\n  replicas: 2\n"})
    r = run_check([tmp_path / "deploy"], CheckOptions(root=tmp_path))
    (budget,) = r.budgets
    assert budget.unknown_clients == []
    assert any("helmfile default/shop" in n for n in r.notices if "not rendered" in n)


def test_a_templated_values_file_is_not_read_and_the_peak_is_a_floor(tmp_path):
    # helmfile renders values.yaml.gotmpl (and {{ }} in any values file) itself: not
    # parsed here (no YAML problem), and where the release connects is then not known
    write(tmp_path, {**TREE, "deploy/shop-values.yaml":
                     VALUES + "  replicas: {{ .Values.replicas }}\n"})
    r = run_check([tmp_path / "deploy"], CheckOptions(root=tmp_path))
    assert [f for f in r.findings if f.code == "PA901"] == []
    (budget,) = r.budgets
    assert budget.unknown_clients == [] and budget.unplaced_clients == ["shop"], budget
    assert any("is a helmfile template, not read" in n for n in r.notices)
