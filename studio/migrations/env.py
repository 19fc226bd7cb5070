"""Alembic environment: runs on the connection ``studio.db.upgrade_db`` passes in (no alembic.ini needed)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection
from sqlmodel import SQLModel

import studio.models  # noqa: F401 - registers every table on SQLModel.metadata

target_metadata = SQLModel.metadata


def run_migrations() -> None:
    connection = context.config.attributes.get("connection")
    if connection is None:
        from studio.db import create_db_engine

        url = context.config.get_main_option("sqlalchemy.url")
        if not url:
            raise RuntimeError("set sqlalchemy.url or pass a connection in config.attributes['connection']")
        with create_db_engine(url).begin() as own_connection:
            _run(own_connection)
        return
    _run(connection)


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,  # SQLite can only ALTER tables by copying them
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations()
