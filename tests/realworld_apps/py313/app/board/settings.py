import os

type Alias = str

HOSTS = {"primary": os.environ.get("DB_HOST", "localhost")}
APP_NAME = f"board-{HOSTS["primary"]}"

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": os.environ.get("DB_HOST", "localhost"),
        "NAME": "board",
        "OPTIONS": {"application_name": f"{APP_NAME!r}"},
    }
}
