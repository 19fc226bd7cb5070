"""The answering hot path in SQL Core: plain rows on the session's own connection, statements built once.

``next`` and ``submit`` run on every annotation, and the studio's flat-out throughput is bounded by
them. Through the ORM a statement costs several times what it costs on the session's connection (no
identity map, no unit of work, no entity construction), so the queue reads and writes its few rows
here. Everything runs inside the caller's session and transaction, under the locks the caller took
(SQLite's ``BEGIN IMMEDIATE``; on PostgreSQL the item rows these statements lock and the advisory locks of
``studio.db``), and rolls back with it.
Rows are read-only snapshots; change the store through the functions here, never by editing a row.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    Integer,
    Select,
    Table,
    Text,
    and_,
    bindparam,
    cast,
    exists,
    func,
    inspect,
    select,
    true,
)
from sqlmodel import Session, SQLModel, col

from studio.db import is_sqlite, note_in_transaction, note_person_locked, noted_in_transaction, person_lock_column
from studio.direct_sql import DirectRow, execute
from studio.models import Answer, Campaign, Item, Lease, ResponseRow, ScenarioRow, ScoreRow, Skip
from studio.models.types import UTCDateTime
from studio.workflows import WorkflowSchema


@dataclass(frozen=True, slots=True)
class CampaignState:
    """What answering needs of a campaign, read as plain columns in the caller's transaction."""

    id: int
    name: str
    status: str
    eligible_roles: tuple[str, ...]
    people_per_item: int
    pair_seed: str
    schema: WorkflowSchema
    assignment: str = "fill"
    decide_below_quota: bool = False


def table_of(model: type[SQLModel]) -> Table:
    """The Core table of a table model (SQLModel does not declare ``__table__`` for the type checker)."""
    table = inspect(model).local_table
    if not isinstance(table, Table):
        raise TypeError(f"{model.__name__} is not mapped to one table")
    return table


def now_param() -> Any:
    return bindparam("now", type_=UTCDateTime())


def live_lease_conditions(now: Any) -> tuple[Any, Any]:
    """The conditions of a lease that holds a slot at ``now``: neither released nor expired."""
    return col(Lease.released_at).is_(None), col(Lease.expires_at) > now


@lru_cache(maxsize=2)
def _campaign_query(*, locking_person: bool = False) -> Select[*tuple[Any, ...]]:
    # The snapshot as text: it keys the parsed-schema cache, so a request never decodes or re-validates it.
    query = select(
        col(Campaign.id),
        col(Campaign.name),
        col(Campaign.status),
        col(Campaign.eligible_roles),
        col(Campaign.people_per_item),
        col(Campaign.pair_seed),
        col(Campaign.assignment),
        col(Campaign.decide_below_quota),
        cast(col(Campaign.schema_snapshot), Text).label("snapshot"),
    ).where(col(Campaign.name) == bindparam("name"))
    if locking_person:  # PostgreSQL: the person's lock taken as the campaign's one row is read
        return query.add_columns(person_lock_column(bindparam("user_id", type_=Integer())).label("person_locked"))
    return query


#: The item's columns as :func:`item_row` returns them (by attribute, in this order).
ITEM_FIELDS = (
    "id",
    "campaign_id",
    "position",
    "answer_count",
    "scenario_id",
    "response_id",
    "response_b_id",
    "stopped_at",
)
_ITEM_COLUMNS = tuple(table_of(Item).c[name] for name in ITEM_FIELDS)
_ItemRow = namedtuple("_ItemRow", ITEM_FIELDS)  # type: ignore[misc]  # noqa: PYI024
_HELD_ITEM = "studio.services.queue_rows.held_item"


@lru_cache(maxsize=1)
def _campaign_holding_item_query() -> Select[*tuple[Any, ...]]:
    """PostgreSQL: the campaign and, beside it, its item ``item_id`` locked as :func:`item_row` (``locked``) locks it
    (NULLs when the campaign has no such item): a LATERAL subquery with its own ``FOR NO KEY UPDATE``, so the row
    lock waits for others and the item's row read is the latest committed one, as in a statement of its own."""
    item, campaign = table_of(Item), table_of(Campaign)
    held = (
        select(*_ITEM_COLUMNS)
        .where(item.c.id == bindparam("item_id", type_=Integer()), item.c.campaign_id == campaign.c.id)
        .with_for_update(key_share=True)
        .lateral("held")
    )
    columns = (held.c[name].label(f"item_{name}") for name in ITEM_FIELDS)
    return _campaign_query().add_columns(*columns).select_from(campaign.outerjoin(held, true()))


@lru_cache(maxsize=64)
def parsed_schema(snapshot_json: str) -> WorkflowSchema:
    """The schema of a stored snapshot, validated once per distinct text and process (immutable text in, frozen
    model out: caching is safe). Do not modify the returned model."""
    return WorkflowSchema.model_validate_json(snapshot_json)


