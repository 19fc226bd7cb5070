"""A person's own answers: revising one (a revision that changes nothing stores nothing), reading them back, and
their values as the person gave them.

Revising replaces the answer's values while the campaign is open and its workflow allows it; the values replaced go
to ``AnswerRevision`` (the history) and the revision count goes up. A revision whose values, once checked and
normalised as a submit's are, equal the stored ones is no revision: nothing is written (no history row, no new
revision, no time added) and the result says so (``changed`` False) — the REST ``PUT`` and the annotate page alike.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import func, select
from sqlmodel import Session, col

from studio.errors import NotFound, PermissionDenied
from studio.models import Answer, AnswerPublic, AnswerRevision, Lease, UserPublic, utc_now
from studio.models.types import stored_id
from studio.services.answer_values import AnswerLimits, Revision, clean_values, client_seconds
from studio.services.queue import campaign_item, campaign_state, open_campaign, pair_order
from studio.services.queue_rows import CampaignState
from studio.services.text import require_unicode
from studio.workflows import Pairwise

#: What a revision that changes nothing is told (the page and the REST API say the same).
NOTHING_CHANGED = "Nothing changed: your answer is as it was."


class ReviseResult(BaseModel):
    """A revision's outcome: ``changed`` False when the values given equal the stored ones (nothing was written)."""

    changed: bool
    answer: AnswerPublic


def _own_answer_row(session: Session, user: UserPublic, item_id: int) -> Answer:
    query = select(Answer).where(col(Answer.item_id) == item_id, col(Answer.user_id) == user.id)
    answer: Answer | None = session.execute(query).scalars().first()
    if answer is None:
        raise NotFound(f"item_id: you have no answer to item {item_id} to revise")
    return answer


def _replace(answer: Answer, values: dict[str, Any], extra_seconds: float | None, *, cap: float, now: Any) -> None:
    """Write ``values`` over ``answer``, its old values to the history; ``extra_seconds`` added to its time."""
    answer.revision += 1
    answer.values = values
    answer.updated_at = now
    if extra_seconds is not None:
        answer.seconds_spent = min((answer.seconds_spent or 0.0) + extra_seconds, cap)


def revise_answer(
    session: Session,
    *,
    campaign: str,
    user: UserPublic,
    item_id: int,
    revision: Revision,
    limits: AnswerLimits = AnswerLimits(),
    now: datetime | None = None,
) -> ReviseResult:
    """Replace the person's own answer to ``item_id`` with ``revision``'s answers while the campaign is open; the old
    values go to AnswerRevision. Values equal to the stored ones write nothing (``changed`` False). Errors:
    ``PermissionDenied`` (closed, or no revising in this workflow), ``NotFound`` (no answer to revise),
    ``InvalidInput`` (the values, the seconds)."""
    answers, max_seconds_spent = revision.answers, limits.max_seconds_spent
    require_unicode(answers, "answers")
    found = open_campaign(session, campaign)
    if not found.schema.allow_revision:
        raise PermissionDenied(f"campaign: {found.name!r} does not allow revising answers")
    item = campaign_item(session, found, item_id)
    answer = _own_answer_row(session, user, item_id)
    values = clean_values(found.schema, found, user, item, answers, limits.max_text_chars)
    extra = client_seconds(revision.seconds_spent, None, max_seconds_spent)
    if values == answer.values:  # as stored (normalised alike): no revision, no history, no time added
        return ReviseResult(changed=False, answer=AnswerPublic.model_validate(answer))
    now = now or utc_now()
    session.add(
        AnswerRevision(
            answer_id=stored_id(answer.id),
            revision=answer.revision,
            values=answer.values,
            seconds_spent=answer.seconds_spent,
            replaced_at=now,
        )
    )
    _replace(answer, values, extra, cap=max_seconds_spent, now=now)
    session.flush()
    return ReviseResult(changed=True, answer=AnswerPublic.model_validate(answer))


def my_answer(session: Session, *, campaign: str, user: UserPublic, item_id: int) -> AnswerPublic:
    """The caller's own answer to an item (for editing); ``NotFound`` when there is none."""
    found = campaign_state(session, campaign)
    answer = (
        session.execute(
            select(Answer).where(
                col(Answer.campaign_id) == found.id, col(Answer.item_id) == item_id, col(Answer.user_id) == user.id
            )
        )
        .scalars()
        .first()
    )
    if answer is None:
        raise NotFound(f"item_id: you have no answer to item {item_id}")
    return AnswerPublic.model_validate(answer)


def my_answers(session: Session, *, campaign: str, user: UserPublic) -> list[AnswerPublic]:
    """The person's answers in the campaign, the latest changed first."""
    found = campaign_state(session, campaign)
    rows = session.execute(
        select(Answer)
        .where(col(Answer.campaign_id) == found.id, col(Answer.user_id) == user.id)
        .order_by(col(Answer.updated_at).desc(), col(Answer.id).desc())
    ).scalars()
    return [AnswerPublic.model_validate(row) for row in rows]


def submitted_values(session: Session, answer: AnswerPublic) -> dict[str, Any]:
    """The values ``answer`` held when it was first submitted: its earliest history row once revised, else its own."""
    query = (
        select(col(AnswerRevision.values))
        .where(col(AnswerRevision.answer_id) == answer.id)
        .order_by(col(AnswerRevision.revision), col(AnswerRevision.id))
        .limit(1)
    )
    first = session.execute(query).scalar_one_or_none()
    return dict(first) if first is not None else dict(answer.values)


def has_seen_item(session: Session, *, campaign: CampaignState, user: UserPublic, item_id: int) -> bool:
    """Whether the item was ever handed to the person (a lease of theirs on it, live or not): the items whose
    content they may read again (whole texts, their own answers)."""
    query = select(func.count(col(Lease.id))).where(
        col(Lease.campaign_id) == campaign.id, col(Lease.user_id) == user.id, col(Lease.item_id) == item_id
    )
    return int(session.execute(query).scalar_one()) > 0


def values_as_shown(session: Session, *, campaign: str, user: UserPublic, answer: AnswerPublic) -> dict[str, Any]:
    """The answer's values as this person gave them: stored response ids of pairwise choices back to "A"/"B"."""
    found = campaign_state(session, campaign)
    schema = found.schema
    shown = dict(answer.values)
    pairwise = [question.id for question in schema.questions if isinstance(question, Pairwise)]
    if not pairwise:
        return shown
    item = campaign_item(session, found, answer.item_id)
    shown_a, shown_b = pair_order(found, user.id, item)
    for question_id in pairwise:
        value = shown.get(question_id)
        shown[question_id] = "A" if value == shown_a else "B" if value == shown_b else value
    return shown
