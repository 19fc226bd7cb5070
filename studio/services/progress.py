"""Progress in a campaign: its answers, items and complete items, and one person's answers, items left and pace.

"Complete" means one thing on every page (annotate, campaign lists, Research): answered by the quota of
``h2h aggregate`` (:func:`complete_at`), or stopped early by the workflow's ``stopping:`` rule
(``Item.stopped_at``, :mod:`studio.services.stopping`): a stopped item is decided on the votes it has.
"""

from __future__ import annotations

import statistics
from typing import Any

from pydantic import BaseModel
from sqlalchemy import func, or_, select
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


def _complete(quota: int) -> Any:
    """The condition of a complete item: its quota of answers, or stopped early."""
    return or_(col(Item.answer_count) >= quota, col(Item.stopped_at).is_not(None))


def campaign_progress(session: Session, campaign: Campaign | CampaignState) -> dict[str, int]:
    """``answers`` stored, ``items`` in the campaign and ``complete_items`` (answered by :func:`complete_at`, or
    stopped early); where the workflow stops items early (``stopping:``), also ``stopped_early``: how many of the
    complete items were stopped before their quota."""
    items, answers, complete, stopped = session.execute(
        select(
            func.count(col(Item.id)),
            func.coalesce(func.sum(col(Item.answer_count)), 0),
            func.count(col(Item.id)).filter(_complete(complete_at(campaign))),
            func.count(col(Item.id)).filter(col(Item.stopped_at).is_not(None)),
        ).where(col(Item.campaign_id) == campaign.id)
    ).one()
    figures = {"answers": int(answers), "items": int(items), "complete_items": int(complete)}
    if _stops_early(campaign):
        figures["stopped_early"] = int(stopped)
    return figures


def _stops_early(campaign: Campaign | CampaignState) -> bool:
    schema = campaign.schema if isinstance(campaign, CampaignState) else campaign_schema(campaign)
    return schema.stopping is not None


def complete_words(progress: dict[str, int]) -> str:
    """A campaign's complete items in words, as admins and curators read them: ``"5 / 6 complete"``, and
    ``"5 / 6 complete (stopped early: 2)"`` where its workflow stops items early (:func:`campaign_progress`)."""
    text = f"{progress.get('complete_items', 0)} / {progress.get('items', 0)} complete"
    if "stopped_early" in progress:
        text += f" (stopped early: {progress['stopped_early']})"
    return text


def _my_progress(session: Session, campaign: CampaignState, user: UserPublic) -> dict[str, Any]:
    """The person's answers in the campaign, the items left for them (no answer of theirs, a slot still free, not
    stopped) and
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
            col(Item.stopped_at).is_(None),
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
    """A campaign's items against the answers that decide one (``complete_at`` while open): how many have them or
    were stopped early (``at_quota``, of which ``stopped_early`` by the workflow's ``stopping:``), how many are
    answered but short (``below_quota``), how many have no answer."""

    items: int
    complete_at: int
    at_quota: int
    below_quota: int
    unanswered: int
    stopped_early: int = 0


def quota_report(session: Session, campaign: Campaign) -> QuotaReport:
    """Count ``campaign``'s items by how far they are from the quota that decides them while it is open (a stopped
    item is decided whatever its count)."""
    quota = quota_of(campaign)
    items, at_quota, unanswered, stopped = session.execute(
        select(
            func.count(col(Item.id)),
            func.count(col(Item.id)).filter(_complete(quota)),
            func.count(col(Item.id)).filter(col(Item.answer_count) == 0, col(Item.stopped_at).is_(None)),
            func.count(col(Item.id)).filter(col(Item.stopped_at).is_not(None)),
        ).where(col(Item.campaign_id) == campaign.id)
    ).one()
    below = int(items) - int(at_quota) - int(unanswered)
    return QuotaReport(
        items=int(items),
        complete_at=quota,
        at_quota=int(at_quota),
        below_quota=below,
        unanswered=int(unanswered),
        stopped_early=int(stopped),
    )


def closing_words(report: QuotaReport, *, decide_below_quota: bool) -> str:
    """What closing a campaign does to its items, in words (the same on the Admin page, the CLI and the REST API)."""
    text = (
        f"{report.at_quota} of {report.items} item(s) have their quota of {report.complete_at} answer(s)"
        f"{_stopped_words(report)} and count as decided; {report.below_quota} are answered but below quota; "
        f"{report.unanswered} have no answer."
    )
    if not report.below_quota:
        return text
    if decide_below_quota:
        return (
            text
            + f" As chosen when closing, the {report.below_quota} below quota are decided on the answers they have."
        )
    return text + f" The {report.below_quota} below quota stay undecided (aggregation leaves them out)."


def _stopped_words(report: QuotaReport) -> str:
    """How many of the decided items were stopped early, in words (nothing when none was)."""
    return f" or were stopped early (stopped early: {report.stopped_early})" if report.stopped_early else ""
