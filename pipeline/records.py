"""Record types shared by every pipeline stage (and read by the studio).

Every record is a pydantic model stored as one JSON object per line. Records that belong to a
generation are keyed by ``(scenario_id, model, variant)``; see :func:`record_key`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from pipeline.taxonomy import ALPHA as ALPHA
from pipeline.taxonomy import DIMENSION_OF_SUBTASK as DIMENSION_OF_SUBTASK
from pipeline.taxonomy import JUDGED_SUBTASKS as JUDGED_SUBTASKS
from pipeline.taxonomy import ROUGE_MEASURES as ROUGE_MEASURES
from pipeline.taxonomy import SUBTASKS as SUBTASKS
from pipeline.taxonomy import TABLE1_COUNTS as TABLE1_COUNTS
from pipeline.taxonomy import TAU as TAU
from pipeline.taxonomy import VARIANTS as VARIANTS
from pipeline.taxonomy import Dimension as Dimension
from pipeline.taxonomy import InstructionKind as InstructionKind
from pipeline.taxonomy import RougeMeasure as RougeMeasure
from pipeline.taxonomy import Subtask as Subtask
from pipeline.taxonomy import Variant as Variant


def utc_now() -> datetime:
    """Return the current time, timezone-aware in UTC."""
    return datetime.now(UTC)


#: Characters no store can hold as text: NUL (PostgreSQL's text type refuses it) and lone UTF-16 surrogates
#: (JSON escapes like "\ud800" that pair with nothing: not Unicode text, and UTF-8 cannot encode them).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
#: The pydantic error type of unstorable text; its context names the field (``pipeline.jsonl`` adds it to the path).
UNSTORABLE_TEXT = "unstorable_text"


def storable_text(text: str) -> tuple[str, int]:
    """``text`` with every character no store can hold (NUL, lone surrogates) replaced by U+FFFD, and how many.

    For text a model wrote: a random or broken model can emit a NUL, and refusing its answer would make a seeded
    rerun fail the same way forever; the replacement character keeps the damage visible to whoever reads it.
    """
    cleaned, count = _UNSTORABLE.subn("\ufffd", text)
    return cleaned, count


def unstorable_text_problem(value: Any) -> str | None:
    """Why ``value`` (a string, or lists / dicts of them, keys included) cannot be stored as text, or None."""
    if isinstance(value, str):
        found = _UNSTORABLE.search(value)
        if found is None:
            return None
        char = found.group()
        kind = "a NUL character (\\u0000)" if char == "\x00" else f"a lone surrogate (\\u{ord(char):04x})"
        return f"contains {kind} at character {found.start() + 1}: not storable text; remove or fix that escape"
    if isinstance(value, dict):
        return next(filter(None, (unstorable_text_problem(part) for item in value.items() for part in item)), None)
    if isinstance(value, list | tuple):
        return next(filter(None, (unstorable_text_problem(part) for part in value)), None)
    return None


class Record(BaseModel):
    """Base of every stored record: unknown fields are an error, so typos never pass silently, and text that no
    store can hold (NUL, lone surrogates) is refused here — by ``h2h validate`` and ``h2h ingest`` alike."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="after")
    def _storable_text(self) -> Self:
        # One call per record (not per field): reading a run's files stays cheap. Nested records check themselves.
        for name, value in self.__dict__.items():
            if isinstance(value, str | list | dict):
                problem = unstorable_text_problem(value)
                if problem is not None:
                    raise PydanticCustomError(UNSTORABLE_TEXT, "{problem}", {"field": name, "problem": problem})
        return self


class ScorePair(Record):
    """One line of ``h2h score-pairs`` input: a hypothesis to score against its reference."""

    id: str | int
    hypothesis: str
    reference: str


class Turn(Record):
    """One earlier message of the conversation."""

    role: Literal["user", "assistant"]
    content: str


class ScenarioTags(Record):
    """Labels of a scenario: language, emotion, instruction-following kind, and high risk for the safety study."""

    language: Literal["zh", "en", "mixed"] = "zh"
    emotion: str | None = None
    instruction_kind: InstructionKind | None = None
    high_risk: bool = False
    risk_kind: str | None = None  # e.g. suicidal_ideation, self_harm, abuse


