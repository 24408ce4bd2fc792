from .base import *  # noqa: F403

DEBUG = False
DATABASES["default"]["OPTIONS"] = {"pool": {"min_size": 2, "max_size": 8}}
