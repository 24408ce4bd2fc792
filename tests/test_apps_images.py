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
