"""pool-advisor: a connection-budget linter and config advisor for PostgreSQL deployments."""

__version__ = "0.1.0"
