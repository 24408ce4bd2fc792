"""What PostgreSQL and PgBouncer do, per version: parameter types and units,
built-in defaults per major (data/ holds each major's pg_settings), version detection,
PgBouncer parameters and semantics. Pure tables and functions; no repository input."""
