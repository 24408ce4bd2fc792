"""A folder with chart.yaml (not Chart.yaml) and templates/ is no chart Helm installs:
its loader takes the metadata only from "Chart.yaml" and fails "Chart.yaml file is
missing". Said in a notice, so that the templates' "not read" notices have their reason
(audit 30 D3, JosueDev-afk/nestjs-k8s-microservice-stack shape)."""

from __future__ import annotations

from advisor.read.discover import discover
from tests.tree_helpers import write


def test_a_miscased_chart_file_is_said(tmp_path):
    write(tmp_path, {"deploy/chart.yaml": "apiVersion: v2\nname: shop\nversion: 0.1.0\n",
                     "deploy/values.yaml": "replicas: 2\n",
                     "deploy/templates/app.yaml": "{{- $root := . -}}\nkind: Deployment\n"})
    found = discover(tmp_path)
    assert found.helm_charts == []
    (notice,) = [n for n in found.notices if "chart.yaml" in n]
    assert notice.startswith("deploy/chart.yaml: Helm reads a chart only from a file named "
                             "Chart.yaml")


def test_a_chart_yaml_with_no_templates_is_no_chart_folder(tmp_path):
    # a values or CI file of that name beside no templates/ is not taken for a chart
    write(tmp_path, {"ci/chart.yaml": "name: x\n"})
    assert not [n for n in discover(tmp_path).notices if "chart.yaml" in n]
