"""The Bitnami PostgreSQL image writes max_wal_senders 16 into the postgresql.conf it
creates (libpostgresql.sh postgresql_configure_replication_parameters, bitnami/containers
31d94259); before PostgreSQL 12 those slots come out of max_connections (audit 6b D9: the
tool said PostgreSQL 11's default 10, usable 87 where the image leaves 81)."""

from __future__ import annotations

import pytest

from advisor.read.sources.k8s import k8s_objects
from advisor.read.sources.operators import operator_entities

STS = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: shop-postgresql
  labels: {app.kubernetes.io/name: postgresql, app.kubernetes.io/component: primary}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: postgresql
          image: %(image)s
%(mounts)s      volumes:
        - {name: conf, configMap: {name: shop-postgresql-configuration}}
%(configmap)s"""

MOUNTS = """\
          volumeMounts:
            - {name: conf, mountPath: /bitnami/postgresql/conf}
"""
CONFIGMAP = """\
---
apiVersion: v1
kind: ConfigMap
metadata: {name: shop-postgresql-configuration}
data:
  postgresql.conf: |
    max_connections = 100
"""


def _settings(image: str, *, mounts: bool, conf: bool) -> dict:
    text = STS % {"image": image, "mounts": MOUNTS if mounts else "",
                  "configmap": CONFIGMAP if conf else ""}
    objects, problems = k8s_objects(text, "k8s/pg.yaml")
    assert not problems
    (server,) = operator_entities(objects).servers
    return server.settings


@pytest.mark.parametrize("mounts", [True, False])
def test_the_image_s_own_postgresql_conf_holds_16_wal_senders(mounts):
    settings = _settings("bitnami/postgresql:11.22.0", mounts=mounts, conf=False)
    senders = settings["max_wal_senders"]
    assert senders.value == 16
    assert "Bitnami image default" in (senders.source.default or "")


@pytest.mark.parametrize("mounts", [True, False])
def test_a_mounted_postgresql_conf_is_used_as_it_is(mounts):
    settings = _settings("bitnami/postgresql:11.22.0", mounts=mounts, conf=True)
    assert "max_wal_senders" not in settings  # PostgreSQL's own default then applies
    assert settings["max_connections"].value == 100


def test_another_image_writes_nothing():
    assert "max_wal_senders" not in _settings("postgres:11.22", mounts=True, conf=False)


def test_postgresql_11_under_the_image_keeps_81_of_100(tmp_path):
    from advisor.engine.check import CheckOptions, run_check

    (tmp_path / "pg.yaml").write_text(STS % {"image": "bitnami/postgresql:11.22.0",
                                             "mounts": MOUNTS, "configmap": ""})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.usable == 81
