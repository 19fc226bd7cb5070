"""Storing answers: one per (item, person), idempotent per ``submission_id``, revisable while open (revising and
reading one's own answers: :mod:`studio.services.answers_mine`, named here too).

A submit arrives whole, as a :class:`~studio.services.answer_values.Submission` with the
:class:`~studio.services.answer_values.AnswerLimits` it obeys (:func:`submit`, :func:`retried_submission`);
:func:`submit_answer` and :func:`stored_submission` are the keyword forms for scripts, tests and benchmarks.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from studio.db import lock_item
from studio.errors import Conflict, InvalidInput
from studio.models import AnswerPublic, UserPublic, utc_now
from studio.services.answer_rows import answer_by_submission, earlier_answers, store_answer
from studio.services.answer_values import (
    DEFAULT_MAX_SECONDS,
    AnswerLimits,
    Submission,
    clean_values,
    client_seconds,
)

# A person's own answers (revise, read, as shown) live in studio.services.answers_mine; named here too, where the
# studio's callers have always found them.
from studio.services.answers_mine import (
    ReviseResult,
    has_seen_item,
    my_answer,
    my_answers,
    revise_answer,
    submitted_values,
    values_as_shown,
)
from studio.services.lease_rows import live_lease_count
from studio.services.queue import (
    campaign_item,
    campaign_state,
    checked_own_lease,
    require_open,
)
from studio.services.queue_rows import CampaignState
from studio.services.stopping import pending_stop, record_stop
from studio.services.targets import target_kind
from studio.services.text import is_unicode, require_unicode

__all__ = [
    "DEFAULT_MAX_SECONDS",
    "AnswerLimits",
    "ReviseResult",
    "SubmitResult",
    "Submission",
    "answer_by_submission_id",
    "has_seen_item",
    "my_answer",
    "my_answers",
    "retried_submission",
    "revise_answer",
    "stored_submission",
    "submit",
    "submit_answer",
    "values_as_shown",
]

MAX_SUBMISSION_ID = 128
#: How much of a stored answer a conflicting resend is told (its values as JSON).
MAX_SHOWN_CHARS = 500


class SubmitResult(BaseModel):
    created: bool
    answer: AnswerPublic


def _own_submission(stored: AnswerPublic, user: UserPublic, item_id: int) -> AnswerPublic:
    """``stored`` when this person stored it for this item; ``Conflict`` when the submission_id is someone else's."""
    if stored.user_id != user.id or stored.item_id != item_id:
        raise Conflict("submission_id: already used for another answer")
    return stored


