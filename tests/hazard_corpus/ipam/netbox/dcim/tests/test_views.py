from django.db import connection


def test_lock():
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(1)")  # safe: PA403 tests not scanned
