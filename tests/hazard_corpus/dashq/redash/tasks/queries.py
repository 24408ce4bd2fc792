import logging

from redash.models import db

logger = logging.getLogger(__name__)


def refresh_queries():
    logger.info("Begin refresh of scheduled queries")  # safe: log message
    conn = db.engine.raw_connection()
    cur = conn.cursor()
    cur.execute("BEGIN")  # safe: PA409 a transaction block only breaks in statement mode; pooler here is transaction mode
    cur.execute("DECLARE jobs CURSOR WITH HOLD FOR SELECT id FROM queries")  # expect: PA407 WITH HOLD cursor
    cur.execute("COMMIT")  # safe: COMMIT
    cur.execute("CREATE TEMP TABLE refresh_ids (id int)")  # expect: PA406 temp table outlives the transaction
