"""The answering hot path's statements sent straight to the database driver, compiled once per dialect.

``Connection.execute`` cost 111–148 µs of CPU per statement on PostgreSQL here, where the driver alone cost 77–87 µs
(one indexed read, one thread; ``benchmarks/README.md`` "Fourth pass"): each call looks the statement up in the
compiled cache, builds an execution context, asks the driver for the result's column descriptions (~20 µs in
psycopg) and wraps every row. An answering cycle sends ~14 such statements, and its request thread holds the
interpreter lock for each, so one studio process answers fewer people. Here a Core
statement is compiled once per process and dialect into its SQL text, its bind parameters with SQLAlchemy's own
bind processors, and its result columns with SQLAlchemy's own result processors (a UTC timestamp comes back aware,
as through ``Connection.execute``); :func:`execute` then runs it on the session's driver connection, in the
session's transaction.

What stays as through SQLAlchemy: the statement is SQLAlchemy's compilation of it (the same SQL, casts and
parameter style), ``before_cursor_execute`` / ``after_cursor_execute`` listeners are called, and a driver error is
handed to the connection's own error handling, so it surfaces as SQLAlchemy's exception (``IntegrityError``,
``OperationalError``…) and a lost connection is invalidated and never returned to the pool.

Only for statements built once (module-level or ``lru_cache``d): the compiled forms are kept per statement object.
"""

from __future__ import annotations

import threading
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler
from sqlmodel import Session

from studio.db import core_connection

Processor = Callable[[Any], Any] | None

#: A row :func:`execute` returns: a named tuple of the statement's columns (attributes, indexes, ``_asdict()``).
DirectRow = Any


@dataclass(frozen=True, slots=True)
class _Compiled:
    """A statement as one dialect sends it: text, parameter order (positional styles), processors, row type."""

    sql: str
    positional_names: tuple[str, ...] | None
    base_params: Mapping[str, Any]
    bind_processors: Mapping[str, Callable[[Any], Any]]
    required_names: frozenset[str]
    result_types: tuple[Any, ...]
    returns_rows: bool
    dialect: Dialect
    #: The row type and result processors, made once from what the driver reports the first time: the columns' names
    #: (as the statement labels them) and type codes (a numeric's processor depends on it). After that the driver's
    #: column descriptions are not asked for again (~20 µs each in psycopg).
    reading: list[tuple[Any, tuple[Processor, ...]]]

    def row_type_and_processors(self, cursor: Any) -> tuple[Any, tuple[Processor, ...]]:
        if not self.reading:
            description = cursor.description
            processors = tuple(
                type_.result_processor(self.dialect, column[1])
                for type_, column in zip(self.result_types, description, strict=True)
            )
            row_type = namedtuple("Row", [column[0] for column in description], rename=True)  # type: ignore[misc]  # noqa: PYI024
            self.reading.append((row_type, processors))
        return self.reading[0]


class DirectResult:
    """The rows of one statement, read at once: ``first``, ``one``, ``scalar``, ``scalar_one``, iteration, and
    ``rowcount`` (the driver's; -1 where it reports none)."""

    __slots__ = ("rowcount", "_rows")

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def __iter__(self) -> Iterator[Any]:
        return iter(self._rows)

    def first(self) -> Any:
        return self._rows[0] if self._rows else None

    def one(self) -> Any:
        if len(self._rows) != 1:
            raise LookupError(f"expected one row, the statement returned {len(self._rows)}")
        return self._rows[0]

    def scalar(self) -> Any:
        return self._rows[0][0] if self._rows else None

    def scalar_one(self) -> Any:
        return self.one()[0]


_COMPILED: dict[tuple[int, str, str], tuple[ClauseElement, _Compiled]] = {}
_COMPILING = threading.Lock()


