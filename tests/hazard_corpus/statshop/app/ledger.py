from django.db import connection, transaction


def post_entry(entry):
    with connection.cursor() as cursor:
        cursor.execute("BEGIN")  # expect: PA409 explicit transaction block behind a statement-mode pool
        cursor.execute("INSERT INTO ledger (amount) VALUES (%s)", [entry.amount])  # safe: single statement
        cursor.execute("COMMIT")  # safe: COMMIT is not flagged itself
        cursor.execute("START TRANSACTION ISOLATION LEVEL SERIALIZABLE")  # expect: PA409 START TRANSACTION
        cursor.execute("SET statement_timeout = 1000")  # expect: PA401 session SET is flagged in statement mode too
    label = "Begin posting"  # safe: label
