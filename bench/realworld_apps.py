"""Connections per pod on real application checkouts (issue 13).

    .venv/bin/python bench/realworld_apps.py [/work/real] [--only NAME] [-v]

Each entry names a checkout of a public repository (extracted with
`git --git-dir=<mirror> archive HEAD | tar -x -C /work/real/apps-<name>`), the
Deployment it would run under (written here, in the shape of the app's own docs and
Dockerfile: image, command, env), and the connections one pod opens as computed by
hand from the app's files and the library's default. The checkout is copied to a
scratch folder with k8s/ beside it (the repository itself is never written), checked,
and the pod's contribution compared: right, unknown (PA106, reported), or wrong.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

DB = """apiVersion: v1
kind: Service
metadata: {name: db}
spec:
  selector: {app: db}
  ports: [{port: 5432}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 1
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: postgres
          image: postgres:16.4
          args: ["-c", "max_connections=500"]
"""


@dataclass(frozen=True)
class RealApp:
    name: str
    checkout: str  # folder under the real root
    workload: str
    container: str  # YAML of the container list entry, indented 8
    per_pod: float | None  # None: the honest answer is "unknown"
    why: str
    server: str = "db"  # "" with container "": the repository's own manifests are used


def deployment(app: RealApp) -> str:
    return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {app.workload}}}\n"
            "spec:\n  replicas: 1\n  strategy: {type: Recreate}\n  template:\n"
            "    spec:\n      containers:\n" + app.container)


APPS: tuple[RealApp, ...] = (
    RealApp("healthchecks", "apps-healthchecks", "healthchecks", """\
        - name: web
          image: healthchecks/healthchecks:v3.9
          command: ["uwsgi", "/opt/healthchecks/docker/uwsgi.ini"]
          env:
            - {name: DB, value: postgres}
            - {name: DB_HOST, value: db}
            - {name: DB_NAME, value: hc}
""", 4 + 2, "docker/uwsgi.ini processes 4 (UWSGI_PROCESSES unset), threads 1, + 2 "
       "attach-daemon manage.py (sendalerts, sendreports); Django: 1 connection per thread, "
       "DATABASES under if DB == postgres"),
    RealApp("miniflux", "apps-v2", "miniflux", """\
        - name: miniflux
          image: miniflux/miniflux:2.2.10
          env:
            - {name: DATABASE_URL, value: "postgres://miniflux@db/miniflux?sslmode=disable"}
""", 20, "one database/sql pool, SetMaxOpenConns(maxConnections) from DATABASE_MAX_CONNS, "
       "default 20 (internal/config/options.go)"),
    RealApp("rubygems.org", "apps-rubygems.org", "rubygems", """\
        - name: web
          image: ghcr.io/rubygems/rubygems.org:latest
          command: ["bundle", "exec", "rails", "server", "-b", "0.0.0.0"]
          env:
            - {name: RAILS_ENV, value: production}
            - {name: WEB_CONCURRENCY, value: "2"}
            - {name: DATABASE_URL, value: "postgres://rubygems@db/rubygems_production"}
""", 2 * 3, "Puma workers WEB_CONCURRENCY 2 x min(pool 30 (config/database.yml.sample, "
       "copied by the Dockerfile), RAILS_MAX_THREADS default 3 threads)"),
    RealApp("openstreetmap", "apps-openstreetmap-website", "openstreetmap", """\
        - name: web
          image: ghcr.io/openstreetmap/openstreetmap-website:latest
          command: ["bundle", "exec", "rails", "server", "-b", "0.0.0.0"]
          env:
            - {name: RAILS_ENV, value: production}
            - {name: DATABASE_URL, value: "postgres://osm@db/openstreetmap"}
""", 3, "no production database.yml in the repository: Active Record default pool 5, "
       "capped by Puma's RAILS_MAX_THREADS default 3 threads (config/puma.rb), one process"),
    RealApp("netbox", "apps-netbox", "netbox", """\
        - name: netbox
          image: ghcr.io/acme/netbox:4.4
          command: ["gunicorn", "-c", "contrib/gunicorn.py", "netbox.wsgi"]
          env:
            - {name: DB_HOST, value: db}
""", 5 * 3, "contrib/gunicorn.py workers 5 x threads 3 x 1 Django connection per thread "
       "(DATABASES come from the operator's configuration.py: default alias only)"),
    RealApp("saleor", "apps-saleor", "saleor", """\
        - name: api
          image: ghcr.io/saleor/saleor:3.21
          env:
            - {name: DATABASE_URL, value: "postgres://saleor@db/saleor"}
""", 2 * 2, "Dockerfile CMD uvicorn --workers=2; DATABASES default and replica (both "
       "dj_database_url, replica falls back to DATABASE_URL): 2 aliases x 1 connection"),
    RealApp("redash", "apps-redash", "redash", """\
        - name: server
          image: redash/redash:25.1.0
          args: ["server"]
          env:
            - {name: REDASH_DATABASE_URL, value: "postgresql://redash@db/redash"}
""", 4 * 15, "bin/docker-entrypoint server: gunicorn -w ${REDASH_WEB_WORKERS:-4}; "
       "Flask-SQLAlchemy 2.x, SQLALCHEMY_POOL_SIZE unset: QueuePool 5 + 10"),
    RealApp("outline", "apps-outline", "outline", """\
        - name: outline
          image: outlinewiki/outline:0.85.0
          env:
            - {name: SERVICES, value: web}
            - {name: WEB_CONCURRENCY, value: "2"}
            - {name: DATABASE_URL, value: "postgres://outline@db/outline"}
""", 2 * 5, "throng WEB_CONCURRENCY 2 web processes x Sequelize pool max "
       "DATABASE_CONNECTION_POOL_MAX ?? 5 (server/storage/database.ts)"),
    RealApp("umami", "apps-umami", "umami", """\
        - name: umami
          image: ghcr.io/umami-software/umami:postgresql-latest
          env:
            - {name: DATABASE_URL, value: "postgresql://umami@db/umami"}
""", 10, "Prisma 7 with @prisma/adapter-pg: node-postgres Pool default max 10, one process "
       "(DATABASE_REPLICA_URL unset)"),
    RealApp("graphile-worker", "apps-worker", "worker", """\
        - name: worker
          image: ghcr.io/acme/graphile-worker:0.16
          command: ["graphile-worker", "--jobs", "4"]
          env:
            - {name: DATABASE_URL, value: "postgres://worker@db/jobs"}
""", 10, "node-postgres Pool max = maxPoolSize, default 10 (src/config.ts)"),
    RealApp("supabase-auth", "apps-auth", "auth", """\
        - name: auth
          image: supabase/gotrue:v2.170.0
          env:
            - {name: GOTRUE_DB_DRIVER, value: postgres}
            - {name: GOTRUE_DB_DATABASE_URL, value: "postgres://auth@db/postgres"}
            - {name: GOTRUE_DB_MAX_POOL_SIZE, value: "15"}
""", 15, "DBConfiguration.MaxPoolSize (envconfig split_words, GOTRUE_DB_MAX_POOL_SIZE) "
       "-> pop ConnectionDetails.Pool / SetMaxOpenConns"),
    RealApp("hexpm", "apps-hexpm", "hexpm", """\
        - name: hexpm
          image: ghcr.io/hexpm/hexpm:latest
          env:
            - {name: MIX_ENV, value: prod}
            - {name: HEXPM_DATABASE_URL, value: "ecto://hexpm@db/hexpm"}
            - {name: HEXPM_DATABASE_POOL_SIZE, value: "15"}
""", 15, "Hexpm.Repo.init/2: HEXPM_DATABASE_POOL_SIZE overrides pool_size (lib/hexpm/repo.ex)"),
    RealApp("spring-petclinic", "apps-spring-petclinic", "petclinic", "", 10,
            "the repository's own k8s/petclinic.yml and k8s/db.yml: profile postgres, URL "
            "through the service binding of Secret demo-db; HikariCP default 10",
            server="demo-db"),
)


def run(app: RealApp, real_root: Path, verbose: bool) -> tuple[str, float | None, list[str]]:
    from advisor.engine.check import run_check
    from advisor.engine.options import CheckOptions

    src = real_root / app.checkout
    if not src.is_dir():
        return "missing", None, [f"{src} not found"]
    with tempfile.TemporaryDirectory() as tmp:
        dst = Path(tmp) / app.checkout
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("node_modules", ".git"),
                        symlinks=True)
        if app.container:
            (dst / "pool-advisor-k8s").mkdir()
            (dst / "pool-advisor-k8s" / "app.yaml").write_text(deployment(app))
            (dst / "pool-advisor-k8s" / "db.yaml").write_text(DB)
        result = run_check([str(dst)], CheckOptions())
    notes = [n for n in result.notices if app.workload in n]
    for f in result.findings:
        if f.code in ("PA104", "PA106", "PA107", "PA102", "PA103") and app.workload in f.message:
            notes.append(f"{f.code}: {f.message}")
    budget = next((b for b in result.budgets if b.server == app.server), None)
    if budget is None:
        return "wrong", None, [*notes, f"no budget for {app.server}",
                               *[f"{f.code}: {f.message}" for f in result.findings]]
    if app.workload in budget.unknown_clients:
        got = None
    else:
        got = next((c.total for c in budget.contributions if c.who == app.workload), 0.0)
    if app.per_pod is None:
        verdict = "right" if got is None else "wrong"
    elif got is None:
        verdict = "unknown"
    else:
        verdict = "right" if got == app.per_pod else "wrong"
    return verdict, got, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("real_root", nargs="?", default="/work/real")
    parser.add_argument("--only")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    counts: dict[str, int] = {}
    for app in APPS:
        if args.only and app.name != args.only:
            continue
        verdict, got, notes = run(app, Path(args.real_root), args.verbose)
        counts[verdict] = counts.get(verdict, 0) + 1
        want = "unknown" if app.per_pod is None else f"{app.per_pod:g}"
        shown = "unknown" if got is None else f"{got:g}"
        print(f"{app.name:16} {verdict:8} got {shown:>8}  by hand {want:>8}  ({app.why})")
        if args.verbose or verdict != "right":
            for n in notes:
                print(f"    {n[:400]}")
    print(", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
