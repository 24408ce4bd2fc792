"""Issue 13 item 5: application layouts in the shape of named public apps
(tests/realworld_apps/, written by us after reading each real repository; nothing
copied). For each workload the connections one pod opens are computed by hand below,
from the fixture's files and the library's documented default, and compared with the
budget `pool-advisor check --format json` prints. Every Deployment uses
strategy Recreate (no surge), so a contribution is pods x connections per pod.

Counts (this file): 17 layouts, 23 workloads: 20 sized right (CASES), 2 unbounded
and reported so (auth-nolimit, shop-api: PA102), 1 unknown on purpose (ledger: reported by PA106,
never counted as 0), 0 wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

CORPUS = Path(__file__).resolve().parent / "realworld_apps"

# Library defaults the figures below rest on (each cited in its reader's module):
ACTIVE_RECORD_POOL = 5  # Rails HashConfig#pool
SQLALCHEMY_QUEUEPOOL = 5 + 10  # pool_size + max_overflow, SQLAlchemy 2.x
SEQUELIZE_MAX = 5  # sequelize v6 connection-manager.js
PG_POOL_MAX = 10  # pg-pool `max || poolSize || 10`
HIKARI_MAX = 10  # HikariConfig DEFAULT_POOL_SIZE
ECTO_POOL = 10  # Ecto.Repo.Supervisor @defaults
KEYCLOAK_POOL = 100  # Keycloak DatabaseOptions db-pool-max-size default


def check(folder: str) -> dict:
    from advisor.cli import app

    result = CliRunner().invoke(app, ["check", str(CORPUS / folder), "--format", "json",
                                      "--root", str(CORPUS / folder)])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output[result.output.index("{"):])


def budget(report: dict, server: str = "db") -> dict:
    return next(b for b in report["budgets"] if b["server"] == server)


def contributions(b: dict) -> dict[str, float]:
    return {c["who"]: c["total"] for c in b["terms"]["contributions"]}


CASES = [
    # (layout, workload, pods, connections per pod by hand, why)
    ("mastodon", "web", 1, 2 * 5,
     "Rails at the root; Puma workers ENV.fetch('WEB_CONCURRENCY') { 2 } x pool "
     "DB_POOL || MAX_THREADS || 5 = 5, threads MAX_THREADS 5: min(5, 5) = 5"),
    ("mastodon", "sidekiq", 1, 12,
     "Sidekiq -c 12 threads, pool DB_POOL 20: min(20, 12) = 12 (one connection per thread)"),
    ("rubygems", "gems", 1, 2 * 3,
     "config/database.yml is the .sample the Dockerfile copies: production pool 30; "
     "Puma WEB_CONCURRENCY 2 workers x RAILS_MAX_THREADS default 3 threads: min(30, 3)"),
    ("osm", "maps", 1, 3,
     "no production database.yml: Active Record default pool 5 (Gemfile names rails), "
     "capped by Puma's RAILS_MAX_THREADS default 3; one process"),
    ("netbox", "netbox", 1, 5 * 3,
     "Django one level down (netbox/netbox); contrib/gunicorn.py workers 5 x threads 3 "
     "x 1 connection per thread (DATABASES from the operator's configuration module)"),
    ("healthchecks", "checks", 1, 4 + 2,
     "uwsgi.ini processes 4 (UWSGI_PROCESSES unset) + 2 attach-daemon manage.py, 1 thread; "
     "DATABASES switched to postgres by `if os.getenv('DB') == 'postgres'`"),
    ("healthchecks", "checks-big", 1, 8 + 2,
     "UWSGI_PROCESSES 8 (the ini's processes is inside if-not-env) + 2 daemons"),
    ("redash", "dash", 1, 4 * SQLALCHEMY_QUEUEPOOL,
     "ENTRYPOINT bin/docker-entrypoint server(): gunicorn -w${DASH_WEB_WORKERS:-4}; "
     "Flask-SQLAlchemy 2.x with no pool setting: QueuePool 5 + 10"),
    ("outline", "wiki", 1, 3 * SEQUELIZE_MAX,
     "throng count WEB_CONCURRENCY 3 x Sequelize pool.max poolMax (?? 5); the two "
     "new Sequelize are the branches of one if/else: one pool"),
    ("umami", "stats", 1, PG_POOL_MAX,
     "Prisma 7 @prisma/adapter-pg without max: the adapter's pg.Pool, default max 10"),
    ("graphile-worker", "jobs", 1, 10,
     "src/lib.ts new Pool max maxPoolSize = 10; perfTest/ and benchmarks/ pools are "
     "scripts, not the pod's"),
    ("graphile-worker", "jobs-cli", 2, 10,
     "the URL only on the command line (-c postgres://...): linked by it; pool as above"),
    ("miniflux", "reader", 1, 20,
     "SetMaxOpenConns(maxConnections) <- DATABASE_MAX_CONNS, default parsedIntValue 20"),
    ("miniflux", "reader-big", 1, 35, "DATABASE_MAX_CONNS=35 in the container env"),
    ("supabase-auth", "auth", 1, 12,
     "pop ConnectionDetails.Pool = MaxPoolSize (envconfig split_words) <- "
     "GOTRUE_DB_MAX_POOL_SIZE 12"),
    ("hexpm", "pkgs", 1, 15,
     "Pkgs.Repo.init/2 puts pool_size from PKGS_DATABASE_POOL_SIZE 15 (ecto:// URL)"),
    ("hexpm", "pkgs-default", 1, ECTO_POOL,
     "PKGS_DATABASE_POOL_SIZE unset, no pool_size in config: Ecto default 10"),
    ("petclinic", "clinic", 2, HIKARI_MAX,
     "Spring Boot profile postgres, POSTGRES_URL in the env, no hikari setting: 10"),
    ("py313", "board", 1, 3 * 2,
     "settings.py in Python 3.13 syntax (PEP 701 f-string, `type`); gunicorn --workers 3 "
     "--threads 2 x 1 connection per thread; source in app/ (the only app folder)"),
    ("keycloak", "sso", 2, KEYCLOAK_POOL,
     "image quay.io/keycloak/keycloak, KC_DB_POOL_MAX_SIZE unset: default 100"),
]


@pytest.mark.parametrize("folder,workload,pods,per_pod,why", CASES,
                         ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_connections_per_pod(folder, workload, pods, per_pod, why):
    b = budget(check(folder))
    assert workload not in b["unknown_clients"], why
    assert contributions(b)[workload] == pods * per_pod, why


def test_supabase_auth_without_pool_size_is_unbounded():
    # MaxPoolSize unset -> pop Pool 0 -> SetMaxOpenConns(0): no limit (PA102 error)
    report = check("supabase-auth")
    codes = {(f["code"], f["message"].split(":")[0]) for f in report["findings"]}
    assert ("PA102", "auth-nolimit") in codes


def test_saleor_django_under_uvicorn_is_unbounded():
    # Dockerfile CMD uvicorn --workers=2, no --limit-concurrency: Django under ASGI opens
    # one connection per request in flight, per alias (default, replica); it was counted
    # 2 x 2 = 4 as if each process held one per alias
    report = check("saleor")
    codes = [(f["code"], f["message"].split(":")[0]) for f in report["findings"]]
    assert codes.count(("PA102", "shop-api")) == 2, codes


def test_unknown_stack_is_reported_not_zero():
    # Cargo.toml (bb8-postgres): no reader, no default to name -> unknown, 3 pods not
    # counted (sqlx, deadpool-postgres and r2d2 have theirs: tests/test_apps_rust.py)
    report = check("unknown-rust")
    b = budget(report)
    assert b["unknown_clients"] == ["ledger"] and b["peak_is_floor"] and b["fits"] is False
    (f,) = [f for f in report["findings"] if f["code"] == "PA106"]
    assert "ledger: connections per pod unknown, so its 3 pods are counted as 1 connection " \
        "each" in f["message"]


def test_every_inferred_source_folder_has_its_notice():
    report = check("netbox")
    assert any("netbox: application source inferred as ./" in n for n in report["notices"])
    report = check("rubygems")
    assert any("config/database.yml is rubygems/config/database.yml.sample" in n
               or "database.yml.sample (COPY)" in n for n in report["notices"])
