"""Alembic environment: runs against the URL or connection that app.migrate hands over."""

from alembic import context
from sqlmodel import SQLModel

import app.models  # noqa: F401  (registers the tables on SQLModel.metadata)
from app.db import make_engine
from app.migrate import declared_by_models

config = context.config
target_metadata = SQLModel.metadata


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
        include_object=declared_by_models,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    engine = make_engine(config.get_main_option("sqlalchemy.url") or "")
    with engine.connect() as connection:
        if connection.dialect.name == "sqlite":
            # A batch migration drops and re-creates tables: with foreign keys on, the
            # drop would cascade into (and delete) the rows of every referencing table.
            connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
            connection.commit()
        # Batch mode: SQLite cannot ALTER most things, so Alembic copies the table.
        context.configure(
            connection=connection,
            target_metadata=target_metadata,
            render_as_batch=True,
            include_object=declared_by_models,
        )
        with context.begin_transaction():
            context.run_migrations()
        if connection.dialect.name == "sqlite":
            broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
            if broken:
                raise RuntimeError(f"migration left dangling foreign keys: {broken[:5]}")
    engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
