"""The PostgreSQL major of a server, from how real repositories write it (image tags,
operator resources, declarations), and the slot arithmetic of that major."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.facts.pg_version import declared_major, image_major
from advisor.report.text import render
from advisor.rules import load_rules

# Image references as public repositories write them, and the major they run.
IMAGES = [
    ("postgres:16-alpine", 16),
    ("postgres:16.4-bookworm", 16),
    ("docker.io/library/postgres:17.2@sha256:" + "a" * 64, 17),
    ("postgres:9.6", 9.6),
    ("postgres:9.6.24-alpine", 9.6),
    ("postgres:10", 10),
    ("bitnami/postgresql:11.14.0-debian-10-r28", 11),
    ("docker.io/bitnami/postgresql:16.2.0-debian-12-r8", 16),
    ("bitnami/postgresql-repmgr:15.4.0", 15),
    ("ghcr.io/cloudnative-pg/postgresql:16.2", 16),
    ("ghcr.io/cloudnative-pg/postgresql:17.5-standard-bookworm", 17),
    ("postgis/postgis:16-3.4-alpine", 16),
    ("timescale/timescaledb:2.14.2-pg16", 16),
    ("timescale/timescaledb-ha:pg17.2-ts2.17.2", 17),
    ("timescale/timescaledb:latest-pg15", 15),
    ("pgvector/pgvector:pg16", 16),
    ("pgvector/pgvector:0.7.4-pg17", 17),
    # a Bitnami rebuild with pgvector (chatwoot/charts): Bitnami's tag names PostgreSQL
    ("ghcr.io/chatwoot/pgvector:14.4.0-debian-11-r0", 14),
    ("registry.developers.crunchydata.com/crunchydata/crunchy-postgres:ubi8-16.2-0", 16),
    ("ghcr.io/zalando/spilo-16:3.2-p2", 16),
    # sclorg (Red Hat, CentOS, Fedora): the major in the repository name, 96 is 9.6
    ("quay.io/fedora/postgresql-16@sha256:" + "c" * 64, 16),
    ("registry.redhat.io/rhel9/postgresql-16:latest", 16),
    ("quay.io/sclorg/postgresql-15-c9s:20240101", 15),
    ("centos/postgresql-96-centos7", 9.6),
    ("registry.access.redhat.com/rhscl/postgresql-10-rhel7", 10),
    # Sourcegraph before postgresql-16: the major (and minor) in the name, the tag its own
    ("index.docker.io/sourcegraph/postgres-12.6:3.30.0@sha256:" + "d" * 64, 12),
    ("sourcegraph/postgres-11.4:19-11-14_b5ba3a5", 11),
    ("sourcegraph/postgres-12-alpine:4.5.0", 12),
    ("supabase/postgres:15.1.0.147", 15),
    ("localhost:5000/postgres:13", 13),
    # no version in the reference
    ("postgres", None),
    ("postgres:latest", None),
    ("postgres:alpine", None),
    ("postgres@sha256:" + "b" * 64, None),
    ("timescale/timescaledb:latest", None),
    ("pgvector/pgvector:0.7.0", None),  # the extension's version: no PostgreSQL in it
    ("postgres:9.5", None),  # before 9.6: not a supported major
]


@pytest.mark.parametrize(("image", "major"), IMAGES)
def test_major_from_image(image: str, major: float | None) -> None:
    assert image_major(image) == major


@pytest.mark.parametrize(("raw", "major"), [
    ("16", 16), (16, 16), ("9.6", 9.6), (9.6, 9.6), ("16.2", 16), (17.0, 17),
    ("latest", None), (None, None), (True, None), ("8.4", None), (9, None), ("", None),
])
def test_major_as_resources_declare_it(raw: object, major: float | None) -> None:
    assert declared_major(raw) == major


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "repo"
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    return repo


def _deployment(image: str, args: str = "") -> str:
    return f"""apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  replicas: 1
  serviceName: db
  selector: {{matchLabels: {{app: db}}}}
  template:
    metadata: {{labels: {{app: db}}}}
    spec:
      containers:
        - name: postgres
          image: {image}
{args}"""


def _text(result) -> str:
    """The text report with its line wrapping undone (wrapped lines are indented)."""
    return " ".join(render(result, load_rules()).split())


def _check(repo: Path):
    result = run_check([str(repo)], CheckOptions())
    (budget,) = result.budgets
    return result, budget


def test_pg11_image_subtracts_superuser_reserved_and_wal_senders(tmp_path: Path) -> None:
    """PostgreSQL 11 defaults: 100 - 3 superuser_reserved_connections - 10 max_wal_senders
    (WAL senders took normal slots before 12)."""
    repo = _repo(tmp_path, {"k8s/db.yaml": _deployment("bitnami/postgresql:11.14.0-debian-10-r28")})
    result, b = _check(repo)
    assert b.version.value == 11 and b.version.source.key.startswith("image bitnami/")
    assert [(t.label, t.value) for t in b.reserved] == [
        ("superuser_reserved_connections", 3),
        ("max_wal_senders: before PostgreSQL 12 each WAL sender takes a max_connections slot "
         "(PostgreSQL 12 release notes)", 10),
    ]
    assert b.usable == 87
    assert not any(ns.term.label == "max_wal_senders" for ns in b.not_subtracted)
    text = _text(result)
    assert "87 usable = 100 (max_connections, default: PostgreSQL 11 default) - 3 " in text
    assert "before PostgreSQL 12 each WAL sender takes a max_connections slot" in text


def test_pg96_wal_senders_default_zero_and_args(tmp_path: Path) -> None:
    args = ('          args: ["-c", "max_connections=50", "-c", "max_wal_senders=4", '
            '"-c", "superuser_reserved_connections=2"]\n')
    repo = _repo(tmp_path, {"k8s/db.yaml": _deployment("postgres:9.6.24", args)})
    result, b = _check(repo)
    assert b.version.value == 9.6
    assert b.usable == 50 - 2 - 4
    text = _text(result)
    assert "server db (PostgreSQL 9.6, image postgres:9.6.24" in text
    repo = _repo(tmp_path / "b", {"k8s/db.yaml": _deployment("postgres:9.6")})
    _, b = _check(repo)
    assert b.usable == 97  # 9.6 default max_wal_senders is 0 (9.6 documentation)


def test_pg16_reserved_connections_and_pg12_wal_senders_not_subtracted(tmp_path: Path) -> None:
    args = ('          args: ["-c", "max_connections=40", "-c", "reserved_connections=5"]\n')
    repo = _repo(tmp_path, {"k8s/db.yaml": _deployment("postgres:16-alpine", args)})
    _, b = _check(repo)
    assert b.usable == 40 - 3 - 5
    repo = _repo(tmp_path / "b", {"k8s/db.yaml": _deployment("postgres:12", args)})
    result, b = _check(repo)
    # reserved_connections is no parameter of 12: PostgreSQL refuses it (PA109)
    assert any(f.code == "PA109" and "reserved_connections" in f.message
               for f in result.findings)
    assert b.usable == 40 - 3
    assert any(ns.term.label == "max_wal_senders" for ns in b.not_subtracted)


def test_unknown_version_is_named_as_an_assumption(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"k8s/db.yaml": _deployment("postgres:latest")})
    result, b = _check(repo)
    assert b.version.value == 15
    text = _text(result)
    assert ("(PostgreSQL 15, default: assumed PostgreSQL 15: image postgres:latest names no "
            "PostgreSQL version (set --pg-version))") in text


CNPG = """apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata:
  name: pg
