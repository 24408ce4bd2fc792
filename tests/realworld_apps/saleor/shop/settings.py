import os

import dj_database_url

DB_CONN_MAX_AGE = int(os.environ.get("DB_CONN_MAX_AGE", 0))
if "DATABASE_URL_REPLICA" in os.environ:
    REPLICA_ENV = "DATABASE_URL_REPLICA"
else:
    REPLICA_ENV = "DATABASE_URL"

DATABASES = {
    "default": dj_database_url.config(
        env="DATABASE_URL",
        default="postgres://shop:shop@localhost:5432/shop",
        conn_max_age=DB_CONN_MAX_AGE,
    ),
    "replica": dj_database_url.config(
        env=REPLICA_ENV,
        default="postgres://shop:shop@localhost:5432/shop",
        conn_max_age=DB_CONN_MAX_AGE,
    ),
}
