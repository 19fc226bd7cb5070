"""Campaigns, their items, leases, skips, answers and answer history."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, UniqueConstraint, false
from sqlmodel import Field, SQLModel, col

from studio.models.types import UTCDateTime, utc_now


class CampaignBase(SQLModel):
    name: str = Field(max_length=128, unique=True, index=True)
    schema_name: str = Field(max_length=64)
    workflow_type: str = Field(max_length=64)
    target_kind: str = Field(max_length=16)
    people_per_item: int = Field(gt=0)
    status: str = Field(default="open", max_length=16)
    eligible_roles: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    #: The queue's order (``studio.services.queue``): ``fill`` hands out the item closest to its quota first, so a
    #: small team completes items (and gets agreement figures) before new ones start; ``spread`` the least-answered.
    assignment: str = Field(default="fill", max_length=16, sa_column_kwargs={"server_default": "fill"})
    #: Chosen by whoever closed the campaign (audit-logged): its items short of their quota are decided on the answers
    #: they have. False (the default): such items stay undecided (``studio.services.progress.complete_at``).
    decide_below_quota: bool = Field(default=False, sa_column_kwargs={"server_default": false()})


class CampaignPublic(CampaignBase):
    id: int
    created_at: datetime
    created_by: str | None
    filters: dict[str, Any]


class Campaign(CampaignBase, table=True):
    id: int | None = Field(default=None, primary_key=True)
    created_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)
    created_by: str | None = Field(default=None, max_length=64)
    #: How the targets were picked (subtasks, models, ...), for the record.
    filters: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    #: The workflow schema as it was when the campaign was created: later edits of the YAML change nothing here.
    schema_snapshot: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    #: Server-side secret for the per-person A/B order of pairwise items; never sent to clients.
    pair_seed: str = Field(default="", max_length=64)
    #: A live_session campaign's companion (``studio.services.live_endpoint``): model, base_url, the NAME of the
    #: environment variable holding the API key (never the key), token budget. None for other campaigns.
    live_endpoint: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))


class ItemBase(SQLModel):
    campaign_id: int = Field(foreign_key="campaign.id")
    position: int
    scenario_id: str = Field(foreign_key="scenario.id", max_length=256, index=True)
    response_id: int | None = Field(default=None, foreign_key="response.id", index=True)
    response_b_id: int | None = Field(default=None, foreign_key="response.id")
    is_gold: bool = False
    #: Drawn into the campaign's seeded random audit sample (``studio.workflows.AuditSpec``): an adjudication item
    #: drawn uniformly from every judged response, flagged or not, so its expert score can rectify the judge (PPI).
    audit: bool = Field(default=False, sa_column_kwargs={"server_default": false()})


class Item(ItemBase, table=True):
    __table_args__ = (
        UniqueConstraint("campaign_id", "position", name="uq_item_position"),
        # The queue's scan: items of a campaign, least-answered first, in a stable order.
        Index("ix_item_queue", "campaign_id", "answer_count", "position"),
    )

    id: int | None = Field(default=None, primary_key=True)
    #: Stored answers, kept in step with the answer table in the same transaction (the queue orders by it).
    answer_count: int = 0
    #: When a workflow's ``stopping:`` rule stopped the item (``studio.services.stopping``): the queue hands it out
    #: no more and it counts as complete; None while it is handed out up to its quota. Its record: :class:`ItemStop`.
    stopped_at: datetime | None = Field(default=None, sa_type=UTCDateTime, index=True)
    gold_answers: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))


# The ``fill`` order on PostgreSQL: most-answered first, then position — one index scan that stops at the first open
# item not locked by another transaction (``studio.services.queue_rows``). Declared once the columns exist (DESC).
Index("ix_item_fill", col(Item.campaign_id), col(Item.answer_count).desc(), col(Item.position))


class ItemStop(SQLModel, table=True):
    """An item stopped early by its workflow's ``stopping:`` rule, once: the votes stored at the stop, the rule, the
    probability that the decision stays (1.0 for ``curtail``) and when. Votes of leases open at the stop come later
    and are counted on the item, not here."""

    __tablename__ = "item_stop"

    id: int | None = Field(default=None, primary_key=True)
    item_id: int = Field(foreign_key="item.id", unique=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True)
    votes_at_stop: int
    rule: str = Field(max_length=16)
    probability: float
    stopped_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)


class Lease(SQLModel, table=True):
    """An item handed to one person until ``expires_at``; an expired or released lease frees its slot."""

    __table_args__ = (
        Index("ix_lease_item_live", "item_id", "released_at", "expires_at"),
        Index("ix_lease_user_live", "campaign_id", "user_id", "released_at", "expires_at"),
    )

    id: str = Field(primary_key=True, max_length=64)
    campaign_id: int = Field(foreign_key="campaign.id")
    item_id: int = Field(foreign_key="item.id")
    user_id: int = Field(foreign_key="user.id")
    issued_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime)
    released_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    outcome: str | None = Field(default=None, max_length=16)  # answered | skipped


class Skip(SQLModel, table=True):
    """A person skipped an item: it comes after every other item for them."""

    __table_args__ = (UniqueConstraint("item_id", "user_id", name="uq_skip_item_user"),)

    id: int | None = Field(default=None, primary_key=True)
    campaign_id: int = Field(foreign_key="campaign.id", index=True)
    item_id: int = Field(foreign_key="item.id")
    user_id: int = Field(foreign_key="user.id")
    skipped_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)


class AnswerBase(SQLModel):
    item_id: int = Field(foreign_key="item.id")
    campaign_id: int = Field(foreign_key="campaign.id", index=True)
    user_id: int = Field(foreign_key="user.id", index=True)
    values: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    submission_id: str = Field(max_length=128, unique=True, index=True)
    #: Client-reported seconds, sanity-checked and capped; None when the client sent none.
    seconds_spent: float | None = None
    #: Seconds from the lease's issue to the first submit, measured by the server.
    server_seconds: float | None = None


class AnswerPublic(AnswerBase):
    id: int
    created_at: datetime
    updated_at: datetime
    revision: int


class Answer(AnswerBase, table=True):
    __table_args__ = (UniqueConstraint("item_id", "user_id", name="uq_answer_item_user"),)

    id: int | None = Field(default=None, primary_key=True)
    created_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)
    revision: int = 0


class AnswerRevisionBase(SQLModel):
    answer_id: int = Field(foreign_key="answer.id", index=True)
    revision: int
    values: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    seconds_spent: float | None = None


class AnswerRevision(AnswerRevisionBase, table=True):
    """The values an answer held before a revision replaced them."""

    __tablename__ = "answer_revision"

    id: int | None = Field(default=None, primary_key=True)
    replaced_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)
