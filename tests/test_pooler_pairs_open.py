"""Poolers whose (database, user) pairs are not read (audit 8a D4, D5, D6).

D4: CloudNativePG's Pooler sample (a `*` fallback, no client in the repository) was
budgeted as one pair and printed "fits" 80 <= 97 with no finding: every pair a client
brings opens a pool, so the count is a floor and the verdict cannot be told.
D5: such a pooler's count was printed `= 160` where it is `>= 160`.
D6: `$(POSTGRES_DB)` of a Kubernetes env value was taken as a database name, and
edoburu's DB_NAME from a Secret as the `*` fallback.
"""

from __future__ import annotations

from pathlib import Path

from advisor.engine.check import run_check, scan
from advisor.engine.options import CheckOptions
from advisor.model import EnvVar, Source
from advisor.read.apps import route_from_env
from advisor.report import text
from advisor.rules import load_rules
from tests.tree_helpers import POSTGRES_DB, write

# In the shape of cloudnative-pg docs/src/samples/pooler-example-explicit-image.yaml:
# one Pooler instance, no pgbouncer parameters, no client anywhere.
CNPG_SAMPLE = """
apiVersion: postgresql.cnpg.io/v1
kind: Cluster
metadata: {name: cluster-example}
spec:
  instances: 1
  imageName: ghcr.io/cloudnative-pg/postgresql:18.0
---
apiVersion: postgresql.cnpg.io/v1
kind: Pooler
metadata: {name: pooler-example-rw}
spec:
  cluster: {name: cluster-example}
  instances: 1
  type: rw
  pgbouncer:
    poolMode: session
"""


def _pgbouncer(databases: str, pool_size: int = 20) -> str:
    """A PgBouncer Deployment (2 replicas, Recreate) reading its pgbouncer.ini from a
    ConfigMap, in front of the StatefulSet `db` (50 max_connections, 47 usable)."""
    return f"""
        apiVersion: v1
        kind: Service
        metadata: {{name: pgbouncer}}
        spec: {{selector: {{app: pgbouncer}}}}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {{name: pgbouncer-config}}
        data:
          pgbouncer.ini: |
            [databases]
            {databases}
            [pgbouncer]
            pool_mode = transaction
            default_pool_size = {pool_size}
        ---
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: pgbouncer}}
        spec:
          replicas: 2
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
        """


def _check(root: Path):
    return run_check([str(root)], CheckOptions(cache=False), load_rules())


def _open_pairs(result):
    return [f for f in result.findings
            if f.code == "PA106" and f.subject.endswith("|pairs")]


def test_a_star_pooler_with_no_client_is_not_a_fit(tmp_path):
    """D4: (1 + 1 surge) x (20 for one pair + 20 auth_query pool) = 80 <= 97 only if
    clients bring one pair; two pairs are 2 x 60 = 120 > 97."""
    write(tmp_path, {"k8s/db.yaml": CNPG_SAMPLE})
    result = _check(tmp_path)
    (budget,) = result.budgets
    assert budget.peak == 80 and budget.usable == 97
    assert not budget.fits and budget.peak_is_floor
    assert any("pooler-example-rw: no client in the repository connects" in u
               for u in budget.unknown_pairs)
    (found,) = _open_pairs(result)
    assert "counted as one pool (*/*), 80 on cluster-example, a floor" in found.message
    assert ("cluster-example's peak is 80 <= 97 usable only with the pairs counted; 2 pairs, "
            "each a pool of its own, would take it to 120 > 97, OVER by 23, so whether "
            "cluster-example fits cannot be told") in found.message
    out = text.render(result, load_rules())
    assert out.splitlines()[0].endswith(", cannot tell whether it fits the 97 usable")
    assert "no findings" not in out


def test_a_pooler_whose_caps_bound_every_pair_stays_a_number(tmp_path):
    """A named entry forcing no user, capped by its max_db_connections: however many
    users come, 2 processes x 15 = 30 <= 47; no floor, no finding."""
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/pgbouncer.yaml": _pgbouncer(
        "shop = host=db dbname=shop max_db_connections=15")})
    result = _check(tmp_path)
    (budget,) = result.budgets
    pooler = next(c for c in budget.contributions if c.kind == "pooler")
    assert pooler.total == 30 and not pooler.unknown
    assert budget.fits and _open_pairs(result) == []


def test_an_entry_forcing_no_user_with_no_client_is_a_floor(tmp_path):
    """The same entry uncapped: each user a client logs in as is a pool of 20 per
    process, 2 x 20 = 40 <= 47 with one, 80 > 47 with two."""
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/pgbouncer.yaml": _pgbouncer(
        "shop = host=db dbname=shop")})
    result = _check(tmp_path)
    (budget,) = result.budgets
    assert budget.peak == 40 and not budget.fits
    (found,) = _open_pairs(result)
    assert "2 pairs, each a pool of its own, would take it to 80 > 47" in found.message


def test_a_wildcard_pooler_count_is_printed_as_a_floor(tmp_path):
    """D5 (pachyderm's pg-bouncer, `* = ... user=` forced): 2 x 30 = 60 is the pool of
    one database name; each further name clients use is another. The line and PA105
    say `>= 60` and "at least 60", not `= 60`."""
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB, "k8s/pgbouncer.yaml": _pgbouncer(
        "* = host=db port=5432 user=app", pool_size=30)})
    result = _check(tmp_path)
    out = text.render(result, load_rules(), verbose=True)
    (line,) = [x for x in out.splitlines() if x.startswith("  pgbouncer: ")]
    assert line.endswith(" = >= 60"), line
    (over,) = [f for f in result.findings if f.code == "PA105"]
    assert over.message == "pgbouncer: at least 60 server connections > 47 usable on db"


