from .base import *  # noqa: F403

DEBUG = False
DATABASES["default"]["OPTIONS"] = {"pool": {"min_size": 2, "max_size": 8}}
# Django's pool refuses persistent connections: CONN_MAX_AGE must be 0 with OPTIONS pool
DATABASES["default"]["CONN_MAX_AGE"] = 0
