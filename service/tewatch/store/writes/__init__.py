"""Writes that belong to the store itself: many-row inserts (COPY on PostgreSQL) and API tokens."""
