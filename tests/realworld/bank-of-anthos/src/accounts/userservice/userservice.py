import os

from db import UserDb
from flask import Flask


def create_app():
    app = Flask(__name__)
    app.config["users"] = UserDb(os.environ.get("ACCOUNTS_DB_URI"))
    return app
