"""advise: a transaction-mode PgBouncer for a server whose direct clients ask for more
connections than it should run at once (PA101, PA111).

The proposal is a manifest to add (ConfigMap with pgbouncer.ini, Deployment, Service)
next to the server's own, and the host of each direct client's database URL pointed at
it. The pool is sized to what the server should run at once: the CPU knee (PA111:
cores x connections per core) or the measured target when a sweep was given, and never
more than 90% of the usable slots; split over two replicas (one is a single point of
failure, PA210). The Service listens on 5432, so a URL that names no port still works.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import PurePosixPath

from msgspec import Struct, field

from advisor.model import Budget, Client, Route, Server, Topology

REPLICAS = 2
SERVER_SHARE = 0.9  # of the usable slots: the rest stays for migrations, psql, monitoring
QUERY_WAIT = 25  # s: below HikariCP's and SQLAlchemy's 30 s acquire timeouts (PA501)
IDLE_TRANSACTION = 60  # s: ends a transaction a client leaves idle (PA504)


class NewPooler(Struct):
    path: str  # the manifest to add, relative like every other path
    text: str
    name: str
    pool_size: int
    max_client_conn: int
    ini_text: str = ""  # the pgbouncer.ini the manifest's ConfigMap holds
    ini_offset: int = 0  # lines in the manifest before the ini's first line
    clients: list[str] = field(default_factory=list)
    host_edits: list[tuple[Client, str, str]] = field(default_factory=list)  # client, old, new
    reasons: list[str] = field(default_factory=list)


def _host_of(server: Server, direct: list[Client]) -> str | None:
    """The name the clients reach the server by (their URLs resolved to it), else one of
    the server's own host names."""
    from collections import Counter

    used = Counter(p.route.host for c in direct for p in c.pools
                   if p.route is not None and p.route.host)
    if used:
        return used.most_common(1)[0][0]
    short = [h for h in server.hosts if "." not in h]
    return (short or server.hosts or [None])[0]


def _pool_routes(c: Client) -> list[Route]:
    """The routes of a client's pools, then its further routes to the same target."""
    return [*(p.route for p in c.pools if p.route is not None), *c.extra_routes]


def _client_peak(direct: list[Client]) -> float:
    """The client connections `direct` open at the budget's peak: pods at peak with
    their rolling-update surge, and a Helm release's hook Jobs and Pods one at a time in
    their phase (advisor.budget.hooks), not all at once; the same arithmetic as the
    budget, so max_client_conn holds every one of them."""
    from advisor.budget.slots import client_contributions

    return sum(c.total for c in client_contributions(direct))


def propose_pooler(topo: Topology, server: Server, b: Budget,
                   target_active: float | None) -> NewPooler | None:
    """The PgBouncer to add in front of `server`, or None when one is there already,
    no client connects directly, the clients ask for less than twice what the server
    should run at once, or the server's host is not known."""
    if any(p.server_id == server.id for p in topo.poolers):
        return None
    direct = [c for c in topo.clients if c.target_kind == "server" and c.target_id == server.id
              and c.kind != "Lambda"]
    host = _host_of(server, direct)
    if not direct or host is None or server.location.path is None:
        return None
    demand = _client_peak(direct)
    knee = server.cpu_limit.value * 12 if server.cpu_limit is not None else None
    cap = math.floor(b.usable * SERVER_SHARE)
    target = min(x for x in (cap, knee, target_active) if x)
    # Up to twice what the server should run, smaller pools still serve; past that they
    # would queue most requests inside each pod, and a pooler shares the slots instead.
    if demand <= 2 * target:
        return None
    pairs = {(r.dbname, r.user) for c in direct for r in _pool_routes(c)
             if r.dbname and r.user} or {("*", "*")}
    pool_size = max(1, math.floor(target / REPLICAS / len(pairs)))
    max_client = math.ceil(demand / REPLICAS * 1.2)
    name = f"pgbouncer-{server.name.split()[0].split('/')[-1]}"
    folder = PurePosixPath(server.location.path).parent
    path = str(folder / f"{name}.yaml")
    ns = f"\n  namespace: {server.namespace}" if server.namespace else ""
    ini_text = _INI.format(host=host, pool_size=pool_size, max_client_conn=max_client,
                           query_wait=QUERY_WAIT, idle_tx=IDLE_TRANSACTION)
    head = _HEAD.format(name=name, ns=ns, host=host)
    text = head + textwrap.indent(ini_text, "    ") + _REST.format(name=name, ns=ns,
                                                                  replicas=REPLICAS)
    edits = []
    for c in direct:
        for p in c.pools:
            r = p.route
            if r is not None and r.host and r.source.path and r.source.line:
                # the same form as written: svc.ns.svc.cluster.local keeps its suffix
                suffix = r.host[len(r.host.split(".")[0]):]
                edits.append((c, r.host, name + suffix))
    why = [f"{len(direct)} client(s) ask for {demand:g} connections at peak (the budget's: "
           "rolling-update surge included, a Helm release's hooks as Helm runs them), "
           f"straight to "
           f"{server.name}, which should run {target:g} at once ("
           + ("its CPU knee, PA111" if target == knee else
              "the measured target" if target == target_active else
              f"90% of its {b.usable:g} usable slots") + ")",
           f"a transaction-mode PgBouncer queues the rest: {REPLICAS} replicas x "
           f"{len(pairs)} pool(s) x default_pool_size {pool_size} = "
           f"{REPLICAS * len(pairs) * pool_size} server connections; max_client_conn "
           f"{max_client} per replica ({demand:g} clients / {REPLICAS}, +20%): PgBouncer "
           "refuses a client past it at login with FATAL \"no more connections allowed "
           "(max_client_conn)\" (pgbouncer 1.24.1 src/client.c:1015-1017, "
           "src/objects.c:1571-1576), it does not queue it"]
    return NewPooler(path=path, text=text, name=name, pool_size=pool_size,
                     max_client_conn=max_client, ini_text=ini_text,
                     ini_offset=head.count("\n"), clients=[c.name for c in direct],
                     host_edits=edits, reasons=why)


