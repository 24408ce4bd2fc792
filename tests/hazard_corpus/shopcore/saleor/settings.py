import os

import dj_database_url

DATABASE_CONNECTION_DEFAULT_NAME = "default"
DATABASE_CONNECTION_REPLICA_NAME = "replica"
DB_CONN_MAX_AGE = int(os.environ.get("DB_CONN_MAX_AGE", 0))

DATABASES = {
    DATABASE_CONNECTION_DEFAULT_NAME: dj_database_url.config(  # expect: PA407 dj_database_url postgres DATABASES, iterator() used, no DISABLE_SERVER_SIDE_CURSORS
        default="postgres://shop:shop@localhost:5432/shop",
        conn_max_age=DB_CONN_MAX_AGE,
    ),
    DATABASE_CONNECTION_REPLICA_NAME: dj_database_url.config(  # safe: PA407 one finding per file: reported on the first entry
        env="DATABASE_URL_REPLICA",
        default="postgres://shop:shop@localhost:5432/shop",
        conn_max_age=DB_CONN_MAX_AGE,
    ),
}

SEARCH_LABEL = "Reset search index"  # safe: label
