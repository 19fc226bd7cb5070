"""What a test tier needs from the machine (PostgreSQL, Chromium, an engine's environment), said one way.

Outside CI a missing requirement skips the tests that need it, with the reason and how to install it.
Under ``CI=true`` it fails them instead: CI must never go green by running less than it claims to.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


def in_ci() -> bool:
    """True when the ``CI`` environment variable says this is a CI run (``true``/``1``/``yes``)."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def require(available: bool, reason: str) -> None:
    """Skip the calling test (or fixture) when ``available`` is false; under CI, fail it with ``reason``."""
    if available:
        return
    if in_ci():
        pytest.fail(f"CI=true and a test requirement is missing: {reason}", pytrace=False)
    pytest.skip(reason)


POSTGRES_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


@contextmanager
def fresh_postgres_database(prefix: str) -> Iterator[str]:
    """A new, empty PostgreSQL database named ``prefix`` + a random suffix on 127.0.0.1:5432, as a SQLAlchemy URL;
    dropped (``WITH (FORCE)``) when the block ends. PostgreSQL unreachable: :func:`require` says so."""
    import psycopg

    name = f"{prefix}{uuid.uuid4().hex[:12]}"
    try:
        admin = psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as error:
        require(False, f"PostgreSQL at 127.0.0.1:5432 is not reachable: {error} (tests/run.sh starts it)")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
