"""The answering hot path's lease rows in SQL Core (see :mod:`studio.services.queue_rows` for why Core): claim a
lease while its item has a free slot, find a person's live lease, read, close and count leases.

Everything runs inside the caller's session and transaction, under the locks the caller took, and rolls back with it.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import Integer, Select, bindparam, exists, func, insert, literal, select, update
from sqlalchemy.sql.dml import Insert, Update
from sqlalchemy.types import String
from sqlmodel import Session, col

from studio.direct_sql import DirectRow, execute
from studio.models import Item, Lease
from studio.models.types import UTCDateTime
from studio.services.queue_rows import CampaignState, live_lease_conditions, now_param, table_of

#: The lease's columns as :func:`lease_row` returns them (by attribute, in this order).
LEASE_FIELDS = ("id", "campaign_id", "item_id", "user_id", "issued_at", "expires_at", "released_at", "outcome")
_LEASE_COLUMNS = tuple(table_of(Lease).c[name] for name in LEASE_FIELDS)
_LeaseRow = namedtuple("_LeaseRow", LEASE_FIELDS)  # type: ignore[misc]  # noqa: PYI024


def lease_from_columns(columns: Mapping[str, Any]) -> DirectRow:
    """A lease row as :func:`lease_row` returns it, from its columns read by another statement."""
    return _LeaseRow(**columns)


@lru_cache(maxsize=1)
def _claim_lease() -> Insert:
    lease, item = table_of(Lease), table_of(Item)
    now, quota, item_id = now_param(), bindparam("quota", type_=Integer()), bindparam("item_id", type_=Integer())
    live = select(func.count()).where(lease.c.item_id == item_id, *live_lease_conditions(now)).scalar_subquery()
    still_open = select(literal(1)).where(
        item.c.id == item_id, item.c.stopped_at.is_(None), item.c.answer_count + live < quota
    )
    names = ("id", "campaign_id", "item_id", "user_id", "issued_at", "expires_at")
    row = select(
        bindparam("id", type_=String()),
        bindparam("campaign_id", type_=Integer()),
        item_id,
        bindparam("user_id", type_=Integer()),
        bindparam("issued_at", type_=UTCDateTime()),
        bindparam("expires_at", type_=UTCDateTime()),
    ).where(exists(still_open))
    # RETURNING, not the row count: psycopg reports no count (-1) for an INSERT ... SELECT.
    return insert(lease).from_select(list(names), row).returning(lease.c.id)


def claim_lease(
    session: Session,
    *,
    id: str,  # noqa: A002 - the lease's id column
    campaign: CampaignState,
    item_id: int,
    user_id: int,
    issued_at: datetime,
    expires_at: datetime,
) -> bool:
    """Insert the lease if the item still has a free slot, counted as committed now; True when it was inserted.

    One statement: the count is read when it runs, after :func:`candidate_item` locked the item's row, so on
    PostgreSQL it includes every lease committed meanwhile (the candidate query's own snapshot may predate a lease
    another transaction took and committed before it released the row) — no slot is ever handed out twice.
    """
    bound = {
        "id": id,
        "campaign_id": campaign.id,
        "item_id": item_id,
        "user_id": user_id,
        "issued_at": issued_at,
        "expires_at": expires_at,
        "now": issued_at,
        "quota": campaign.people_per_item,
    }
    return execute(session, _claim_lease(), bound).first() is not None


@lru_cache(maxsize=1)
def _live_lease_query() -> Select[*tuple[Any, ...]]:
    return (
        select(*_LEASE_COLUMNS)
        .where(
            col(Lease.campaign_id) == bindparam("campaign_id"),
            col(Lease.user_id) == bindparam("user_id"),
            *live_lease_conditions(now_param()),
        )
        .order_by(col(Lease.issued_at).desc())
        .limit(1)
    )


def live_lease_of(session: Session, campaign_id: int, user_id: int, now: datetime) -> DirectRow | None:
    """This person's live lease in the campaign (the newest), if any."""
    bound = {"campaign_id": campaign_id, "user_id": user_id, "now": now}
    return execute(session, _live_lease_query(), bound).first()


@lru_cache(maxsize=1)
def _lease_query() -> Select[*tuple[Any, ...]]:
    return select(*_LEASE_COLUMNS).where(col(Lease.id) == bindparam("lease_id"))


def lease_row(session: Session, lease_id: str) -> DirectRow | None:
    return execute(session, _lease_query(), {"lease_id": lease_id}).first()


@lru_cache(maxsize=1)
def _release_lease() -> Update:
    return (
        update(Lease)
        .where(col(Lease.id) == bindparam("lease_id"), col(Lease.released_at).is_(None))
        .values(released_at=bindparam("released_at", type_=UTCDateTime()), outcome=bindparam("outcome"))
    )


def release_lease(session: Session, lease_id: str, *, at: datetime, outcome: str) -> bool:
    """Close the lease if it is still open; True when this call closed it (False: released before, or unknown).

    The condition is in the UPDATE itself, so two transactions closing one lease cannot both succeed.
    """
    bound = {"lease_id": lease_id, "released_at": at, "outcome": outcome}
    return int(execute(session, _release_lease(), bound).rowcount) == 1


@lru_cache(maxsize=1)
def _live_lease_count_query() -> Select[*tuple[Any, ...]]:
    return select(func.count()).where(
        col(Lease.item_id) == bindparam("item_id"),
        *live_lease_conditions(now_param()),
        col(Lease.id) != bindparam("excluding"),
    )


def live_lease_count(session: Session, item_id: int, now: datetime, *, excluding: str = "") -> int:
    """Leases on ``item_id`` that are neither released nor expired (not counting lease ``excluding``)."""
    bound = {"item_id": item_id, "now": now, "excluding": excluding}
    return int(execute(session, _live_lease_count_query(), bound).scalar_one())
