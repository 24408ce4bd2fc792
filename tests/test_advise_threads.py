"""advise moves a Rails pool and the threads that use it together (issue 17: "Sidekiq
-c, Puma threads and pool sizes move together"), and postgres `-c` options are read
and edited at the line of their own list item."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.test_advise import advise_json, cli

POSTGRES = """\
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: postgres
  namespace: social
spec:
  replicas: 1
  serviceName: postgres
  selector:
    matchLabels: {app: postgres}
  template:
    metadata:
      labels: {app: postgres}
    spec:
      containers:
        - name: postgres
          image: postgres:15
ARGS
          resources:
            limits:
              memory: 4Gi
              cpu: "8"
---
apiVersion: v1
kind: Service
metadata:
  name: postgres
  namespace: social
spec:
  selector: {app: postgres}
  ports:
    - port: 5432
"""

BLOCK_ARGS = """\
          args:
            - -c
            - max_connections=60"""

SIDEKIQ = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: mastodon-sidekiq
  namespace: social
spec:
  replicas: 2
  selector:
    matchLabels: {app: sidekiq}
  template:
    metadata:
      labels: {app: sidekiq}
    spec:
      containers:
        - name: sidekiq
          image: ghcr.io/mastodon/mastodon:v4.3.0
          command:
            - bundle
            - exec
            - sidekiq
            - -c
            - "25"
          env:
            - name: DB_HOST
              value: postgres.social.svc.cluster.local
            - name: DB_POOL
              value: "25"
"""

WEB = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: mastodon-web
  namespace: social
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: ghcr.io/mastodon/mastodon:v4.3.0
          command: [bundle, exec, puma, -C, config/puma.rb]
          env:
            - name: DB_HOST
              value: postgres.social.svc.cluster.local
            - name: WEB_CONCURRENCY
              value: "1"
            - name: DB_POOL
              value: "4"
"""


def _repo(tmp_path: Path, files: dict[str, str]) -> Path:
    repo = tmp_path / "social"
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    return repo


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_sidekiq_concurrency_moves_with_the_pool(tmp_path: Path):
    repo = _repo(tmp_path, {"k8s/postgres.yaml": POSTGRES.replace("ARGS", BLOCK_ARGS),
                            "k8s/sidekiq.yaml": SIDEKIQ})
    sidekiq = repo / "k8s/sidekiq.yaml"
    before = cli("check", str(repo))
    assert before.returncode == 1 and "PA101" in before.stdout
    (server,) = advise_json(str(repo), "--no-new-pooler")
    edits = {p["edit"]["line"]: p for p in server["proposals"] if p["edit"]}
    pool_line, conc_line = _line_of(sidekiq, '"25"'), _line_of(sidekiq, 'value: "25"')
    assert pool_line != conc_line
    # (2 replicas + 1 surge) x 19 = 57 = 60 - 3 usable; -c moves to the same 19
    assert edits[conc_line]["new"] == "19" and edits[conc_line]["key"] == "DB_POOL"
    assert edits[pool_line]["new"] == "19" and "Sidekiq concurrency" in edits[pool_line]["subject"]
    r = cli("advise", str(repo), "--write", "--yes", "--no-new-pooler")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = sidekiq.read_text().splitlines()
    assert lines[pool_line - 1].strip() == '- "19"'  # sidekiq -c 19
    assert lines[conc_line - 1].strip() == 'value: "19"'  # DB_POOL 19
    after = cli("check", str(repo))
    assert after.returncode == 0, after.stdout
    assert "x 19 (Mastodon Sidekiq Rails pool" in after.stdout
    assert "Sidekiq concurrency 19" in after.stdout  # threads == pool


def test_threads_that_cannot_be_edited_withhold_the_pool(tmp_path: Path):
    # Puma threads are Mastodon's default 5 (no MAX_THREADS): a DB_POOL shrunk below 5
    # would leave threads waiting, so the pool is not shrunk and a note says why.
    postgres = POSTGRES.replace("ARGS", BLOCK_ARGS.replace("=60", "=8"))
    repo = _repo(tmp_path, {"k8s/postgres.yaml": postgres, "k8s/web.yaml": WEB})
    (server,) = advise_json(str(repo), "--no-new-pooler")
    assert not [p for p in server["proposals"] if p["key"] == "DB_POOL"]
    assert any("Puma max threads" in n and "not set at a file line" in n
               for n in server["notes"])
    assert not server["fits_after"]


@pytest.mark.parametrize("args", [
    BLOCK_ARGS,
    '          args: ["-c", "max_connections=60"]',
    "          command: [postgres, -c, max_connections=60]",
    "          command:\n            - postgres\n            - -c\n"
    "            - max_connections=60",
])
def test_postgres_c_option_at_its_own_line(tmp_path: Path, args: str):
    # 60 connections do not fit 1Gi: advise sizes max_connections to the need
    # ((2 + 1) x 5 = 15) at the line of `max_connections=60`
    postgres = POSTGRES.replace("ARGS", args).replace("memory: 4Gi", "memory: 1Gi")
    repo = _repo(tmp_path, {"k8s/postgres.yaml": postgres,
                            "k8s/sidekiq.yaml": SIDEKIQ.replace('"25"', '"5"')})
    db = repo / "k8s/postgres.yaml"
    line = _line_of(db, "max_connections=60")
    r = cli("check", str(repo))
    assert f"60 (max_connections, k8s/postgres.yaml:{line})" in r.stdout, r.stdout
    (server,) = advise_json(str(repo), "--no-new-pooler")
    mc = [p for p in server["proposals"] if p["key"] == "max_connections"]
    assert mc and mc[0]["edit"]["line"] == line
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    w = cli("advise", str(repo), "--write", "--yes", "--no-new-pooler")
    assert w.returncode == 0, w.stdout + w.stderr
    assert f"max_connections={mc[0]['new']}" in db.read_text().splitlines()[line - 1]


CONF_MAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: postgres-config
  namespace: social
data:
  postgresql.conf: |
    listen_addresses = '*'
    # connections
    superuser_reserved_connections = 3
---
"""