def campaign_row(
    session: Session, name: str, *, locking_person: int | None = None, holding_item: int | None = None
) -> CampaignState | None:
    """The campaign called ``name``, or None. On PostgreSQL the same statement may also (one round trip, not two)
    take person ``locking_person``'s lock (:func:`studio.db.lock_person`, which then sends nothing), or lock and read
    item ``holding_item`` for the transaction's next ``item_row(..., locked=True)`` of it. SQLite: the campaign
    alone (its write lock covers the rest, and a statement there costs no round trip)."""
    if is_sqlite(session.get_bind()) or (locking_person is None and holding_item is None):
        row = execute(session, _campaign_query(), {"name": name}).first()
    elif locking_person is not None:
        row = execute(session, _campaign_query(locking_person=True), {"name": name, "user_id": locking_person}).first()
        if row is not None:
            note_person_locked(session, locking_person)
    else:
        row = execute(session, _campaign_holding_item_query(), {"name": name, "item_id": holding_item}).first()
        if row is not None:
            _hold_item(session, holding_item, row)
    return None if row is None else _campaign_state(row)


def _campaign_state(row: Any) -> CampaignState:
    return CampaignState(
        id=row.id,
        name=row.name,
        status=row.status,
        eligible_roles=tuple(row.eligible_roles),
        people_per_item=row.people_per_item,
        pair_seed=row.pair_seed,
        schema=parsed_schema(row.snapshot),
        assignment=row.assignment,
        decide_below_quota=bool(row.decide_below_quota),
    )


def _hold_item(session: Session, item_id: Any, row: Any) -> None:
    """Keep the item row read (and locked) beside the campaign for this transaction's next locked read of it."""
    item = None if row.item_id is None else _ItemRow(*(getattr(row, f"item_{name}") for name in ITEM_FIELDS))
    note_in_transaction(session, _HELD_ITEM, item_id, item)


@lru_cache(maxsize=2)
def _item_query(*, locked: bool) -> Select[*tuple[Any, ...]]:
    query = select(*_ITEM_COLUMNS).where(col(Item.id) == bindparam("item_id"))
    return query.with_for_update(key_share=True) if locked else query


def item_row(session: Session, item_id: int, *, locked: bool = False) -> DirectRow | None:
    """The item's columns (id, campaign_id, position, answer_count, scenario_id, response_id, response_b_id,
    stopped_at). ``locked``: PostgreSQL locks the row until the transaction ends (``FOR NO KEY UPDATE``, see
    :func:`_candidate_query`; SQLite's write lock already covers it) and the row read is the latest committed one —
    what a decision about its slots must see. A row :func:`campaign_row` locked and read for this (``holding_item``,
    this transaction) is handed over once, unread again: nothing could change it in between but this transaction,
    which had not written it (None: not an item of that campaign)."""
    if locked:
        held, item = noted_in_transaction(session, _HELD_ITEM, item_id, take=True)
        if held:
            return item
    return execute(session, _item_query(locked=locked), {"item_id": item_id}).first()


def _open_to(item: Any, user_id: Any) -> tuple[Any, ...]:
    """The conditions of an ``item`` (the item table or an alias of it) of ``campaign_id`` that ``user_id`` may take
    now: short of its quota counting live leases, not stopped by the workflow's ``stopping:`` rule
    (:mod:`studio.services.stopping`), neither answered nor skipped by them. Bound per call: campaign_id, quota,
    now."""
    now, quota = now_param(), bindparam("quota", type_=Integer())
    live = select(func.count()).where(col(Lease.item_id) == item.id, *live_lease_conditions(now)).scalar_subquery()
    answered = exists().where(col(Answer.item_id) == item.id, col(Answer.user_id) == user_id)
    skipped = exists().where(col(Skip.item_id) == item.id, col(Skip.user_id) == user_id)
    return (
        item.campaign_id == bindparam("campaign_id"),
        item.answer_count < quota,
        item.answer_count + live < quota,
        item.stopped_at.is_(None),
        ~answered,
        ~skipped,
    )


