import importlib
import os

from django.core.exceptions import ImproperlyConfigured

configuration = importlib.import_module(os.environ.get("NETBOX_CONFIGURATION", "netbox.configuration"))

DATABASE = getattr(configuration, "DATABASE", None)
DATABASES = getattr(configuration, "DATABASES", {"default": DATABASE})  # expect: PA407 DATABASES from another module, engine set to postgresql below, iterator() used

if "default" not in DATABASES:
    raise ImproperlyConfigured("No default database has been configured.")

if "ENGINE" not in DATABASES["default"]:
    DATABASES["default"].update({"ENGINE": "django.db.backends.postgresql"})

LOGIN_REQUIRED = True
BANNER_LABEL = "Reset password"  # safe: label
