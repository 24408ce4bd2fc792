"""Applications run from their published images, sized by env or their documented
default (advisor/read/apps/images.py): which images are which application."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from advisor.read.apps import pools_for_container
from tests.apphelpers import container


def _pools(image: str, env: dict[str, str] | None = None, command: tuple[str, ...] = ()):
    return pools_for_container(replace(container(env or {}, command=command), image=image))


@pytest.mark.parametrize(("image", "label"), [
    ("quay.io/keycloak/keycloak:26.0", "Keycloak db-pool-max-size"),
    ("keycloak/keycloak:25.0.6", "Keycloak db-pool-max-size"),
    ("docker.io/bitnami/keycloak:26.1.0-debian-12-r0", "Keycloak db-pool-max-size"),
    ("registry.redhat.io/rhbk/keycloak-rhel9:26.0", "Keycloak db-pool-max-size"),
    ("mattermost/mattermost-team-edition:9.11.1", "Mattermost SqlSettings.MaxOpenConns"),
    ("mattermost/mattermost-enterprise-edition:10.5", "Mattermost SqlSettings.MaxOpenConns"),
    ("goharbor/harbor-core:v2.11.1", "Harbor core POSTGRESQL_MAX_OPEN_CONNS"),
    ("postgrest/postgrest:v12.2.0", "PostgREST db-pool"),
])
def test_published_images_are_their_application(image, label):
    (pool,) = _pools(image).pools
    assert pool.label == label


@pytest.mark.parametrize("image", [
    "ghcr.io/padminisys/keycloak-config:latest",  # a Python job calling Keycloak's REST API
    "registry.redhat.io/rhbk/keycloak-rhel9-operator:26.0",
    "quay.io/keycloak/keycloak-operator:26.0",
    "mattermost/mattermost-operator:v1.22.0",
    "mattermost/mattermost-push-proxy:6.2.0",
    "ghcr.io/acme/postgrest-docs:1",
])
def test_an_image_named_after_an_application_is_not_it(image):
    """Audit F: keycloak-ops' keycloak-config job (FROM python, requests only) got
    Keycloak's db-pool-max-size 100 (PA104) because 'keycloak' was in its name."""
    assert _pools(image).pools == []


def test_the_applications_own_env_still_names_it_in_another_image():
    (pool,) = _pools("ghcr.io/acme/sso:1", {"KC_DB": "postgres"}).pools
    assert pool.label == "Keycloak db-pool-max-size" and pool.size.value == 100


# n8n: DB_POSTGRESDB_POOL_SIZE, default 2 from n8n 1.18.0 (@n8n/config database.config.ts);
# before it no setting, TypeORM passed no max: pg-pool's 10 (n8n-io/n8n#7772)
N8N_POOL_DEFAULT = 2
PG_POOL_MAX = 10


def test_n8n_postgres_pool_is_its_default_or_its_variable():
    """Audit F: theepicsaxguy/homelab's n8n (n8nio/n8n:2.26.0, DB_TYPE=postgresdb, no
    DB_POSTGRESDB_POOL_SIZE) was unknown (PA106); its documented default is 2."""
    postgres = {"DB_TYPE": "postgresdb", "DB_POSTGRESDB_HOST": "n8n-db-rw"}
    (pool,) = _pools("n8nio/n8n:2.26.0", postgres).pools
    assert (pool.size.value, pool.bound) == (N8N_POOL_DEFAULT, "default")
    assert "database.config.ts" in pool.size.source.default
    (pool,) = _pools("docker.n8n.io/n8nio/n8n:1.64.0",
                     {**postgres, "DB_POSTGRESDB_POOL_SIZE": "8"}).pools
    assert pool.size.value == 8 and pool.size.source.key == "DB_POSTGRESDB_POOL_SIZE"
    # a version before the setting: pg-pool's 10, whatever the variable says
    (pool,) = _pools("n8nio/n8n:1.17.1", {**postgres, "DB_POSTGRESDB_POOL_SIZE": "8"}).pools
    assert pool.size.value == PG_POOL_MAX and "before 1.18.0" in pool.size.source.default
    # SQLite (DB_TYPE unset): no PostgreSQL pool
    assert _pools("n8nio/n8n:2.26.0", {"N8N_PORT": "5678"}).pools == []