@lru_cache(maxsize=5)
def _candidate_query(kind: str) -> Select[*tuple[Any, ...]]:
    """The next-item query of ``kind``, once per process (building a SELECT and its cache key costs more than
    running it). Bound per call: campaign_id, quota, user_id, now (``fill``: and ``below``).

    On PostgreSQL the item found is locked (``FOR NO KEY UPDATE SKIP LOCKED``): an item another transaction is
    handing out or answering right now is passed over rather than waited for, so annotators never queue behind each
    other; the lock is held until the transaction ends, and :func:`claim_lease` then decides on the item as it is
    committed. NO KEY: the rows that point at the item (a lease, an answer, a skip) take a KEY SHARE lock on it as
    they are inserted, which a plain ``FOR UPDATE`` would block — a skip and a submit of one lease would deadlock.
    SQLite renders no lock (its write lock covers the transaction).

    ``spread``: the least-answered first, in position order. ``fill``: among the items with the most answers open to
    the person, the first in position order (a team completes items before it starts new ones). On PostgreSQL
    (``fill_ordered``) that is ORDER BY answer_count DESC, position — the ``ix_item_fill`` index scan, which passes
    over locked items and stops at the first open one, in one statement however many items others hold. On SQLite
    (``fill``) the highest count is found by a scalar subquery and the items at that count in position order (the
    plan SQLite chose for the ORDER BY sorted every open item; nothing is ever locked there, so the level query of
    :func:`candidate_item` does not repeat). ``skipped``: the person's skipped items, in the order they skipped them
    (they come after all others whatever the order)."""
    user_id = bindparam("user_id", type_=Integer())
    if kind == "skipped":
        open_now = _open_to(table_of(Item).c, user_id)[:-1]  # a skipped item is what this kind is for
        skip_match = and_(col(Skip.item_id) == col(Item.id), col(Skip.user_id) == user_id)
        query = select(*_ITEM_COLUMNS).where(*open_now).join(Skip, skip_match)
        ordered = query.order_by(col(Skip.skipped_at), col(Item.answer_count), col(Item.position)).limit(1)
        return ordered.with_for_update(of=table_of(Item), skip_locked=True, key_share=True)
    conditions = _open_to(table_of(Item).c, user_id)
    if kind == "fill_ordered":  # PostgreSQL: the ix_item_fill index scan, stopping at the first item not locked
        ordered = select(*_ITEM_COLUMNS).where(*conditions).order_by(col(Item.answer_count).desc(), col(Item.position))
        return ordered.limit(1).with_for_update(skip_locked=True, key_share=True)
    if kind in ("fill", "fill_level"):
        other = table_of(Item).alias("fullest")
        # ``below``: the quota at first; lower once every open item at the fullest level was found locked.
        fullest = select(other.c.answer_count).where(*_open_to(other.c, user_id), other.c.answer_count < _below())
        level = fullest.order_by(other.c.answer_count.desc()).limit(1).scalar_subquery()
        if kind == "fill_level":
            return select(level)
        # An equality on answer_count (the subquery's count is below the quota already): the index then gives the
        # items at that count in position order; with the range kept beside it, SQLite scanned and sorted them all.
        conditions = (conditions[0], col(Item.answer_count) == level, *conditions[2:])
    query = select(*_ITEM_COLUMNS).where(*conditions)
    ordered = query.order_by(col(Item.answer_count), col(Item.position)).limit(1)
    return ordered.with_for_update(skip_locked=True, key_share=True)


def _below() -> Any:
    return bindparam("below", type_=Integer())


def candidate_item(
    session: Session, campaign: CampaignState, user_id: int, now: datetime, *, skipped: bool
) -> DirectRow | None:
    """The first open item for this person, among the ones they skipped or the ones they did not — those in the
    campaign's ``assignment`` order (``fill``: the items with the most answers first; ``spread``: the fewest) —
    locked on PostgreSQL, passing over items locked by others (see :func:`_candidate_query`)."""
    quota = campaign.people_per_item
    bound = {"campaign_id": campaign.id, "quota": quota, "user_id": user_id, "now": now, "below": quota}
    kind = "skipped" if skipped else "fill" if campaign.assignment == "fill" else "spread"
    if kind == "fill" and not is_sqlite(session.get_bind()):
        kind = "fill_ordered"
    found = execute(session, _candidate_query(kind), bound).first()
    while found is None and kind == "fill":
        # Nothing at the fullest open level, or every item there is locked by someone else's transaction: the next
        # level down (a rare path: one more statement per level tried).
        level = execute(session, _candidate_query("fill_level"), bound).scalar()
        if level is None:
            return None
        bound["below"] = level
        found = execute(session, _candidate_query(kind), bound).first()
    return found


@lru_cache(maxsize=8)
def _by_id_query(table: Any) -> Select[*tuple[Any, ...]]:
    return select(table).where(table.c.id == bindparam("row_id"))


def scenario_row(session: Session, scenario_id: str) -> DirectRow | None:
    return execute(session, _by_id_query(table_of(ScenarioRow)), {"row_id": scenario_id}).first()


def response_row(session: Session, response_id: int) -> DirectRow | None:
    return execute(session, _by_id_query(table_of(ResponseRow)), {"row_id": response_id}).first()


@lru_cache(maxsize=1)
def _score_query() -> Select[*tuple[Any, ...]]:
    return select(table_of(ScoreRow)).where(col(ScoreRow.response_id) == bindparam("response_id")).limit(1)


def score_row(session: Session, response_id: int) -> DirectRow | None:
    return execute(session, _score_query(), {"response_id": response_id}).first()