def apply_to(topo: Topology, server: Server, new: NewPooler) -> None:
    """The proposed PgBouncer in `topo` (a copy), read from its own pgbouncer.ini text by
    the same reader as any other, with the direct clients behind it."""
    from advisor.model import Location, Source, Term
    from advisor.read.fs import Root
    from advisor.read.sources.pgbouncer_ini import pooler_from_ini, read_pgbouncer_ini

    ini = read_pgbouncer_ini(Root.of("."), new.path, text=new.ini_text,
                             display_path=new.path, line_offset=new.ini_offset)
    pooler = pooler_from_ini(
        ini, id=f"proposed/{new.name}", name=new.name,
        replicas=Term(label="PgBouncer replicas (proposed)", value=REPLICAS,
                      source=Source(path=new.path, key="replicas")),
        location=Location(path=new.path, line=1))
    pooler.server_id = server.id
    moved = set(new.clients)
    for c in topo.clients:
        if c.name in moved and c.target_kind == "server" and c.target_id == server.id:
            c.target_kind, c.target_id = "pooler", pooler.id
    pooler.pairs = sorted({(r.dbname, r.user) for c in topo.clients
                           if c.target_id == pooler.id for r in _pool_routes(c)
                           if r.dbname and r.user})
    topo.poolers.append(pooler)


_HEAD = """\
# Proposed by pool-advisor advise: a transaction-mode PgBouncer in front of {host}.
# Provide the userlist Secret (pgbouncer-userlist); PgBouncer 1.24 (1.21+ for
# max_prepared_statements): check the image you run.
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}-config{ns}
data:
  pgbouncer.ini: |
"""

_INI = """\
[databases]
* = host={host} port=5432

[pgbouncer]
listen_addr = 0.0.0.0
listen_port = 6432
auth_type = scram-sha-256
auth_file = /etc/pgbouncer-auth/userlist.txt
pool_mode = transaction
default_pool_size = {pool_size}
max_client_conn = {max_client_conn}
query_wait_timeout = {query_wait}
idle_transaction_timeout = {idle_tx}
; protocol-level prepared statements (pgjdbc, pgx, asyncpg...) tracked: 1.21+
max_prepared_statements = 200
"""

_REST = """\
---
apiVersion: v1
kind: Service
metadata:
  name: {name}{ns}
spec:
  selector:
    app: {name}
  ports:
    - port: 5432
      targetPort: 6432
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}{ns}
spec:
  replicas: {replicas}
  strategy:
    rollingUpdate:
      maxSurge: 0  # a third pod during a rollout would open a third pool on the server
      maxUnavailable: 1
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
        - name: pgbouncer
          image: edoburu/pgbouncer:v1.24.1-p1
          ports:
            - containerPort: 6432
          volumeMounts:
            - name: config
              mountPath: /etc/pgbouncer
            - name: userlist
              mountPath: /etc/pgbouncer-auth
      volumes:
        - name: config
          configMap:
            name: {name}-config
        - name: userlist
          secret:
            secretName: pgbouncer-userlist
"""
