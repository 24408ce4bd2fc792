"""The Prometheus PostgreSQL exporter as a Deployment of its own (advisor/read/apps/
pgexporter.py): one connection per DSN (SetMaxOpenConns(1)) + the collector's on the
first during a scrape, from v0.12.0. Before, such a Deployment was a client of unknown
size (PA106)."""

from __future__ import annotations

from msgspec.structs import replace

from advisor.read.apps import pools_for_container
from tests.apphelpers import container, product

URL = "postgresql://u:p@db:5432/postgres?sslmode=disable"


def _pools(image: str, env: dict[str, str], args: tuple[str, ...] = ()):
    return pools_for_container(replace(container(env, args=args), image=image))


def test_one_dsn_is_two_connections_from_v0_12():
    got = _pools("quay.io/prometheuscommunity/postgres-exporter:v0.15.0",
                 {"DATA_SOURCE_NAME": URL})
    assert product(got.pools) == "1 x 2 = 2"
    assert "867fbcac31" in got.pools[0].size.source.default


def test_dsns_are_counted_and_older_tags_hold_one_each():
    two = f"{URL},postgresql://u:p@db2:5432/postgres"
    assert product(_pools("prometheuscommunity/postgres-exporter:v0.17.1",
                          {"DATA_SOURCE_NAME": two}).pools) == "1 x 3 = 3"
    assert product(_pools("wrouesnel/postgres_exporter:v0.8.0",
                          {"DATA_SOURCE_NAME": two}).pools) == "1 x 2 = 2"
    assert product(_pools("bitnami/postgres-exporter:0.15.0-debian-12-r5",
                          {"DATA_SOURCE_URI": "db:5432/postgres",
                           "DATA_SOURCE_USER": "u"}).pools) == "1 x 2 = 2"


def test_auto_discover_is_unknown_and_no_dsn_is_none():
    auto = _pools("prometheuscommunity/postgres-exporter:v0.15.0", {"DATA_SOURCE_NAME": URL},
                  args=("--auto-discover-databases",))
    assert not auto.pools and auto.unknown
    probe = _pools("prometheuscommunity/postgres-exporter:v0.15.0", {})
    assert not probe.pools and not probe.unknown
    other = _pools("prometheuscommunity/pgbouncer-exporter:v0.9.0", {"DATA_SOURCE_NAME": URL})
    assert not other.pools


def test_data_source_uri_is_the_route_with_its_user():
    """DATA_SOURCE_URI has no scheme (`host:port/db?params`); the exporter prefixes
    `postgresql://user:pass@` (datasource.go GetDataSources): where it connects. Before,
    a Deployment with only DATA_SOURCE_URI named no host (prometheus-postgres-exporter's
    chart: config.datasource.host)."""
    got = _pools("quay.io/prometheuscommunity/postgres-exporter:v0.15.0",
                 {"DATA_SOURCE_URI": "my-postgresql:5432/postgres?sslmode=disable",
                  "DATA_SOURCE_USER": "monitor"})
    route = got.pools[0].route
    assert (route.host, route.port, route.dbname, route.user) == \
        ("my-postgresql", 5432, "postgres", "monitor")
    assert route.source.key == "DATA_SOURCE_URI"
    named = _pools("quay.io/prometheuscommunity/postgres-exporter:v0.15.0",
                   {"DATA_SOURCE_NAME": URL, "DATA_SOURCE_URI": "other:5432/x"})
    assert named.pools[0].route is None  # DATA_SOURCE_NAME wins: the env's URL route
