"""A loopback HTTP server that answers the Kubernetes list calls pool-advisor makes,
from a set of manifests; and a kubeconfig pointing at it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ruamel.yaml import YAML

PLURALS = {
    "Deployment": "deployments", "StatefulSet": "statefulsets", "DaemonSet": "daemonsets",
    "CronJob": "cronjobs", "HorizontalPodAutoscaler": "horizontalpodautoscalers",
    "ConfigMap": "configmaps", "Service": "services", "Secret": "secrets",
    "ScaledObject": "scaledobjects", "Cluster": "clusters", "Pooler": "poolers",
    "postgresql": "postgresqls", "PostgresCluster": "postgresclusters", "Rollout": "rollouts",
    "PerconaPGCluster": "perconapgclusters",
}


@dataclass
class FakeKube:
    port: int
    kubeconfig: Path
    requests: list[str] = field(default_factory=list)


def _prefix(api_version: str) -> str:
    return f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"


def _index(docs: list[dict]) -> dict[str, list[dict]]:
    """list path -> items, for all-namespace and per-namespace lists."""
    out: dict[str, list[dict]] = {}
    for d in docs:
        plural = PLURALS[d["kind"]]
        prefix = _prefix(d["apiVersion"])
        ns = d["metadata"].get("namespace", "default")
        item = {k: v for k, v in d.items() if k not in ("kind", "apiVersion")}
        item["metadata"] = {**d["metadata"], "namespace": ns, "uid": "x",
                            "managedFields": [{"manager": "kubectl"}]}
        item["status"] = {"replicas": 1}
        out.setdefault(f"{prefix}/{plural}", []).append(item)
        out.setdefault(f"{prefix}/namespaces/{ns}/{plural}", []).append(item)
    return out


def load_manifests(folder: Path) -> list[dict]:
    yaml = YAML(typ="safe")
    docs: list[dict] = []
    for f in sorted(folder.rglob("*.yaml")):
        docs += [d for d in yaml.load_all(f.read_text()) if isinstance(d, dict)]
    return docs


@contextmanager
def fake_kube(
    docs: list[dict], tmp: Path, *, forbidden: tuple[str, ...] = ()
) -> Iterator[FakeKube]:
    index = _index(docs)
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            seen.append(path)
            if self.headers.get("Authorization") != "Bearer test-token":
                return self._send(401, {"kind": "Status", "code": 401})
            if any(path.endswith("/" + f) for f in forbidden):
                return self._send(403, {"kind": "Status", "code": 403, "reason": "Forbidden"})
            if path.rstrip("/").split("/")[-1] == "secrets":
                return self._send(403, {"kind": "Status", "code": 403})
            known = path in index or path.split("/")[2] in ("v1", "apps", "autoscaling", "batch")
            if not known:
                return self._send(404, {"kind": "Status", "code": 404, "reason": "NotFound"})
            return self._send(200, {"kind": "List", "apiVersion": "v1",
                                    "metadata": {}, "items": index.get(path, [])})

        def _send(self, code: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = server.server_address[1]
    kubeconfig = tmp / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: fake\n  cluster:\n    server: http://127.0.0.1:{port}\n"
        "users:\n- name: tester\n  user:\n    token: test-token\n"
        "contexts:\n- name: fake-ctx\n  context:\n    cluster: fake\n    user: tester\n"
        "current-context: fake-ctx\n"
    )
    try:
        yield FakeKube(port=port, kubeconfig=kubeconfig, requests=seen)
    finally:
        server.shutdown()
        server.server_close()
