import os

DEBUG = False
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "blog"]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("DB_NAME", "mysite"),
        "USER": os.environ.get("DB_USER", "mysite"),
        "HOST": os.environ.get("DB_HOST", "localhost"),
        "PORT": os.environ.get("DB_PORT", "5432"),
        "CONN_MAX_AGE": 60,
    },
    "replica": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "mysite",
        "HOST": os.environ.get("DB_REPLICA_HOST", "localhost"),
        "CONN_MAX_AGE": 60,
    },
}
DATABASE_ROUTERS = ["mysite.routers.PrimaryReplicaRouter"]
