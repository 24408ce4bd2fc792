from sqlalchemy import create_engine, event, text

engine = create_engine("postgresql+psycopg2://app@pgbouncer/app")


@event.listens_for(engine, "connect")
def on_connect(dbapi_connection, connection_record):
    cursor = dbapi_connection.cursor()
    cursor.execute("SET search_path TO app, public")  # expect: PA401 per-connection SET through the pooler
    cursor.close()


class Reports:
    lock_sql = "SELECT pg_try_advisory_lock(7)"  # expect: PA403 class attribute reaching execute through self.lock_sql
    title = "Reset reports"  # safe: label

    def run(self, conn):
        conn.execute(text(self.lock_sql))
        conn.execute(text("SELECT pg_advisory_xact_lock(7)"))  # safe: PA403 xact lock
        statements = ["CREATE TEMP TABLE report_rows (id int)", "SELECT 1"]  # expect: PA406 temp table in a list named *statement*
        for s in statements:
            conn.execute(text(s))


def describe():
    return "Load average: %s" % 3  # safe: text formatted with %


def set_session_type(allow_write):
    with engine.raw_connection().cursor() as cursor:
        mode = "READ WRITE" if allow_write else "READ ONLY"
        cursor.execute(f"SET SESSION CHARACTERISTICS AS TRANSACTION {mode};")  # expect: PA401 unparseable with a stand-in: read by its first words


def reporting_engine():
    from sqlalchemy import create_engine as make

    return make("postgresql+psycopg://reports@pgbouncer/reports")  # expect: PA405 SQLAlchemy psycopg 3 dialect, prepare_threshold default 5
