"""Progress in a campaign: its answers, items and complete items, and one person's answers, items left and pace.

"Complete" means one thing on every page (annotate, campaign lists, Research): answered by the quota of
``h2h aggregate`` (:func:`complete_at`).
"""

from __future__ import annotations

import statistics
from typing import Any

from pydantic import BaseModel
from sqlalchemy import func, select
from sqlmodel import Session, col

from studio.models import Answer, Campaign, Item, UserPublic
from studio.results.aggregate import completion_quota
from studio.services.queue import campaign_schema, campaign_state
from studio.services.queue_rows import CampaignState


def complete_at(campaign: Campaign | CampaignState) -> int:
    """How many answers make one of ``campaign``'s items complete (decided): the quota of ``h2h aggregate``
    (:func:`studio.results.aggregate.completion_quota`); one answer only once the campaign is closed by someone who
    chose to decide its items below quota on the answers they have (``decide_below_quota``) — the one rule
    aggregation, the Research page, the campaign lists and the annotate page count "complete" by."""
    if campaign.status == "closed" and campaign.decide_below_quota:
        return 1
    return quota_of(campaign)


def quota_of(campaign: Campaign | CampaignState) -> int:
    """The answers that decide one of ``campaign``'s items while it is open (or closed with its items below quota
    left undecided): :func:`studio.results.aggregate.completion_quota` of its schema's rule."""
    schema = campaign.schema if isinstance(campaign, CampaignState) else campaign_schema(campaign)
    return completion_quota(
        schema.aggregation, people_per_item=campaign.people_per_item, min_people_per_item=schema.min_people_per_item
    )


def campaign_progress(session: Session, campaign: Campaign | CampaignState) -> dict[str, int]:
    """``answers`` stored, ``items`` in the campaign and ``complete_items`` (answered by :func:`complete_at`)."""
    items, answers, complete = session.execute(
        select(
            func.count(col(Item.id)),
            func.coalesce(func.sum(col(Item.answer_count)), 0),
            func.count(col(Item.id)).filter(col(Item.answer_count) >= complete_at(campaign)),
        ).where(col(Item.campaign_id) == campaign.id)
    ).one()
    return {"answers": int(answers), "items": int(items), "complete_items": int(complete)}


def _my_progress(session: Session, campaign: CampaignState, user: UserPublic) -> dict[str, Any]:
    """The person's answers in the campaign, the items left for them (no answer of theirs, a slot still free) and
    their median seconds per answer (None before the first)."""
    seconds = [
        value
        for value in session.execute(
            select(func.coalesce(col(Answer.seconds_spent), col(Answer.server_seconds))).where(
                col(Answer.campaign_id) == campaign.id, col(Answer.user_id) == user.id
            )
        ).scalars()
    ]
    mine = select(col(Answer.id)).where(col(Answer.item_id) == col(Item.id), col(Answer.user_id) == user.id)
    left = session.execute(
        select(func.count(col(Item.id))).where(
            col(Item.campaign_id) == campaign.id,
            col(Item.answer_count) < campaign.people_per_item,
            ~mine.exists(),
        )
    ).scalar_one()
    timed = [float(value) for value in seconds if value is not None]
    median = statistics.median(timed) if timed else None
    return {"answers": len(seconds), "left": int(left), "median_seconds": median}


def progress(session: Session, *, campaign: str, user: UserPublic) -> dict[str, Any]:
    """The person's progress in the campaign (``mine``: answers, items left for them, median seconds per answer)
    and the campaign's (``overall``: :func:`campaign_progress`)."""
    found = campaign_state(session, campaign)
    if found.status == "closed":
        mine = _my_progress(session, found, user) | {"left": 0}
    else:
        mine = _my_progress(session, found, user)
    return {"campaign": found.name, "mine": mine, "overall": campaign_progress(session, found)}


class QuotaReport(BaseModel):
    """A campaign's items against the answers that decide one (``complete_at`` while open): how many have them, how
    many are answered but short (``below_quota``), how many have no answer."""

    items: int
    complete_at: int
    at_quota: int
    below_quota: int
    unanswered: int


def quota_report(session: Session, campaign: Campaign) -> QuotaReport:
    """Count ``campaign``'s items by how far they are from the quota that decides them while it is open."""
    quota = quota_of(campaign)
    items, at_quota, unanswered = session.execute(
        select(
            func.count(col(Item.id)),
            func.count(col(Item.id)).filter(col(Item.answer_count) >= quota),
            func.count(col(Item.id)).filter(col(Item.answer_count) == 0),
        ).where(col(Item.campaign_id) == campaign.id)
    ).one()
    below = int(items) - int(at_quota) - int(unanswered)
    return QuotaReport(
        items=int(items), complete_at=quota, at_quota=int(at_quota), below_quota=below, unanswered=int(unanswered)
    )


def closing_words(report: QuotaReport, *, decide_below_quota: bool) -> str:
    """What closing a campaign does to its items, in words (the same on the Admin page, the CLI and the REST API)."""
    text = (
        f"{report.at_quota} of {report.items} item(s) have their quota of {report.complete_at} answer(s) and "
        f"count as decided; {report.below_quota} are answered but below quota; {report.unanswered} have no answer."
    )
    if not report.below_quota:
        return text
    if decide_below_quota:
        return (
            text
            + f" As chosen when closing, the {report.below_quota} below quota are decided on the answers they have."
        )
    return text + f" The {report.below_quota} below quota stay undecided (aggregation leaves them out)."
