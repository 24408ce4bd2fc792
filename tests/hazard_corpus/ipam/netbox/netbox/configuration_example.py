DATABASES = {
    "default": {
        "NAME": "netbox",
        "USER": "",
        "PASSWORD": "",
        "HOST": "localhost",
        "ENGINE": "django.db.backends.postgresql",  # safe: PA407 example configuration, not deployed
    }
}
