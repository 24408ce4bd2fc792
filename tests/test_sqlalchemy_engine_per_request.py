"""An engine made inside a function a request handler runs, and thrown away there, is a
new pool per request (audit 34 D8, krish-96/FlaskPostgresK8s shape, written here in our
own words): `get_engine()` makes `create_engine(uri)` and returns `engine.connect()`;
flask-restx Resources call it per request. Each request in flight opens a connection of
its own new pool, kept open until the cyclic garbage collector frees the engine
(sqlalchemy 2.0.36 lib/sqlalchemy/engine/create.py:729-766: the first_connect listener
on the pool closes over the engine), and Flask's dev server runs a thread per request
(flask 3.1.0 app.py:655): unbounded (PA102), not one 5 + 10 QueuePool per process.
An engine the factory returns, or caches, is made once: that stays 5 + 10."""

from pathlib import Path

from advisor.read.apps import pools_for_container, scan_app_dir
from advisor.read.fs import Root
from tests.apphelpers import container

ENV = {"PG_HOST": "pg", "PG_USER": "svc", "PG_PASS": "pw"}
CONNECTION = '''import os

from sqlalchemy import create_engine


def pg_uri():
    return "postgresql://%s:%s@%s:5432/notes" % (
        os.environ["PG_USER"], os.environ["PG_PASS"], os.environ["PG_HOST"])


def open_engine_connection():
    engine = create_engine(pg_uri())
    conn = engine.connect()
    return conn
'''
HELPER = '''from sqlalchemy import text

from notes.db.connection import open_engine_connection


def fetch_rows(query, **params):
    conn = open_engine_connection()
    return [dict(r._mapping) for r in conn.execute(text(query), params)]
'''
ROUTES = '''from flask_restx import Namespace, Resource

from notes.db.helper import fetch_rows

ns = Namespace("notes")


class NoteStore:
    @staticmethod
    def by_id(note_id):
        return fetch_rows("select * from notes where id = :id", id=note_id)


@ns.route("/<int:note_id>")
class Note(Resource):
    def get(self, note_id):
        return NoteStore().by_id(note_id)
'''
APP = '''from flask import Flask
from flask_restx import Api

from notes.routes import ns

app = Flask(__name__)
Api(app).add_namespace(ns)

if __name__ == "__main__":
    app.run(host="0.0.0.0", port=5000, debug=True)
'''
KEPT = '''import functools
import os

from sqlalchemy import create_engine


def pg_uri():
    return "postgresql://%s:%s@%s:5432/notes" % (
        os.environ["PG_USER"], os.environ["PG_PASS"], os.environ["PG_HOST"])


@functools.lru_cache
def open_engine_connection():
    engine = create_engine(pg_uri())
    return engine.connect()
'''


def _pools(tmp_path: Path, connection: str):
    files = {"requirements.txt": "Flask==3.1.0\nflask-restx==1.3.0\nSQLAlchemy==2.0.36\n"
                                 "psycopg2-binary==2.9.10\n",
             "notes/__init__.py": "", "notes/db/__init__.py": "",
             "notes/db/connection.py": connection, "notes/db/helper.py": HELPER,
             "notes/routes.py": ROUTES, "notes/app.py": APP}
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return pools_for_container(container(ENV, command=("python", "notes/app.py")),
                               scan_app_dir(Root.of(tmp_path), "")).pools


def test_an_engine_made_and_dropped_per_request_is_unbounded(tmp_path):
    (pool,) = _pools(tmp_path, CONNECTION)
    assert pool.bound == "unbounded", pool
    assert "per request" in pool.label and "open_engine_connection()" in pool.note
    assert pool.route is not None and pool.route.host == "pg"


def test_a_cached_engine_factory_is_one_pool_per_process(tmp_path):
    (pool,) = _pools(tmp_path, KEPT)
    assert pool.bound == "default" and pool.size.value == 15, pool


def test_a_returned_engine_is_one_pool_per_process(tmp_path):
    kept = CONNECTION.replace("    conn = engine.connect()\n    return conn\n",
                              "    return engine\n")
    (pool,) = _pools(tmp_path, kept)
    assert pool.bound == "default" and pool.size.value == 15, pool
