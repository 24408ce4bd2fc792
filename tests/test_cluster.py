from __future__ import annotations

from pathlib import Path

import pytest

from tests.fake_kube import fake_kube, load_manifests

pytest.importorskip("kubernetes", reason="the kubernetes client (extra 'cluster') is missing")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _check(kubeconfig: Path, **kw):
    from advisor.engine.options import CheckOptions
    from advisor.live.cluster import run_cluster_check
    from advisor.rules import load_rules

    return run_cluster_check(CheckOptions(), load_rules(), kubeconfig=str(kubeconfig),
                             context=kw.get("context"), namespaces=kw.get("namespaces"))


def test_cluster_topology_matches_the_files(tmp_path: Path):
    docs = load_manifests(FIXTURES / "acme-shop" / "k8s")
    with fake_kube(docs, tmp_path) as kube:
        result = _check(kube.kubeconfig)
    assert result.roots == ["cluster:fake-ctx"]
    (budget,) = result.budgets
    assert budget.usable == 97 and budget.peak == 800
    (c,) = budget.contributions
    labels = [t.source.label() for t in c.factors]
    # Every number says which object (and line of its YAML) in which cluster it came from.
    hpa = "cluster:fake-ctx/shop/HorizontalPodAutoscaler/checkout:"
    assert any(x.startswith(hpa) for x in labels)
    assert any(x.startswith("cluster:fake-ctx/shop/ConfigMap/checkout-config:") for x in labels)
    codes = [f.code for f in result.findings]
    assert "PA101" in codes
    # Only list calls for the kinds the topology needs; never Secrets.
    assert "/apis/apps/v1/deployments" in kube.requests
    assert "/apis/autoscaling/v2/horizontalpodautoscalers" in kube.requests
    assert not any(r.endswith("/secrets") for r in kube.requests)


def test_namespace_and_forbidden_kinds(tmp_path: Path):
    docs = load_manifests(FIXTURES / "acme-shop-pgbouncer" / "k8s")
    with fake_kube(docs, tmp_path, forbidden=("horizontalpodautoscalers",)) as kube:
        result = _check(kube.kubeconfig, namespaces=["shop"])
    assert all("/namespaces/shop/" in r for r in kube.requests)
    assert any("not allowed to list horizontalpodautoscalers" in n for n in result.notices)
    (budget,) = result.budgets
    assert budget.peak == 50  # 2 PgBouncer replicas x 25: the pooler bounds the server side


def test_unreachable_cluster_is_a_clear_error(tmp_path: Path):
    from advisor.live.cluster import ClusterError
    from tests.realpg import free_port

    cfg = tmp_path / "kubeconfig"
    cfg.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{free_port()}\n"
        "users:\n- name: u\n  user:\n    token: t\n"
        "contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
    )
    with pytest.raises(ClusterError, match="cannot reach the cluster of cluster:x"):
        _check(cfg)
    with pytest.raises(ClusterError, match="kubeconfig"):
        _check(tmp_path / "missing")


def test_check_cluster_cli(tmp_path: Path):
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parent.parent
    docs = load_manifests(FIXTURES / "acme-shop" / "k8s")
    with fake_kube(docs, tmp_path) as kube:
        env = {**os.environ, "PYTHONPATH": str(repo)}
        r = subprocess.run(
            [sys.executable, "-m", "advisor", "check", "--cluster", "--kubeconfig",
             str(kube.kubeconfig), "--context", "fake-ctx"],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
        )
    assert r.returncode == 1, r.stderr
    assert "PA101" in r.stdout and "800" in r.stdout
    assert "cluster:fake-ctx/shop/HorizontalPodAutoscaler/checkout" in r.stdout
    missing = subprocess.run(
        [sys.executable, "-m", "advisor", "check", "--cluster", "--kubeconfig",
         str(tmp_path / "nope")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )
    assert missing.returncode == 2 and "kubeconfig" in missing.stderr
    assert "Traceback" not in missing.stderr


@pytest.mark.parametrize("fixture", ["acme-shop-pgbouncer", "cnpg", "keda", "zalando", "crunchy"])
def test_cluster_check_equals_the_file_check(fixture: str, tmp_path: Path):
    """The same objects served by the API give the same budgets and findings as files."""
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions
    from advisor.rules import load_rules

    files = run_check([str(FIXTURES / fixture)], CheckOptions(), load_rules())
    docs = load_manifests(FIXTURES / fixture)
    with fake_kube(docs, tmp_path) as kube:
        live = _check(kube.kubeconfig)

    def summary(result):
        return (
            sorted((b.server, b.usable, b.peak) for b in result.budgets),
            sorted(f.code for f in result.findings),
        )

    assert summary(live) == summary(files)
    assert files.budgets  # the fixture has something to compare


def test_forbidden_configmaps_make_server_settings_unknown(tmp_path: Path):
    docs = load_manifests(FIXTURES / "acme-shop" / "k8s")
    with fake_kube(docs, tmp_path, forbidden=("configmaps",)):
        result = _check(tmp_path / "kubeconfig")
    unknown = [f for f in result.findings if f.code == "PA901"]
    assert len(unknown) == 1 and unknown[0].severity.value == "error"
    assert "postgres: settings unknown: listing ConfigMaps was refused" in unknown[0].message


@pytest.mark.parametrize("text", [
    "apiVersion: v1\nkind: Config\nclusters: 7\n",
    "{{{ not yaml",
    "apiVersion: v1\nkind: Config\ncontexts:\n- name: x\n  context: [1, 2]\ncurrent-context: x\n",
])
def test_malformed_kubeconfig_is_a_clear_error(tmp_path: Path, text: str):
    from advisor.live.cluster import ClusterError

    cfg = tmp_path / "kubeconfig"
    cfg.write_text(text)
    with pytest.raises(ClusterError, match="cannot load kubeconfig"):
        _check(cfg)
