"""The studio's store: engines, sessions and migrations.

SQLite runs in WAL mode with a busy timeout and ``synchronous=FULL`` by default (each commit is on disk before it is
acknowledged; ``NORMAL`` may drop the last commits on a power loss), and a *write* session opens its transaction with
``BEGIN IMMEDIATE`` so it takes the write lock up front: two writers never both read a queue state
and then collide on commit. PostgreSQL takes row locks and transaction-level advisory locks instead: handing out
locks the item's row (``FOR UPDATE SKIP LOCKED``: no campaign-wide lock on the hot path), one person's queue
requests run one at a time (:func:`lock_person`), answer writes lock the item's row; the rarer decisions that must
see a whole campaign still at rest take :func:`lock_campaign`.

PostgreSQL connections are not pinged at each checkout (a round trip per request): a connection found dead fails its
request, and SQLAlchemy then invalidates the whole pool, so every other pooled connection is replaced at its next
checkout instead of failing in turn; connections are also recycled after :data:`POOL_RECYCLE_SECONDS`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, func, text
from sqlalchemy.engine import make_url
from sqlmodel import Session

logger = logging.getLogger(__name__)

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
_BEGIN_OPTION = "h2h_sqlite_begin"
_LOCK_HELD = "h2h_writer_lock_held"
#: Handlers run on at most ``H2H_WORKER_THREADS`` threads (16 by default; anyio's own default, and the most a process
#: ran before the setting, is 40): 40 pooled connections serve them all without the pool closing overflow connections
#: at check-in and opening (and re-running the PRAGMAs on) new ones under load. Connections open as they are needed.
POOL_SIZE = 40
POOL_MAX_OVERFLOW = 20
#: PostgreSQL connections older than this are replaced at checkout (servers and proxies drop long-idle connections).
POOL_RECYCLE_SECONDS = 1800
#: PostgreSQL's plan cache mode for the studio's connections. psycopg prepares a statement on a connection once it
#: has run 5 times there; by default PostgreSQL then plans its first executions for their values and keeps doing so
#: whenever it judges a generic plan no cheaper — which it did for the next-item query on every execution (under
#: ``benchmarks/bench_load.py`` with ``pg_stat_statements``: 0.97 s planning against 0.54 s executing; the other hot
#: statements settled on generic plans). So generic plans are forced: a statement is planned once per connection.
#: The price: a report query a connection has run five times also runs on its generic plan (estimates for an average
#: campaign, not this one); statements run once or rarely are never prepared and are planned for their values.
PLAN_CACHE_MODE = "force_generic_plan"
#: SQLite's ``PRAGMA synchronous`` levels the studio accepts (``Settings.sqlite_synchronous``).
SQLITE_SYNCHRONOUS_LEVELS = ("OFF", "NORMAL", "FULL", "EXTRA")
DEFAULT_SQLITE_SYNCHRONOUS = "FULL"


class StoreBusy(TimeoutError):
    """No SQLite write lock within the busy timeout (this process's writers queue for it first)."""


#: SQLSTATEs of PostgreSQL that mean "the store cannot take this now" rather than "this request is wrong":
#: read-only transaction, server shutting down, too many connections, disk full, out of memory.
_UNAVAILABLE_SQLSTATES = frozenset({"25006", "57P01", "57P02", "57P03", "53000", "53100", "53200", "53300"})


def is_store_fault(error: BaseException) -> bool:
    """Whether ``error`` says the store is unavailable (down, unreachable, locked, read-only, full), not the request.

    SQLite reports a locked, read-only or full database and I/O errors as ``OperationalError``; PostgreSQL a lost or
    refused connection the same way (or as an invalidated connection), and a read-only server by its SQLSTATE.
    """
    from sqlalchemy import exc

    if isinstance(error, StoreBusy | exc.TimeoutError | exc.OperationalError | exc.InterfaceError):
        return True
    if isinstance(error, exc.DBAPIError):
        return bool(error.connection_invalidated) or getattr(error.orig, "sqlstate", None) in _UNAVAILABLE_SQLSTATES
    return False


def normalise_url(url: str) -> str:
    """Map a plain ``postgresql://`` URL to the psycopg 3 driver we install; leave others as given."""
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def _install_sqlite_hooks(engine: Engine, busy_timeout_ms: int, synchronous: str) -> None:
    """WAL + busy timeout + ``synchronous`` on connect; emit our own BEGIN so write sessions can ask for IMMEDIATE.

    Writers of this process also queue on a lock of their own before ``BEGIN IMMEDIATE``: SQLite's
    busy handler polls with sleeps of up to 100 ms, which under 50 concurrent clients turns into long
    tail latencies; a queue in-process hands the lock over at once. Other processes still meet the
    busy timeout.
    """
    writer_lock = threading.Lock()

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control away from pysqlite, which would otherwise BEGIN lazily (DEFERRED).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        mode = connection.get_execution_options().get(_BEGIN_OPTION, "DEFERRED")
        if mode != "IMMEDIATE":
            connection.exec_driver_sql(f"BEGIN {mode}")
            return
        if not writer_lock.acquire(timeout=busy_timeout_ms / 1000):
            raise StoreBusy(f"database is locked: no write lock within {busy_timeout_ms} ms")
        connection.info[_LOCK_HELD] = True  # the pool record's info: released when the connection is checked in
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        # Checked in = the transaction is over (committed, or rolled back by the pool's reset).
        if record.info.pop(_LOCK_HELD, False):
            writer_lock.release()


def create_db_engine(
    url: str, *, busy_timeout_ms: int = 30_000, sqlite_synchronous: str = DEFAULT_SQLITE_SYNCHRONOUS, echo: bool = False
) -> Engine:
    """Return an engine for ``url`` (SQLite file or PostgreSQL) with the store's connection settings.

    ``sqlite_synchronous`` is one of :data:`SQLITE_SYNCHRONOUS_LEVELS` (ignored on PostgreSQL, which syncs each commit).
    """
    if sqlite_synchronous.upper() not in SQLITE_SYNCHRONOUS_LEVELS:
        raise ValueError(
            f"sqlite_synchronous: {sqlite_synchronous!r} is not one of {', '.join(SQLITE_SYNCHRONOUS_LEVELS)}"
        )
    url = normalise_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            echo=echo,
            connect_args={"check_same_thread": False, "timeout": busy_timeout_ms / 1000},
            pool_size=POOL_SIZE,
            max_overflow=POOL_MAX_OVERFLOW,
        )
        _install_sqlite_hooks(engine, busy_timeout_ms, sqlite_synchronous.upper())
        return engine
    engine = create_engine(
        url, echo=echo, pool_size=POOL_SIZE, max_overflow=POOL_MAX_OVERFLOW, pool_recycle=POOL_RECYCLE_SECONDS
    )
    _install_postgresql_hooks(engine)
    return engine


