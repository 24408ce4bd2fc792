"""Rust pools (advisor/read/apps/rust.py): sqlx, deadpool-postgres, r2d2 (audit 9b D6: a
sqlx `PgPoolOptions::new().max_connections(50)` was "unknown", and PA106 said "no driver
dependency" though Cargo.toml names sqlx with its postgres feature)."""

from __future__ import annotations

from msgspec.structs import replace

from advisor.engine.check import run_check
from advisor.engine.options import CheckOptions
from advisor.model import EnvVar, NodeCpus, Source, Term
from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.apps.base import StackContext
from advisor.read.apps.identify import identified_pools
from advisor.read.apps.rust import blank_comments
from advisor.read.fs import Root
from tests.apphelpers import container
from tests.tree_helpers import deployment, write

CARGO = """\
[package]
name = "orders"
version = "0.1.0"

[dependencies]
sqlx = { version = "0.7", features = ["runtime-tokio", "postgres"] }
tokio = { version = "1", features = ["full"] }
"""

MAIN = """\
use sqlx::postgres::PgPoolOptions;

#[tokio::main]
async fn main() -> Result<(), sqlx::Error> {
    let url = std::env::var("DATABASE_URL").unwrap();
    let pool = PgPoolOptions::new()
        // .max_connections(500) was too many
        .max_connections(50)
        .connect(url.trim())
        .await?;
    Ok(())
}
"""

PG = """
apiVersion: v1
kind: Service
metadata: {name: pg}
spec:
  selector: {app: pg}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: pg}
spec:
  template:
    metadata: {labels: {app: pg}}
    spec:
      containers:
        - name: postgres
          image: postgres:16
"""


def _pools(tmp_path, files: dict[str, str], env: dict[str, str] | None = None, hidden=()):
    write(tmp_path, files)
    c = container({"DATABASE_URL": "postgres://orders@pg:5432/orders", **(env or {})})
    c = replace(c, env=(*c.env, *(EnvVar(name=n, value=None, secret=True, from_ref="secret:s/k",
                                         source=Source(path="k8s/app.yaml", line=30, key=n))
                                  for n in hidden)))
    return pools_for_container(c, scan_app_dir(Root.of(tmp_path), ""))


def test_a_sqlx_pool_of_the_repro_shape_is_over_not_unknown(tmp_path):
    """4 replicas + 1 surge = 5 pods x 50 (app/src/main.rs:8) = 250 > 97: OVER by 153,
    no PA106 (the commented-out 500 is not read)."""
    write(tmp_path, {"k8s/db.yaml": PG, "app/Cargo.toml": CARGO, "app/src/main.rs": MAIN,
                     "app/Dockerfile": "FROM rust:1.80\nCOPY . .\nENTRYPOINT [\"/orders\"]\n",
                     "k8s/orders.yaml": deployment(
                         "orders", "example.com/orders:1.0",
                         {"DATABASE_URL": "postgres://orders@pg:5432/orders"}, replicas=4)
                     .replace("strategy: {type: Recreate}", "")})
    result = run_check([str(tmp_path)], CheckOptions(cache=False))
    (budget,) = result.budgets
    assert budget.unknown_clients == [] and budget.peak == 250 and not budget.fits
    codes = {f.code for f in result.findings}
    assert "PA101" in codes and "PA106" not in codes
    (orders,) = budget.contributions
    assert [(t.value, t.source.label()) for t in orders.factors][-1] == (50, "app/src/main.rs:8")


def test_pgpool_connect_is_the_default_options_cited_at_the_locked_version(tmp_path):
    files = {"Cargo.toml": CARGO,
             "Cargo.lock": '[[package]]\nname = "sqlx"\nversion = "0.7.4"\nsource = "x"\n',
             "src/main.rs": 'let pool = PgPool::connect(&std::env::var("DATABASE_URL")?)'
                            '.await?;\n'}
    (pool,) = _pools(tmp_path, files).pools
    assert pool.size.value == 10 and pool.bound == "default"
    assert pool.size.source.default == (
        "sqlx 0.7.4 (Cargo.lock:3) default max_connections 10 "
        "(launchbadge/sqlx@00eb69cd sqlx-core/src/pool/options.rs:51)")
    assert "src/main.rs:1: PgPool::connect takes the default options" in pool.note
    assert pool.route is not None and pool.route.host == "pg"


