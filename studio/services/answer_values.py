"""An answer as the studio takes it: the request shapes, declared once — :class:`Submission` (a submit),
:class:`Revision` (a revision) and the :class:`AnswerLimits` both obey — and the values and time checked against the
workflow, the studio's text limit and the clock (shared by submitting, :mod:`studio.services.answers`, and revising,
:mod:`studio.services.answers_mine`).

The REST API takes :class:`Submission` and :class:`Revision` as its bodies and the annotate page builds them from its
form; the use cases pass them whole to the services, which check them again (a service is also called by scripts
and tests with models built unchecked, see :func:`studio.services.answers.submit_answer`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from studio.errors import InvalidInput
from studio.models import UserPublic
from studio.models.types import StoredId
from studio.services.queue import DEFAULT_LEASE_SECONDS, pair_order
from studio.services.queue_rows import CampaignState
from studio.settings import Settings
from studio.workflows import AnswerValidationError, FreeText, Pairwise, WorkflowSchema

DEFAULT_MAX_SECONDS = 3600.0
#: A client may report a little more time than the server measured (clock skew, page load).
CLIENT_SECONDS_GRACE = 5.0


class Submission(BaseModel):
    """One submit: the item and lease it answers (as they were shown), an id that makes retries safe, the answers and
    the seconds the person spent on the item (as the client measured them)."""

    item_id: StoredId
    lease_id: str = Field(min_length=1, max_length=64)
    submission_id: str = Field(min_length=1, max_length=128)
    answers: dict[str, Any]
    seconds_spent: float | None = None


class Revision(BaseModel):
    """One revision of one's own answer: the new answers, and the seconds spent revising (added to the answer's)."""

    answers: dict[str, Any]
    seconds_spent: float | None = None


@dataclass(frozen=True)
class AnswerLimits:
    """The settings answering obeys (see :class:`studio.settings.Settings`): the lease, the time an answer may count,
    the longest free text (None: the workflow's own limit only)."""

    lease_seconds: int = DEFAULT_LEASE_SECONDS
    max_seconds_spent: float = DEFAULT_MAX_SECONDS
    max_text_chars: int | None = None

    @classmethod
    def from_settings(cls, settings: Settings) -> AnswerLimits:
        return cls(
            lease_seconds=settings.lease_seconds,
            max_seconds_spent=settings.max_seconds_spent,
            max_text_chars=settings.max_text_chars,
        )


def check_text_lengths(schema: WorkflowSchema, answers: dict[str, Any], max_text_chars: int | None) -> None:
    """``InvalidInput`` when a free-text answer is longer than the studio's limit (``H2H_MAX_TEXT_CHARS``).

    The schema's own ``max_length`` applies too; the stricter of the two wins.
    """
    if max_text_chars is None:
        return
    for question in schema.questions:
        value = answers.get(question.id)
        if isinstance(question, FreeText) and isinstance(value, str) and len(value) > max_text_chars:
            raise InvalidInput(
                f"answers.{question.id}: text is {len(value)} characters; the studio's limit is {max_text_chars}"
            )


def clean_values(
    schema: WorkflowSchema,
    campaign: CampaignState,
    user: UserPublic,
    item: Any,
    answers: Any,
    max_text_chars: int | None = None,
) -> dict[str, Any]:
    """Validate against the schema (and the studio's text limit); translate pairwise "A"/"B" to response ids."""
    try:
        clean = schema.validate_answers(answers)
    except AnswerValidationError as error:
        raise InvalidInput(f"answers.{error.question_id}: {error.problem}") from None
    check_text_lengths(schema, clean, max_text_chars)
    for question in schema.questions:
        if isinstance(question, Pairwise) and clean.get(question.id) in ("A", "B"):
            shown_a, shown_b = pair_order(campaign, user.id, item)
            clean[question.id] = shown_a if clean[question.id] == "A" else shown_b
    return clean


def client_seconds(value: float | None, server_seconds: float | None, cap: float) -> float | None:
    """Sanity-check the client's seconds: finite and non-negative, no more than measured (+grace), capped."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise InvalidInput(f"seconds_spent: expected a non-negative number, got {value!r}")
    if server_seconds is not None:
        value = min(value, server_seconds + CLIENT_SECONDS_GRACE)
    return float(min(value, cap))
