"""What the pipeline produced, ingested: scenarios, responses and their scores."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from studio.models.types import UTCDateTime, utc_now


class ScenarioRowBase(SQLModel):
    id: str = Field(primary_key=True, max_length=256)
    subtask: str = Field(max_length=64, index=True)
    persona: str = Field(default="", sa_type=Text)
    history: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    user_input: str = Field(default="", sa_type=Text)
    reference: str = Field(sa_type=Text)
    tags: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    context: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    source: str | None = None
    language: str = Field(default="zh", max_length=8)
    instruction_kind: str | None = Field(default=None, max_length=32, index=True)
    high_risk: bool = Field(default=False, index=True)


class ScenarioRow(ScenarioRowBase, table=True):
    __tablename__ = "scenario"

    #: sha256 of the scenario's JSON: re-ingesting identical text changes nothing.
    content_hash: str = Field(max_length=64)
    updated_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)


class ResponseRowBase(SQLModel):
    scenario_id: str = Field(foreign_key="scenario.id", index=True, max_length=256)
    model: str = Field(max_length=256)
    variant: str = Field(max_length=16)
    text: str = Field(sa_type=Text)
    backend: str = Field(default="", max_length=64)
    prompt_version: str = Field(default="", max_length=64)
    #: Itinerary levels I-III with J < tau or no judge score: a target for human adjudication.
    needs_adjudication: bool = Field(default=False, index=True)


class ResponseRow(ResponseRowBase, table=True):
    __tablename__ = "response"
    __table_args__ = (
        UniqueConstraint("scenario_id", "model", "variant", name="uq_response_key"),
        Index("ix_response_model_variant", "model", "variant"),
    )

    id: int | None = Field(default=None, primary_key=True)
    created_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)


class ScoreRowBase(SQLModel):
    response_id: int = Field(foreign_key="response.id", unique=True, index=True)
    subtask: str = Field(max_length=64, index=True)
    # A column per metric of pipeline.taxonomy.METRICS and JUDGE_SCORES (the schema; a migration adds each):
    # tests/studio/services/test_score_columns.py fails, naming the metric, when one is missing here.
    bleu1: float | None = None
    bleu2: float | None = None
    bleu3: float | None = None
    bleu4: float | None = None
    rouge1: float | None = None
    rougeL: float | None = None  # noqa: N815 - the paper's name
    ss: float | None = None
    S: float | None = None  # noqa: N815
    J_judge: float | None = None  # noqa: N815
    J: float | None = None  # noqa: N815
    #: J until experts adjudicate; then alpha * 5S + (1 - alpha) * J_human.
    J_final: float | None = None  # noqa: N815
    J_human: float | None = None  # noqa: N815
    signature: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    signature_label: str = Field(default="", max_length=512, index=True)
    judge_model: str | None = None
    judge_prompt_version: str | None = None


class ScoreRow(ScoreRowBase, table=True):
    __tablename__ = "score"

    id: int | None = Field(default=None, primary_key=True)
    updated_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)