def _install_postgresql_hooks(engine: Engine) -> None:
    """Generic plans for the statements psycopg prepares (see :data:`PLAN_CACHE_MODE`), set once per connection; a
    read session's ``READ ONLY`` reset as its connection goes back to the pool."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        autocommit = dbapi_connection.autocommit
        dbapi_connection.autocommit = True  # the SET outside any transaction: it lasts for the connection
        try:
            dbapi_connection.execute(f"SET plan_cache_mode = {PLAN_CACHE_MODE}")
        finally:
            dbapi_connection.autocommit = autocommit

    @event.listens_for(engine, "checkin")
    def _on_checkin(dbapi_connection: Any, _record: Any) -> None:
        # A read session's READ ONLY ends with it: the next transaction is the database's default again (a plain
        # BEGIN, not BEGIN READ WRITE, so a database made read-only by its administrator stays so).
        if dbapi_connection is not None and dbapi_connection.read_only is not None:
            try:
                dbapi_connection.read_only = None
            except Exception:  # a broken connection (still "in a transaction"): the pool discards it
                logger.debug("read_only not reset on a connection in a transaction", exc_info=True)


def is_sqlite(engine: Engine | Connection) -> bool:
    return engine.dialect.name == "sqlite"


@contextmanager
def read_session(engine: Engine) -> Iterator[Session]:
    """A session for reading: nothing it does is committed; loaded objects stay usable after the block.

    Closing (rather than rolling back) ends the transaction without expiring what was loaded. On PostgreSQL the
    transaction is ``READ ONLY`` (a write in it fails) and ends with a COMMIT, not a ROLLBACK: psycopg forgets every
    statement it prepared on the connection at each ROLLBACK (and sends ``DEALLOCATE ALL``), so rolled-back reads
    left the hot path's statements unprepared and planned again on every request (``benchmarks/bench_load.py``).
    """
    with Session(engine, expire_on_commit=False) as session:
        if is_sqlite(engine):
            yield session
            return
        # Checked out now; psycopg sends its BEGIN (here: BEGIN READ ONLY) with the first statement. The pool's
        # checkin hook sets the connection back to the database's default (_install_postgresql_hooks).
        session.connection().connection.dbapi_connection.read_only = True  # type: ignore[union-attr]
        yield session
        session.commit()  # nothing to write (READ ONLY): only ends the transaction the psycopg-friendly way


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """One write transaction: committed when the block ends, rolled back on any exception.

    On SQLite the transaction begins with ``BEGIN IMMEDIATE`` (the write lock is taken at BEGIN).
    """
    bind = engine.execution_options(**{_BEGIN_OPTION: "IMMEDIATE"}) if is_sqlite(engine) else engine
    with Session(bind, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


# advisory-lock namespaces: one key space per kind of thing locked
_CAMPAIGN_LOCKS, _ITEM_LOCKS, _PERSON_LOCKS = 4242, 4243, 4244
_ADVISORY_LOCK = text("SELECT pg_advisory_xact_lock(:namespace, :key)")


def _advisory_lock(session: Session, namespace: int, key: int) -> bool:
    if session.get_bind().dialect.name != "postgresql":
        return False
    core_connection(session).execute(_ADVISORY_LOCK, {"namespace": namespace, "key": key})
    return True


def core_connection(session: Session) -> Connection:
    """The session's connection in its transaction, for SQL Core statements on hot paths.

    A statement sent here skips the ORM's execution layer (several times cheaper than ``session.execute``);
    ORM changes still pending in the session are flushed first, so the statement sees them.
    """
    if session.new or session.dirty or session.deleted:
        session.flush()
    return session.connection()


def lock_campaign(session: Session, campaign_id: int) -> bool:
    """Serialise queue decisions of one campaign until the transaction ends; True when the lock was taken just now.

    SQLite already holds the database write lock (``BEGIN IMMEDIATE``), so everything the transaction
    read before is current: returns False. PostgreSQL takes a transaction-scoped advisory lock keyed by
    the campaign, so two decisions about free slots (handing out, or filling a slot whose lease expired)
    never both see the same last slot: returns True, and rows read before the call may be stale
    (refresh what the decision depends on).
    """
    return _advisory_lock(session, _CAMPAIGN_LOCKS, campaign_id)


def lock_person(session: Session, user_id: int) -> bool:
    """Serialise one person's queue requests (next, skip) until the transaction ends; True when the lock was taken.

    False on SQLite (the write lock covers it). On PostgreSQL a double click on "next" runs one request after the
    other, so the second finds the lease the first took instead of taking a second item (no hoarding) — without
    holding up anyone else, as a campaign-wide lock would.
    """
    if noted_in_transaction(session, _PERSON_LOCKED, user_id)[0]:
        return True  # taken already in this transaction, by the statement of person_lock_column
    return _advisory_lock(session, _PERSON_LOCKS, user_id)


_PERSON_LOCKED = "studio.db.person_locked"


def person_lock_column(user_id: Any) -> Any:
    """PostgreSQL: a column that takes :func:`lock_person`'s lock for the person ``user_id`` (a bind parameter) as a
    statement reads its one row — saving the lock its own round trip. Call :func:`note_person_locked` after."""
    return func.pg_advisory_xact_lock(_PERSON_LOCKS, user_id)


def note_person_locked(session: Session, user_id: int) -> None:
    """Record that a statement with :func:`person_lock_column` took ``user_id``'s lock in the session's transaction,
    so :func:`lock_person` does not send it again in that transaction (the lock ends with it)."""
    note_in_transaction(session, _PERSON_LOCKED, user_id)


def note_in_transaction(session: Session, slot: str, key: Any, value: Any = None) -> None:
    """Remember ``value`` under ``slot`` for ``key``, for the session's current transaction only (one per slot)."""
    session.info[slot] = (session.get_transaction(), key, value)


