"""Options and helpers shared by the studio's store commands."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # the ORM is imported only when a command runs: `h2h --help` stays fast
    from sqlalchemy import Engine


def db_option(function: Callable[..., Any]) -> Callable[..., Any]:
    """``--db URL``: the store (default ``H2H_DATABASE_URL``, else the SQLite file of the settings)."""
    return click.option(
        "--db",
        "db_url",
        default=None,
        metavar="URL",
        help="Database URL (sqlite:///file.sqlite or postgresql://...); default $H2H_DATABASE_URL.",
    )(function)


def migrated_engine(database_url: str, busy_timeout_ms: int) -> Engine:
    """An engine on ``database_url``, migrated to the latest schema; a store that cannot be opened (no such
    database, server down, bad URL) is a click error naming it, not a traceback."""
    from sqlalchemy.exc import ArgumentError, OperationalError

    from studio.db import create_db_engine, upgrade_db

    try:
        engine = create_db_engine(database_url, busy_timeout_ms=busy_timeout_ms)
    except ArgumentError as error:
        raise click.ClickException(f"{database_url}: not a database URL ({error})") from None
    try:
        upgrade_db(engine)
    except OperationalError as error:
        engine.dispose()
        raise click.ClickException(f"{database_url}: cannot open the store: {error.orig}") from None
    return engine


@contextmanager
def open_store(db_url: str | None) -> Iterator[Engine]:
    """The store's engine, migrated to the latest schema; service errors become click errors."""
    from studio.services.errors import ServiceError
    from studio.settings import get_settings

    settings = get_settings(**({"database_url": db_url} if db_url else {}))
    engine = migrated_engine(settings.database_url, settings.sqlite_busy_timeout_ms)
    try:
        yield engine
    except ServiceError as error:
        raise click.ClickException(error.detail) from None
    finally:
        engine.dispose()
