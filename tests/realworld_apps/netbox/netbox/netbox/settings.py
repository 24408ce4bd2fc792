import importlib

configuration = importlib.import_module("netbox.configuration")

DATABASE = getattr(configuration, "DATABASE", None)
DATABASES = getattr(configuration, "DATABASES", {"default": DATABASE})
