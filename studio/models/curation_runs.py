"""What a refine run found about each scenario, ingested by ``h2h ingest-curation``
(``studio.services.curation_ingest``): the preprocess report (flags, PII replacements before/after, field edits),
the LLM pre-screen verdict with its reasons and uncertainty (and the rank the review queue gave it), and the LLM's
pairwise verdicts on the items of pairwise campaigns (the LLM rater beside the humans).

These are the pipeline's records as they were written (``pipeline.curation.records``), one row per scenario (or per
pairwise item): re-ingesting a run replaces a row with what the run says now; nothing else is touched.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Column
from sqlmodel import Field, SQLModel

from studio.models.types import UTCDateTime, utc_now


class CurationReport(SQLModel, table=True):
    """One scenario's preprocess report: every flag (``pipeline.curation.records.Flag`` as a dict) and edit."""

    __tablename__ = "curation_report"

    scenario_id: str = Field(primary_key=True, foreign_key="scenario.id", max_length=256)
    flags: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    edits: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    #: The distinct flag kinds, sorted (pii, sensitive, meta_text, broken_roleplay, template_reference, duplicate).
    flag_kinds: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    n_flags: int = Field(default=0, index=True)
    #: The refine folder it came from, as given to the command.
    run: str = Field(default="", max_length=1024)
    ingested_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)


class PrescreenRow(SQLModel, table=True):
    """One scenario's LLM pre-screen (``PrescreenVerdict``) and its place in the run's review queue."""

    __tablename__ = "prescreen_verdict"

    scenario_id: str = Field(primary_key=True, foreign_key="scenario.id", max_length=256)
    verdict: str | None = Field(default=None, max_length=16)
    votes: dict[str, int] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    #: Normalised entropy of the k samples' verdicts, in [0, 1]: campaigns show the most uncertain first.
    uncertainty: float = Field(index=True)
    needs_human: bool = False
    reasons: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    samples: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    judge_model: str = Field(max_length=256)
    prompt_version: str = Field(max_length=64)
    #: The rank ``queue.jsonl`` gave it (1 = look first); None when the run has no queue line for it.
    queue_rank: int | None = None
    ingested_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)


class PairJudgmentRow(SQLModel, table=True):
    """The LLM's verdict (``PairJudgment``) on one pairwise item: ``winner`` a (the item's ``response_id``), b (its
    ``response_b_id``), tie, or None when the judge contradicted itself across the two orders."""

    __tablename__ = "pair_judgment"

    item_id: int = Field(primary_key=True, foreign_key="item.id")
    pair_id: str = Field(max_length=256)
    winner: str | None = Field(default=None, max_length=8)
    consistent: bool
    needs_human: bool
    uncertainty: float
    order_verdicts: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    votes: dict[str, int] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    first_shown_rate: float | None = None
    judge_model: str = Field(max_length=256)
    prompt_version: str = Field(max_length=64)
    ingested_at: datetime = Field(default_factory=utc_now, sa_type=UTCDateTime)
