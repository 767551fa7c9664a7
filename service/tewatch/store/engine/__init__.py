"""Engines and sessions for SQLite and PostgreSQL, migrations run from code, and how writers share a
database: SQLite's write turns and checkpoints, which errors are worth a retry, pausing the collector."""
