import pytest

from advisor.model import EnvVar, Source
from advisor.read.apps import route_from_env, route_from_url
from advisor.read.apps.javaprops import PropError, parse_properties

SRC = Source(path="k8s/app.yaml", line=3)


@pytest.mark.parametrize(
    ("url", "host", "port", "db", "user"),
    [
        ("postgres://app:s3cr%40t@pg.svc:6432/shop?sslmode=require", "pg.svc", 6432, "shop",
         "app"),
        ("postgresql://pg1:5432,pg2:5433/shop?target_session_attrs=read-write", "pg1", 5432,
         "shop", None),
        ("postgresql:///shop?host=/var/run/postgresql", "/var/run/postgresql", None, "shop",
         None),
        ("postgresql://[::1]:5433/x", "::1", 5433, "x", None),
        ("postgresql://db?dbname=orders&user=bob", "db", None, "orders", "bob"),
        ("postgresql+asyncpg://svc@pg-async:5433/a", "pg-async", 5433, "a", "svc"),
        ("pgsql://laravel@pg-l/shop", "pg-l", None, "shop", "laravel"),
        ("postgis://gis@geo-db/maps", "geo-db", None, "maps", "gis"),
        ("jdbc:postgresql://orders-db:5432/orders?user=svc&ssl=true", "orders-db", 5432,
         "orders", "svc"),
        ("jdbc:postgresql://h1,h2:5433/app", "h1", None, "app", None),
        ("jdbc:postgresql:orders", "localhost", None, "orders", None),
        ("r2dbc:pool:postgresql://r2:5432/app", "r2", 5432, "app", None),
        ("host=pg.internal port=5433 dbname='my db' user=app password='x y'", "pg.internal",
         5433, "my db", "app"),
        ("host = pg  dbname=a\\ b", "pg", None, "a b", None),
        ("Host=npg.svc;Port=5434;Database=inventory;Username=inv;Maximum Pool Size=50",
         "npg.svc", 5434, "inventory", "inv"),
        ("Server=npg;User ID=u;Database=d", "npg", None, "d", "u"),
    ],
)
def test_route_from_url(url, host, port, db, user):
    route = route_from_url(url, SRC)
    assert route is not None
    assert (route.host, route.port, route.dbname, route.user) == (host, port, db, user)
    assert route.source == SRC


@pytest.mark.parametrize("url", ["mysql://m/x", "jdbc:mysql://m:3306/x", "redis://r:6379",
                                 "postgres://${DB_HOST}:5432/x", "just words", "",
                                 "host='unterminated"])
def test_route_from_url_rejects(url):
    assert route_from_url(url, SRC) is None


def _env(**values):
    return tuple(EnvVar(name=k, value=v, source=Source(path="d.yaml", line=i + 1))
                 for i, (k, v) in enumerate(values.items()))


def test_route_from_env_url_first_then_parts():
    r = route_from_env(_env(PGHOST="ignored", DATABASE_URL="postgres://u@main:5432/app"))
    assert r.host == "main" and r.source.key == "DATABASE_URL" and r.source.line == 2
    r = route_from_env(_env(PGHOST="pgb", PGPORT="6432", PGDATABASE="app", PGUSER="web"))
    assert (r.host, r.port, r.dbname, r.user, r.source.key) == ("pgb", 6432, "app", "web",
                                                                 "PGHOST")
    r = route_from_env(_env(DB_HOST="db", DB_PORT="5432", DB_USERNAME="x", DB_DATABASE="y"))
    assert (r.host, r.port, r.dbname, r.user) == ("db", 5432, "y", "x")
    r = route_from_env(_env(POSTGRES_HOST="pg", POSTGRES_DB="z"))
    assert (r.host, r.dbname) == ("pg", "z")
    r = route_from_env(_env(ORDERS_DATABASE_URL="postgresql://o/orders"))
    assert r.host == "o"
    assert route_from_env(_env(REDIS_HOST="r", PATH="/bin")) is None


