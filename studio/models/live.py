"""Live companion sessions (ARCHITECTURE.md "Live sessions"): one conversation of a rater — or of a simulated user —
with the campaign's companion, and its turns, each stored as it happens."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from studio.models.types import UTCDateTime, utc_now


class LiveSession(SQLModel, table=True):
    """One conversation on one item (a scenario) of a ``live_session`` campaign.

    A person has at most one session per item (the unique constraint; a simulated session has no person, so any
    number). ``variant`` is assigned when the session opens and is never sent to its rater. A person's rating is an
    ordinary :class:`~studio.models.Answer` on the item (``answer_id``), so it is written once, with the values
    given, like every vote; a simulated user's rating is ``simulated_rating`` and never enters a human table.
    """

    __tablename__ = "live_session"
    __table_args__ = (
        UniqueConstraint("item_id", "user_id", name="uq_live_session_item_user"),
        Index("ix_live_session_campaign", "campaign_id", "simulated", "status"),
    )

    id: str = Field(primary_key=True, max_length=64)
    campaign_id: int = Field(foreign_key="campaign.id")
    item_id: int = Field(foreign_key="item.id", index=True)
    user_id: int | None = Field(default=None, foreign_key="user.id", index=True)
    #: The lease that holds the item's slot while the person talks (renewed on every turn); None when simulated.
    lease_id: str | None = Field(default=None, max_length=64)
    variant: str = Field(max_length=16)
    #: open (talking) | ended (the form is open) | rated
    status: str = Field(default="open", max_length=16)
    simulated: bool = False
    #: The model that played the user in a simulated session (``h2h simulate-sessions --user-model``).
    user_model: str | None = Field(default=None, max_length=256)
    #: A crisis signal was seen in a user's message: the session waits for an expert's review.
    needs_review: bool = Field(default=False, index=True)
    #: The expert review of a marked session (``studio.services.live_review``): who, when, what they noted.
    reviewed_by: str | None = Field(default=None, max_length=64)
    reviewed_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    review_note: str | None = None
    answer_id: int | None = Field(default=None, foreign_key="answer.id")
    simulated_rating: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    created_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)
    ended_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class LiveTurn(SQLModel, table=True):
    """One message of a session: the user's (``role`` user) or the companion's reply (``role`` assistant) to turn
    ``number`` (1-based: the user's n-th message and the reply to it share the number)."""

    __tablename__ = "live_turn"
    __table_args__ = (UniqueConstraint("session_id", "number", "role", name="uq_live_turn"),)

    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(foreign_key="live_session.id", max_length=64, index=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True)
    number: int
    role: str = Field(max_length=16)
    text: str
    created_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)
    #: The user's message: the crisis tripwire's signals (``pipeline.live.tripwire``), empty when none.
    crisis: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    #: The reply to a flagged message: the SAP behaviours found in it (empathy, risk check, resources, ...).
    sap_check: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    latency_ms: float | None = None
    first_token_ms: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    usage_estimated: bool = False