def test_absent_settings_are_added_to_the_conf_and_git_apply_takes_the_diff(tmp_path: Path):
    # max_connections, work_mem and effective_cache_size are defaults (not in the
    # ConfigMap's postgresql.conf): advise adds them at its end, in the block's indentation
    postgres = POSTGRES.replace(
        "ARGS", '          args: ["-c", "config_file=/etc/postgresql/postgresql.conf"]'
    ).replace("memory: 4Gi", "memory: 512Mi").replace(
        '              cpu: "8"',
        '              cpu: "8"\n          volumeMounts:\n            - name: config\n'
        '              mountPath: /etc/postgresql\n      volumes:\n        - name: config\n'
        '          configMap:\n            name: postgres-config')
    repo = _repo(tmp_path, {"k8s/postgres.yaml": CONF_MAP + postgres,
                            "k8s/sidekiq.yaml": SIDEKIQ.replace('"25"', '"5"')})
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    before = cli("check", str(repo))
    assert before.returncode == 1 and "PA301" in before.stdout, before.stdout
    (server,) = advise_json(str(repo))
    added = {p["key"]: p["edit"] for p in server["proposals"] if p["edit"]}
    assert {"max_connections", "work_mem", "effective_cache_size"} <= set(added)
    assert all(e["insert"] and e["line"] == 10 for e in added.values())  # after line 10
    # (2 + 1 surge) x 5 = 15 + 3 reserved + 5 headroom = 23, up to 25
    assert added["max_connections"]["new"] == "max_connections = 25"
    diff = cli("advise", str(repo), "--diff")
    patch = diff.stdout[diff.stdout.index("--- a/"):]
    assert "+    max_connections = 25\n" in patch
    applied = subprocess.run(["git", "apply", "-"], input=patch, text=True, cwd=repo,
                             capture_output=True)
    assert applied.returncode == 0, applied.stderr
    after = cli("check", str(repo))
    assert after.returncode == 0, after.stdout
    assert "25 (max_connections, k8s/postgres.yaml:11)" in after.stdout


def test_insert_keeps_line_endings_and_order(tmp_path: Path):
    from advisor.advise.edits import plan
    from advisor.advise.records import Edit

    conf = tmp_path / "postgresql.conf"
    conf.write_bytes(b"listen_addresses = '*'\r\nshared_buffers = 1GB")  # no final newline
    edits = [Edit(path="postgresql.conf", line=2, key=k, old="", new=f"{k} = {v}", insert=True)
             for k, v in (("max_connections", "30"), ("work_mem", "2MB"))]
    edits.append(Edit(path="postgresql.conf", line=2, key="shared_buffers", old="1GB",
                      new="128MB"))
    result = plan(edits, [tmp_path])
    assert not result.refused
    assert result.changes[0].after == ("listen_addresses = '*'\r\nshared_buffers = 128MB\r\n"
                                       "max_connections = 30\r\nwork_mem = 2MB\r\n")


