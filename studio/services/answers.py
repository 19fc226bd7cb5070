"""Storing answers: one per (item, person), idempotent per ``submission_id``, revisable while open."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col

from studio.db import lock_campaign, lock_item
from studio.models import Answer, AnswerPublic, AnswerRevision, Lease, UserPublic, utc_now
from studio.schemas import AnswerValidationError, FreeText, Pairwise, WorkflowSchema
from studio.services.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from studio.services.queue import (
    campaign_item,
    campaign_state,
    open_campaign,
    own_lease,
    pair_order,
    require_open,
)
from studio.services.queue_rows import (
    CampaignState,
    answer_by_submission,
    earlier_answers,
    insert_answer,
    item_row,
    live_lease_count,
    release_lease,
)
from studio.services.text import is_unicode, require_unicode

DEFAULT_MAX_SECONDS = 3600.0
#: A client may report a little more time than the server measured (clock skew, page load).
CLIENT_SECONDS_GRACE = 5.0
MAX_SUBMISSION_ID = 128
#: A submit whose lease expires within this margin takes the campaign's queue lock before deciding (PostgreSQL): a
#: ``next`` that sees the lease expired while the submit's transaction runs could otherwise hand its slot on.
LEASE_EXPIRY_MARGIN = timedelta(seconds=60)


class SubmitResult(BaseModel):
    created: bool
    answer: AnswerPublic


def _check_text_lengths(schema: WorkflowSchema, answers: dict[str, Any], max_text_chars: int | None) -> None:
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


def _clean_values(
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
    _check_text_lengths(schema, clean, max_text_chars)
    for question in schema.questions:
        if isinstance(question, Pairwise) and clean.get(question.id) in ("A", "B"):
            shown_a, shown_b = pair_order(campaign, user.id, item)
            clean[question.id] = shown_a if clean[question.id] == "A" else shown_b
    return clean


def _client_seconds(value: float | None, server_seconds: float | None, cap: float) -> float | None:
    """Sanity-check the client's seconds: finite and non-negative, no more than measured (+grace), capped."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise InvalidInput(f"seconds_spent: expected a non-negative number, got {value!r}")
    if server_seconds is not None:
        value = min(value, server_seconds + CLIENT_SECONDS_GRACE)
    return float(min(value, cap))


def _own_submission(stored: AnswerPublic, user: UserPublic, item_id: int) -> AnswerPublic:
    """``stored`` when this person stored it for this item; ``Conflict`` when the submission_id is someone else's."""
    if stored.user_id != user.id or stored.item_id != item_id:
        raise Conflict("submission_id: already used for another answer")
    return stored


def _check_slot(session: Session, campaign: CampaignState, item: Any, lease: Any, now: datetime) -> None:
    """``Conflict`` when the lease no longer holds a slot: released, or expired and its slot given on.

    ``now`` must be read under the locks the decision needs (see :func:`submit_answer`): a ``next`` that ran
    before them read an earlier clock, so whatever it saw expired has expired for ``now`` too.
    """
    if lease.released_at is not None:
        raise Conflict(f"lease_id: the lease was {lease.outcome or 'released'}; ask for the next item again")
    if lease.expires_at <= now:
        taken = item.answer_count + live_lease_count(session, item.id, now, excluding=lease.id)
        if taken >= campaign.people_per_item:
            raise Conflict("lease_id: the lease expired and the item's slots were taken meanwhile")


def _check_request_text(submission_id: str, lease_id: str, answers: Any) -> None:
    if not submission_id or len(submission_id) > MAX_SUBMISSION_ID:
        raise InvalidInput(f"submission_id: must be 1-{MAX_SUBMISSION_ID} characters")
    require_unicode(submission_id, "submission_id")
    require_unicode(lease_id, "lease_id")
    require_unicode(answers, "answers")


