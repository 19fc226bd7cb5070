"""Annotating: the campaigns a person sees, the next item, skip, submit, revise, their own answers and progress.

Every function takes the request's ``session`` and ``caller`` (see :class:`studio.usecases.context.RequestContext`),
authorises the caller first (``studio.policies``) and then calls the services, which own the queue's rules and the
SQL. The REST routes and the Gradio annotate page call these same functions; neither door checks a role itself.
A submit and a revision arrive whole, as the :class:`Submission` and :class:`Revision` of
:mod:`studio.services.answer_values` (named here too, with :class:`AnswerLimits`, for the front doors), and go on
whole to :mod:`studio.services.answers`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlmodel import Session

from studio.errors import InvalidInput, NotFound
from studio.models import AnswerPublic, CampaignPublic, UserPublic
from studio.models.types import STORE_INT_MAX, StoredId
from studio.policies import AccountPolicy, CampaignPolicy, authorize, is_allowed
from studio.services import answers, campaigns, content, queue
from studio.services import progress as progress_service
from studio.services.answer_values import AnswerLimits, Revision, Submission
from studio.services.answers import ReviseResult, SubmitResult
from studio.services.campaigns import CampaignSummary
from studio.services.queue import ItemView
from studio.services.queue_rows import CampaignState
from studio.workflows import WorkflowSchema

__all__ = [
    "AnswerLimits",
    "AnsweredItem",
    "MyAnswers",
    "Offer",
    "Revision",
    "Submission",
    "answered_item",
    "campaign_summaries",
    "full_text",
    "my_answer",
    "my_answers",
    "next_item",
    "offer_next",
    "progress",
    "revise",
    "skip",
    "stored_answer",
    "submit",
    "values_as_shown",
    "visible_campaigns",
    "whole_content",
]


@dataclass(frozen=True)
class Offer:
    """What the annotate page shows next: the item (None: nothing left for the caller), the campaign's schema (the
    form to show) and progress (the caller's answers, the campaign's answers and complete items)."""

    view: ItemView | None
    schema: WorkflowSchema
    progress: dict[str, Any]


def _answerable(session: Session, caller: UserPublic, campaign: str) -> CampaignState:
    """The campaign (``NotFound`` when unknown), once the caller is allowed to answer it."""
    found = queue.campaign_state(session, campaign)
    authorize(caller, CampaignPolicy.answer(found))
    return found


def _store_id_or_none(value: object) -> int | None:
    """``value`` when it is an id the store can hold (a submission built without validation may carry anything: the
    service then refuses it with the precise error)."""
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= STORE_INT_MAX:
        return value
    return None


def _item_by_item(session: Session, caller: UserPublic, campaign: str) -> CampaignState:
    """:func:`_answerable`, for taking, skipping, submitting and revising items one by one: a ``live_session``
    campaign's items are conversations, answered through :mod:`studio.usecases.live` only (its rating checks the
    conversation first), so they are refused here (``InvalidInput``)."""
    found = _answerable(session, caller, campaign)
    if found.schema.target == "live_session":
        raise InvalidInput(
            f"campaign: {campaign!r} is a live-session campaign: talk and rate on the Live sessions page "
            f"(POST /api/v1/campaigns/{campaign}/sessions)"
        )
    return found


def visible_campaigns(session: Session, *, caller: UserPublic, include_closed: bool = False) -> list[CampaignPublic]:
    """The campaigns the caller sees, by name: the open ones they may answer; with ``include_closed``, managers see
    every campaign (others still see only theirs)."""
    authorize(caller, AccountPolicy.own())
    sees_all = include_closed and is_allowed(caller, CampaignPolicy.list_all())
    return [
        campaign
        for campaign in campaigns.list_campaigns(session)
        if sees_all or (campaign.status == "open" and is_allowed(caller, CampaignPolicy.answer(campaign)))
    ]


def campaign_summaries(session: Session, *, caller: UserPublic) -> list[CampaignSummary]:
    """:func:`visible_campaigns` with each one's title and progress."""
    return campaigns.campaign_summaries(session, visible_campaigns(session, caller=caller))


