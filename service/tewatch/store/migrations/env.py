"""Alembic environment: runs on the connection or URL handed over by tewatch.store.engine.migrate."""

import importlib
import importlib.util

from alembic import context
from sqlalchemy import pool

from tewatch.store.engine.database import make_engine
from tewatch.store.schema.models import Base

# Tables owned by other parts of the service register on the same metadata when they exist.
for _module in ("tewatch.store.schema.alert_models", "tewatch.store.schema.bisection_models"):
    if importlib.util.find_spec(_module) is not None:
        importlib.import_module(_module)

target_metadata = Base.metadata
config = context.config


def _include_object(obj, name, type_, reflected, compare_to) -> bool:
    # SQLite keeps the foreign keys of results and verdicts that revision 0003 drops on PostgreSQL.
    fact_key = type_ == "foreign_key_constraint" and obj.table.name in ("results", "verdicts")
    return not (fact_key and reflected and compare_to is None)


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        include_object=_include_object,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = config.get_main_option("sqlalchemy.url")
    if url is None:
        raise RuntimeError("alembic: no connection given and no sqlalchemy.url configured")
    engine = make_engine(url, poolclass=pool.NullPool)
    with engine.connect() as connection:
        _run(connection)
    engine.dispose()


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
