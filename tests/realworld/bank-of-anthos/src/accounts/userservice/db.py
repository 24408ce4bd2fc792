"""Users table access for userservice."""

from sqlalchemy import create_engine


class UserDb:
    def __init__(self, uri):
        self.engine = create_engine(uri)