def _retry_of(
    session: Session, stored: AnswerPublic, *, campaign: str, user: UserPublic, item_id: int, values: dict[str, Any]
) -> AnswerPublic:
    """``stored`` as the answer to a resent submit: the same person, item and values (as first submitted; a later
    revision does not turn the resend of the first submit into a conflict). ``Conflict`` naming the stored answer
    when the values differ: a resend that answered 200 with the old values would let a client believe its new
    values were stored."""
    _own_submission(stored, user, item_id)
    if values == stored.values or (stored.revision > 0 and values == submitted_values(session, stored)):
        return stored
    shown = json.dumps(values_as_shown(session, campaign=campaign, user=user, answer=stored), ensure_ascii=False)
    if len(shown) > MAX_SHOWN_CHARS:  # a long free text: enough to recognise the answer, not the whole of it
        shown = shown[:MAX_SHOWN_CHARS] + "…"
    raise Conflict(
        f"submission_id: this submission_id was already stored with other values: {shown}; a resend must repeat "
        f"them. To change your answer, revise it (PUT .../answers/{item_id})"
    )


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
    read (a skip takes its person's lock, a submit the item's row) has freed its slot, maybe for
    someone else already, so the submit is refused rather than filling the slot twice.
    """
    try:
        stored = store_answer(session, lease_id=lease_id, at=now, **answer)
    except IntegrityError:
        raise Conflict(
            "submission_id: a concurrent request stored an answer under this submission_id; send it again to see it"
        ) from None
    if stored is None:
        raise Conflict("lease_id: the lease was released meanwhile (skipped?); ask for the next item again")
    return stored


def _checked_request(
    session: Session,
    *,
    campaign: str,
    user: UserPublic,
    submission: Submission,
    limits: AnswerLimits,
    live_rating: bool = False,
    locked: bool = False,
) -> tuple[CampaignState, Any, dict[str, Any]]:
    """Every check of a submit that only reads: text, seconds, campaign open, item and the answer values.

    ``locked``: the item's row is read as committed and locked until the transaction ends (PostgreSQL; see
    :func:`studio.services.queue_rows.item_row`) — the submit's own decision; a retry's read-only check locks nothing.
    """
    _check_request_text(submission.submission_id, submission.lease_id, submission.answers)
    client_seconds(submission.seconds_spent, None, limits.max_seconds_spent)  # refuse a bad value before the lock
    found = campaign_state(session, campaign)
    require_open(found)
    if not target_kind(found.schema.target).answered_in_queue and not live_rating:
        # A live session's rating comes after its conversation (studio.services.live_sessions.rate_session checks it).
        raise Conflict("item_id: a live-session campaign is rated at the end of its conversation, not item by item")
    item = campaign_item(session, found, submission.item_id, locked=locked)
    return found, item, clean_values(found.schema, found, user, item, submission.answers, limits.max_text_chars)


def submit(
    session: Session,
    *,
    campaign: str,
    user: UserPublic,
    submission: Submission,
    limits: AnswerLimits = AnswerLimits(),
    now: datetime | None = None,
    live_rating: bool = False,
) -> SubmitResult:
    """Store the caller's answer to an item they hold a lease on (``live_rating``: a live session's rating, which
    :func:`studio.services.live_sessions.rate_session` sends once it has checked the conversation).

    A retry with the same ``submission_id`` and values returns the stored answer (``created`` False). Errors:
    ``NotFound`` (campaign, item, lease), ``PermissionDenied`` (closed campaign, someone else's
    lease), ``Conflict`` (already answered, lease released, expired lease whose slot was taken, a submission_id
    stored with other values),
    ``InvalidInput`` (answer values). Nothing is stored on any error. ``now`` fixes the clock (tests); by default
    it is read once the locks are held, so a wait for them does not leave it stale.
    """
    clock, item_id = now, submission.item_id
    # The item's row lock (PostgreSQL; SQLite's write lock covers it all), taken as the item is read, serialises the
    # submits of this item and every decision about its slots (handing out locks the row too); everything else above
    # only reads. The lease is closed only if still open (_store), so a concurrent skip cannot make one slot count
    # twice.
    found, item, values = _checked_request(
        session,
        campaign=campaign,
        user=user,
        submission=submission,
        limits=limits,
        live_rating=live_rating,
        locked=True,
    )
    if live_rating:
        lock_item(session, item_id)  # a live session's turns take this lock: a rating waits for a turn under way
    now = clock or utc_now()  # under the item's lock (SQLite: the write lock, taken at the first read above)
    earlier = earlier_answers(
        session, submission_id=submission.submission_id, item_id=item_id, user_id=user.id, lease_id=submission.lease_id
    )
    retried, answered = earlier.by_submission, earlier.to_item
    if retried is not None:
        answer = _retry_of(session, retried, campaign=campaign, user=user, item_id=item_id, values=values)
        return SubmitResult(created=False, answer=answer)
    if answered is not None:
        raise Conflict(f"item_id: you already answered item {item_id}; revise it with PUT .../answers/{item_id}")
    lease = checked_own_lease(earlier.lease, found, user, item_id, submission.lease_id)
    # An expired lease's slot may be handed on: handing out needs this item's row lock, held here, so the slots
    # counted now stay as they are until this transaction ends.
    _check_slot(session, found, item, lease, now)
    # A stop this vote brings about (the workflow's stopping:; the votes counted under the item's lock) is written
    # under that same lock: a next() handed the item out before the stop (a lease open at it, which may still submit)
    # or sees it stopped. Once per item at most.
    stop = pending_stop(session, campaign=found, item=item, values=values)
    server_seconds = max(0.0, (now - lease.issued_at).total_seconds())
    cap = limits.max_seconds_spent
    answer = _store(
        session,
        lease.id,
        now,
        item_id=item_id,
        campaign_id=found.id,
        user_id=user.id,
        values=values,
        submission_id=submission.submission_id,
        seconds_spent=client_seconds(submission.seconds_spent, server_seconds, cap),
        server_seconds=min(server_seconds, cap),
        created_at=now,
        updated_at=now,
    )
    if stop is not None:
        record_stop(session, campaign_id=found.id, item_id=item_id, stop=stop, at=now)
    return SubmitResult(created=True, answer=answer)


def answer_by_submission_id(session: Session, submission_id: str) -> AnswerPublic | None:
    """The answer stored under ``submission_id``, whoever stored it; None when there is none (one indexed query)."""
    if not isinstance(submission_id, str) or not is_unicode(submission_id):
        return None  # submit refuses it with the precise error
    return answer_by_submission(session, submission_id)


def retried_submission(
    session: Session,
    stored: AnswerPublic,
    *,
    campaign: str,
    user: UserPublic,
    submission: Submission,
    limits: AnswerLimits = AnswerLimits(),
) -> AnswerPublic:
    """``stored`` (of :func:`answer_by_submission_id`) as the answer to this retried submit, after the same checks
    and errors :func:`submit` gives a retry (``Conflict`` when the submission_id is someone else's or was
    stored with other values)."""
    _found, _item, values = _checked_request(
        session, campaign=campaign, user=user, submission=submission, limits=limits
    )
    return _retry_of(session, stored, campaign=campaign, user=user, item_id=submission.item_id, values=values)


def unchecked_submission(fields: dict[str, Any]) -> Submission:
    """A :class:`Submission` of keyword ``fields`` as given (the service checks them itself, as it always did);
    ``TypeError``, as for a wrong keyword, when one is not a field of it or a required one is missing."""
    unknown = sorted(fields.keys() - Submission.model_fields.keys())
    missing = sorted(
        name for name, field in Submission.model_fields.items() if field.is_required() and name not in fields
    )
    if unknown or missing:
        raise TypeError(f"a submission has no field {unknown} and needs {missing}" if unknown else f"missing {missing}")
    return Submission.model_construct(**fields)


def submit_answer(
    session: Session, *, campaign: str, user: UserPublic, now: datetime | None = None, **fields: Any
) -> SubmitResult:
    """:func:`submit` with the submission's fields as keywords (``item_id``, ``lease_id``, ``submission_id``,
    ``answers``, ``seconds_spent``) and the default limits: the form scripts, tests and benchmarks call."""
    return submit(session, campaign=campaign, user=user, submission=unchecked_submission(fields), now=now)


def stored_submission(session: Session, *, campaign: str, user: UserPublic, **fields: Any) -> AnswerPublic | None:
    """The answer a retry of this submit (``fields`` as for :func:`submit_answer`) must return, read without any
    lock; None when it is not stored yet.

    Answers the same as :func:`submit` would for a retry (the same checks and errors, then the stored answer), so a
    read session can serve retries off the write lock. Safe because answers are never deleted and ``submission_id``
    is unique: once stored, the answer a submission_id names never changes owner or item. None means "not stored
    when this read began": call :func:`submit`, which decides under the lock (a retry racing its first submit lands
    there).
    """
    submission = unchecked_submission(fields)
    stored = answer_by_submission_id(session, submission.submission_id)
    if stored is None:
        return None
    return retried_submission(session, stored, campaign=campaign, user=user, submission=submission)
