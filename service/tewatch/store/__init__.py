"""The store, grouped by role: schema/ (the tables and what their columns can keep), engine/ (engines,
sessions, migrations run from code, SQLite's write turns and checkpoints), reads/ (typed rows and the
queries of the API and the pages), writes/ (bulk inserts, API tokens). migrations/ stays here, beside
them: Alembic's script_location (engine/migrate.py) and its env.py point at this folder."""
