import click
from sqlalchemy import text

from redash.models import db


@click.command(help="Reset the database schema")  # safe: CLI help text
def reset():
    db.session.execute(text("DISCARD ALL"))  # safe: DISCARD ALL is not a PgBouncer hazard
    db.session.execute(text("LISTEN schema_changes"))  # expect: PA402 LISTEN through the pooler


@click.command()
def load_extension():
    query = "LOAD '{}'".format("pg_stat_statements")  # expect: PA408 LOAD built with .format
    db.session.execute(text(query))