def next_item(session: Session, *, caller: UserPublic, campaign: str, lease_seconds: int) -> ItemView | None:
    """Lease the caller's next item (or give back the one they hold) and the view of it; None when none is left.

    Run it in a write session: handing out decides under the caller's own lock (one request of theirs at a time).
    """
    # The campaign read takes that lock too (one round trip on PostgreSQL, not two). It comes before the check that
    # the caller may answer the campaign: a refused caller has held only their own lock, for this transaction.
    queue.campaign_state(session, campaign, locking_person=caller.id)
    _item_by_item(session, caller, campaign)
    handout = queue.take_lease(session, campaign=campaign, user=caller, lease_seconds=lease_seconds)
    # The view's few reads stay in this transaction: measured with benchmarks/bench_load.py, a second (read)
    # session costs more than they add to the lock, on SQLite and PostgreSQL alike (see the README).
    return None if handout is None else queue.view_of(session, handout)


def offer_next(session: Session, *, caller: UserPublic, campaign: str, lease_seconds: int) -> Offer:
    """:func:`next_item` with the campaign's schema and the progress, for a page that shows them together."""
    view = next_item(session, caller=caller, campaign=campaign, lease_seconds=lease_seconds)
    return Offer(
        view, queue.campaign_state(session, campaign).schema, progress(session, caller=caller, campaign=campaign)
    )


def skip(session: Session, *, caller: UserPublic, campaign: str, item_id: int, lease_id: str) -> bool:
    """Release the caller's lease on the item and put it after all others for them.

    False when the lease was answered before the skip arrived (Enter then S: the answer is stored and stays; the
    page must not say "Skipped."). Read after the skip's own release, so a submit that committed first is seen on
    PostgreSQL too (the release waits for the submit's row lock, and the next statement reads what it committed).
    """
    _item_by_item(session, caller, campaign)
    return queue.skip_item(session, campaign=campaign, user=caller, item_id=item_id, lease_id=lease_id)


def stored_answer(
    session: Session, *, caller: UserPublic, campaign: str, submission: Submission, limits: AnswerLimits
) -> AnswerPublic | None:
    """The answer a retry of ``submission`` gets back, read without the write lock; None when nothing is stored
    under its ``submission_id`` yet — then call :func:`submit`, which decides under the lock.

    None costs one indexed query and reveals nothing; a stored answer is returned only after the same authorisation
    and checks :func:`submit` gives a retry.
    """
    stored = answers.answer_by_submission_id(session, submission.submission_id)
    if stored is None:
        return None
    _answerable(session, caller, campaign)
    return answers.retried_submission(
        session, stored, campaign=campaign, user=caller, submission=submission, limits=limits
    )


def submit(
    session: Session, *, caller: UserPublic, campaign: str, submission: Submission, limits: AnswerLimits
) -> SubmitResult:
    """Store the caller's answers to the item and lease ``submission`` names — the item they were shown, never the
    one their session moved on to. A retry (same ``submission_id``) gets the stored answer back (``created`` False);
    a lease released meanwhile (skipped, answered, expired and handed on) is a ``Conflict`` and stores nothing."""
    # The campaign read also locks and reads the item the submit decides on (one round trip on PostgreSQL, not two).
    # It comes before the check that the caller may answer: a refused caller has held that row for this transaction.
    queue.campaign_state(session, campaign, holding_item=_store_id_or_none(submission.item_id))
    _item_by_item(session, caller, campaign)
    return answers.submit(session, campaign=campaign, user=caller, submission=submission, limits=limits)


