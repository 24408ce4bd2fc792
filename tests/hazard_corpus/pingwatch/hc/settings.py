import os
from typing import Any, Mapping

DATABASES: Mapping[str, Any] = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",  # safe: PA407 SQLite default
        "NAME": os.getenv("DB_NAME", "hc.sqlite"),
    }
}

if os.getenv("DB") == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",  # safe: PA407 server-side cursors unused: no QuerySet.iterator() in the app
            "HOST": os.getenv("DB_HOST", ""),
            "NAME": os.getenv("DB_NAME", "hc"),
            "CONN_MAX_AGE": int(os.getenv("DB_CONN_MAX_AGE", "0")),
        }
    }
