"""Column types shared by the tables."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import Field
from sqlalchemy import DateTime
from sqlalchemy.types import TypeDecorator

#: The largest magnitude a whole number bound for the store may have: its ids are 32-bit integers on PostgreSQL (a
#: larger one fails there as "out of range", and past 64 bits in SQLite's driver too); no count, page or rating of
#: the studio comes near it.
STORE_INT_MAX = 2**31 - 1

#: A stored row's id as input: a whole number the store can compare with its ids (else a validation error, not a 500).
StoredId = Annotated[int, Field(ge=1, le=STORE_INT_MAX)]


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every backend (SQLite hands back naive values otherwise)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utc_now() -> datetime:
    return datetime.now(UTC)


def stored_id(value: int | None) -> int:
    """The primary key of a row that has been flushed (a table model declares it ``int | None`` until then)."""
    if value is None:
        raise ValueError("the row has no id yet: flush the session first")
    return value