@pytest.mark.pgbouncer
def test_absent_default_pool_size_is_added_to_the_pgbouncer_section(tmp_path: Path):
    """default_pool_size not in pgbouncer.ini (PgBouncer's default 20 applies) and 2 x 20
    over the 27 usable slots: advise adds `default_pool_size = 13` at the end of the
    [pgbouncer] section; `git apply` takes the diff, check passes, and the real PgBouncer
    loads the edited ini with that value."""
    import shutil

    from ruamel.yaml import YAML

    from tests.realbouncer import have_pgbouncer, running_pgbouncer
    from tests.test_advise import FIXTURES, replace

    repo = tmp_path / "shop"
    shutil.copytree(FIXTURES / "acme-shop-pgbouncer", repo)
    ini_file = repo / "k8s/pgbouncer.yaml"
    for line in ("    default_pool_size = 20\n", "    reserve_pool_size = 5\n",
                 "    max_db_connections = 40\n"):
        replace(ini_file, line, "")
    replace(repo / "k8s/postgres-config.yaml", "max_connections = 100", "max_connections = 30")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert cli("check", str(repo)).returncode == 1
    (server,) = advise_json(str(repo))
    (p,) = [p for p in server["proposals"] if p["key"] == "default_pool_size"]
    last = _line_of(ini_file, "query_wait_timeout = 25")  # the section's last setting
    assert p["edit"] == {"path": "k8s/pgbouncer.yaml", "line": last, "key": "default_pool_size",
                         "old": "", "new": "default_pool_size = 13", "insert": True,
                         "indent_from": None}
    diff = cli("advise", str(repo), "--diff").stdout
    patch = diff[diff.index("--- a/"):]
    applied = subprocess.run(["git", "apply", "-"], input=patch, text=True, cwd=repo,
                             capture_output=True)
    assert applied.returncode == 0, applied.stderr
    assert ini_file.read_text().splitlines()[last] == "    default_pool_size = 13"
    after = cli("check", str(repo))
    assert after.returncode == 0, after.stdout
    if not have_pgbouncer():
        pytest.skip("PgBouncer not installed")
    ini = next(d for d in YAML(typ="safe").load_all(ini_file.read_text())
               if d["kind"] == "ConfigMap")["data"]["pgbouncer.ini"]
    with running_pgbouncer(ini.replace("auth_type = scram-sha-256", "")) as bouncer:
        config = {row["key"]: row["value"] for row in bouncer.admin_dicts("SHOW CONFIG")}
    assert config["default_pool_size"] == "13"


RAILS_DB_YML = """\
default: &default
  adapter: postgresql
  encoding: unicode

production:
  <<: *default
  host: db
  database: shop
  variables:
    statement_timeout: 5s
  username: shop
"""

RAILS_WORKER = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: worker
spec:
  replicas: 8
  selector:
    matchLabels: {app: worker}
  template:
    metadata:
      labels: {app: worker}
    spec:
      containers:
        - name: sidekiq
          image: registry.example/shop:1.0
          args:
            - bundle
            - exec
            - sidekiq
            - -c
            - "5"
          env:
            - name: RAILS_ENV
              value: production
