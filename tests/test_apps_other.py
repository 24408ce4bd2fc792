"""Rails, Npgsql, Ecto, Quarkus: per-pod figures written out as processes x pool size."""

from pathlib import Path

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container, containers_of, product

FIX = Path(__file__).parent / "fixtures_apps"


def _app(stack: str):
    return scan_app_dir(Root.of(FIX / stack), "")


def _pools(stack: str, manifest: str = "k8s/deployment.yaml", index: int = 0, **kw):
    return pools_for_container(containers_of(FIX / stack, manifest)[index], _app(stack), **kw)


def test_rails_puma_three_tier_erb():
    found = _pools("rails", "k8s/web.yaml", 0)
    assert [p.label for p in found.pools] == [
        "Rails production.primary pool", "Rails production.primary_replica pool",
        "Rails production.queue pool"]
    # Puma: WEB_CONCURRENCY=3 workers; pool <%= ENV.fetch("RAILS_MAX_THREADS") { 5 } %> = 8;
    # the queue pool 10 (line 23) is capped by the 8 Puma threads (one connection per
    # thread, Active Record opens them lazily: advisor/read/apps/rails.py _capped_by_threads)
    assert product(found.pools) == "3 x 8 + 3 x 8 + 3 x 8 = 72"
    primary, replica, queue = found.pools
    assert primary.size.source.key == "RAILS_MAX_THREADS"
    assert primary.processes.source.key == "WEB_CONCURRENCY"
    assert "pool 10 (config/database.yml:23) capped by 8" in queue.note
    assert (primary.route.host, replica.route.host, queue.route.host) == (
        "store-db", "store-db-ro", "queue-db")


def test_rails_sidekiq_url_pool_and_erb_default():
    found = _pools("rails", "k8s/web.yaml", 1)
    # DATABASE_URL ?pool=15 for the primary; the replica keeps the ERB default 5 (line 4,
    # through the <<: *default merge); Sidekiq is one process with 12 threads
    assert product(found.pools) == "1 x 15 + 1 x 5 + 1 x 10 = 30"
    assert found.pools[1].size.source.label() == "config/database.yml:4"
    assert any("smaller than 12 (Sidekiq concurrency" in n for n in found.notices)


def test_rails_development_default_env():
    found = pools_for_container(container(), _app("rails"))
    (pool,) = found.pools
    assert product(found.pools) == "1 x 5 = 5" and pool.label == "Rails development pool"


def test_npgsql_environment_override_and_env_connection_string():
    found = _pools("npgsql")
    assert product(found.pools) == "1 x 25 + 1 x 5 = 30"
    orders, audit = found.pools
    assert orders.size.source.label() == "appsettings.Production.json:3"
    assert orders.route.host == "orders-pgbouncer" and orders.route.port == 6432
    assert audit.size.source.key == "ConnectionStrings__Audit"
    staging = pools_for_container(container({"ASPNETCORE_ENVIRONMENT": "Staging"}),
                                  _app("npgsql"))
    assert product(staging.pools) == "1 x 40 + 1 x 100 = 140"
    assert staging.pools[1].bound == "default"


def test_ecto_runtime_exs_env_and_pool_count():
    found = _pools("ecto")
    (pool,) = found.pools
    assert product(found.pools) == "2 x 15 = 30"  # pool_count 2 x POOL_SIZE 15
    assert pool.size.source.key == "POOL_SIZE" and pool.processes.label.endswith("pool_count")
    assert pool.route.host == "shop-db"
    plain = pools_for_container(container(), _app("ecto"))
    assert product(plain.pools) == "2 x 10 = 20"  # the || "10" fallback


def test_quarkus_prod_profile_and_named_datasource_env():
    found = _pools("quarkus")
    assert product(found.pools) == "1 x 16 + 1 x 4 = 20"
    main, reporting = found.pools
    assert main.size.source.label() == "src/main/resources/application.properties:4"
    assert reporting.size.source.key == "QUARKUS_DATASOURCE__REPORTING__JDBC_MAX_SIZE"
    dev = pools_for_container(container({"QUARKUS_PROFILE": "dev"}), _app("quarkus"))
    assert product(dev.pools) == "1 x 2 + 1 x 20 = 22"
    assert dev.pools[1].bound == "default"


