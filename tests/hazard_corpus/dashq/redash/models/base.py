from sqlalchemy import text
from sqlalchemy.orm import Session

from redash import settings

SQLALCHEMY_DATABASE_URI = settings.SQLALCHEMY_DATABASE_URI


def set_search_path(session: Session, schema: str) -> None:
    session.execute(text(f"SET search_path TO {schema}"))  # expect: PA401 f-string session SET through text()


def refresh_stats(session: Session) -> None:
    session.execute(text("SET LOCAL statement_timeout = '30s'"))  # safe: PA401 SET LOCAL
    session.execute(text("REFRESH MATERIALIZED VIEW query_stats"))  # safe: plain statement


def lock_scheduler(session: Session) -> bool:
    stmt = text("SELECT pg_try_advisory_lock(:key)")  # expect: PA403 session lock assigned to a name reaching execute
    return session.execute(stmt, {"key": 42}).scalar()


def unlock_scheduler(session: Session) -> None:
    session.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": 42})  # expect: PA403 unlock


def server_default():
    return text("now()")  # safe: SQL expression, not a statement
