import psycopg2

from redash.query_runner import BaseSQLQueryRunner

TYPES_MAP = {"Reset": 1}  # safe: mapping key


class PostgreSQL(BaseSQLQueryRunner):
    noop_query = "SELECT 1"  # safe: plain query

    def run_query(self, query, user):
        connection = psycopg2.connect(**self._connection_args())
        cursor = connection.cursor()
        cursor.execute("SET statement_timeout = %s", (self.configuration.get("timeout", 0),))  # expect: PA401 session SET through psycopg2
        cursor.execute(query)
        return cursor.fetchall()

    def _annotate(self, query):
        return "/* Set by Redash */ " + query  # safe: comment text spliced into a query, no statement