ENV_READ = """\
fn pool_size() -> u32 { 1 }
async fn connect() {
    let max_conn: u32 = std::env::var("MAX_CONN")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let pool = PgPoolOptions::new().max_connections(max_conn).connect(&url).await;
}
"""


def test_a_size_read_from_env_resolves_from_the_container_else_its_fallback(tmp_path):
    files = {"Cargo.toml": CARGO, "src/db.rs": ENV_READ}
    (pool,) = _pools(tmp_path, files, {"MAX_CONN": "30"}).pools
    assert pool.size.value == 30 and pool.size.source.label() == "k8s/app.yaml:11"
    (pool,) = _pools(tmp_path, files).pools
    assert pool.size.value == 20 and pool.size.source.label() == "src/db.rs:3"
    assert "MAX_CONN is not set in the container env" in pool.note
    found = _pools(tmp_path, files, hidden=("MAX_CONN",))
    assert found.pools == [] and "MAX_CONN" in found.unknown[0]
    # an expression not read is unknown, never the default 10
    found = _pools(tmp_path, {"src/db.rs": ENV_READ.replace("(max_conn)", "(pool_size())")})
    assert found.pools == [] and found.unknown == [
        "sqlx max_connections at src/db.rs:7 is set to an expression not read statically"]


CONFIG = """\
pub struct Config { pub db_pool_max_connections: u32 }
impl Default for Config {
    fn default() -> Self {
        Config {
            db_pool_max_connections: 80,
        }
    }
}
pub async fn connect(cfg: &Config) {
    let pool = PgPoolOptions::new()
        .min_connections(0)
        .max_connections(cfg.db_pool_max_connections)
        .connect_with(options)
        .await;
}
"""


def test_a_config_field_takes_its_env_variable_else_the_struct_literal(tmp_path):
    """rust-axum-demo's shape: figment's Default struct, overridable by APP_* env."""
    files = {"Cargo.toml": CARGO, "src/config.rs": CONFIG}
    (pool,) = _pools(tmp_path, files).pools
    assert pool.size.value == 80 and pool.size.source.label() == "src/config.rs:5"
    (pool,) = _pools(tmp_path, files, {"APP_DB_POOL_MAX_CONNECTIONS": "12"}).pools
    assert pool.size.value == 12 and pool.size.source.key == "APP_DB_POOL_MAX_CONNECTIONS"


DEADPOOL = """\
use deadpool_postgres::{Config, PoolConfig, Runtime};
fn make() {
    let mut cfg = Config::new();
    cfg.pool = Some(PoolConfig::new(16));
    let pool = cfg.create_pool(Some(Runtime::Tokio1), NoTls).unwrap();
}
"""


def test_deadpool_sizes_its_default_is_four_per_physical_cpu(tmp_path):
    cargo = '[dependencies]\ndeadpool-postgres = "0.14"\n'
    (pool,) = _pools(tmp_path, {"Cargo.toml": cargo, "src/db.rs": DEADPOOL}).pools
    assert pool.size.value == 16 and pool.size.source.label() == "src/db.rs:4"
    text = DEADPOOL.replace("    cfg.pool = Some(PoolConfig::new(16));\n", "")
    (pool,) = _pools(tmp_path, {"src/db.rs": text}).pools
    assert pool.bound == "cpu" and pool.cpu_formula is not None
    assert pool.cpu_formula.per_cpu == 4 and pool.cpu_formula.physical
    assert "num_cpus::get_physical() * 4" in pool.size.source.default
    # the assumed 4 node CPUs are 4 physical cores (threads-per-core 1 assumed: no SMT,
    # the larger pool), as for Prisma and in PA103
    assert pool.size.value == 16 and "4 physical cores = 4 node CPUs" in pool.note
    (pool,) = _pools(tmp_path, {"src/db.rs": text}, {"PG__POOL__MAX_SIZE": "7"}).pools
    assert pool.size.value == 7 and pool.size.source.key == "PG__POOL__MAX_SIZE"


