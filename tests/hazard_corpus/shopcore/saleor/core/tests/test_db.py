from django.db import connection


def test_timeout():
    with connection.cursor() as cursor:
        cursor.execute("SET statement_timeout = 1")  # safe: PA401 tests not scanned
