from contextlib import contextmanager

from django.db import connections, transaction
from psycopg import sql

QUERIES = {
    "lock": "SELECT pg_advisory_lock(%s)",  # expect: PA403 query kept in a dict, run as QUERIES["lock"] (hard: key is not a SQL name)
    "label": "Set up lock",  # safe: label in the same dict
}


@contextmanager
def allow_writer():
    yield


def lock_checkout(token):
    with connections["default"].cursor() as cursor:
        cursor.execute(QUERIES["lock"], [token])


def set_statement_timeout(ms):
    with connections["default"].cursor() as cursor:
        cursor.execute(sql.SQL("SET statement_timeout = {}").format(sql.Literal(ms)))  # expect: PA401 psycopg sql.SQL composed SET


def set_local_timeout(ms):
    with transaction.atomic():
        with connections["default"].cursor() as cursor:
            cursor.execute("SET LOCAL statement_timeout = %s", [ms])  # safe: PA401 SET LOCAL


def set_replica_search_path(schema):
    query = "SET search_path TO %s" % schema  # expect: PA401 %-formatted SET assigned to query
    with connections["replica"].cursor() as cursor:
        cursor.execute(query)
