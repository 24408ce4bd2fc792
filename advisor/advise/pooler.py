"""advise: a transaction-mode PgBouncer for a server whose direct clients ask for more
connections than it should run at once (PA101, PA111).

The proposal is a manifest to add (ConfigMap with pgbouncer.ini, Deployment, Service)
next to the server's own, and the host of each direct client's database URL pointed at
it. The pool is sized to what the server should run at once: the CPU knee (PA111:
cores x connections per core) or the measured target when a sweep was given, and never
more than 90% of the usable slots less what the clients kept on the server take; split
over two replicas (one is a single point of failure, PA210). The Service listens on 5432,
so a URL that names no port still works.

Helm hooks and schema migrations keep connecting to the server: they take session
advisory locks and run DDL in a session, which a transaction-mode pool breaks (Rails'
migrator, golang-migrate, Flyway, Liquibase, Prisma migrate, Alembic...; Mastodon's chart
asks for a "direct" host for migrations, values.yaml `postgresql.direct`). Their
connections stay in the server's budget (hooks one at a time, advisor.budget.hooks).

Its own rollout (maxSurge 1, maxUnavailable 0): both replicas keep serving while a third
starts, so the pool is sized for replicas + 1 processes on the server at once; and each
replica's max_client_conn holds every client (clients / (replicas - 1), +20%), since the
clients of a replica that stops, in a rollout or lost with its node, reconnect to the
others, not evenly.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import PurePosixPath

from msgspec import Struct, field

from advisor.model import Budget, Client, Route, Server, Topology

REPLICAS = 2
SURGE = 1  # maxSurge of its own rollout (maxUnavailable 0): a third pool while it runs
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
    kept: list[tuple[Client, str]] = field(default_factory=list)  # left direct, and why
    host_edits: list[tuple[Client, str, str]] = field(default_factory=list)  # client, old, new
    reasons: list[str] = field(default_factory=list)
    # In a chart's templates/: what the rendered names it holds stand for (said by hand)
    chart_caveat: str = ""


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


def client_peak(direct: list[Client]) -> float:
    """The client connections `direct` open at the budget's peak: pods at peak with
    their rolling-update surge, and a Helm release's hook Jobs and Pods one at a time in
    their phase (advisor.budget.hooks), not all at once; the same arithmetic as the
    budget, so max_client_conn holds every one of them, and the server keeps room for
    the clients left on it (their hooks' largest, with no pod of the release beside)."""
    from advisor.budget.slots import client_contributions

    return sum(c.total for c in client_contributions(direct))


def kept_direct(c: Client) -> str:
    """Why a client must keep connecting to the server itself, "" when a transaction-mode
    PgBouncer may stand between: a Helm hook (a migration or set-up Job, run one at a
    time around a release's rollout) or a schema migration."""
    if c.hook is not None:
        return f"Helm hook {','.join(c.hook.events)}, {c.hook.source.label()}"
    if c.pools and all(p.migration for p in c.pools):
        return f"schema migration: {', '.join(sorted({p.label for p in c.pools}))}"
    return ""


def propose_pooler(topo: Topology, server: Server, b: Budget,
                   target_active: float | None,
                   chart_dirs: list[str] | None = None,
                   kustomized: dict[str, tuple[str, int | None]] | None = None,
                   ) -> NewPooler | None:
    """The PgBouncer to add in front of `server`, or None when one is there already,
    no client connects directly, the clients ask for less than twice what the server
    should run at once, or the server's host is not known."""
    if any(p.server_id == server.id for p in topo.poolers):
        return None
    every = [c for c in topo.clients if c.target_kind == "server" and c.target_id == server.id
             and c.kind != "Lambda"]
    kept = [(c, why) for c in every if (why := kept_direct(c))]
    direct = [c for c in every if not kept_direct(c)]
    host = _host_of(server, direct)
    if not direct or host is None or server.location.path is None:
        return None
    demand = client_peak(direct)
    room = client_peak([c for c, _why in kept])
    knee = server.cpu_limit.value * 12 if server.cpu_limit is not None else None
    cap = math.floor(b.usable * SERVER_SHARE - room)
    if cap < 1:
        return None  # the clients kept on the server take its slots: no pool fits beside
    target = min(x for x in (cap, knee, target_active) if x)
    # Up to twice what the server should run, smaller pools still serve; past that they
    # would queue most requests inside each pod, and a pooler shares the slots instead.
    if demand <= 2 * target:
        return None
    pairs = {(r.dbname, r.user) for c in direct for r in _pool_routes(c)
             if r.dbname and r.user} or {("*", "*")}
    processes = REPLICAS + SURGE
    sized = max(1, math.floor(target / processes / len(pairs)))
    need = _transactions_at_once(direct, pairs)
    # the floor, within the slots the server has for the pooler (cap)
    pool_size = max(sized, min(need, max(1, math.floor(cap / processes / len(pairs)))))
    max_client = math.ceil(demand / (REPLICAS - 1) * 1.2)
    name = f"pgbouncer-{server.name.split()[0].split('/')[-1]}"
    origin = PurePosixPath(server.location.path)
    # a server a chart's dependency makes (cited at its Chart.yaml entry): the manifest
    # goes where Helm renders it, the chart's templates/, not beside Chart.yaml
    folder = origin.parent / "templates" if origin.name in ("Chart.yaml",
                                                            "requirements.yaml") \
        else origin.parent
    folder = chart_templates(folder, chart_dirs or [])
    path = str(folder / f"{name}.yaml")
    in_chart = _in_templates(folder, chart_dirs or [])
    # In a chart, Helm puts an object without a namespace in the release's, the
    # server's: the namespace this run rendered with (default) would pin it elsewhere.
    # So does a kustomization (its `namespace:`, an overlay's): a base is shared by
    # overlays that put it in other namespaces.
    ns = f"\n  namespace: {server.namespace}" \
        if server.namespace and not in_chart and str(folder) not in (kustomized or {}) else ""
    caveat = (f"its [databases] host {host} is the server's name as rendered in this run "
              "(its release name and values): installed under another release name, "
              "write it as the chart's templates name the server") if in_chart else ""
    query_wait, wait_why = _query_wait(direct)
    ini_text = _INI.format(host=host, pool_size=pool_size, max_client_conn=max_client,
                           query_wait=query_wait, idle_tx=IDLE_TRANSACTION)
    head = _HEAD.format(name=name, ns=ns, host=host)
    text = head + textwrap.indent(ini_text, "    ") + _REST.format(
        name=name, ns=ns, replicas=REPLICAS, surge=SURGE)
    edits = []
    for c in direct:
        for p in c.pools:
            r = p.route
            if r is not None and r.host and r.source.path and r.source.line:
                # the same form as written: svc.ns.svc.cluster.local keeps its suffix
                suffix = r.host[len(r.host.split(".")[0]):]
                edits.append((c, r.host, name + suffix))
    shared = _shared_sites(kept, edits)
    kept_room = f" less {room:g} kept for the clients left on it" if room else ""
    per_pool = len(pairs) * pool_size
    why = [f"{len(direct)} client(s) ask for {demand:g} connections at peak (the budget's, "
           "rolling-update surge included), straight to "
           f"{server.name}, which should run {target:g} at once ("
           + ("its CPU knee, PA111" if target == knee else
              "the measured target" if target == target_active else
              f"90% of its {b.usable:g} usable slots{kept_room}") + ")",
           *_floor_reasons(server, target == knee, sized, pool_size, need),
           f"a transaction-mode PgBouncer queues the rest: {REPLICAS} replicas x "
           f"{len(pairs)} pool(s) x default_pool_size {pool_size} = "
           f"{REPLICAS * per_pool} server connections, {processes * per_pool} during its own "
           f"rollout (maxSurge {SURGE}, maxUnavailable 0: both replicas keep serving while "
           "a new one starts, its pool opening beside theirs)",
           f"max_client_conn {max_client} per replica ({demand:g} clients / "
           f"({REPLICAS} replicas - 1), +20%): the clients of a replica that stops (its "
           "rollout, its node lost) reconnect to the others, not evenly, and PgBouncer "
           "refuses a client past it at login with FATAL \"no more connections allowed "
           "(max_client_conn)\" (pgbouncer 1.24.1 src/client.c:1015-1017, "
           "src/objects.c:1571-1576), it does not queue it"]
    if kept:
        why.append("left connecting to the server itself: " + ", ".join(
            f"{c.name} ({reason})" for c, reason in kept)
            + ": migrations and set-up Jobs take session advisory locks and run DDL in a "
            "session, which a transaction-mode pool breaks; their connections stay in the "
            f"server's budget ({room:g} at peak, hooks one at a time)")
    why += shared + wait_why
    return NewPooler(path=path, text=text, name=name, pool_size=pool_size,
                     max_client_conn=max_client, ini_text=ini_text,
                     ini_offset=head.count("\n"), clients=[c.name for c in direct],
                     kept=kept, host_edits=edits, reasons=why, chart_caveat=caveat)


def _query_wait(direct: list[Client]) -> tuple[int, list[str]]:
    """query_wait_timeout for the new PgBouncer: QUERY_WAIT, or 5 s below the shortest
    acquire timeout of its clients when that is shorter (PA501's own target), so that
    the manifest advise writes is not one check then reports (audit 45: banking-api's
    HikariCP connectionTimeout 20 s; the proposed PgBouncer said 25 and advise then
    proposed editing its own, not yet written, file to 15)."""
    acquires = [p.timeouts["acquire"] for c in direct for p in c.pools
                if "acquire" in p.timeouts and p.timeouts["acquire"].value > 0]
    if not acquires:
        return QUERY_WAIT, []
    shortest = min(acquires, key=lambda t: t.value)
    if shortest.value >= QUERY_WAIT:
        return QUERY_WAIT, []
    wait = max(1, int(shortest.value) - 5)
    return wait, [f"query_wait_timeout {wait} s: below the {shortest.value:g} s a client "
                  f"waits for a connection ({shortest.label}, {shortest.source.label()}), so "
                  "PgBouncer's queue gives up first and the application sees the error it "
                  "handles (PA501)"]


def _in_templates(folder: PurePosixPath, chart_dirs: list[str]) -> bool:
    """Whether `folder` is (under) the templates/ of one of the charts."""
    charts = [PurePosixPath(d) for d in chart_dirs]
    return any((c in folder.parents or folder == c)
               and folder.relative_to(c).parts[:1] == ("templates",) for c in charts)


def _transactions_at_once(direct: list[Client], pairs: set[tuple[str, str]]) -> int:
    """The client processes (pods at peak x processes) behind one (database, user) pool,
    the most of any pair: each may hold a transaction at once, whatever its own pool
    size, so a server-side pool below it makes one process's transaction wait for
    another's to end."""
    from advisor.advise.client_pools import client_pods

    per: dict[tuple[str, str], float] = {}
    for c in direct:
        for pool in c.pools:
            if pool.size.value <= 0:
                continue  # opens none (Dify's beat): holds no transaction
            r = pool.route
            pair = (r.dbname, r.user) if r is not None and r.dbname and r.user and \
                (r.dbname, r.user) in pairs else ("*", "*")
            procs = pool.processes.value if pool.processes else 1
            per[pair] = per.get(pair, 0) + client_pods(c) * procs
    return math.ceil(max(per.values(), default=1))


def _floor_reasons(server: Server, from_knee: bool, sized: int, pool_size: int,
                   need: int) -> list[str]:
    """Why default_pool_size is above what the knee gives (the floor), and that a knee
    from a CPU request is the scheduler's guarantee, not a ceiling."""
    from advisor.rules.connections_beyond_cpu_knee import _request_only

    out = []
    cores = server.cpu_limit
    if from_knee and cores is not None and _request_only(cores):
        out.append(f"the knee is {cores.value:g} cores x 12 from {cores.label} "
                   f"({cores.source.label()}), a CPU request with no limit: what the "
                   "scheduler guarantees, not a ceiling; the server may run on more of "
                   "its node's cores, so its knee may be higher (a sweep on that node, or "
                   "resources.limits.cpu, says)")
    if pool_size > sized:
        out.append(
            f"default_pool_size {pool_size}, not {sized} (the share of the knee per "
            f"replica): a floor of one server connection per client process that may hold "
            f"a transaction at once ({need} at peak, pods x processes), per replica, since "
            "a replica that stops sends its clients to the other. In transaction mode a "
            "server connection is the client's for its whole transaction, and "
            "default_pool_size is how many server connections a (user, database) pool may "
            "have (PgBouncer docs, config.md: pool_mode, default_pool_size); the reserve "
            "(reserve_pool_size, opened only after a client waited reserve_pool_timeout, "
            "default 5 s) is no floor. Below it one long transaction (a Celery task) "
            "makes the other processes wait, and fail after query_wait_timeout")
    return out


def chart_templates(folder: PurePosixPath, chart_dirs: list[str]) -> PurePosixPath:
    """`folder`, or the templates/ of the chart it is in (the deepest of `chart_dirs`
    holding it) when it is not there already: a server a chart makes is cited at its
    values file, and a manifest added beside that is never deployed by Helm."""
    charts = [PurePosixPath(d) for d in chart_dirs
              if folder == PurePosixPath(d) or PurePosixPath(d) in folder.parents]
    if not charts:
        return folder
    chart = max(charts, key=lambda d: len(d.parts))
    if folder.relative_to(chart).parts[:1] == ("templates",):
        return folder
    return chart / "templates"


def _shared_sites(kept: list[tuple[Client, str]],
                  edits: list[tuple[Client, str, str]]) -> list[str]:
    """A kept client whose host is written where a moved client's is (one values key
    for both): the edit would move it too, so it needs a host of its own."""
    edited = {(r.source.path, r.source.line): c.name for c, _old, _new in edits
              for r in _pool_routes(c) if r.source.path and r.source.line}
    out = []
    for c, _why in kept:
        for r in _pool_routes(c):
            other = edited.get((r.source.path, r.source.line))
            if other is not None:
                out.append(f"{c.name}'s host is written at {r.source.label()} with "
                           f"{other}'s: that edit moves it to the PgBouncer too; give it "
                           "its own host for the server (a \"direct\" host setting) first")
                break
    return out


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
    pooler.surge = Term(label=f"rolling-update surge (maxSurge {SURGE}, proposed)",
                        value=SURGE, source=Source(path=new.path, key="maxSurge"))
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
      # both keep serving while a new pod starts; default_pool_size is sized for its pool too
      maxSurge: {surge}
      maxUnavailable: 0
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


def resources_end(text: str) -> int | None:
    """The line (1-based) of the last item of a kustomization's top-level `resources:`
    block list, where a new manifest is listed after it; None when there is none (no
    `resources:`, or a flow list): then it is listed by hand."""
    lines = text.splitlines()
    at = next((n for n, body in enumerate(lines, 1)
               if body.rstrip() == "resources:" or body.startswith("resources: #")), None)
    if at is None:
        return None
    last = None
    for n, body in enumerate(lines[at:], at + 1):
        stripped = body.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("- "):
            last = n
        elif body[:1] not in (" ", "\t"):
            break  # the next top-level key
    return last