def revise(
    session: Session, *, caller: UserPublic, campaign: str, item_id: int, revision: Revision, limits: AnswerLimits
) -> ReviseResult:
    """Replace the caller's own answer to an item while the campaign is open and its schema allows revising; values
    equal to the stored ones store nothing (``changed`` False, see :mod:`studio.services.answers_mine`)."""
    _item_by_item(session, caller, campaign)
    return answers.revise_answer(
        session, campaign=campaign, user=caller, item_id=item_id, revision=revision, limits=limits
    )


def my_answer(session: Session, *, caller: UserPublic, campaign: str, item_id: int) -> AnswerPublic:
    """The caller's own answer to an item; ``NotFound`` when they have none."""
    authorize(caller, AccountPolicy.own())
    return answers.my_answer(session, campaign=campaign, user=caller, item_id=item_id)


def values_as_shown(session: Session, *, caller: UserPublic, campaign: str, answer: AnswerPublic) -> dict[str, Any]:
    """The caller's own ``answer`` as they gave it (pairwise choices as the A/B they saw)."""
    authorize(caller, AccountPolicy.own())
    return answers.values_as_shown(session, campaign=campaign, user=caller, answer=answer)


def progress(session: Session, *, caller: UserPublic, campaign: str) -> dict[str, Any]:
    """The caller's answer count in the campaign and the campaign's progress (those who answer it, and managers)."""
    authorize(caller, CampaignPolicy.read_progress(queue.campaign_state(session, campaign)))
    return progress_service.progress(session, campaign=campaign, user=caller)


@dataclass(frozen=True)
class MyAnswers:
    """The caller's own answers in a campaign (the latest changed first) and the campaign's schema."""

    schema: WorkflowSchema
    answers: list[AnswerPublic]
    #: The start of each answered item's user input, by item id (to tell the items apart in a list).
    excerpts: dict[int, str]


def my_answers(session: Session, *, caller: UserPublic, campaign: str) -> MyAnswers:
    """The caller's own answers in the campaign, the latest changed first (to pick one to revise)."""
    found = _answerable(session, caller, campaign)
    mine = answers.my_answers(session, campaign=campaign, user=caller)
    return MyAnswers(found.schema, mine, content.user_input_excerpts(session, [answer.item_id for answer in mine]))


@dataclass(frozen=True)
class AnsweredItem:
    """An item the caller answered, as they saw it, with their answer as they gave it (to revise it)."""

    item_id: StoredId
    content: dict[str, Any]
    values: dict[str, Any]
    schema: WorkflowSchema


def answered_item(session: Session, *, caller: UserPublic, campaign: str, item_id: int) -> AnsweredItem:
    """The caller's answered item and their answer; ``NotFound`` when they have no answer to it."""
    found = _answerable(session, caller, campaign)
    answer = answers.my_answer(session, campaign=campaign, user=caller, item_id=item_id)
    item = queue.campaign_item(session, found, item_id)
    shown = answers.values_as_shown(session, campaign=campaign, user=caller, answer=answer)
    return AnsweredItem(item_id, queue.item_content(session, found, item, caller.id), shown, found.schema)


def whole_content(session: Session, *, caller: UserPublic, campaign: str, item_id: int) -> dict[str, Any]:
    """An item's content with no text cut, for an item the caller was handed (a lease of theirs on it, live or
    not); ``NotFound`` for an item they never saw (its existence is not revealed)."""
    found = _answerable(session, caller, campaign)
    if not answers.has_seen_item(session, campaign=found, user=caller, item_id=item_id):
        raise NotFound(f"item_id: you were never shown item {item_id}")
    item = queue.campaign_item(session, found, item_id)
    return queue.item_content(session, found, item, caller.id, display_chars=None)


def full_text(session: Session, *, caller: UserPublic, campaign: str, item_id: int, field: str) -> str:
    """One text of an item's content whole (``field``: a path of its ``cut`` list, e.g. ``response.text``), for
    an item the caller was handed (:func:`whole_content`)."""
    whole = whole_content(session, caller=caller, campaign=campaign, item_id=item_id)
    return content.full_text(whole, field)