DEADPOOL_DEFAULT = DEADPOOL.replace("    cfg.pool = Some(PoolConfig::new(16));\n", "")
DEADPOOL_CARGO = '[dependencies]\ndeadpool-postgres = "0.14"\n'


def _locked(version: str) -> dict[str, str]:
    return {"Cargo.toml": DEADPOOL_CARGO, "src/db.rs": DEADPOOL_DEFAULT,
            "Cargo.lock": f'[[package]]\nname = "deadpool"\nversion = "{version}"\n'}


def _with(tmp_path, files, *, limit: float | None = None, node=None):
    write(tmp_path, files)
    c = container({"DATABASE_URL": "postgres://orders@pg:5432/orders"})
    if limit is not None:
        c = replace(c, cpu_limit=Term(label="container app CPU limit", value=limit,
                                      source=Source(path="k8s/app.yaml", line=20,
                                                    key="resources.limits.cpu")))
    (pool,) = pools_for_container(c, scan_app_dir(Root.of(tmp_path), ""),
                                  node_cpus=node).pools
    return pool


def test_deadpool_before_0_12_3_counts_physical_cores_x4(tmp_path):
    pool = _with(tmp_path, _locked("0.12.2"))
    assert (pool.size.value, pool.bound) == (16, "cpu")  # 4 CPUs assumed, each a core
    assert pool.size.source.default == (
        "deadpool 0.12.2 (Cargo.lock:3) default max_size num_cpus::get_physical() * 4 "
        "(deadpool-rs/deadpool@deadpool-v0.12.2 src/managed/config.rs:54)")


def test_deadpool_from_0_12_3_is_logical_cpus_x2(tmp_path):
    # s26 review F4: 0.12.3 (crates/deadpool/src/util.rs) opens num_cpus::get() * 2,
    # not get_physical() * 4; before, 4 x 4 = 16 on the assumed node
    pool = _with(tmp_path, _locked("0.13.0"))
    assert (pool.size.value, pool.bound) == (8, "cpu")
    assert pool.cpu_formula is not None and not pool.cpu_formula.physical
    assert pool.cpu_formula.on_node(32) == 64
    assert pool.size.source.default == (
        "deadpool 0.13.0 (Cargo.lock:3) default max_size num_cpus::get() * 2 "
        "(deadpool-rs/deadpool@deadpool-v0.12.3 crates/deadpool/src/util.rs:5,11)")
    assert "no CPU limit on the container, so num_cpus::get() is the node's CPUs" in pool.note
    # threads-per-core does not apply to logical CPUs
    pool = _with(tmp_path, _locked("0.12.3"), node=NodeCpus(cpus=8, threads_per_core=2))
    assert pool.size.value == 16


def test_deadpool_from_0_12_3_takes_the_container_cpu_limit(tmp_path):
    # num_cpus::get() is min(ceil(cgroup quota), CPUs): 1.5 CPUs -> 2 -> 4 connections,
    # not the node's (num_cpus v1.17.0 src/linux.rs)
    pool = _with(tmp_path, _locked("0.12.3"), limit=1.5)
    assert (pool.size.value, pool.bound, pool.cpu_formula) == (4, "default", None)
    assert "1.5 (container CPU limit, k8s/app.yaml:20) -> 2" in pool.note
    assert "seanmonstar/num_cpus@v1.17.0 src/linux.rs" in pool.note
    # at most a configured node size; an assumed one (4) does not lower it
    assert _with(tmp_path, _locked("0.12.3"), limit=8).size.value == 16
    pool = _with(tmp_path, _locked("0.12.3"), limit=8, node=NodeCpus(cpus=2))
    assert pool.size.value == 4 and "at most the 2 node CPUs" in pool.note


