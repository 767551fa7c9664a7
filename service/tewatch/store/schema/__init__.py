"""The tables (SQLAlchemy models), the limits of their columns, and the format of the stored case archive.
Imports no other part of the store; the Alembic migrations that change these tables live in
tewatch.store.migrations."""