def test_java_properties_syntax():
    text = (
        "# comment\n"
        "! bang comment\n"
        "a=1\n"
        "b : 2\n"
        "c 3\n"
        "d = multi \\\n"
        "    line\\\n"
        "   end\n"
        "e\\:f = g\n"
        "uni=\\u0041\\tB\n"
        "   indented.key=  v  \n"
        "empty\n"
        "odd=x\\\\\n"
        "next=1\n"
    )
    (doc,) = parse_properties(text)
    got = {e.key: (e.value, e.line) for e in doc}
    assert got["a"] == ("1", 3)
    assert got["b"] == ("2", 4)
    assert got["c"] == ("3", 5)
    assert got["d"] == ("multi lineend", 6)
    assert got["e:f"] == ("g", 9)
    assert got["uni"] == ("A\tB", 10)
    assert got["indented.key"] == ("v  ", 11)
    assert got["empty"] == ("", 12)
    assert got["odd"] == ("x\\", 13)  # even backslashes: no continuation
    assert got["next"] == ("1", 14)
    with pytest.raises(PropError) as err:
        parse_properties("x=\\u12G4\n")
    assert err.value.line == 1


def test_properties_multi_document():
    docs = parse_properties("a=1\n#---\na=2\n!---\nb=3\n")
    assert [[(e.key, e.value, e.line) for e in d] for d in docs] == [
        [("a", "1", 1)], [("a", "2", 3)], [("b", "3", 5)]]


def test_urls_without_a_query_or_credentials_read_as_with_the_parsers():
    """The shortcuts (no '?': no query parameters; no '@': nothing to redact) give what
    urlsplit/parse_qsl/parse_qs give."""
    from urllib.parse import parse_qs

    from advisor.read.apps.urls import _parse_jdbc
    from advisor.read.sql.drivers import _query_params, _redact

    for url in ["jdbc:postgresql://db:5432/app", "postgresql://db/app", "jdbc:postgresql:app",
                "postgresql://[::1", "jdbc:postgresql://h/d?user=u&prepareThreshold=0",
                "postgresql://u:secret@db/app?options=-c%20x%3D1", "postgresql://u@db/app"]:
        body = url.removeprefix("jdbc:")
        query = body.partition("?")[2]
        if "?" not in url:
            assert _query_params(url) == {} and not parse_qs(query)
        if "@" not in url:
            assert _redact(url) == url
    assert _redact("postgresql://u:secret@db/app") == "postgresql://u:***@db/app"
    assert _query_params("jdbc:postgresql://h/d?PrepareThreshold=0") == {"preparethreshold": "0"}
    assert _parse_jdbc("postgresql://h:1/d") == {"host": "h", "port": "1", "dbname": "d"}
    assert _parse_jdbc("postgresql://h/d?user=u")["user"] == "u"


def test_a_host_variable_that_carries_its_port_is_split():
    """POSTGRES_HOST=db.svc:5432 (Tranga reads host and port from one variable):
    the host is the name before the port, which links."""
    env = (EnvVar(name="POSTGRES_HOST", value="pg-rw.database.svc.cluster.local:5433",
                  source=SRC), EnvVar(name="POSTGRES_DB", value="tranga", source=SRC))
    route = route_from_env(env)
    assert route is not None
    assert (route.host, route.port, route.dbname) == (
        "pg-rw.database.svc.cluster.local", 5433, "tranga")


@pytest.mark.parametrize("other", [
    {"DB_CONNECTION": "mysql"},  # Laravel (Pelican)
    {"DB_PORT": "3306"},  # BookStack
    {"DB_TYPE": "mariadb"},
    {"DATABASE_ENGINE": "django.db.backends.mysql"},
])
def test_a_host_family_of_another_database_engine_is_no_route(other):
    """DB_HOST of a MySQL or MariaDB is not a PostgreSQL client: no route, so no PA107
    'connects to host mariadb...' (gavinmcfall/home-ops: pelican, bookstack)."""
    prefix = "DATABASE" if "DATABASE_ENGINE" in other else "DB"
    env = (EnvVar(name=f"{prefix}_HOST", value="mariadb.database.svc.cluster.local",
                  source=SRC),
           *(EnvVar(name=k, value=v, source=SRC) for k, v in other.items()))
    assert route_from_env(env) is None


