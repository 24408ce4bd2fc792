"""A compose build whose dockerfile is not in the repository cannot run as written:
the source inferred from it says so (audit 35: DimaJoyti/HackAI's
deployments/production/docker-compose.prod.yml builds hackai/api-gateway with
deployments/docker/Dockerfile.api-gateway, which does not exist; the notice named the
build as if it ran)."""

from __future__ import annotations

from advisor.engine.check import run_check
from tests.tree_helpers import write

APP = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: gateway}
spec:
  template:
    spec:
      containers:
        - {name: gateway, image: "acme/gateway:latest"}
"""
COMPOSE = """\
services:
  gateway:
    build:
      context: ../../
      dockerfile: deploy/docker/Dockerfile.gateway
    image: acme/gateway:latest
"""


def _notice(tmp_path, files: dict[str, str]) -> str:
    write(tmp_path, {"deploy/k8s/gateway.yaml": APP,
                     "deploy/prod/docker-compose.yml": COMPOSE,
                     "deploy/docker/Dockerfile.base": "FROM alpine\n",
                     "go.mod": "module example.com/gw\n\ngo 1.22\n",
                     "cmd/gw/main.go": "package main\n\nfunc main() {}\n", **files})
    r = run_check([tmp_path])
    (said,) = [n for n in r.notices if n.startswith("Deployment/gateway: application source")]
    return said


def test_a_build_whose_dockerfile_is_missing_is_said(tmp_path):
    said = _notice(tmp_path, {})
    assert ("whose Dockerfile deploy/docker/Dockerfile.gateway is not in the repository: "
            "that build cannot run as written") in said


def test_a_build_whose_dockerfile_is_there_is_not(tmp_path):
    said = _notice(tmp_path, {"deploy/docker/Dockerfile.gateway": "FROM golang:1.22\n"})
    assert "not in the repository" not in said
