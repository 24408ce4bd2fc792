import os

from fastapi import FastAPI
from psycopg_pool import ConnectionPool

pool = ConnectionPool(conninfo=os.environ["DATABASE_URL"], min_size=2, max_size=20, open=False)
app = FastAPI()
