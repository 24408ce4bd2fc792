"""kustomize as users build it (issue 12 item 6): overlays that share a base are
alternatives, each budgeted apart, while the rest of the repository is one deployment
read once; bases and components are not built alone; a manifest a kustomization does
not list is still read, with a notice."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from advisor.engine.check import run_check

pytestmark = pytest.mark.skipif(not (shutil.which("kubectl") or shutil.which("kustomize")),
                                reason="kubectl (kustomize) not installed")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")


def _client(name: str, host: str, pool: int, replicas: int) -> str:
    return f"""\
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: {name}
        spec:
          replicas: {replicas}
          strategy:
            rollingUpdate:
              maxSurge: 0
          selector:
            matchLabels:
              app: {name}
          template:
            metadata:
              labels:
                app: {name}
            spec:
              containers:
                - name: {name}
                  image: ghcr.io/example/{name}:1.0
                  env:
                    - name: SPRING_DATASOURCE_URL
                      value: jdbc:postgresql://{host}:5432/app
                    - name: SPRING_DATASOURCE_HIKARI_MAXIMUMPOOLSIZE
                      value: "{pool}"
        """


def _server(name: str, max_connections: int) -> str:
    return f"""\
        apiVersion: v1
        kind: Service
        metadata:
          name: {name}
        spec:
          selector:
            app: {name}
          ports:
            - port: 5432
        ---
        apiVersion: apps/v1
        kind: StatefulSet
        metadata:
          name: {name}
        spec:
          serviceName: {name}
          replicas: 1
          selector:
            matchLabels:
              app: {name}
          template:
            metadata:
              labels:
                app: {name}
            spec:
              containers:
                - name: postgres
                  image: postgres:16
                  args: ["-c", "max_connections={max_connections}"]
        """


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    """deploy/base (app + its own db), overlays staging and prod (same names: they cannot
    run side by side), an unused component, a plain reporting db with its client outside
    the overlays, and a manifest next to the prod kustomization that it does not list."""
    root = tmp_path / "repo"
    base = root / "deploy" / "base"
    _write(base / "kustomization.yaml",
           "resources:\n  - api.yaml\n  - db.yaml\n  - nightly.yaml\n")
    _write(base / "api.yaml", _client("api", "app-db", 10, 2))
    _write(base / "db.yaml", _server("app-db", 100))
    _write(root / "deploy" / "overlays" / "staging" / "kustomization.yaml", """\
        resources:
          - ../../base
        replicas:
          - name: api
            count: 1
        """)
    _write(root / "deploy" / "overlays" / "prod" / "kustomization.yaml", """\
        resources:
          - ../../base
        replicas:
          - name: api
            count: 4
        """)
    _write(base / "nightly.yaml", _client("nightly", "reports-db", 4, 1))
    # A leaf of its own that shares no object with another: deployed with the rest.
    _write(root / "deploy" / "ledger" / "kustomization.yaml", "resources:\n  - ledger.yaml\n")
    _write(root / "deploy" / "ledger" / "ledger.yaml", _client("ledger", "reports-db", 3, 1))
    _write(root / "deploy" / "overlays" / "prod" / "debug.yaml",
           _client("debug-shell", "app-db", 2, 1))
    _write(root / "deploy" / "components" / "pgbouncer" / "kustomization.yaml", """\
        apiVersion: kustomize.config.k8s.io/v1alpha1
        kind: Component
        patches:
          - path: patch.yaml
        """)
    _write(root / "deploy" / "components" / "pgbouncer" / "patch.yaml", """\
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: api
        spec:
          replicas: 9
        """)
    _write(root / "reports" / "db.yaml", _server("reports-db", 50))
    _write(root / "reports" / "exporter.yaml", _client("exporter", "reports-db", 5, 1))
    return root


def _budgets(result) -> dict[str, tuple[int, int]]:
    return {b.server: (b.usable, b.peak) for b in result.budgets}


def test_shared_objects_are_read_once_and_overlays_apart(repo: Path) -> None:
    r = run_check([repo])
    budgets = _budgets(r)
    # app-db is in the base: one copy per overlay, usable 100 - 3 = 97 each.
    # staging: api 1 replica (overlay `replicas`, maxSurge 0) x HikariCP 10 = 10
    assert budgets["app-db [deploy/overlays/staging]"] == (97, 10)
    # prod: api 4 x 10 = 40, + debug-shell 1 x 2 = 2 (next to the prod kustomization,
    # unlisted: read, and deployed with prod) = 42
    assert budgets["app-db [deploy/overlays/prod]"] == (97, 42)
    # reports-db is outside every overlay: one budget, not one per overlay.
    # usable 50 - 3 = 47; exporter 1 x 5 + ledger (its own leaf, sharing no object: not
    # an alternative, deployed with the rest) 1 x 3 + nightly of staging 1 x 4 + nightly
    # of prod 1 x 4 = 16 (both overlays reach it: a notice says so)
    assert budgets["reports-db"] == (47, 16)
    assert [k for k in budgets if "reports-db" in k] == ["reports-db"]
    assert any(n.startswith("reports-db is outside the overlays deploy/overlays/prod, "
                            "deploy/overlays/staging") for n in r.notices), r.notices
    # nothing is unlinked, and no finding is repeated
    assert not [f for f in r.findings if f.code == "PA107"], r.findings
    subjects = [f.subject for f in r.findings]
    assert len(subjects) == len(set(subjects))
    # bases are built through their overlays only: no "[deploy/base]" environment
    assert not any("deploy/base" in b.server for b in r.budgets)


def test_unlisted_manifest_is_read_with_a_notice_and_unused_component_is_not(repo: Path
                                                                           ) -> None:
    r = run_check([repo])
    notices = "\n".join(r.notices)
    assert ("deploy/overlays/prod/debug.yaml is in deploy/overlays/prod but its "
            "kustomization does not list it, so kustomize would not deploy it") in notices
    assert "deploy/components/pgbouncer is a kustomization that no built kustomization " \
        "uses; its 1 YAML file(s) are not read" in notices
    # the component's patch (replicas: 9) is not read as a Deployment of its own
    whos = [c.who for b in r.budgets for c in b.contributions]
    assert sorted(whos).count("api [deploy/overlays/prod]") == 1
    assert not any("patch.yaml" in (f.location.path or "") for f in r.findings)


def test_crds_in_kustomize_output_are_not_parsed(tmp_path: Path) -> None:
    from advisor.read.fs import Root
    from advisor.read.render.kustomize import render_kustomization

    crd = """\
        apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata:
          name: widgets.example.com
        spec:
          group: example.com
          names: {kind: Widget, plural: widgets}
          scope: Namespaced
          versions: [{name: v1, served: true, storage: true}]
        """
    _write(tmp_path / "k" / "kustomization.yaml", "resources:\n  - crd.yaml\n  - db.yaml\n")
    _write(tmp_path / "k" / "crd.yaml", crd)
    _write(tmp_path / "k" / "db.yaml", _server("db", 100))
    r = render_kustomization(Root.of(tmp_path), "k")
    assert sorted(o.kind for o in r.objects) == ["Service", "StatefulSet"]
    assert any("1 CustomResourceDefinition(s) in the output not read" in n for n in r.notices)
