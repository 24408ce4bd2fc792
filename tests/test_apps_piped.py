"""Piped's backend (advisor/read/apps/piped.py) and TeslaMate (images.py STACKS), as the
bjw-s app-template deploys them in home-ops repositories: Piped's database settings in
a config.properties that a `persistence` item of type secret mounts at /app (bjw-s-labs/
home-ops' piped, whose backend was in no budget once its release was rendered), and
TeslaMate's DATABASE_* env on app-template 5.x (billimek/k8s-gitops)."""

from __future__ import annotations

import pytest

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from tests.tree_helpers import POSTGRES_DB, write

DB = POSTGRES_DB.replace("max_connections=50", "max_connections=200")
HIKARI_DEFAULT = 10  # HikariConfig.DEFAULT_POOL_SIZE
TESLAMATE_DEFAULT = 10  # teslamate config/runtime.exs DATABASE_POOL_SIZE "10"

BJW_S = """---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: bjw-s, namespace: flux-system}
spec:
  type: oci
  url: oci://ghcr.io/bjw-s/helm
"""

PIPED = """---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: piped
spec:
  chart:
    spec:
      chart: app-template
      version: 3.5.1
      sourceRef: {kind: HelmRepository, name: bjw-s, namespace: flux-system}
  values:
    controllers:
      backend:
        strategy: RollingUpdate
        containers:
          app:
            image:
              repository: 1337kavin/piped
              tag: latest
      frontend:
        containers:
          app:
            image:
              repository: ghcr.io/bjw-s-labs/piped-frontend
              tag: 2024.12.9
    persistence:
      config:
        type: secret
        name: piped-secret
        advancedMounts:
          %s:
            app:
              - path: /app/config.properties
                subPath: config.properties
"""

SECRET = """---
apiVersion: v1
kind: Secret
metadata: {name: piped-secret}
stringData:
  config.properties: |
    PORT: 8080
    hibernate.connection.driver_class: org.postgresql.Driver
    hibernate.connection.url: jdbc:postgresql://db:5432/piped
    hibernate.connection.username: piped
%s"""


def _tree(tmp_path, mounted_in: str = "backend", extra: str = "") -> None:
    write(tmp_path, {"k8s/repositories.yaml": BJW_S, "k8s/db.yaml": DB,
                     "k8s/piped/helmrelease.yaml": PIPED % mounted_in,
                     "k8s/piped/secret.yaml": SECRET % extra})


def _budget(tmp_path):
    result = run_check([str(tmp_path)], CheckOptions())
    return result, {b.server: b for b in result.budgets}["db"]


def test_the_backend_reads_its_mounted_config_properties(tmp_path):
    """The Secret's config.properties, mounted by the release's persistence item at
    /app/config.properties: its URL places the backend on db, and with no
    hibernate.hikari.maximumPoolSize HikariCP's 10 per pod, (1 + surge 1) x 10."""
    _tree(tmp_path)
    _, budget = _budget(tmp_path)
    (backend,) = budget.contributions
    assert (backend.who, backend.total) == ("piped-backend", 2 * HIKARI_DEFAULT)
    size = backend.factors[-1]
    assert "HikariCP default 10" in size.source.default
    topo = scan([str(tmp_path)], CheckOptions()).topology
    (client,) = [c for c in topo.clients if c.name == "piped-backend"]
    assert (client.route.host, client.route.dbname, client.route.user) == ("db", "piped",
                                                                          "piped")
    assert client.route.source.path == "k8s/piped/secret.yaml"


def test_hibernate_hikari_maximum_pool_size_sets_it(tmp_path):
    _tree(tmp_path, extra="    hibernate.hikari.maximumPoolSize: 4\n")
    _, budget = _budget(tmp_path)
    (backend,) = budget.contributions
    assert backend.total == 2 * 4
    size = backend.factors[-1]
    assert (size.source.path, size.source.line) == ("k8s/piped/secret.yaml", 11)