def test_no_fixture_trips_the_reader_guard():
    from advisor.read.apps import INTERNAL_ERROR

    for stack in sorted(p for p in FIX.iterdir() if p.is_dir()):
        app = scan_app_dir(Root.of(stack), "")
        containers = [c for m in sorted(stack.glob("k8s/*.yaml"))
                      for c in containers_of(stack, str(m.relative_to(stack)))]
        for c in [*containers, container()]:
            found = pools_for_container(c, app)
            assert not [p for p in found.problems if INTERNAL_ERROR in p.message], stack.name


def test_sidecars_and_init_containers_do_not_repeat_the_app_pools():
    from advisor.model import Container, Source

    app = _app("rails")
    src = Source(path="k8s/web.yaml", line=30)
    env = containers_of(FIX / "rails", "k8s/web.yaml")[0].env
    proxy = Container(name="cloud-sql-proxy", image="gcr.io/cloud-sql-connectors/"
                      "cloud-sql-proxy:2.11", env=env, source=src, role="sidecar")
    assert pools_for_container(proxy, app).pools == []
    init = Container(name="wait", image="ghcr.io/acme/store:7.1", env=env, source=src,
                     role="init", command=("bundle", "exec", "puma"))
    found = pools_for_container(init, app)
    assert found.pools == [] and any("not counted at peak" in n for n in found.notices)


def _with_secret(found_container, name: str):
    """The container with `name` set from a Secret the repository does not hold."""
    from msgspec.structs import replace

    from advisor.model import EnvVar, Source

    hidden = EnvVar(name=name, value=None, source=Source(path="k8s/app.yaml", line=30, key=name),
                    secret=True, from_ref="secret:app-secrets/pool")
    env = (*(e for e in found_container.env if e.name != name), hidden)
    return replace(found_container, env=env)


def test_quarkus_and_ecto_sizes_from_a_secret_are_unknown_not_defaults():
    """A max-size/pool_size variable set from a Secret not in the repository: its pool's
    size is unknown (why, for PA106), not the file's value nor the library default."""
    quarkus = pools_for_container(
        _with_secret(container(), "QUARKUS_DATASOURCE_JDBC_MAX_SIZE"), _app("quarkus"))
    assert [p.label for p in quarkus.pools] == ["Quarkus jdbc max-size (reporting)"]
    assert quarkus.unknown == ["Quarkus jdbc max-size is set by QUARKUS_DATASOURCE_JDBC_MAX_SIZE "
                               "(k8s/app.yaml:30) from a secret or reference whose value is "
                               "not in the repository"]
    ecto = pools_for_container(_with_secret(container(), "POOL_SIZE"), _app("ecto"))
    assert ecto.unknown == ["Ecto Shop.Repo pool_size is set by POOL_SIZE (k8s/app.yaml:30) "
                            "from a secret or reference whose value is not in the repository"]
    # no pool from config.exs's earlier 5, and no "not readable statically" notice
    assert ecto.pools == [] and not any("statically" in n for n in ecto.notices)
    # without the secret-valued variable, as before: no unknown
    assert pools_for_container(container(), _app("quarkus")).unknown == []
    assert pools_for_container(container(), _app("ecto")).unknown == []


def test_a_rails_pool_from_a_secret_variable_is_unknown_not_the_default():
    """`pool: <%= ENV.fetch("RAILS_MAX_THREADS") { 5 } %>` with RAILS_MAX_THREADS from a
    Secret: those pools' sizes are unknown (not Active Record's default 5); the queue
    pool written as 10 stands."""
    env = {"RAILS_ENV": "production"}
    found = pools_for_container(_with_secret(container(env), "RAILS_MAX_THREADS"), _app("rails"))
    assert [p.label for p in found.pools] == ["Rails production.queue pool"]
    assert found.unknown == [
        f"Rails production.{name} pool is set by RAILS_MAX_THREADS (k8s/app.yaml:30) from a "
        "secret or reference whose value is not in the repository"
        for name in ("primary", "primary_replica")]
    assert pools_for_container(container(env), _app("rails")).unknown == []