class ScenarioContext(Record):
    """Optional material the prompt templates place into their placeholders."""

    memories: list[str] = Field(default_factory=list)
    schedule: list[str] = Field(default_factory=list)
    hobbies: list[str] = Field(default_factory=list)
    routine: str | None = None
    feedback: str | None = None
    date: str | None = None
    location: str | None = None


class Scenario(Record):
    """One benchmark scenario (ARCHITECTURE.md "The benchmark")."""

    id: str = Field(min_length=1)
    subtask: Subtask
    persona: str = ""
    history: list[Turn] = Field(default_factory=list)
    user_input: str = ""
    reference: str = Field(min_length=1)
    tags: ScenarioTags = Field(default_factory=ScenarioTags)
    context: ScenarioContext = Field(default_factory=ScenarioContext)
    source: str | None = None  # where it came from, e.g. "upstream:itinerary_basic.jsonl:12"

    @property
    def dimension(self) -> Dimension:
        return DIMENSION_OF_SUBTASK[self.subtask]


class Response(Record):
    """One generated response to one scenario by one model in one variant."""

    scenario_id: str
    model: str
    variant: Variant
    text: str
    backend: str
    prompt_version: str
    sampling: dict[str, float | int | str | None] = Field(default_factory=dict)
    usage: dict[str, int] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utc_now)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.scenario_id, self.model, self.variant)


class ScoreSignature(Record):
    """What produced a score. Scores with different signatures never mix in one table."""

    sacrebleu: str
    rouge_score: str
    tokenizer: str
    embedder: str  # e.g. "bge-m3", "minilm:all-MiniLM-L6-v2", "none"
    # ROUGE-1/L as F-measure (ARCHITECTURE.md "Scores") or as recall (the paper's "lexical recall"): README "Where this
    # project departs from the paper". Scores written before the choice existed were F-measures, hence the default.
    rouge_measure: RougeMeasure = "f"

    def label(self) -> str:
        """One line naming every part; equal labels mean scores may share a table."""
        return (
            f"sacrebleu={self.sacrebleu}|rouge_score={self.rouge_score}|rouge={self.rouge_measure}"
            f"|tok={self.tokenizer}|emb={self.embedder}"
        )


class Score(Record):
    """Automatic scores of one response against its scenario's reference; every metric in [0, 1]."""

    scenario_id: str
    model: str
    variant: Variant
    subtask: Subtask
    bleu1: float
    bleu2: float
    bleu3: float
    bleu4: float
    rouge1: float
    rougeL: float  # noqa: N815 - the paper's and rouge-score's name
    ss: float | None
    S: float | None  # noqa: N815 - the symbol of ARCHITECTURE.md "Scores"
    signature: ScoreSignature

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.scenario_id, self.model, self.variant)


class Judgment(Record):
    """The LLM judge's rubric verdict on one itinerary response (levels I-III)."""

    scenario_id: str
    model: str
    variant: Variant
    judge_model: str
    prompt_version: str
    prompt_hash: str
    raw: str | None  # the judge's full answer, kept even when it cannot be parsed
    J_judge: float | None = Field(default=None, ge=0, le=5)  # noqa: N815
    error: str | None = None
    usage: dict[str, int] = Field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.scenario_id, self.model, self.variant)


class Result(Record):
    """One response's combined result: S, the judge, J and the adjudication flag.

    ``J_final`` is J until a human adjudicates (the studio recomputes it with ``J_human``).
    """

    scenario_id: str
    model: str
    variant: Variant
    subtask: Subtask
    S: float | None  # noqa: N815
    J_judge: float | None = None  # noqa: N815
    J: float | None = None  # noqa: N815
    J_final: float | None = None  # noqa: N815
    needs_adjudication: bool = False
    signature: ScoreSignature
    judge_model: str | None = None
    judge_prompt_version: str | None = None

    @field_validator("J", "J_final")
    @classmethod
    def _j_in_range(cls, value: float | None) -> float | None:
        if value is not None and not (0.0 <= value <= 5.0 + 1e-9):
            raise ValueError(f"J must lie in [0, 5], got {value}")
        return value

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.scenario_id, self.model, self.variant)


def record_key(record: Response | Score | Judgment | Result) -> tuple[str, str, str]:
    """Return the ``(scenario_id, model, variant)`` key every per-response record carries."""
    return (record.scenario_id, record.model, record.variant)