"""


def test_rails_pool_absent_is_added_and_sidekiq_c_moves_with_it(tmp_path: Path):
    """database.yml's production sets no pool (Active Record's 5) and Sidekiq runs -c 5:
    advise adds `pool: 3` to the production mapping (after its last scalar key, not
    inside `variables:`) and moves -c to 3 at its own list item; git apply, check 0."""
    db = POSTGRES.replace("ARGS", BLOCK_ARGS.replace("=60", "=40")).replace(
        "name: postgres\n  namespace: social", "name: db").replace(
        "serviceName: postgres", "serviceName: db").replace("app: postgres", "app: db")
    db = db.replace("  namespace: social\n", "")
    repo = _repo(tmp_path, {
        "Gemfile": 'source "https://rubygems.org"\ngem "rails", "~> 7.1"\ngem "pg"\n'
                   'gem "sidekiq", "~> 7.2"\n',
        "config/database.yml": RAILS_DB_YML, "k8s/worker.yaml": RAILS_WORKER,
        "k8s/db.yaml": db})
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    before = cli("check", str(repo))
    assert before.returncode == 1 and "x 5 (Rails production pool, default: Active Record" \
        in before.stdout, before.stdout
    diff = cli("advise", str(repo), "--no-new-pooler", "--diff").stdout
    patch = diff[diff.index("--- a/"):]
    assert "+  pool: 3\n" in patch and '+            - "3"\n' in patch
    applied = subprocess.run(["git", "apply", "-"], input=patch, text=True, cwd=repo,
                             capture_output=True)
    assert applied.returncode == 0, applied.stderr
    assert (repo / "config/database.yml").read_text().endswith("  username: shop\n  pool: 3\n")
    after = cli("check", str(repo))
    assert after.returncode == 0, after.stdout
    # (8 + 2 surge) x 3 = 30 <= 37, the pool at its new line, -c 3 == pool 3
    assert "x 3 (Rails production pool, config/database.yml:12)" in after.stdout, after.stdout
    assert '- "3"' in (repo / "k8s/worker.yaml").read_text()


def test_puma_min_threads_move_down_with_max(tmp_path: Path):
    # Mastodon web with MAX_THREADS 5 and MIN_THREADS 5 (as its Helm chart sets them):
    # max shrinks to fit and min may not stay above it (Puma refuses to start)
    web = WEB.replace('''            - name: DB_POOL
              value: "4"''', '''            - name: MIN_THREADS
              value: "5"
            - name: MAX_THREADS
              value: "5"''')
    postgres = POSTGRES.replace("ARGS", BLOCK_ARGS.replace("=60", "=12"))
    repo = _repo(tmp_path, {"k8s/postgres.yaml": postgres, "k8s/web.yaml": web})
    (server,) = advise_json(str(repo), "--no-new-pooler")
    by_line = {p["edit"]["line"]: p["new"] for p in server["proposals"] if p["edit"]}
    path = repo / "k8s/web.yaml"
    min_line, max_line = _line_of(path, 'value: "5"'), _line_of(path, "MAX_THREADS") + 1
    # (2 + 1 surge) pods x 1 worker x 3 = 9 = 12 - 3 usable
    assert by_line == {max_line: "3", min_line: "3"}


def test_yaml_with_duplicate_keys_can_still_be_edited(tmp_path: Path):
    # Helm reads duplicate keys (the last wins); the real Mastodon chart's values.yaml has
    # one. The edit is checked for what it changes, not refused for what was there.
    from advisor.advise.edits import plan
    from advisor.advise.records import Edit

    (tmp_path / "values.yaml").write_text("redis:\n  replica: {a: 1}\n  replica: {b: 2}\n"
                                          "sidekiq:\n  concurrency: 25\n")
    result = plan([Edit(path="values.yaml", line=5, key="concurrency", old="25", new="5")],
                  [tmp_path])
    assert not result.refused and "concurrency: 5" in result.changes[0].after
    broken = plan([Edit(path="values.yaml", line=5, key="concurrency", old="25", new="[5")],
                  [tmp_path])
    assert broken.refused and "invalid" in broken.refused[0][1]


def test_pool_above_default_threads_is_not_shrunk_alone(tmp_path: Path):
    # pool 30 under Puma's default 5 threads: 5 are counted (a default). Shrinking the
    # pool to 3 would leave 5 threads on 3 connections: withheld, with a note.
    db = POSTGRES.replace("ARGS", BLOCK_ARGS.replace("=60", "=25")).replace(
        "name: postgres\n  namespace: social", "name: db").replace(
        "serviceName: postgres", "serviceName: db").replace("app: postgres", "app: db")
    db = db.replace("  namespace: social\n", "")
    web = RAILS_WORKER.replace('''            - bundle
            - exec
            - sidekiq
            - -c
            - "5"''', '''            - bundle
            - exec
            - puma''')
    repo = _repo(tmp_path, {
        "Gemfile": 'source "https://rubygems.org"\ngem "rails", "~> 7.1"\ngem "pg"\n'
                   'gem "puma"\n',
        "config/database.yml": RAILS_DB_YML.replace("  username: shop\n",
                                                    "  username: shop\n  pool: 30\n"),
        "k8s/worker.yaml": web, "k8s/db.yaml": db})
    before = cli("check", str(repo))
    assert "Puma max threads" in before.stdout and "default: Puma" in before.stdout, \
        before.stdout
    (server,) = advise_json(str(repo), "--no-new-pooler")
    assert not [p for p in server["proposals"] if p["kind"] == "client-pool"]
    assert any("is a default, and a pool below the threads" in n for n in server["notes"])