def _compile(statement: ClauseElement, dialect: Dialect) -> _Compiled:
    compiled = cast(SQLCompiler, statement.compile(dialect=dialect))
    if getattr(compiled, "escaped_bind_names", None):
        raise ValueError("direct_sql: a bind parameter name needs escaping; use Connection.execute for this statement")
    bind_processors, base_params, required = {}, {}, set()
    for bind, name in compiled.bind_names.items():
        if bind.expanding:
            raise ValueError("direct_sql: an expanding (IN list) parameter; use Connection.execute for this statement")
        processor = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if processor is not None:
            bind_processors[name] = processor
        if bind.required:
            required.add(name)
        else:  # a value the statement carries (a literal, a LIMIT)
            base_params[name] = bind.effective_value
    columns = list(getattr(statement, "exported_columns", ()))
    positional = tuple(compiled.positiontup) if compiled.positional and compiled.positiontup is not None else None
    return _Compiled(
        sql=compiled.string,
        positional_names=positional,
        base_params=base_params,
        bind_processors=bind_processors,
        required_names=frozenset(required),
        result_types=tuple(column.type.dialect_impl(dialect) for column in columns),
        reading=[],
        dialect=dialect,
        returns_rows=bool(columns),
    )


def _compiled_for(statement: ClauseElement, dialect: Dialect) -> _Compiled:
    key = (id(statement), dialect.name, dialect.driver)
    found = _COMPILED.get(key)
    if found is None:
        with _COMPILING:
            # The statement is kept beside its compiled form, so its id is never reused for another statement.
            found = _COMPILED.setdefault(key, (statement, _compile(statement, dialect)))
    return found[1]


def _driver_params(compiled: _Compiled, params: Mapping[str, Any]) -> Any:
    values = {**compiled.base_params, **params}
    missing = compiled.required_names - values.keys()
    if missing:
        raise ValueError(f"direct_sql: no value for bind parameter(s) {sorted(missing)}")
    for name, processor in compiled.bind_processors.items():
        values[name] = processor(values[name])
    if compiled.positional_names is None:
        return values
    return tuple(values[name] for name in compiled.positional_names)


def _rows(compiled: _Compiled, cursor: Any) -> list[Any]:
    if not compiled.returns_rows:  # no RETURNING, or a statement without columns
        return []
    row_type, processors = compiled.row_type_and_processors(cursor)
    if not any(processors):
        return [row_type._make(raw) for raw in cursor.fetchall()]
    return [
        row_type._make(
            value if processor is None else processor(value) for processor, value in zip(processors, raw, strict=True)
        )
        for raw in cursor.fetchall()
    ]


def execute(session: Session, statement: ClauseElement, params: Mapping[str, Any] | None = None) -> DirectResult:
    """Run ``statement`` (built once per process) with ``params`` in the session's transaction; its rows, read.

    Equal to ``core_connection(session).execute(statement, params)`` for what the hot path reads of it (rows by
    attribute, index and ``_asdict()``, ``first`` / ``one`` / ``scalar`` / ``scalar_one``, ``rowcount``).
    """
    connection = core_connection(session)
    compiled = _compiled_for(statement, connection.dialect)
    driver_params = _driver_params(compiled, params or {})
    cursor = connection.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        _call_listeners(connection, "before_cursor_execute", cursor, compiled.sql, driver_params)
        cursor.execute(compiled.sql, driver_params)
        _call_listeners(connection, "after_cursor_execute", cursor, compiled.sql, driver_params)
        return DirectResult(_rows(compiled, cursor), cursor.rowcount)
    except connection.dialect.loaded_dbapi.Error as error:
        # SQLAlchemy's own handling: the error wrapped as its exception class, a lost connection invalidated.
        connection._handle_dbapi_exception(error, compiled.sql, driver_params, cursor, None)  # noqa: SLF001
        raise  # not reached: the handler raises
    finally:
        cursor.close()


def _call_listeners(connection: Connection, event: str, cursor: Any, sql: str, params: Any) -> None:
    if connection._has_events or connection.engine._has_events:  # noqa: SLF001 - as Connection.execute checks
        getattr(connection.dispatch, event)(connection, cursor, sql, params, None, False)