spec:
  instances: 1
  imageName: ghcr.io/cloudnative-pg/postgresql:16.2
  postgresql:
    parameters:
      max_connections: "50"
      reserved_connections: "4"
"""

ZALANDO = """apiVersion: acid.zalan.do/v1
kind: postgresql
metadata:
  name: acid-pg
spec:
  teamId: acid
  numberOfInstances: 1
  postgresql:
    version: "11"
    parameters:
      max_connections: "60"
      max_wal_senders: "5"
"""

CRUNCHY = """apiVersion: postgres-operator.crunchydata.com/v1beta1
kind: PostgresCluster
metadata:
  name: hippo
spec:
  postgresVersion: 17
  instances:
    - name: instance1
      replicas: 1
  patroni:
    dynamicConfiguration:
      postgresql:
        parameters:
          max_connections: 80
          transaction_timeout: 60000
"""


@pytest.mark.parametrize(("text", "major", "usable", "key"), [
    (CNPG, 16, 50 - 3 - 4, "spec.imageName"),
    # - 2: Patroni's superuser sessions on a Zalando or PGO server (advisor.facts.patroni)
    (ZALANDO, 11, 60 - 3 - 5 - 2, "spec.postgresql.version"),
    (CRUNCHY, 17, 80 - 3 - 2, "spec.postgresVersion"),
])
def test_operator_resources_give_the_major(tmp_path: Path, text: str, major: int,
                                           usable: int, key: str) -> None:
    repo = _repo(tmp_path, {"k8s/pg.yaml": text})
    result = run_check([str(repo)], CheckOptions())
    primary = next(b for b in result.budgets if "replica" not in b.server)
    assert primary.version.value == major
    assert primary.version.source.path == "k8s/pg.yaml"
    assert primary.usable == usable
    assert not [f for f in result.findings if f.code == "PA109"]


def test_pg_version_option_9_is_96(tmp_path: Path) -> None:
    repo = _repo(tmp_path, {"db/postgresql.conf": "max_connections = 20\n"})
    result = run_check([str(repo)], CheckOptions(pg_version=9))
    (b,) = result.budgets
    assert b.version.value == 9.6
    assert b.usable == 20 - 3  # 9.6: max_wal_senders defaults to 0
    assert "(PostgreSQL 9.6, " in _text(result)


def test_a_cnpg_cluster_without_image_runs_the_operator_s_default(tmp_path: Path) -> None:
    """No spec.imageName: the major assumed is the one the message names (CloudNativePG
    1.28-1.30 DefaultImageName, PostgreSQL 18), not the tool-wide 15 it named beside it
    (audit s22 D10b); a declared version wins."""
    text = CNPG.replace("  imageName: ghcr.io/cloudnative-pg/postgresql:16.2\n", "")
    repo = _repo(tmp_path, {"k8s/pg.yaml": text})
    result = run_check([str(repo)], CheckOptions())
    (b,) = result.budgets
    assert (b.version.value, b.usable) == (18, 50 - 3 - 4)
    assert ("(PostgreSQL 18, default: assumed PostgreSQL 18: spec.imageName not set, so the "
            "operator's default image decides, and the operator's version is not in the "
            "repository: PostgreSQL 18 is the default of CloudNativePG 1.28 to 1.30 "
            "(pkg/versions/versions.go DefaultImageName; 17 in 1.25-1.27, 16 in 1.22-1.24); "
            "set spec.imageName or --pg-version)") in _text(result)
    result = run_check([str(repo)], CheckOptions(pg_version=16))
    (b,) = result.budgets
    assert (b.version.value, b.version.source.default) == (16, "--pg-version")
