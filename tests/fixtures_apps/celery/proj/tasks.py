import os

from celery import Celery
from sqlalchemy import create_engine

app = Celery("proj", broker=os.environ.get("BROKER_URL", "redis://redis:6379/0"))
engine = create_engine(os.environ["DATABASE_URL"])


@app.task
def rebuild_report(report_id):
    with engine.begin() as conn:
        conn.exec_driver_sql("select 1")