def test_deadpool_version_unknown_takes_the_larger_default(tmp_path):
    pool = _with(tmp_path, {"Cargo.toml": DEADPOOL_CARGO, "src/db.rs": DEADPOOL_DEFAULT})
    assert (pool.size.value, pool.bound) == (16, "cpu")  # 4 x 4 > 4 x 2
    assert pool.size.source.default.startswith(
        "deadpool version not pinned in a Cargo.lock: assumed the larger default max_size, "
        "< 0.12.3: num_cpus::get_physical() * 4")
    assert ">= 0.12.3: num_cpus::get() * 2 (deadpool-rs/deadpool@deadpool-v0.12.3 " \
        "crates/deadpool/src/util.rs:5,11) gives 8" in pool.size.source.default
    # 4 threads per core: 8 CPUs are 2 cores (8) < 8 x 2 = 16 logical: the newer wins
    pool = _with(tmp_path, {"Cargo.toml": DEADPOOL_CARGO, "src/db.rs": DEADPOOL_DEFAULT},
                 node=NodeCpus(cpus=8, threads_per_core=4))
    assert pool.size.value == 16 and not pool.cpu_formula.physical
    # two versions locked: which one deadpool-postgres uses is not read, the larger
    lock = ('[[package]]\nname = "deadpool"\nversion = "0.9.5"\n\n'
            '[[package]]\nname = "deadpool"\nversion = "0.12.3"\n')
    pool = _with(tmp_path, {**_locked("x"), "Cargo.lock": lock})
    assert pool.size.value == 16 and pool.size.source.default.startswith(
        "deadpool versions 0.9.5 (Cargo.lock:3) and 0.12.3 (Cargo.lock:7) locked: assumed")


def test_deadpool_cpu_limit_read_from_the_manifest_not_the_request(tmp_path):
    files = {"k8s/db.yaml": PG, "app/Cargo.toml": DEADPOOL_CARGO,
             "app/src/db.rs": DEADPOOL_DEFAULT,
             "app/Cargo.lock": '[[package]]\nname = "deadpool"\nversion = "0.12.4"\n',
             "app/Dockerfile": "FROM rust:1.80\nCOPY . .\nENTRYPOINT [\"/orders\"]\n"}

    def peak(resources: str) -> float:
        write(tmp_path, {**files, "k8s/orders.yaml": deployment(
            "orders", "example.com/orders:1.0", {"DATABASE_URL": "postgres://o@pg:5432/o"},
            replicas=3, command=f'["/orders"]\n          resources: {resources}')})
        (budget,) = run_check([str(tmp_path)], CheckOptions(cache=False)).budgets
        return budget.peak

    assert peak("{limits: {cpu: 500m}}") == 3 * 2  # ceil(0.5) = 1 CPU x 2
    # a request is a weight, not a cgroup quota: num_cpus::get() counts the node's 4
    assert peak("{requests: {cpu: 500m}}") == 3 * 8


R2D2 = """\
use diesel::pg::PgConnection;
use diesel::r2d2::{ConnectionManager, Pool};
pub fn pool(url: &str) -> Pool<ConnectionManager<PgConnection>> {
    let manager = ConnectionManager::<PgConnection>::new(url);
    Pool::builder().max_size(15).build(manager).expect("pool")
}
"""


def test_diesel_r2d2_builder_max_size_and_the_default(tmp_path):
    cargo = '[dependencies]\ndiesel = { version = "2", features = ["postgres", "r2d2"] }\n'
    (pool,) = _pools(tmp_path, {"Cargo.toml": cargo, "src/db.rs": R2D2}).pools
    assert (pool.label, pool.size.value) == ("r2d2 max_size", 15)
    text = R2D2.replace("Pool::builder().max_size(15).build(manager)", "Pool::new(manager)")
    (pool,) = _pools(tmp_path, {"src/db.rs": text}).pools
    assert pool.size.value == 10 and pool.bound == "default"
    assert "sfackler/r2d2@11d33776 src/config.rs:56" in pool.size.source.default


