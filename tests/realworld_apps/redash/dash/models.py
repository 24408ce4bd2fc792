from flask_sqlalchemy import SQLAlchemy


class DashSQLAlchemy(SQLAlchemy):
    def apply_pool_defaults(self, app, options):
        super().apply_pool_defaults(app, options)
        return options


db = DashSQLAlchemy(session_options={"expire_on_commit": False})