def test_a_rails_pool_set_to_what_is_not_read_is_unknown_and_a_secret_url_is_said(tmp_path):
    """`pool: <%= Settings.db_pool %>` is set, to a value not read: unknown, not the
    default 5. A DATABASE_URL from a Secret may carry ?pool=, which would win over the
    default: the default's note says so."""
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "database.yml").write_text(
        "production:\n  adapter: postgresql\n  pool: <%= Settings.db_pool %>\n")
    env = {"RAILS_ENV": "production", "DATABASE_URL": "postgres://db/app"}
    found = pools_for_container(container(env), scan_app_dir(Root.of(tmp_path), ""))
    assert found.pools == [] and found.unknown == [
        "Rails production pool at config/database.yml:3 is set to an expression not read "
        "statically"]
    (tmp_path / "config" / "database.yml").write_text(
        "production:\n  adapter: postgresql\n")
    found = pools_for_container(_with_secret(container(env), "DATABASE_URL"),
                                scan_app_dir(Root.of(tmp_path), ""))
    (pool,) = found.pools
    assert pool.size.value == 5 and "a ?pool= in it would win" in pool.note


def test_npgsql_connection_strings_written_in_csharp_source():
    """No appsettings and no ConnectionStrings__ env: the literals of the C# files that
    use Npgsql are its pools, one per distinct string (example-voting-app's worker)."""
    found = _pools("npgsql_literal")
    assert product(found.pools) == "1 x 4 + 1 x 100 + 1 x 0 = 104"
    ledger, votes, report = found.pools
    assert (votes.route.host, votes.route.port) == ("votes-db", 6432)
    assert votes.bound == "default" and votes.size.source.default.startswith("Npgsql default")
    assert "src/Worker.cs:12 (connection string) sets no Maximum Pool Size" in votes.note
    assert ledger.route.host == "ledger-db" and ledger.size.source.label() == "src/Worker.cs:8"
    assert report.route.host == "report-db" and report.bound == "unbounded"
    assert not any(p.route.host in ("mssql", None) for p in found.pools)


def test_npgsql_connection_string_from_an_env_variable_the_code_reads():
    """UseNpgsql(Environment.GetEnvironmentVariable("LEDGER_DB")), the manifest sets
    LEDGER_DB=Host=...: Npgsql's default Max Pool Size 100 applies, or the string's own
    (audit H: otel-demo's accounting was unknown, peak >= 0 where 2 pods x 100 > 97)."""
    (pool,) = _pools("npgsql_env").pools
    assert product([pool]) == "1 x 100 = 100" and pool.bound == "default"
    assert pool.route.host == "ledger-db"
    assert pool.label == "Npgsql Maximum Pool Size (connection string LEDGER_DB)"
    assert "k8s/deployment.yaml:19 (LEDGER_DB) sets no Maximum Pool Size" in pool.note
    # the variable the code reads, not another that holds a connection string
    (pool,) = _pools("npgsql_env", index=1).pools
    assert product([pool]) == "1 x 12 = 12"
    assert (pool.route.host, pool.route.port) == ("ledger-db", 6432)
    assert pool.size.source.label() == "k8s/deployment.yaml:24"