def _store(session: Session, lease_id: str, now: datetime, **answer: Any) -> AnswerPublic:
    """Close the lease, insert the answer and count it on the item, all in the caller's transaction.

    The lease is closed first and only if still open: a skip of the same lease that committed since it was
    read (PostgreSQL: a skip takes the campaign's lock, a submit the item's) has freed its slot, maybe for
    someone else already, so the submit is refused rather than filling the slot twice.
    """
    if not release_lease(session, lease_id, at=now, outcome="answered"):
        raise Conflict("lease_id: the lease was released meanwhile (skipped?); ask for the next item again")
    try:
        return insert_answer(session, **answer)
    except IntegrityError:
        raise Conflict(
            "submission_id: a concurrent request stored an answer under this submission_id; send it again to see it"
        ) from None


def _checked_request(
    session: Session,
    *,
    campaign: str,
    user: UserPublic,
    item_id: int,
    lease_id: str,
    submission_id: str,
    answers: Any,
    seconds_spent: float | None,
    max_seconds_spent: float,
    max_text_chars: int | None,
) -> tuple[CampaignState, Any, dict[str, Any]]:
    """Every check of a submit that only reads: text, seconds, campaign open, item and the answer values."""
    _check_request_text(submission_id, lease_id, answers)
    _client_seconds(seconds_spent, None, max_seconds_spent)  # refuse a bad value before taking the lock
    found = campaign_state(session, campaign)
    require_open(found)
    item = campaign_item(session, found, item_id)
    return found, item, _clean_values(found.schema, found, user, item, answers, max_text_chars)


def submit_answer(
    session: Session,
    *,
    campaign: str,
    user: UserPublic,
    item_id: int,
    lease_id: str,
    submission_id: str,
    answers: dict[str, Any],
    seconds_spent: float | None = None,
    max_seconds_spent: float = DEFAULT_MAX_SECONDS,
    max_text_chars: int | None = None,
    now: datetime | None = None,
) -> SubmitResult:
    """Store the caller's answer to an item they hold a lease on.

    A retry with the same ``submission_id`` returns the stored answer (``created`` False). Errors:
    ``NotFound`` (campaign, item, lease), ``PermissionDenied`` (closed campaign, someone else's
    lease), ``Conflict`` (already answered, lease released, expired lease whose slot was taken),
    ``InvalidInput`` (answer values). Nothing is stored on any error. ``now`` fixes the clock (tests); by default
    it is read once the locks are held, so a wait for them does not leave it stale.
    """
    clock = now
    found, item, values = _checked_request(
        session,
        campaign=campaign,
        user=user,
        item_id=item_id,
        lease_id=lease_id,
        submission_id=submission_id,
        answers=answers,
        seconds_spent=seconds_spent,
        max_seconds_spent=max_seconds_spent,
        max_text_chars=max_text_chars,
    )
    # Everything above only reads. The item's lock (PostgreSQL; SQLite's write lock covers it all) serialises submits
    # of this item; filling the slot a live lease holds changes no other person's decision, and the lease is closed
    # only if still open (_store), so a concurrent skip cannot make one slot count twice.
    lock_item(session, item_id)
    now = clock or utc_now()  # under the item's lock (SQLite: the write lock, taken at the first read above)
    retried, answered = earlier_answers(session, submission_id=submission_id, item_id=item_id, user_id=user.id)
    if retried is not None:
        return SubmitResult(created=False, answer=_own_submission(retried, user, item_id))
    if answered is not None:
        raise Conflict(f"item_id: you already answered item {item_id}; revise it with PUT .../answers/{item_id}")
    lease = own_lease(session, found, user, item_id, lease_id)
    if lease.expires_at <= now + LEASE_EXPIRY_MARGIN and lock_campaign(session, found.id):
        # An expired (or about to expire) lease's slot may be handed on meanwhile: decide under the queue lock,
        # with the item and the clock as they are now.
        item, now = item_row(session, item_id), clock or utc_now()
    _check_slot(session, found, item, lease, now)
    server_seconds = max(0.0, (now - lease.issued_at).total_seconds())
    answer = _store(
        session,
        lease.id,
        now,
        item_id=item_id,
        campaign_id=found.id,
        user_id=user.id,
        values=values,
        submission_id=submission_id,
        seconds_spent=_client_seconds(seconds_spent, server_seconds, max_seconds_spent),
        server_seconds=min(server_seconds, max_seconds_spent),
        created_at=now,
        updated_at=now,
    )
    return SubmitResult(created=True, answer=answer)