def _identified(tmp_path, cargo: str):
    write(tmp_path, {"Cargo.toml": cargo, "src/main.rs": "fn main() { db::open(); }\n"})
    ctx = StackContext(container=container(), app=scan_app_dir(Root.of(tmp_path), ""),
                       profile=None)
    return identified_pools(ctx, None)


def test_cargo_toml_identifies_the_stack_whose_default_applies(tmp_path):
    """A pool built where no reader looks: Cargo.toml's sqlx with `postgres` names the
    stack (PA104's default), sqlx for MySQL only does not."""
    (pool,) = _identified(tmp_path, CARGO)
    assert pool.size.value == 10 and pool.bound == "default"
    assert "stack identified by sqlx (postgres) (Cargo.toml:6)" in pool.note
    cargo = '[dependencies.sqlx]\nversion = "0.8"\nfeatures = ["mysql"]\n'
    assert _identified(tmp_path, cargo) == []
    cargo = '[dependencies.sqlx]\nversion = "0.8"\nfeatures = ["postgres", "macros"]\n'
    (pool,) = _identified(tmp_path, cargo)
    assert "Cargo.toml:1" in pool.note


def test_comments_are_blanked_but_strings_with_slashes_kept():
    text = 'let u = "postgres://db/x"; // max_connections(9)\n/* a\n b */ let c = \'"\';\n'
    out = blank_comments(text)
    assert '"postgres://db/x"' in out and "max_connections" not in out
    assert out.count("\n") == text.count("\n") and "let c = '\"'" in out


# tokio-postgres with no pool (audit 42 D6, caulagi/rust-k8s-demo's quotation service, in
# our own words): a gRPC handler connects per request. Before: unknown, with the false
# reason "no driver dependency" beside a Cargo.toml naming tokio-postgres.
TOKIO_CARGO = """\
[package]
name = "quotes"
version = "0.1.0"

[dependencies]
tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
tokio-postgres = "0.7.13"
tonic = "0.12"
"""
TOKIO_HANDLER = """\
use tokio_postgres::NoTls;
use tonic::{Request, Response, Status};

#[tonic::async_trait]
impl Quotes for Service {
    async fn random_quote(
        &self,
        request: Request<QuoteRequest>,
    ) -> Result<Response<QuoteReply>, Status> {
        let params = format!("host={} user=app", std::env::var("PG_HOST").unwrap());
        let (client, conn) = tokio_postgres::connect(&params, NoTls).await.unwrap();
        tokio::spawn(async move { let _ = conn.await; });
        let rows = client.query("SELECT 1", &[]).await.unwrap();
        Ok(Response::new(QuoteReply { text: rows.len().to_string() }))
    }
}

#[tokio::main]
async fn main() {
    serve().await;
}
"""


def test_tokio_postgres_connect_in_a_request_handler_is_unbounded(tmp_path):
    files = {"Cargo.toml": TOKIO_CARGO, "src/main.rs": TOKIO_HANDLER}
    found = _pools(tmp_path, files)
    (pool,) = found.pools
    assert pool.bound == "unbounded" and pool.size.source.label() == "src/main.rs:11"
    assert "request handler random_quote" in pool.note and found.unknown == []


def test_tokio_postgres_connect_in_main_is_one_per_process_elsewhere_unknown(tmp_path):
    in_main = """\
#[tokio::main]
async fn main() {
    let (client, conn) = tokio_postgres::connect("host=pg", NoTls).await.unwrap();
    tokio::spawn(conn);
}
"""
    (pool,) = _pools(tmp_path, {"Cargo.toml": TOKIO_CARGO, "src/main.rs": in_main}).pools
    assert pool.size.value == 1 and pool.bound == "fixed"
    helper = ("async fn load() {\n"
              "    let (c, conn) = tokio_postgres::connect(URL, NoTls).await;\n}\n")
    found = _pools(tmp_path, {"src/main.rs": helper})
    assert found.pools == [] and found.unknown == [
        "tokio_postgres::connect at src/main.rs:2 in function load: one connection per call, "
        "and how many calls are open at once is not read statically"]