def noted_in_transaction(session: Session, slot: str, key: Any, *, take: bool = False) -> tuple[bool, Any]:
    """(True, value) when :func:`note_in_transaction` noted ``key`` under ``slot`` in this same transaction, else
    (False, None): a note from an ended transaction (its locks gone with it) is never seen. ``take``: forget it."""
    noted = session.info.pop(slot, None) if take else session.info.get(slot)
    if noted is not None and noted[0] is session.get_transaction() and noted[1] == key:
        return True, noted[2]
    return False, None


def lock_item(session: Session, item_id: int) -> bool:
    """Serialise answer writes of one item until the transaction ends; True when the lock was taken just now.

    Like :func:`lock_campaign`, False on SQLite (the write lock covers it). On PostgreSQL two submits of
    one item (a double click, a retry racing its first try) run one after the other, so the second
    finds the first's answer; submits of different items run side by side.
    """
    return _advisory_lock(session, _ITEM_LOCKS, item_id)


def alembic_config(connection: Any = None) -> Any:
    """Return an alembic ``Config`` built in code (no alembic.ini needed), bound to ``connection`` if given."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def upgrade_db(engine_or_url: Engine | str, revision: str = "head") -> None:
    """Run the alembic migrations up to ``revision`` (head by default) on the given engine or URL."""
    from alembic import command

    engine = create_db_engine(engine_or_url) if isinstance(engine_or_url, str) else engine_or_url
    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), revision)
    if isinstance(engine_or_url, str):
        engine.dispose()