def answer_by_submission_id(session: Session, submission_id: str) -> AnswerPublic | None:
    """The answer stored under ``submission_id``, whoever stored it; None when there is none (one indexed query)."""
    if not isinstance(submission_id, str) or not is_unicode(submission_id):
        return None  # submit_answer refuses it with the precise error
    return answer_by_submission(session, submission_id)


def retried_submission(
    session: Session,
    stored: AnswerPublic,
    *,
    campaign: str,
    user: UserPublic,
    item_id: int,
    lease_id: str,
    submission_id: str,
    answers: dict[str, Any],
    seconds_spent: float | None = None,
    max_seconds_spent: float = DEFAULT_MAX_SECONDS,
    max_text_chars: int | None = None,
) -> AnswerPublic:
    """``stored`` (of :func:`answer_by_submission_id`) as the answer to this retried submit, after the same checks
    and errors :func:`submit_answer` gives a retry (``Conflict`` when the submission_id is someone else's)."""
    _checked_request(
        session,
        campaign=campaign,
        user=user,
        item_id=item_id,
        lease_id=lease_id,
        submission_id=submission_id,
        answers=answers,
        seconds_spent=seconds_spent,
        max_seconds_spent=max_seconds_spent,
        max_text_chars=max_text_chars,
    )
    return _own_submission(stored, user, item_id)


def stored_submission(
    session: Session,
    *,
    campaign: str,
    user: UserPublic,
    item_id: int,
    lease_id: str,
    submission_id: str,
    answers: dict[str, Any],
    seconds_spent: float | None = None,
    max_seconds_spent: float = DEFAULT_MAX_SECONDS,
    max_text_chars: int | None = None,
) -> AnswerPublic | None:
    """The answer a retry of this submit must return, read without any lock; None when it is not stored yet.

    Answers the same as :func:`submit_answer` would for a retry (the same checks and errors, then the
    stored answer), so a read session can serve retries off the write lock. Safe because answers are
    never deleted and ``submission_id`` is unique: once stored, the answer a submission_id names never
    changes owner or item. None means "not stored when this read began": call :func:`submit_answer`,
    which decides under the lock (a retry racing its first submit lands there).
    """
    stored = answer_by_submission_id(session, submission_id)
    if stored is None:
        return None
    return retried_submission(
        session,
        stored,
        campaign=campaign,
        user=user,
        item_id=item_id,
        lease_id=lease_id,
        submission_id=submission_id,
        answers=answers,
        seconds_spent=seconds_spent,
        max_seconds_spent=max_seconds_spent,
        max_text_chars=max_text_chars,
    )


def revise_answer(
    session: Session,
    *,
    campaign: str,
    user: UserPublic,
    item_id: int,
    answers: dict[str, Any],
    seconds_spent: float | None = None,
    max_seconds_spent: float = DEFAULT_MAX_SECONDS,
    max_text_chars: int | None = None,
    now: datetime | None = None,
) -> AnswerPublic:
    """Replace the person's own answer while the campaign is open; the old values go to AnswerRevision."""
    now = now or utc_now()
    require_unicode(answers, "answers")
    found = open_campaign(session, campaign)
    schema = found.schema
    if not schema.allow_revision:
        raise PermissionDenied(f"campaign: {found.name!r} does not allow revising answers")
    item = campaign_item(session, found, item_id)
    answer = (
        session.execute(select(Answer).where(col(Answer.item_id) == item_id, col(Answer.user_id) == user.id))
        .scalars()
        .first()
    )
    if answer is None:
        raise NotFound(f"item_id: you have no answer to item {item_id} to revise")
    values = _clean_values(schema, found, user, item, answers, max_text_chars)
    session.add(
        AnswerRevision(
            answer_id=answer.id,
            revision=answer.revision,
            values=answer.values,
            seconds_spent=answer.seconds_spent,
            replaced_at=now,
        )
    )
    answer.values = values
    answer.revision += 1
    answer.updated_at = now
    extra = _client_seconds(seconds_spent, None, max_seconds_spent)
    if extra is not None:
        answer.seconds_spent = min((answer.seconds_spent or 0.0) + extra, max_seconds_spent)
    session.flush()
    return AnswerPublic.model_validate(answer)


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
