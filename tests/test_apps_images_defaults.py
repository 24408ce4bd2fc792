"""Every default an image reader prints names the version or commit it was read at
(audit s22 D9: `Keycloak default db-pool-max-size 100 (DatabaseOptions.java)` and the
like named a file only), and Prefect's services pod is labelled by its own command."""

from __future__ import annotations

import re

import pytest
from msgspec.structs import replace

from advisor.read.apps import pools_for_container
from tests.apphelpers import container

# a commit (7+ hex digits with a digit and a letter) or a version (4.1.0, v18.3.0, 2.x)
_PINNED = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b|"
                     r"\bv?\d+\.(?:\d+|x)\b")

CASES = [
    ("quay.io/keycloak/keycloak:26.0", {"KC_DB": "postgres"}, ()),
    ("jboss/keycloak:16.1.1", {"DB_VENDOR": "postgres"}, ()),
    ("mattermost/mattermost-team-edition:9.11.1",
     {"MM_SQLSETTINGS_DATASOURCE": "postgres://u:p@db/mm"}, ()),
    ("goharbor/harbor-core:v2.11.1", {}, ()),
    ("goharbor/harbor-core:v2.11.1", {}, ("/harbor/harbor_core", "-mode=migrate")),
    ("postgrest/postgrest:v12.2.0", {"PGRST_DB_URI": "postgres://db/app"}, ()),
    ("n8nio/n8n:1.60.0", {"DB_TYPE": "postgresdb"}, ()),
    ("n8nio/n8n:1.10.0", {"DB_TYPE": "postgresdb"}, ()),
    ("miniflux/miniflux:2.2.1", {"DATABASE_URL": "postgres://db/mf"}, ()),
    ("teslamate/teslamate:1.30.0", {}, ()),
    ("sonarqube:10.6-community", {}, ()),
    ("ghcr.io/mastodon/mastodon:v4.3.2", {}, ()),
    ("ghcr.io/mastodon/mastodon:v4.3.2", {}, ("bundle", "exec", "sidekiq")),
    ("ghcr.io/mastodon/mastodon-streaming:v4.3.2", {}, ()),
    ("ghcr.io/mastodon/mastodon:v4.1.2", {}, ("node", "./streaming")),
    ("ghcr.io/mastodon/mastodon:v4.3.2", {}, ("bin/tootctl", "media", "remove")),
    ("grafana/grafana:11.2.0", {"GF_DATABASE_TYPE": "postgres"}, ()),
    ("gitea/gitea:1.24.6", {"GITEA__database__DB_TYPE": "postgres"}, ()),
    ("code.forgejo.org/forgejo/forgejo:13.0.3", {"FORGEJO__database__DB_TYPE": "postgres"}, ()),
    ("code.forgejo.org/forgejo/forgejo:7.0.14", {"FORGEJO__database__DB_TYPE": "postgres"}, ()),
    ("metabase/metabase:v0.50.0", {"MB_DB_TYPE": "postgres"}, ()),
    ("hasura/graphql-engine:v2.40.0", {"HASURA_GRAPHQL_DATABASE_URL": "postgres://db/h"}, ()),
    ("ghcr.io/atuinsh/atuin:v18.3.0", {"ATUIN_DB_URI": "postgres://db/a"},
     ("atuin", "server", "start")),
    ("vaultwarden/server:1.32.0", {"DATABASE_URL": "postgresql://db/vw"}, ()),
    ("lscr.io/linuxserver/sonarr:4.0.9", {"Sonarr__Postgres__Host": "db"}, ()),
    ("ghcr.io/paperless-ngx/paperless-ngx:2.18.0", {"PAPERLESS_DBHOST": "db"}, ()),
    ("prefecthq/prefect:3.4.24-python3.11", {}, ("prefect", "server", "start")),
    ("prefecthq/prefect:3.4.24-python3.11", {}, ("prefect", "server", "services", "start")),
    ("ghcr.io/zitadel/zitadel:v4.13.0", {}, ("zitadel", "start")),
    ("nextcloud:34-apache", {"POSTGRES_HOST": "db"}, ()),
    ("nextcloud:34-fpm", {"POSTGRES_HOST": "db"}, ()),
    ("nextcloud:34-apache", {"POSTGRES_HOST": "db"}, ("/cron.sh",)),
    ("apache/superset:4.1.1", {}, ()),
    ("apache/superset:4.1.1", {}, ("/bin/sh", "-c", ". /app/pythonpath/superset_init.sh")),
    ("concourse/concourse:8.1.1", {}, ("web",)),
    ("concourse/concourse:7.5.0", {}, ("web",)),
    ("concourse/concourse:6.7.3", {}, ("web",)),
    ("concourse/concourse:latest", {}, ("web",)),
    ("redash/redash:25.8.0", {}, ()),
    ("redash/redash:25.8.0", {}, ("worker",)),
    ("redash/redash:25.8.0", {}, ("scheduler",)),
    ("redash/redash:25.8.0", {}, ("create_db",)),
    ("redash/redash:latest", {}, ("/app/manage.py", "rq", "worker")),
]


@pytest.mark.parametrize(("image", "env", "command"), CASES)
def test_every_default_names_its_version_or_commit(image, env, command):
    got = pools_for_container(replace(container(env, command=command), image=image))
    assert got.pools, (image, got.unknown, got.notices)
    defaults = [t.source.default for p in got.pools
                for t in (p.size, p.processes) if t is not None and t.source.default]
    defaults += [t.source.default for p in got.pools for t in p.moves_with
                 if t.source.default]
    assert defaults, image
    for text in defaults:
        assert _PINNED.search(text), text


def test_prefect_services_pod_is_labelled_by_its_command():
    """Audit D9: the background-services pod runs `prefect server services start`
    (prefect-helm templates/background-services/deployment.yaml) but its process count
    was labelled `prefect server start --workers default 1`. One process, one engine:
    5 + 10."""
    got = pools_for_container(replace(container(command=(
        "/usr/bin/tini", "-g", "--", "/opt/prefect/entrypoint.sh"), args=(
        "prefect", "server", "services", "start")), image="prefecthq/prefect:3-latest"))
    (pool,) = got.pools
    assert pool.processes.label == "Prefect services processes (prefect server services start)"
    assert "start_services" in pool.processes.source.default
    assert "--workers" not in pool.processes.source.default
    assert pool.per_pod() == 15
    (pool,) = pools_for_container(replace(container(args=(
        "prefect", "server", "services", "start", "--workers", "4")),
        image="prefecthq/prefect:3-latest")).pools
    assert pool.per_pod() == 15  # --workers is not an option of `services start`


def test_prefect_negative_max_overflow_is_no_limit():
    """SQLAlchemy QueuePool: max_overflow -1 is no overflow limit (Prefect passes the
    setting to create_async_engine as it is); it was summed as 5 + -1 = 4."""
    env = {"PREFECT_SERVER_DATABASE_SQLALCHEMY_MAX_OVERFLOW": "-1"}
    (pool,) = pools_for_container(replace(container(env, args=(
        "prefect", "server", "start")), image="prefecthq/prefect:3-latest")).pools
    assert (pool.bound, pool.size.value) == ("unbounded", 0)
    assert pool.size.source.key == "PREFECT_SERVER_DATABASE_SQLALCHEMY_MAX_OVERFLOW"
