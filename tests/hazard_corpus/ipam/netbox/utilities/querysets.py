from django.db import connection

STATUS_CHOICES = (
    ("active", "Set active"),  # safe: choice label
    ("offline", "Reset to offline"),  # safe: choice label that parses as RESET
)


def count_rows(table):
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL statement_timeout = '2s'")  # safe: PA401 SET LOCAL
        cursor.execute(f"SELECT count(*) FROM {table}")  # safe: plain query
        return cursor.fetchone()[0]


def rebuild_paths():
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")  # expect: PA401 session SET
        cursor.execute("SELECT pg_advisory_lock(%s)", [99])  # expect: PA403 session advisory lock
        cursor.execute("SELECT pg_advisory_unlock(%s)", [99])  # expect: PA403 unlock
        cursor.execute("SET session_replication_role = DEFAULT")  # expect: PA401 session SET back
