"""State several studio processes share through the store: failed sign-ins and page-session / file grants.

One studio process used to keep both in memory; with several processes behind one database (``h2h studio
--workers N``) each must see what the others recorded. Keys are sha256 digests (hex) of what they stand for: a
(username, address) pair or an address, a Gradio ``session_hash`` or a cached file's path — fixed-length, and free of
characters PostgreSQL's text cannot hold (a NUL).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from studio.models.types import UTCDateTime, utc_now


class LoginFailure(SQLModel, table=True):
    """One failed sign-in counted against ``key`` (a pair's or an address's digest) at ``failed_at`` (Unix seconds)."""

    __tablename__ = "login_failure"
    __table_args__ = (Index("ix_login_failure_key_failed_at", "key", "failed_at"),)

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(max_length=64)
    failed_at: float = Field(index=True)


class UiGrant(SQLModel, table=True):
    """``holder`` (a username, or a token digest for ``kind`` ``token``) may use the thing ``key`` digests.

    ``kind``: ``session`` (the first holder owns a Gradio page session), ``token`` (the token digests a page session
    was signed in with), ``file`` (a cached file handed to the holder), ``upload`` (a file the holder uploaded).
    """

    __tablename__ = "ui_grant"
    __table_args__ = (UniqueConstraint("kind", "key", "holder", name="uq_ui_grant_kind_key_holder"),)

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=16)
    key: str = Field(max_length=64)
    holder: str = Field(max_length=64)
    created_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime, index=True)
