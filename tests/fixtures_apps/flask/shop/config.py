import os

SQLALCHEMY_DATABASE_URI = os.environ.get("DATABASE_URL", "postgresql://localhost/shop")
SQLALCHEMY_ENGINE_OPTIONS = {"pool_size": 10, "max_overflow": 0, "pool_recycle": 1800}
SQLALCHEMY_BINDS = {"reports": "postgresql://reports@reports-db.analytics.svc/reports"}
