"""PgBouncer pairs: `pool-advisor check` on a pgbouncer.ini of N databases x N users.

    python bench/pgbouncer_pairs.py [--sizes 25,50,100,200] [--runs 1] [--linked]
                                    [--variant N] [--timeout 120]

A pgbouncer.ini no client of the repository connects to (Pooler.pairs_open) is bounded
by as many (database, user) pairs as its caps let open (advisor.budget.pairs.open_bound),
and PA106 looks for the fewest pairs that take its server over (rules/_unknown_pairs).
Both grew ~N^3 with N [databases] entries x N [users] entries (audit 49: N=100 took 34 s
and 396 MB). Each size writes, in a temporary directory (nothing is committed), the ini
of `make_ini` (variant --variant), a `.pool-advisor.toml` declaring its server, and with
--linked one client per database (a Deployment whose URL names the database and a user)
so the pairs are the clients' own; then times `check -v --format json` in a fresh
interpreter and prints wall seconds and the child's peak RSS.

`make_ini(n, rng)` is also the generator tests/test_pgbouncer_pairs_bound.py draws its
random small cases from: max_db_connections (global, per entry or none),
max_user_connections (global, per [users] entry or none), per-entry pool_size,
default_pool_size (0 included), reserve_pool_size and reserve_pool_timeout 0,
min_pool_size, auth_user/auth_dbname/auth_type, pool modes, forced users, a `*`
fallback, PgBouncer 1.18 .. 1.25.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VERSIONS = [(1, 18), (1, 19), (1, 21), (1, 23), (1, 24), (1, 25)]


def _maybe(rng: random.Random, p: float) -> bool:
    return rng.random() < p


def make_ini(n: int, rng: random.Random, *, users: int | None = None) -> str:
    """A pgbouncer.ini of `n` [databases] entries (host pg) and `users` (default n)
    [users] entries, its limits drawn from `rng`."""
    users = n if users is None else users
    pool_modes = ["session", "transaction", "statement"]
    dbs = []
    for i in range(n):
        opts = [f"host=pg port=5432 dbname=d{i}"]
        if _maybe(rng, 0.15):
            opts.append(f"user=u{rng.randrange(max(users, 1))}")  # a forced user
        if _maybe(rng, 0.3):
            opts.append(f"pool_size={rng.choice([0, 1, 2, 3, 5, 8, 20])}")
        if _maybe(rng, 0.2):
            opts.append(f"reserve_pool_size={rng.choice([0, 1, 2, 5])}")
        if _maybe(rng, 0.1):
            opts.append(f"min_pool_size={rng.choice([1, 2, 4])}")
        if _maybe(rng, 0.35):
            opts.append(f"max_db_connections={rng.choice([0, 1, 2, 3, 7, 10, 40])}")
        if _maybe(rng, 0.2):
            opts.append(f"pool_mode={rng.choice(pool_modes)}")
        if _maybe(rng, 0.05):
            opts.append("auth_user=au2")
        if _maybe(rng, 0.05):
            opts.append("auth_dbname=d0")
        dbs.append(f"d{i} = {' '.join(opts)}")
    if _maybe(rng, 0.3):
        star = "* = host=pg port=5432"
        if _maybe(rng, 0.3):
            star += f" user=u{rng.randrange(max(users, 1))}"
        if _maybe(rng, 0.3):
            star += f" max_db_connections={rng.choice([1, 4, 9])}"
        dbs.insert(rng.randrange(len(dbs) + 1), star)
    if n and _maybe(rng, 0.1):  # an entry repeated: the later one applies
        dbs.append(f"d{rng.randrange(n)} = host=pg port=5432 pool_size=4")
    us = []
    for j in range(users):
        opts = []
        if _maybe(rng, 0.4):
            opts.append(f"max_user_connections={rng.choice([0, 1, 2, 5, 11, 30])}")
        if _maybe(rng, 0.2):
            opts.append(f"pool_size={rng.choice([0, 1, 3, 6])}")
        if _maybe(rng, 0.2):
            opts.append(f"pool_mode={rng.choice(pool_modes)}")
        us.append(f"u{j} = {' '.join(opts) or 'pool_mode=transaction'}")
    glob = [f"pool_mode = {rng.choice(pool_modes)}"]
    for key, values, p in (
            ("default_pool_size", [0, 1, 2, 5, 10, 20, 25], 0.8),
            ("reserve_pool_size", [0, 1, 3, 5], 0.4),
            ("reserve_pool_timeout", [0, 5], 0.3),
            ("min_pool_size", [0, 2], 0.15),
            ("max_db_connections", [0, 3, 10, 15, 50], 0.5),
            ("max_user_connections", [0, 2, 7, 20, 60], 0.5)):
        if _maybe(rng, p):
            glob.append(f"{key} = {rng.choice(values)}")
    if _maybe(rng, 0.2):
        glob.append("auth_user = au")
        glob.append("auth_query = SELECT usename, passwd FROM pg_shadow WHERE usename=$1")
        if _maybe(rng, 0.5):
            glob.append("auth_dbname = d1")
        if _maybe(rng, 0.3):
            glob.append(f"auth_type = {rng.choice(['md5', 'any', 'scram-sha-256', 'hba'])}")
    text = "[databases]\n" + "\n".join(dbs) + "\n"
    if us:
        text += "[users]\n" + "\n".join(us) + "\n"
    return text + "[pgbouncer]\n" + "\n".join(glob) + "\n"


def version_of(rng: random.Random) -> tuple[int, int]:
    return rng.choice(VERSIONS)


# The worst case of the audit: every database and user capped, none forcing a user.
def capped_ini(n: int) -> str:
    dbs = "\n".join(f"d{i} = host=pg port=5432 dbname=d{i}"
                    + (f" pool_size={2 + i % 5}" if i % 3 == 0 else "")
                    + (f" max_db_connections={5 + i % 7}" if i % 2 == 0 else "")
                    for i in range(n))
    users = "\n".join(f"u{j} = max_user_connections={3 + j % 4}"
                      + (" pool_mode=session" if j % 5 == 0 else "") for j in range(n))
    return (f"[databases]\n{dbs}\n[users]\n{users}\n[pgbouncer]\npool_mode = transaction\n"
            "default_pool_size = 10\nreserve_pool_size = 2\nmax_db_connections = 12\n"
            "max_user_connections = 9\n")


def write_tree(root: Path, ini: str, n: int, linked: bool) -> Path:
    """The ini as a bare pgbouncer.ini (no client), or with `linked` as the ConfigMap of
    a PgBouncer Deployment and Service `pgbouncer` that one client per database
    connects to; the server `pg` declared in .pool-advisor.toml."""
    (root / ".pool-advisor.toml").write_text(
        '[[servers]]\nname = "pg"\nhosts = ["pg"]\nmax_connections = 400\nversion = 16\n')
    if not linked:
        (root / "pgbouncer.ini").write_text(ini)
        return root
    k8s = root / "k8s"
    k8s.mkdir(exist_ok=True)
    body = "".join(f"    {line}\n" for line in ini.splitlines())
    (k8s / "pgbouncer.yaml").write_text(f"""apiVersion: v1
