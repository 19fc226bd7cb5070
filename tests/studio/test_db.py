"""The store: migrations match the models, SQLite pragmas, write sessions take the lock at BEGIN."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, text
from sqlmodel import SQLModel

import studio.models  # noqa: F401 - registers the tables
from studio.db import alembic_config, create_db_engine, read_session, upgrade_db, write_session
from studio.settings import get_settings


def test_migrations_create_exactly_the_models_tables(engine: Engine) -> None:
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, SQLModel.metadata) == []
        head = ScriptDirectory.from_config(alembic_config()).get_current_head()
        assert context.get_current_revision() == head
    upgrade_db(engine)  # a second upgrade is a no-op


def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(tmp_path: Path) -> None:
    engine = create_db_engine(f"sqlite:///{tmp_path / 'x.sqlite'}", busy_timeout_ms=1234)
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 1234
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        # FULL (2): every acknowledged answer is on disk before it is acknowledged (NORMAL, 1, may drop the last ones)
        assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 2
    engine.dispose()


def test_sqlite_durability_follows_the_setting(tmp_path: Path) -> None:
    from studio.web.api import store_engine  # the studio's own engine, as `h2h studio` builds it

    settings = get_settings(database_url=f"sqlite:///{tmp_path / 'y.sqlite'}", sqlite_synchronous="NORMAL")
    engine = store_engine(settings)
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 1
    engine.dispose()
    with pytest.raises(ValueError, match="sqlite_synchronous: 'SOMETIMES' is not one of OFF, NORMAL, FULL, EXTRA"):
        create_db_engine(f"sqlite:///{tmp_path / 'z.sqlite'}", sqlite_synchronous="SOMETIMES")


@pytest.mark.parametrize("second_engine", [False, True], ids=["same-process", "other-process"])
def test_a_sqlite_write_session_holds_the_write_lock_from_begin(tmp_path: Path, second_engine: bool) -> None:
    path = tmp_path / "lock.sqlite"
    engine = create_db_engine(f"sqlite:///{path}", busy_timeout_ms=100)
    # A second engine has its own in-process queue, like another process: only SQLite's lock stops it.
    other = create_db_engine(f"sqlite:///{path}", busy_timeout_ms=100) if second_engine else engine
    with engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE t (x INTEGER)")
    entered, release, outcome = threading.Event(), threading.Event(), []

    def holder() -> None:
        with write_session(engine) as session:
            session.execute(text("SELECT 1"))  # a read only: the lock must already be held (BEGIN IMMEDIATE)
            entered.set()
            release.wait()

    thread = threading.Thread(target=holder)
    thread.start()
    entered.wait()
    try:
        with write_session(other) as session:
            session.execute(text("INSERT INTO t VALUES (1)"))
    except Exception as error:  # noqa: BLE001 - we assert on the message below
        outcome.append(str(error))
    with read_session(other) as session:  # readers are never blocked (WAL)
        assert session.execute(text("SELECT count(*) FROM t")).scalar() == 0
    release.set()
    thread.join()
    with write_session(other) as session:  # once released, the next writer goes through
        session.execute(text("INSERT INTO t VALUES (2)"))
    engine.dispose()
    other.dispose()
    assert outcome and "locked" in outcome[0]


def test_settings_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("H2H_DATABASE_URL", "postgresql://postgres@127.0.0.1/x")
    monkeypatch.setenv("H2H_LEASE_SECONDS", "30")
    settings = get_settings()
    assert (settings.database_url, settings.lease_seconds) == ("postgresql://postgres@127.0.0.1/x", 30)
    assert get_settings(lease_seconds=5).lease_seconds == 5


@pytest.mark.postgres
def test_postgres_connections_are_not_pinged_and_a_dead_pool_is_replaced_after_one_failure(postgres_url: str) -> None:
    """No ``SELECT 1`` before each request: a connection the server dropped fails the one request that meets it,
    and that failure invalidates the whole pool, so the next requests get new connections instead of failing in
    turn."""
    import psycopg
    from sqlalchemy import exc

    from studio.db import is_store_fault

    engine = create_db_engine(postgres_url)
    assert engine.pool._pre_ping is False  # noqa: SLF001 - the setting under test
    held = [engine.connect() for _ in range(3)]  # three pooled connections, then back to the pool
    for connection in held:
        connection.execute(text("SELECT 1"))
        connection.close()
    database = engine.url.database
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (database,),
        )
    failures = 0
    for _ in range(4):
        try:
            with read_session(engine) as session:
                assert session.execute(text("SELECT 41 + 1")).scalar_one() == 42
        except exc.DBAPIError as error:
            assert is_store_fault(error)
            failures += 1
    engine.dispose()
    assert failures == 1


@pytest.mark.postgres
def test_postgres_read_sessions_are_read_only_and_keep_the_statements_prepared(postgres_url: str) -> None:
    """A read session is ``READ ONLY`` (a write in it fails) and ends with COMMIT, not ROLLBACK: psycopg forgets every
    statement it prepared on a connection at each ROLLBACK, which left the hot path planning its statements again on
    every request. Prepared statements run on generic plans; a write session afterwards begins as the database's
    default (no ``READ WRITE`` forced: see ``test_store_faults``'s read-only database)."""
    from sqlalchemy import exc

    from studio.db import PLAN_CACHE_MODE

    engine = create_db_engine(postgres_url)
    query = text("SELECT count(*) FROM campaign WHERE id > :floor")
    try:
        for _ in range(8):  # psycopg prepares a statement at its 5th run on a connection; used one at a time: one
            with read_session(engine) as session:
                session.execute(query, {"floor": 0})
            with write_session(engine) as session:
                session.execute(query, {"floor": 0})
        with read_session(engine) as session:
            assert session.execute(text("SHOW transaction_read_only")).scalar_one() == "on"
            assert session.execute(text("SHOW plan_cache_mode")).scalar_one() == PLAN_CACHE_MODE
            prepared = session.execute(text("SELECT statement, generic_plans FROM pg_prepared_statements")).all()
        assert any("FROM campaign" in sql and generic >= 8 for sql, generic in prepared), prepared
        with write_session(engine) as session:
            assert session.execute(text("SHOW transaction_read_only")).scalar_one() == "off"
        with pytest.raises(exc.DBAPIError, match="read-only transaction"), read_session(engine) as session:
            session.execute(text("UPDATE campaign SET status = status"))
    finally:
        engine.dispose()