def test_unknown_pairs_of_clients_print_the_pooler_count_as_a_floor(tmp_path):
    """D5 with clients: two applications whose (database, user) is not read behind a `*`
    pooler: the count of one pool is printed `>= 40`."""
    client = """
        apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: {name}}}
        spec:
          replicas: 1
          strategy: {{type: Recreate}}
          template:
            spec:
              containers:
                - name: c
                  image: example/{name}:1
                  env: [{{name: POSTGRES_HOST, value: pgbouncer}}]
        """
    write(tmp_path, {"k8s/db.yaml": POSTGRES_DB,
                     "k8s/pgbouncer.yaml": _pgbouncer("* = host=db port=5432"),
                     "k8s/a.yaml": client.format(name="a"),
                     "k8s/b.yaml": client.format(name="b"),
                     ".pool-advisor.toml": '[[workloads]]\nname = "a"\nconnections = 50\n'
                                           '[[workloads]]\nname = "b"\nconnections = 50\n'})
    out = text.render(_check(tmp_path), load_rules(), verbose=True)
    (line,) = [x for x in out.splitlines() if x.startswith("  pgbouncer: ")]
    assert line.endswith(" = >= 40"), line


def _env(**values: str) -> tuple[EnvVar, ...]:
    return tuple(EnvVar(name=k, value=v, source=Source(path="k8s/api.yaml", line=i))
                 for i, (k, v) in enumerate(values.items(), start=1))


def test_a_kubernetes_reference_left_in_a_url_is_no_name():
    """D6 (rejourney k8s/api.yaml:630): `$(POSTGRES_DB)` whose variable is a Secret's
    is not the name of a database, nor `$(POSTGRES_USER)` of a user."""
    r = route_from_env(_env(DATABASE_URL="postgresql://$(POSTGRES_USER):$(POSTGRES_PASSWORD)"
                                         "@pgbouncer-ro:5432/$(POSTGRES_DB)"))
    assert r is not None and r.host == "pgbouncer-ro"
    assert r.dbname is None and r.user is None


API = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 1
  strategy: {type: Recreate}
  template:
    spec:
      containers:
        - name: api
          image: example/api:1
          env:
ENV
"""


def _pairs_of(root: Path, env: str) -> list[tuple[str, str]]:
    write(root, {"k8s/db.yaml": POSTGRES_DB,
                 "k8s/pgbouncer.yaml": _pgbouncer("* = host=db port=5432"),
                 "k8s/api.yaml": API.replace("ENV", env)})
    topo = scan([str(root)], CheckOptions(cache=False)).topology
    (pooler,) = topo.poolers
    return pooler.pairs


URL = ("            - {name: DATABASE_URL, value: "
       "'postgresql://$(DB_USER):pw@pgbouncer:5432/$(DB)'}\n")


def test_a_reference_to_an_earlier_variable_is_expanded(tmp_path):
    """Kubernetes expands `$(DB)` from a variable listed before it."""
    env = ("            - {name: DB, value: shop}\n"
           "            - {name: DB_USER, value: web}\n" + URL)
    assert _pairs_of(tmp_path, env) == [("shop", "web")]


def test_a_reference_to_a_secret_or_a_later_variable_is_unknown(tmp_path):
    """DB from a Secret not in the repository, DB_USER listed after the URL (kubelet
    leaves it as written): neither is a name read here."""
    env = ("            - name: DB\n"
           "              valueFrom: {secretKeyRef: {name: pg, key: dbname}}\n"
           + URL + "            - {name: DB_USER, value: web}\n")
    pairs = _pairs_of(tmp_path, env)
    assert not any("$(" in db or "$(" in user for db, user in pairs), pairs


def test_edoburu_db_name_from_a_secret_is_a_named_entry():
    """D6 (rejourney k8s/pgbouncer.yaml:51-55): entrypoint.sh writes `${DB_NAME:-*}`, so
    a DB_NAME from a Secret names one database whose name is not held, not `*`."""
    from advisor.read.sources.operators.containers import pooler_config_from_env

    src = Source(path="k8s/pgbouncer.yaml", line=1)
    env = (EnvVar(name="DB_HOST", value="pg-rw", source=src),
           EnvVar(name="DB_NAME", source=src, secret=True,
                  from_ref="secret:pg/POSTGRES_DB (not in repository)"))
    _settings, [db] = pooler_config_from_env(env)
    assert db.name != "*" and db.name_from == "DB_NAME (secret:pg/POSTGRES_DB)"
    _settings, [db] = pooler_config_from_env(
        (env[0], EnvVar(name="DB_NAME", value="$(POSTGRES_DB)", source=src)))
    assert db.name != "*" and db.name != "$(POSTGRES_DB)"
    _settings, [db] = pooler_config_from_env((env[0],))
    assert db.name == "*" and db.name_from == ""


def test_a_client_of_a_pooler_whose_entry_name_is_not_held_lands_in_it():
    """A client's database on a pooler whose one entry is named from a Secret: the
    entry (the only one PgBouncer could serve it from), not a rejection."""
    from advisor.facts.pgbouncer import effective_pool
    from advisor.model import BouncerVersion, Location, Pooler, PoolerDatabase, Term

    pooler = Pooler(id="p", name="p", kind="pgbouncer", location=Location(path="p.yaml"),
                    replicas=Term(label="replicas", value=1, source=Source(path="p.yaml")),
                    version=BouncerVersion(major=1, minor=25),
                    databases=[PoolerDatabase(name="(DB_NAME: secret:pg/POSTGRES_DB)",
                                              host="pg-rw", name_from="DB_NAME (secret)",
                                              location=Location(path="p.yaml"))])
    pool = effective_pool(pooler, "shop", "web")
    assert pool is not None and pool.database == "(DB_NAME: secret:pg/POSTGRES_DB)"