def test_rails_without_database_yml_takes_the_url_pool(tmp_path):
    """An app with no config/database.yml: Active Record builds its config from
    DATABASE_URL, ?pool= included; it was the default 5 whatever the URL said
    (puma -t 30: 5 -> 25; with Puma's default 5 threads the 25 is capped at 5, and the
    25 is named where it is written)."""
    from advisor.read.apps import default_pools_for_container
    from advisor.read.apps.urls import route_from_env

    (tmp_path / "Gemfile").write_text('source "https://rubygems.org"\ngem "rails", "~> 7.1"\n')
    app = scan_app_dir(Root.of(tmp_path), "")
    url = {"DATABASE_URL": "postgres://db:5432/app?pool=25"}
    c = container(url, command=("bundle", "exec", "puma", "-t", "30:30"))
    (pool,) = default_pools_for_container(c, app, route_from_env(c.env)).pools
    assert pool.size.value == 25 and pool.size.source.key == "DATABASE_URL ?pool="
    assert (pool.size.source.path, pool.size.source.line) == ("k8s/app.yaml", 10)
    c = container(url, command=("bundle", "exec", "puma"))
    (pool,) = default_pools_for_container(c, app, route_from_env(c.env)).pools
    assert pool.size.value == 5 and "pool 25 (k8s/app.yaml:10) capped by 5" in pool.note


STARTUP_CS = """using Npgsql;

public class Startup
{
    public void ConfigureServices(IServiceCollection services)
    {
        var connectionStringBuilder = new NpgsqlConnectionStringBuilder
        {
            Host = Environment.GetEnvironmentVariable("POSTGRES_URI"),
            Database = Environment.GetEnvironmentVariable("POSTGRES_DB"),
            Username = Environment.GetEnvironmentVariable("POSTGRES_USER"),%s
        };
        services.AddScoped(_ => new NpgsqlConnection(connectionStringBuilder.ConnectionString));
    }
}
"""


def _builder_pools(tmp_path, extra: str):
    (tmp_path / "UserService").mkdir(exist_ok=True)
    (tmp_path / "UserService" / "UserService.csproj").write_text(
        '<Project Sdk="Microsoft.NET.Sdk.Web"><ItemGroup><PackageReference Include="Npgsql" '
        'Version="8.0.3" /></ItemGroup></Project>\n')
    (tmp_path / "UserService" / "Startup.cs").write_text(STARTUP_CS % extra)
    app = scan_app_dir(Root.of(tmp_path), "UserService")
    c = container({"POSTGRES_URI": "users-db", "POSTGRES_DB": "users"})
    return pools_for_container(c, app)


def test_npgsql_connection_string_built_in_code(tmp_path):
    """new NpgsqlConnectionStringBuilder { Host = GetEnvironmentVariable(...) }
    (toporischev/lesson6's Startup.cs, audit 13e N1): no appsettings, no connection
    string in the env nor as a literal, so the pool was not read and the client was
    in no budget; Npgsql's default Maximum Pool Size 100, on the env's host."""
    found = _builder_pools(tmp_path, "")
    (pool,) = found.pools
    assert product([pool]) == "1 x 100 = 100" and pool.bound == "default"
    assert pool.route.host == "users-db"
    assert "UserService/Startup.cs:7 (NpgsqlConnectionStringBuilder)" in pool.note
    (pool,) = _builder_pools(tmp_path, "\n            MaxPoolSize = 20,").pools
    assert product([pool]) == "1 x 20 = 20"
    found = _builder_pools(tmp_path, "\n            MaxPoolSize = int.Parse(size),")
    assert not found.pools and any("expression not read statically" in u
                                   for u in found.unknown)


DATABASE_SERVICE_CS = """using Microsoft.EntityFrameworkCore;

namespace App.StartUp.Services;

public static class DatabaseService
{
  public static DbContextOptionsBuilder AddPostgres(this DbContextOptionsBuilder b,
    Dictionary<string, DatabaseOption> o, string key)
  {
    var db = o[key];
    var connectionString =
      $"Host={db.Host};Port={db.Port};Database={db.Database};Username={db.User};%s";
    b.UseNpgsql(connectionString);
    return b;
  }
}
"""