kind: Service
metadata: {{name: pgbouncer}}
spec: {{selector: {{app: pgbouncer}}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: pgbouncer-config}}
data:
  pgbouncer.ini: |
{body}---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: pgbouncer}}
spec:
  replicas: 1
  strategy: {{type: Recreate}}
  template:
    metadata: {{labels: {{app: pgbouncer}}}}
    spec:
      containers:
        - name: pgbouncer
          image: edoburu/pgbouncer:v1.25.1-p0
          volumeMounts: [{{name: config, mountPath: /etc/pgbouncer}}]
      volumes:
        - name: config
          configMap: {{name: pgbouncer-config}}
""")
    for i in range(n):
        (k8s / f"app{i}.yaml").write_text(_client(i, n))
    return root


def _client(i: int, n: int) -> str:
    return f"""apiVersion: apps/v1
kind: Deployment
metadata: {{name: app{i}}}
spec:
  replicas: 2
  strategy: {{type: Recreate}}
  template:
    spec:
      containers:
        - name: app
          image: python:3.12
          env:
            - {{name: DATABASE_URL, value: "postgresql://u{i % max(n, 1)}:x@pgbouncer:6432/d{i}"}}
            - {{name: POOL_SIZE, value: "5"}}
"""


def run_check(root: Path, timeout: float) -> tuple[float, float, int, str]:
    """(wall s, peak RSS MB, exit status, stdout) of a fresh `check -v`."""
    cmd = [sys.executable, "-m", "advisor", "check", "-v", "--no-cache", "--root",
           str(root), str(root)]
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL,
                                env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin",
                                     "COLUMNS": "200"})
        while True:  # wait4: the child's own peak RSS, not the largest child's so far
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > timeout:
                proc.kill()
                os.wait4(proc.pid, 0)
                raise subprocess.TimeoutExpired(cmd, timeout)
            time.sleep(0.01)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return wall, usage.ru_maxrss / 1024, proc.returncode, out.read().decode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="25,50,100,200")
    ap.add_argument("--variant", type=int, default=-1,
                    help="seed of make_ini; -1 (default): capped_ini, every cap set")
    ap.add_argument("--linked", action="store_true", help="one client per database")
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--keep", help="write the trees below this folder and keep them")
    args = ap.parse_args()
    for n in (int(x) for x in args.sizes.split(",")):
        ini = capped_ini(n) if args.variant < 0 else make_ini(n, random.Random(args.variant))
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(args.keep) / f"n{n}" if args.keep else Path(tmp)
            root.mkdir(parents=True, exist_ok=True)
            write_tree(root, ini, n, args.linked)
            try:
                wall, rss, rc, _ = run_check(root, args.timeout)
                print(f"N={n:4d} wall {wall:7.2f} s  peak RSS {rss:7.1f} MB  exit {rc}",
                      flush=True)
            except subprocess.TimeoutExpired:
                print(f"N={n:4d} wall > {args.timeout:.0f} s (timed out)", flush=True)


if __name__ == "__main__":
    main()
