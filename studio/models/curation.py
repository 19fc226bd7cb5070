"""Curation tables: each scenario's review status (with the curator's edits kept apart from ingested text) and
immutable published dataset versions.

Curator edits live in :class:`ScenarioStatus.edits`, an overlay on the ingested :class:`ScenarioRow`: re-ingesting a
run rewrites the scenario table, never the overlay, and ``edited_from_hash`` tells when the text under an edit
changed since the curator made it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, event, false
from sqlmodel import Field, SQLModel

from studio.models.types import UTCDateTime, utc_now

#: Review states of a scenario: pending until a crowd vote, expert review or curator decides; ``needs_curator`` where
#: the crowd and the experts decided differently and the rule (``with_crowd: agree_or_curator``) leaves it to a curator.
STATUSES: tuple[str, ...] = ("pending", "in_review", "needs_curator", "accepted", "needs_revision", "rejected")
#: Fields of a scenario a curator may edit.
EDITABLE_FIELDS: tuple[str, ...] = ("persona", "user_input", "reference", "history", "tags", "context", "subtask")


class ScenarioStatusBase(SQLModel):
    scenario_id: str = Field(primary_key=True, foreign_key="scenario.id", max_length=256)
    status: str = Field(default="pending", max_length=16, index=True)
    #: Who set the status: ``crowd:<campaign>``, ``expert:<campaign>`` or ``curator:<username>``.
    decided_by: str = Field(default="", max_length=200)
    crowd_decision: str | None = Field(default=None, max_length=64)
    crowd_votes: int = 0
    #: Share of the crowd's votes for the winning value (the item's agreement); None before any vote.
    crowd_agreement: float | None = None
    #: A tie, low agreement or a split expert panel: someone has to look.
    disagreement: bool = Field(default=False, index=True)
    #: The crowd side's reliability-weighted models (Dawid–Skene, MACE) decided otherwise than the majority: written
    #: from ``crowd["models_disagree"]`` by aggregation, a column of its own so the Curate list filters and orders by
    #: it (those scenarios first) without reading the JSON.
    models_disagree: bool = Field(default=False, index=True, sa_column_kwargs={"server_default": false()})
    expert_verdicts: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    #: The curator's edited fields (field → new value), applied over the ingested scenario.
    edits: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    edited_from_hash: str | None = Field(default=None, max_length=64)
    reason: str | None = None
    #: The crowd's side as its rule counted it (``studio.results.decisions.CrowdSide``): campaign, question, votes per
    #: value, whether the item was disputed (tie, low agreement) and sent to experts, the classification's votes.
    crowd: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, server_default="{}"))
    #: The expert panel's side (``studio.results.decisions.ExpertSide``): campaign, its own outcome, how many experts,
    #: and the rule combining it with the crowd's vote (``with_crowd`` of the expert workflow).
    experts: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False, server_default="{}"))
    #: The crowd's classification (e.g. the subtask) where more than half of the votes name one value; else None.
    crowd_label: str | None = Field(default=None, max_length=64)
    #: What the workflow's classification rule did with ``crowd_label`` where it differs from the scenario's subtask:
    #: ``applied`` (the published scenario takes it; the ingested one is kept) or ``flagged`` (a curator decides).
    label_action: str | None = Field(default=None, max_length=16, index=True)
    #: The decision in words, as the rule made it: "crowd: revise 3/3 · experts: pass 3/3 → waits for a curator (…)".
    rule_note: str | None = None


class ScenarioStatusPublic(ScenarioStatusBase):
    updated_at: datetime


class ScenarioStatus(ScenarioStatusBase, table=True):
    __tablename__ = "scenario_status"

    updated_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)


class DatasetVersionBase(SQLModel):
    name: str = Field(max_length=128, unique=True, index=True)
    #: sha256 over the snapshot's canonical JSON: the same content always hashes the same.
    content_hash: str = Field(max_length=64, unique=True, index=True)
    n_scenarios: int
    created_by: str = Field(max_length=64)
    note: str | None = None
    #: What the curators decided when it was published: scenario ids by ``accepted`` (edits included), ``edited``
    #: (accepted with a curator's edits), ``rejected`` and ``pending`` (anything else: not in the version).
    summary: dict[str, list[str]] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False, server_default="{}")
    )


class DatasetVersionPublic(DatasetVersionBase):
    id: int
    created_at: datetime


class DatasetVersion(DatasetVersionBase, table=True):
    """A published snapshot of accepted scenarios. Rows are never updated or deleted (see the listeners below)."""

    __tablename__ = "dataset_version"

    id: int | None = Field(default=None, primary_key=True)
    created_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)
    records: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))


class ImmutableVersionError(RuntimeError):
    """Something tried to change or delete a published dataset version."""


@event.listens_for(DatasetVersion, "before_update")
def _refuse_update(_mapper: Any, _connection: Any, target: DatasetVersion) -> None:
    raise ImmutableVersionError(f"dataset version {target.name!r} is published and cannot change")


@event.listens_for(DatasetVersion, "before_delete")
def _refuse_delete(_mapper: Any, _connection: Any, target: DatasetVersion) -> None:
    raise ImmutableVersionError(f"dataset version {target.name!r} is published and cannot be deleted")
