"""The answering hot path's answer rows in SQL Core (see :mod:`studio.services.queue_rows` for why Core).

:func:`store_answer` closes the lease, inserts the answer and counts it on its item: on PostgreSQL in one statement
(three data-modifying CTEs: one round trip instead of three), on SQLite in three statements (in process, a round trip
costs next to nothing, and SQLite has no data-modifying CTEs). Both run inside the caller's transaction, under the
item's row lock (PostgreSQL) or the write lock (SQLite).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import Select, and_, bindparam, exists, func, insert, literal_column, or_, select, update
from sqlalchemy.sql.dml import Insert, Update
from sqlmodel import Session, col

from studio.db import core_connection, is_sqlite
from studio.direct_sql import execute
from studio.models import Answer, AnswerPublic, Item, Lease
from studio.services.lease_rows import LEASE_FIELDS, lease_from_columns, release_lease
from studio.services.queue_rows import table_of

_ANSWER_FIELDS = (
    "id",
    "item_id",
    "campaign_id",
    "user_id",
    "values",
    "submission_id",
    "seconds_spent",
    "server_seconds",
    "created_at",
    "updated_at",
    "revision",
)
_ANSWER_COLUMNS = tuple(table_of(Answer).c[name] for name in _ANSWER_FIELDS)


@lru_cache(maxsize=1)
def _by_submission_query() -> Select[*tuple[Any, ...]]:
    return select(*_ANSWER_COLUMNS).where(col(Answer.submission_id) == bindparam("submission_id"))


def answer_by_submission(session: Session, submission_id: str) -> AnswerPublic | None:
    """The answer stored under ``submission_id`` (unique across the store), if any."""
    row = execute(session, _by_submission_query(), {"submission_id": submission_id}).first()
    return None if row is None else AnswerPublic.model_construct(**row._asdict())


@dataclass(frozen=True, slots=True)
class EarlierRows:
    """What a submit decides on, read in one statement once the item is locked: the answer stored under its
    ``submission_id`` (a retry), this person's answer to the item (already answered), and the lease it names."""

    by_submission: AnswerPublic | None
    to_item: AnswerPublic | None
    lease: Any  # the lease's row (queue_rows' lease columns), None when unknown


@lru_cache(maxsize=1)
def _earlier_answers_query() -> Select[Any]:
    """One row per matching answer (none: one row of NULLs), each with the lease's columns beside it: a one-row anchor
    joined to the lease by id and to the answers by submission_id or (item, person), both outer joins."""
    lease, answer = table_of(Lease), table_of(Answer)
    anchor = select(literal_column("1").label("anchor")).subquery("anchor")
    matches = or_(
        answer.c.submission_id == bindparam("submission_id"),
        and_(answer.c.item_id == bindparam("item_id"), answer.c.user_id == bindparam("user_id")),
    )
    joined = anchor.outerjoin(lease, lease.c.id == bindparam("lease_id")).outerjoin(answer, matches)
    return select(
        *(lease.c[name].label(f"lease_{name}") for name in LEASE_FIELDS),
        *(answer.c[name].label(f"answer_{name}") for name in _ANSWER_FIELDS),
    ).select_from(joined)


def earlier_answers(session: Session, *, submission_id: str, item_id: int, user_id: int, lease_id: str) -> EarlierRows:
    """In one query: the answer stored under ``submission_id``, this person's answer to ``item_id`` (each or None;
    the same answer twice for a retry) and lease ``lease_id``'s row (or None)."""
    bound = {"submission_id": submission_id, "item_id": item_id, "user_id": user_id, "lease_id": lease_id}
    rows = list(execute(session, _earlier_answers_query(), bound))
    answers = [
        AnswerPublic.model_construct(**{name: getattr(row, f"answer_{name}") for name in _ANSWER_FIELDS})
        for row in rows
        if row.answer_id is not None
    ]
    lease = None
    if rows and rows[0].lease_id is not None:
        lease = lease_from_columns({name: getattr(rows[0], f"lease_{name}") for name in LEASE_FIELDS})
    return EarlierRows(
        by_submission=next((row for row in answers if row.submission_id == submission_id), None),
        to_item=next((row for row in answers if row.item_id == item_id and row.user_id == user_id), None),
        lease=lease,
    )


@lru_cache(maxsize=1)
def _insert_answer() -> Insert:
    return table_of(Answer).insert()


@lru_cache(maxsize=1)
def _count_answer() -> Update:
    return update(Item).where(col(Item.id) == bindparam("item_id")).values(answer_count=col(Item.answer_count) + 1)


def insert_answer(session: Session, **values: Any) -> AnswerPublic:
    """Insert an answer (every column but id and revision) and count it on its item; the stored answer.

    Raises the driver's ``IntegrityError`` when (item, person) or the submission_id is already stored.
    """
    conn = core_connection(session)
    values = {**values, "revision": 0}
    key = conn.execute(_insert_answer(), values).inserted_primary_key
    if key is None:
        raise RuntimeError("the database did not report the new answer's id")
    answer_id = key[0]
    execute(session, _count_answer(), {"item_id": values["item_id"]})
    return AnswerPublic.model_construct(id=answer_id, **values)


#: The answer's columns a submit binds (every column but id and revision).
_STORED_COLUMNS = tuple(name for name in _ANSWER_FIELDS if name not in ("id", "revision"))


@lru_cache(maxsize=1)
def _store_in_one_statement() -> Select[Any]:
    """PostgreSQL: close the lease if still open, insert the answer if it was, count it on the item if inserted."""
    lease, answer, item = table_of(Lease), table_of(Answer), table_of(Item)
    released = (
        update(lease)
        .where(lease.c.id == bindparam("lease_id"), lease.c.released_at.is_(None))
        .values(released_at=bindparam("at", type_=lease.c.released_at.type), outcome="answered")
        .returning(lease.c.id)
        .cte("released")
    )
    row = select(
        *(bindparam(f"answer_{name}", type_=answer.c[name].type) for name in _STORED_COLUMNS),
        bindparam("answer_revision", type_=answer.c.revision.type),
    ).where(exists(select(released.c.id)))
    inserted = insert(answer).from_select([*_STORED_COLUMNS, "revision"], row).returning(answer.c.id).cte("inserted")
    counted = (
        update(item)
        .where(item.c.id == bindparam("answer_item_id"), exists(select(inserted.c.id)))
        .values(answer_count=item.c.answer_count + 1)
        .returning(item.c.id)
        .cte("counted")
    )
    counted_rows = select(func.count()).select_from(counted).scalar_subquery()
    return select(select(inserted.c.id).scalar_subquery().label("answer_id"), counted_rows.label("counted"))


def store_answer(session: Session, *, lease_id: str, at: datetime, **values: Any) -> AnswerPublic | None:
    """Close lease ``lease_id`` (if still open), insert the answer (``values``: every column but id and revision)
    and count it on its item; the stored answer, or None — nothing written — when the lease was no longer open.

    Raises the driver's ``IntegrityError`` when (item, person) or the submission_id is already stored (the caller's
    transaction is then rolled back whole).
    """
    if is_sqlite(session.get_bind()):
        if not release_lease(session, lease_id, at=at, outcome="answered"):
            return None
        return insert_answer(session, **values)
    # Parameters named apart from every column: Core adds an execute parameter named like a column to an UPDATE's SET.
    bound = {f"answer_{name}": value for name, value in values.items()}
    bound.update(answer_revision=0, lease_id=lease_id, at=at)
    row = execute(session, _store_in_one_statement(), bound).one()
    if row.answer_id is None:
        return None
    return AnswerPublic.model_construct(id=row.answer_id, **values, revision=0)