def _settings_app_pools(tmp_path, tail: str, *, string: bool = True):
    (tmp_path / "App" / "StartUp").mkdir(parents=True, exist_ok=True)
    (tmp_path / "App" / "App.csproj").write_text(
        '<Project Sdk="Microsoft.NET.Sdk.Web"><ItemGroup><PackageReference '
        'Include="Npgsql.EntityFrameworkCore.PostgreSQL" Version="8.0.2" /></ItemGroup>'
        '</Project>\n')
    text = DATABASE_SERVICE_CS % tail
    if not string:  # the connection string comes from an options object, not written
        text = text.replace('$"Host={db.Host};Port={db.Port};Database={db.Database};'
                            'Username={db.User};' + tail + '"', "db.ConnectionString")
    (tmp_path / "App" / "StartUp" / "DatabaseService.cs").write_text(text)
    app = scan_app_dir(Root.of(tmp_path), "App")
    return pools_for_container(container({"LANDSCAPE": "lapras"}), app)


def test_npgsql_interpolated_connection_string_is_a_client_with_an_unknown_host(tmp_path):
    """A connection string interpolated from a settings object (AtomiCloud's
    DatabaseService.cs: `$"Host={o.Host};..."`, its values in a YAML settings file):
    no appsettings ConnectionStrings, no env, no plain literal, so no pool was read and
    the API was in no budget while the chart's PostgreSQL "fit" with nothing counted
    (audit 40 N5/N6). Its keys are literal: no Maximum Pool Size is Npgsql's default 100;
    where it connects is code, not read (no route)."""
    found = _settings_app_pools(tmp_path, 'Password={db.Password};')
    (pool,) = found.pools
    assert product([pool]) == "1 x 100 = 100" and pool.bound == "default"
    assert pool.route is None
    assert "App/StartUp/DatabaseService.cs:12 (interpolated connection string)" in pool.note
    (pool,) = _settings_app_pools(tmp_path, "Maximum Pool Size=30;").pools
    assert product([pool]) == "1 x 30 = 30"
    found = _settings_app_pools(tmp_path, "Maximum Pool Size={db.PoolSize};")
    assert not found.pools and any("expression not read statically" in u
                                   for u in found.unknown)
    # a literal localhost is a developer's check (pattisapu01's template waits for its
    # local database with one), not where the pod connects: not the pool, so unknown
    (tmp_path / "App" / "StartUp" / "DatabaseService.cs").unlink()
    (tmp_path / "App" / "StartUp" / "LocalCheck.cs").write_text(
        "using Npgsql;\nclass C { bool Up(string u) { using var c = new NpgsqlConnection("
        '$"Server=localhost;Port=5438;User Id={u};Database=app"); return true; } }\n')
    found = pools_for_container(container({}), scan_app_dir(Root.of(tmp_path), "App"))
    assert not found.pools and found.unknown == [
        "Npgsql Maximum Pool Size at App/StartUp/LocalCheck.cs:2 is set to an expression "
        "not read statically"]
    # where EF Core makes the application's pool is cited before that check's connection
    (tmp_path / "App" / "Z").mkdir()
    (tmp_path / "App" / "Z" / "AppDb.cs").write_text(
        "using Microsoft.EntityFrameworkCore;\nclass AppDb : DbContext {\n  void On(Opts o)"
        " { o.UseNpgsql(Build()); }\n}\n")
    found = pools_for_container(container({}), scan_app_dir(Root.of(tmp_path), "App"))
    assert found.unknown == ["Npgsql Maximum Pool Size at App/Z/AppDb.cs:3 is set to an "
                             "expression not read statically"]


def test_npgsql_used_with_no_connection_string_read_is_unknown_not_left_out(tmp_path):
    """UseNpgsql(db.ConnectionString) with the string nowhere the reader looks: the pool's
    size is unknown (PA106) where the code opens it, never no client at all."""
    found = _settings_app_pools(tmp_path, "", string=False)
    assert not found.pools
    assert found.unknown == ["Npgsql Maximum Pool Size at App/StartUp/DatabaseService.cs:13 "
                             "is set to an expression not read statically"]