def test_a_host_family_with_the_postgresql_port_is_a_route():
    env = (EnvVar(name="DB_HOST", value="pg-rw.database.svc", source=SRC),
           EnvVar(name="DB_PORT", value="5432", source=SRC),
           EnvVar(name="DB_CONNECTION", value="pgsql", source=SRC))
    route = route_from_env(env)
    assert route is not None and route.host == "pg-rw.database.svc" and route.port == 5432


def test_a_lone_bare_host_takes_the_bare_database_and_user_of_another_family():
    """saasodoo's services: POSTGRES_HOST (and _PORT) from a shared ConfigMap, DB_NAME
    and the user from their own; their pydantic settings build the DSN from exactly
    these. With no other database host or URL in the container, DB_NAME is the route's
    database."""
    r = route_from_env(_env(POSTGRES_HOST="pooler", POSTGRES_PORT="5432", DB_NAME="admin",
                            DB_USER="admin_service", REDIS_HOST="redis"))
    assert (r.host, r.port, r.dbname, r.user) == ("pooler", 5432, "admin", "admin_service")
    # the family's own names win
    r = route_from_env(_env(POSTGRES_HOST="pooler", POSTGRES_DB="own", DB_NAME="other"))
    assert r.dbname == "own"
    # DB_HOST's family takes POSTGRES_DB/POSTGRES_USER the same way
    r = route_from_env(_env(DB_HOST="db", POSTGRES_DB="app", POSTGRES_USER="web"))
    assert (r.dbname, r.user) == ("app", "web")


@pytest.mark.parametrize("other", [
    {"DB_HOST": "db"},  # DB_NAME may be DB_HOST's
    {"ANALYTICS_POSTGRES_HOST": "warehouse"},  # a second database host
    {"MONGODB_HOST": "mongo"},
    {"DB_HOST": None},  # from a Secret not held: still a second host
    {"REPORTS_DATABASE_URL": "postgresql://r/reports"},  # a URL names a database too
    {"EVENTS": "postgresql://e/events"},
    {"CACHE": "host=c dbname=cache"},
])
def test_bare_parts_are_not_taken_when_another_database_is_named(other):
    from advisor.read.apps.urls import lone_host_parts

    env = _env(POSTGRES_HOST="pooler", DB_NAME="a", DB_USER="u", DB_PORT="6432", **other)
    assert lone_host_parts("POSTGRES_HOST", env) == {"port": None, "dbname": None,
                                                     "user": None}
    assert lone_host_parts("POSTGRES_HOST", _env(POSTGRES_HOST="pooler", DB_NAME="a")) \
        == {"port": None, "dbname": "a", "user": None}


def test_bare_parts_that_disagree_or_an_application_host_give_none():
    from advisor.read.apps.urls import lone_host_parts

    # DB_NAME=a beside DATABASE_NAME=b: which one the application reads is not known
    assert lone_host_parts("POSTGRES_HOST", _env(POSTGRES_HOST="p", DB_NAME="a",
                                                 DATABASE_NAME="b"))["dbname"] is None
    # an application's own host (BILLING_DB_HOST) has its own siblings, not the bare ones
    assert lone_host_parts("BILLING_DB_HOST", _env(BILLING_DB_HOST="p",
                                                   DB_NAME="a"))["dbname"] is None
    # another variable whose value is a server of the repository (the caller knows them)
    env = _env(POSTGRES_HOST="p", DB_NAME="a", WAREHOUSE="wh")
    assert lone_host_parts("POSTGRES_HOST", env, lambda v: v == "wh")["dbname"] is None
    assert lone_host_parts("POSTGRES_HOST", env, lambda v: False)["dbname"] == "a"