def test_without_its_config_the_backend_is_no_silent_zero(tmp_path):
    """The Secret mounted for another controller only: the backend names no database
    the repository holds, so it is a client whose server is not known, and every peak a
    floor, not left out (its pool's size is not known either: no config.properties)."""
    _tree(tmp_path, mounted_in="worker")
    result, budget = _budget(tmp_path)
    assert budget.contributions == [] and budget.peak_is_floor
    assert [n for n in result.notices if "piped-backend" in n and "no config.properties"
            in n and "may connect to any server here" in n]


@pytest.mark.parametrize("name", ["HIBERNATE__HIKARI__MAXIMUMPOOLSIZE",
                                  "hibernate.hikari.maximumPoolSize"])
def test_hikari_settings_in_the_env_are_not_read(name):
    """HIBERNATE__HIKARI__MAXIMUMPOOLSIZE becomes `hibernate.hikari.maximumpoolsize`
    (Constants.java lower-cases it), which HikariCP matches to no setter; a variable
    named hibernate.hikari.maximumPoolSize is read by images before 2025-09 only, and
    the tag does not say which: unknown, either way. Without them, and with no
    config.properties held, the size is not known either (not HikariCP's 10)."""
    from msgspec.structs import replace

    from advisor.read.apps import pools_for_container
    from tests.apphelpers import container

    env = {"HIBERNATE__CONNECTION__URL": "jdbc:postgresql://db:5432/piped", name: "4"}
    got = pools_for_container(replace(container(env), image="1337kavin/piped:latest"))
    assert got.pools == [] and any(name in u for u in got.unknown)
    del env[name]
    got = pools_for_container(replace(container(env), image="1337kavin/piped:latest"))
    assert got.pools == [] and any("no config.properties" in u for u in got.unknown)
    proxy = pools_for_container(replace(container(env), image="1337kavin/piped-proxy:latest"))
    assert not [p for p in proxy.pools if p.label.startswith("Piped")]


TESLAMATE = """---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: app-template, namespace: flux-system}
spec:
  ref: {tag: 5.1.0}
  url: oci://ghcr.io/bjw-s-labs/helm/app-template
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: teslamate}
spec:
  chartRef: {kind: OCIRepository, name: app-template, namespace: flux-system}
  values:
    controllers:
      teslamate:
        containers:
          main:
            image:
              repository: teslamate/teslamate
              tag: 4.1.1
            env:
              DATABASE_HOST: db
              DATABASE_NAME: teslamate
%s"""


def test_teslamate_on_app_template_5_holds_database_pool_size(tmp_path):
    """billimek/k8s-gitops' teslamate: app-template 5.1.0 (a release of unknown size
    before), one pod (Recreate) x TeslaMate's Ecto pool_size 10, or DATABASE_POOL_SIZE."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/teslamate.yaml": TESLAMATE % ""})
    _, budget = _budget(tmp_path)
    (teslamate,) = budget.contributions
    assert teslamate.total == TESLAMATE_DEFAULT and not budget.peak_is_floor
    assert "DATABASE_POOL_SIZE 10" in teslamate.factors[-1].source.default
    write(tmp_path, {"k8s/teslamate.yaml": TESLAMATE % "              DATABASE_POOL_SIZE: 3\n"})
    _, budget = _budget(tmp_path)
    assert budget.contributions[0].total == 3


PIPED_DEPLOYMENT = """---
apiVersion: apps/v1
kind: Deployment
metadata: {name: piped-backend}
spec:
  replicas: 2
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: backend
          image: 1337kavin/piped:latest
          env:
            - {name: HIBERNATE__CONNECTION__URL, value: "jdbc:postgresql://db:5432/piped"}
"""


def test_with_no_config_properties_held_the_pool_size_is_unknown(tmp_path):
    """No config.properties in the repository: whether it sets maximumPoolSize is not
    known, so the backend was counted as HikariCP's 10 (bound "default") while its note
    said the size was not known. It is a client of unknown size (PA106, a floor) on the
    server its env's URL names."""
    write(tmp_path, {"k8s/db.yaml": DB, "k8s/piped.yaml": PIPED_DEPLOYMENT})
    result, budget = _budget(tmp_path)
    assert budget.unknown_clients == ["piped-backend"] and budget.peak_is_floor
    (finding,) = [f for f in result.findings if f.code == "PA106"]
    assert "no config.properties" in finding.message
