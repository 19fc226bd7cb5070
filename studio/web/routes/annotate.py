"""Annotating over REST: ``/v1/campaigns``, next item, skip, answers (submit, revise, read), progress.

These routes are the studio's hot path (``benchmarks/bench_load.py`` drives them flat out): each opens one session
— but ``submit`` on SQLite, which answers a retry from a read session (off the store's write lock) and stores a new
answer in a write session, the caller resolved in the first and carried on.
"""

# No `from __future__ import annotations`: FastAPI reads the dependency types of the signatures as objects.
from typing import Any

from fastapi import APIRouter, Response, status
from sqlmodel import Session

from studio.models import AnswerPublic, UserPublic
from studio.services.answers_mine import NOTHING_CHANGED
from studio.services.campaigns import CampaignSummary
from studio.services.queue import ItemView
from studio.usecases import annotate
from studio.web.deps import CallerDep, LimitsDep
from studio.web.schemas import AnswerIn, AnswerOut, ReviseIn, SkipIn, json_model, no_content

router = APIRouter(prefix="/v1")


@router.get("/campaigns", response_model=list[CampaignSummary], tags=["campaigns"])
def campaigns(caller: CallerDep) -> list[CampaignSummary]:
    """The campaigns the caller may answer, with their progress."""
    with caller.reading() as (session, user):
        return annotate.campaign_summaries(session, caller=user)


@router.get(
    "/campaigns/{name}/next",
    response_model=ItemView,
    responses={204: {"description": "nothing left for the caller"}},
    tags=["queue"],
)
def next_item(name: str, caller: CallerDep, limits: LimitsDep) -> Response:
    """The caller's next item under a lease (the same one again while their lease lives)."""
    with caller.writing() as (session, user):
        view = annotate.next_item(session, caller=user, campaign=name, lease_seconds=limits.lease_seconds)
    return no_content() if view is None else json_model(view)


@router.post("/campaigns/{name}/skip", status_code=status.HTTP_204_NO_CONTENT, tags=["queue"])
def skip(name: str, body: SkipIn, caller: CallerDep) -> Response:
    """Give the item back; it comes after all others for the caller."""
    with caller.writing() as (session, user):
        annotate.skip(session, caller=user, campaign=name, item_id=body.item_id, lease_id=body.lease_id)
    return no_content()


@router.get("/me/progress", tags=["queue"])
def my_progress(campaign: str, caller: CallerDep) -> dict[str, Any]:
    """The caller's answers in the campaign, and the campaign's progress."""
    with caller.reading() as (session, user):
        return annotate.progress(session, caller=user, campaign=campaign)


@router.post(
    "/campaigns/{name}/answers",
    response_model=AnswerOut,
    status_code=status.HTTP_201_CREATED,
    responses={200: {"model": AnswerOut, "description": "a retry: the answer stored before"}},
    tags=["answers"],
)
def submit(name: str, body: AnswerIn, caller: CallerDep, limits: LimitsDep) -> Response:
    """Store the answers to the item and lease the body names: 201, or 200 with the stored answer on a retry.

    On SQLite a retry of a stored submission is answered from a read session of its own, off the store's one write
    lock; PostgreSQL locks only the item's row, so there the write session alone decides (a retry included: the
    stored answer is found under that lock, as on the page) — one session and one lookup of the submission, not two.
    """
    if caller.single_writer:
        with caller.reading() as (session, user):
            stored = annotate.stored_answer(session, caller=user, campaign=name, submission=body, limits=limits)
            if stored is not None:
                return _answered(session, user, name, stored, status.HTTP_200_OK)
    with caller.writing() as (session, user):
        result = annotate.submit(session, caller=user, campaign=name, submission=body, limits=limits)
        code = status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
        return _answered(session, user, name, result.answer, code)


def _answered(session: Session, user: UserPublic, campaign: str, answer: AnswerPublic, code: int) -> Response:
    """The caller's ``answer`` as they gave it, as the submit route's JSON reply with status ``code``."""
    shown = annotate.values_as_shown(session, caller=user, campaign=campaign, answer=answer)
    return json_model(AnswerOut.of(answer, shown), code)


class RevisedOut(AnswerOut):
    """The caller's answer after a revision: ``changed`` False (and ``message`` saying so) when the values sent equal
    the stored ones — nothing was stored, the revision count and the history are as they were."""

    changed: bool
    message: str


@router.put("/campaigns/{name}/answers/{item_id}", response_model=RevisedOut, tags=["answers"])
def revise(name: str, item_id: int, body: ReviseIn, caller: CallerDep, limits: LimitsDep) -> Response:
    """Replace the caller's own answer (while the campaign is open and its schema allows it); the same values again
    store nothing and say so (``changed`` false)."""
    with caller.writing() as (session, user):
        result = annotate.revise(session, caller=user, campaign=name, item_id=item_id, revision=body, limits=limits)
        shown = annotate.values_as_shown(session, caller=user, campaign=name, answer=result.answer)
    message = "Saved your revised answer." if result.changed else NOTHING_CHANGED
    revised = AnswerOut.of(result.answer, shown).model_dump()
    return json_model(RevisedOut(**revised, changed=result.changed, message=message))


@router.get("/campaigns/{name}/items/{item_id}/text", tags=["queue"])
def whole_text(name: str, item_id: int, field: str, caller: CallerDep) -> dict[str, Any]:
    """One text of an item whole: ``field`` names a text the item's ``content.cut`` lists (e.g. ``response.text``)
    — ``/next`` sends long texts cut. Only for an item the caller was handed."""
    with caller.reading() as (session, user):
        text = annotate.full_text(session, caller=user, campaign=name, item_id=item_id, field=field)
    return {"item_id": item_id, "field": field, "text": text}


@router.get("/campaigns/{name}/answers/{item_id}", response_model=AnswerOut, tags=["answers"])
def mine(name: str, item_id: int, caller: CallerDep) -> Response:
    """The caller's own answer to an item."""
    with caller.reading() as (session, user):
        answer = annotate.my_answer(session, caller=user, campaign=name, item_id=item_id)
        shown = annotate.values_as_shown(session, caller=user, campaign=name, answer=answer)
    return json_model(AnswerOut.of(answer, shown))
