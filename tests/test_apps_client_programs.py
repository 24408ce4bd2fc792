"""PostgreSQL's client programs run by a Job or CronJob (psql, pg_dump, pgbench, ...):
the connections the busiest one holds at once, not an unknown (audit G: damacus'
penpot-skip-onboarding Job running psql was 'no known stack', PA106)."""

from __future__ import annotations

import pytest
from msgspec.structs import replace

from advisor.read.apps import pools_for_container
from tests.apphelpers import container, product

SCRIPT = """set -eu
until psql -c "SELECT 1 FROM public.profile LIMIT 1" >/dev/null 2>&1; do
  sleep 10
done
psql <<'SQL'
UPDATE public.profile SET props = '{}'::jsonb;
SQL
echo done
"""


@pytest.mark.parametrize(("command", "expected"), [
    (("/bin/sh", "-c", SCRIPT), 1),
    (("psql", "-h", "db", "-f", "/seed.sql"), 1),
    (("/usr/bin/pg_dump", "-Fc", "-f", "/backup/app.dump"), 1),
    (("pg_dump", "-Fd", "-j", "4", "-f", "/backup/app"), 5),  # four jobs and the leader
    (("pg_dump", "-Fd", "--jobs=3", "-f", "/backup/app"), 4),
    (("pg_restore", "-j8", "-d", "app", "/backup/app"), 8),
    (("vacuumdb", "--all", "--jobs", "6"), 6),
    (("pgbench", "-c", "16", "-j", "4", "-T", "60"), 16),  # -j is threads for pgbench
    (("pgbench", "-T", "60"), 1),
    (("pg_basebackup", "-D", "/data"), 2),  # WAL streamed over a second connection
    (("pg_basebackup", "-D", "/data", "-X", "fetch"), 1),
    (("sh", "-c", "pg_isready -h db && pg_dump -j 2 -Fd -f /b && psql -c 'select 1'"), 3),
    # both ends of a pipe are connected at once (review s26 F7); `&` runs alongside
    (("sh", "-c", "pg_dump -h db -U app a | psql -h db -U app b"), 2),
    (("sh", "-c", "pg_dump a 2>&1 | psql b >/dev/null 2>&1"), 2),  # redirections
    (("sh", "-c", "pg_dump -j 2 -Fd -f /b & psql -c 'select 1'"), 4),
    (("sh", "-c", "psql -c a & psql -c b & wait; psql -c c"), 2),
    (("sh", "-c", "psql -c a & psql -c b; wait; pg_dump -j 4 -Fd -f /b"), 5),
    (("sh", "-c", "psql -c a >/dev/null 2>&1 && psql -c b; psql -c c"), 1),
    (("sh", "-c", "pg_dump -h old a | psql -h new b"), 1),  # one each on two servers
    (("sh", "-c", "psql -c a\npsql -c b\n\npg_dump -j 2 -Fd -f /b"), 3),  # lines
    (("sh", "-c", "pg_dump a |\n  psql b\npsql -c 'x\ny'"), 2),  # a pipe goes on
    (("sh", "-c", "psql -c a &\npsql -c b\nwait\npsql -c c"), 2),
])
def test_the_connections_a_client_program_holds(command, expected):
    found = pools_for_container(container({"PGHOST": "db"}, command=command))
    (pool,) = found.pools
    assert product(found.pools) == f"1 x {expected} = {expected}"
    assert pool.size.source.default.endswith("at once (PostgreSQL client program)")
    assert any("runs PostgreSQL client program" in n for n in found.notices)


def test_a_jobs_count_that_is_not_a_number_is_not_guessed():
    found = pools_for_container(container({"PGHOST": "db"},
                                          command=("pg_dump", "-j", "$(JOBS)", "-Fd")))
    assert not any(p.label.startswith("pg_dump") for p in found.pools)


def test_a_server_process_after_a_client_program_keeps_the_servers_pools():
    found = pools_for_container(container(
        {"DATABASE_URL": "postgres://u@db/app"},
        command=("sh", "-c", "until pg_isready -h db; do sleep 1; done; exec gunicorn app:app")))
    assert not any("client program" in n for n in found.notices)


def test_an_init_container_waiting_with_pg_isready_is_not_counted_at_peak():
    init = replace(container({"PGHOST": "db"},
                             command=("sh", "-c", "until pg_isready; do sleep 2; done")),
                   role="init")
    found = pools_for_container(init)
    assert found.pools == []
    assert any("init container app: pg_isready connections not counted at peak" in n
               for n in found.notices)


def test_a_word_that_only_mentions_a_program_is_not_one():
    found = pools_for_container(container({"PGHOST": "db"},
                                          command=("sh", "-c", "echo 'run psql by hand'")))
    assert found.pools == []


def _mastodon(image: str, command: tuple[str, ...], env: dict[str, str] | None = None):
    from msgspec.structs import replace as struct_replace

    return pools_for_container(struct_replace(
        container({"DB_HOST": "db", **(env or {})}, command=command), image=image))


def test_mastodon_sidekiq_pool_is_its_concurrency_from_4_2():
    """Mastodon 4.2+ sizes a Sidekiq process's pool to its concurrency when DB_POOL is
    unset (mastodon/mastodon#26488); before, DB_POOL || MAX_THREADS || 5. Audit H: the
    mastodon chart's Sidekiq at -c 50 was counted 5 a pod, 'fits' where it was over."""
    sidekiq = ("bundle", "exec", "sidekiq", "-c", "50")
    (pool,) = _mastodon("ghcr.io/mastodon/mastodon:v4.3.2", sidekiq).pools
    assert pool.size.value == 50
    (pool,) = _mastodon("ghcr.io/mastodon/mastodon:latest", sidekiq).pools
    assert pool.size.value == 50
    (pool,) = _mastodon("ghcr.io/mastodon/mastodon:v4.3.2", ("bundle", "exec", "sidekiq")).pools
    assert pool.size.value == 5 and "4.2+" in pool.size.source.default
    (pool,) = _mastodon("ghcr.io/mastodon/mastodon:v4.1.9", sidekiq).pools
    assert pool.size.value == 5  # the old database.yml: MAX_THREADS || 5
    (pool,) = _mastodon("ghcr.io/mastodon/mastodon:v4.3.2", sidekiq, {"DB_POOL": "20"}).pools
    assert pool.size.value == 20  # DB_POOL still wins, under the concurrency


@pytest.mark.parametrize(("name", "asked"), [
    ("DATABASE_URL", True), ("APP_POSTGRES_HOST", True), ("PGHOST", True),
    ("PGADMIN_DEFAULT_EMAIL", False), ("PGADMIN_CONFIG_SERVER_MODE", False),
    ("DB_PASSWORD", False), ("POSTGRES_EMAIL", False),
])
def test_which_remote_variables_say_where_a_client_connects(name, asked):
    """pgAdmin's PGADMIN_DEFAULT_EMAIL is its web login, not a connection (audit H:
    szinn/k8s-homelab's pgadmin made every server's peak a floor)."""
    from advisor.link.clients import unknown_connection_note
    from advisor.model import EnvVar, Source

    var = EnvVar(name=name, value=None, source=Source(path="app.yaml", line=3),
                 from_ref="secret:app (remote: ExternalSecret app fetches it)")
    assert (unknown_connection_note("Deployment/app", var) is not None) is asked
