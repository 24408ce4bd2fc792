from redash.models import db


def test_lock():
    db.session.execute("SELECT pg_advisory_lock(1)")  # safe: PA403 tests not scanned
