"""Options and helpers shared by the studio's store commands."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
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


def missing_sqlite_file(database_url: str) -> Path | None:
    """The SQLite file ``database_url`` names when it does not exist yet; None for other stores or existing files."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(database_url)
    except ArgumentError:
        return None  # migrated_engine says what is wrong with it
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    path = Path(url.database)
    return None if path.exists() else path


def refuse_missing_store(database_url: str, *, named: bool) -> None:
    """A click error when ``database_url`` is a SQLite file that does not exist.

    Only commands that put data into a store create one (``ingest``, ``users add``, ``db upgrade``, ``demo``);
    the others would otherwise serve or read a new, empty store — a forgotten or mistyped ``--db`` would look
    like lost work. ``named`` says whether the URL came from ``--db``/``$H2H_DATABASE_URL`` or is the default.
    """
    path = missing_sqlite_file(database_url)
    if path is None:
        return
    how = "" if named else " (the default store: no --db was given and $H2H_DATABASE_URL is not set)"
    raise click.ClickException(
        f"no store at {path}{how}; pass --db URL for an existing one (the demo's: "
        "--db sqlite:///h2h-demo/studio.sqlite), or create one with `h2h db upgrade --db URL` or `h2h ingest`"
    )


@contextmanager
def open_store(db_url: str | None, *, create: bool = False) -> Iterator[Engine]:
    """The store's engine, migrated to the latest schema; service errors become click errors.

    A SQLite file that does not exist is created only with ``create`` (commands that store data); otherwise it is
    a click error saying how to name the right store (:func:`refuse_missing_store`).
    """
    import os

    from studio.errors import ServiceError
    from studio.settings import get_settings

    settings = get_settings(**({"database_url": db_url} if db_url else {}))
    if not create:
        refuse_missing_store(settings.database_url, named=bool(db_url or os.environ.get("H2H_DATABASE_URL")))
    engine = migrated_engine(settings.database_url, settings.sqlite_busy_timeout_ms)
    try:
        yield engine
    except ServiceError as error:
        raise click.ClickException(error.detail) from None
    finally:
        engine.dispose()
