"""Helm test hooks in every spelling Helm reads (helm/helm v4.2.3
pkg/release/v1/util/manifest_sorter.go: `test`, and Helm 2's `test-success` "for
backward compatibility"), and hooks Helm does not know (Helm 2's `test-failure`), which it
skips: none is part of the running release (audit 6: getredash/contrib-helm-chart's
templates/tests/test-connection.yaml, `"helm.sh/hook": test-success`, was a client)."""

from __future__ import annotations

import pytest

from advisor.read.fs import Root
from advisor.read.render.helm import render_chart

helm = pytest.importorskip("helm_python", reason="the helm extra (helm-python-sdk) is needed")


def _pod(name: str, hook: str) -> str:
    return (f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  annotations:\n"
            f'    "helm.sh/hook": {hook}\nspec:\n  containers:\n    - name: t\n'
            "      image: redash/redash:25.8.0\n")


def test_test_success_and_unknown_hooks_are_not_deployed(tmp_path):
    chart = helm.Chart.create("app", str(tmp_path))
    chart.close()
    app = tmp_path / "app"
    tests = app / "templates" / "tests"
    for old in tests.iterdir():
        old.unlink()
    (tests / "success.yaml").write_text(_pod("t-success", "test-success"))
    (tests / "failure.yaml").write_text(_pod("t-failure", "test-failure"))
    (tests / "spaced.yaml").write_text(_pod("t-spaced", '" Test-Success , test"'))
    (app / "templates" / "migrate.yaml").write_text(_pod("migrate", "pre-install,pre-upgrade"))
    r = render_chart(Root.of(tmp_path), "app")
    refs = {o.ref for o in r.objects}
    assert not {"Pod/t-success", "Pod/t-failure", "Pod/t-spaced"} & refs, refs
    assert "Pod/migrate" in refs  # an install hook runs while the release does
    assert "Deployment/release-app" in refs
    assert any("skipped Helm test hooks" in n and "Pod/t-success" in n for n in r.notices)
    assert any("does not know" in n and "Pod/t-failure (hook 'test-failure')" in n
               for n in r.notices), r.notices
