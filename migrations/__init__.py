"""Alembic migrations; `adapters.sql.migrate` runs them, locating this folder via `__file__`."""
