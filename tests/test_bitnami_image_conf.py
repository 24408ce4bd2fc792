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


def test_an_over_peak_within_the_wal_sender_slots_says_it_rests_on_them(tmp_path):
    """Before PostgreSQL 12 the max_wal_senders slots stay subtracted (taken while
    standbys or base backups stream), and a verdict over only by them says so (audit 7b
    D8: 87 of 97 on a server with no replication)."""
    from advisor.engine.check import CheckOptions, run_check

    app = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: app
          image: acme/api:1
          env:
            - {name: SPRING_DATASOURCE_URL, value: "jdbc:postgresql://shop-postgresql:5432/app"}
            - {name: SPRING_DATASOURCE_HIKARI_MAXIMUM_POOL_SIZE, value: "42"}
"""
    (tmp_path / "pg.yaml").write_text(STS % {"image": "bitnami/postgresql:11.22.0",
                                             "mounts": MOUNTS, "configmap": ""})
    (tmp_path / "app.yaml").write_text(app)
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert (budget.peak, budget.usable) == (84, 81)  # (1 + 1 surge) x 42
    assert budget.rests_on == ["97 usable without the 16 max_wal_senders slots, which WAL "
                               "senders take only while standbys or base backups stream "
                               "(before PostgreSQL 12)"]
