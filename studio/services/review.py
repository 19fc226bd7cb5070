"""Opening expert-review items for the scenarios a crowd vote left disputed or its models disagree on (used by
aggregation), those the models disagree on ahead of the others (:func:`studio.services.review_order.disagreeing_first`).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import NamedTuple

from sqlalchemy import func, insert, select
from sqlmodel import Session, col

from studio.models import AuditLog, Campaign, Item
from studio.services.review_order import disagreeing_first
from studio.workflows import load_schemas

REVIEW_WORKFLOW = "expert_review"


def _review_campaign(session: Session, crowd: Campaign) -> Campaign:
    """An open expert-review campaign (the oldest), or a new ``<crowd>-review`` one of the bundled schema."""
    query = select(Campaign).where(col(Campaign.workflow_type) == REVIEW_WORKFLOW, col(Campaign.status) == "open")
    found: Campaign | None = session.execute(query.order_by(col(Campaign.id))).scalars().first()
    if found is not None:
        return found
    schema = next(s for s in load_schemas().values() if s.type == REVIEW_WORKFLOW)
    taken = set(session.execute(select(col(Campaign.name))).scalars())
    name, number = f"{crowd.name}-review", 2
    while name in taken:
        name, number = f"{crowd.name}-review-{number}", number + 1
    review = Campaign(
        name=name,
        schema_name=schema.name,
        workflow_type=schema.type,
        target_kind=schema.target,
        people_per_item=schema.people_per_item,
        eligible_roles=list(schema.eligible_roles),
        created_by="aggregate",
        filters={"opened_by": crowd.name},
        schema_snapshot=schema.model_dump(mode="json"),
        pair_seed=secrets.token_hex(32),
    )
    session.add(review)
    session.flush()
    session.add(
        AuditLog(
            actor="aggregate",
            action="campaign.create",
            entity="campaign",
            entity_id=name,
            detail={"schema": schema.name, "opened_by": crowd.name},
        )
    )
    return review


class ReviewOpened(NamedTuple):
    """What :func:`open_review_items` did: the review campaign, the items it added and the items it moved first."""

    campaign: str
    added: int
    moved: int


def open_review_items(
    session: Session, crowd: Campaign, scenario_ids: list[str], *, first: Sequence[str] = ()
) -> ReviewOpened:
    """Add the scenarios that are not yet items of the open review campaign (the oldest, or a new
    ``<crowd>-review`` one), then put the items of ``first`` (in this order) ahead of every other item there.

    ``first``: the scenarios whose crowd models disagree with the majority (expert review looks at them first); a
    re-run over the same scenarios adds and moves nothing."""
    review = _review_campaign(session, crowd)
    added = _add_items(session, crowd=crowd, review=review, scenario_ids=scenario_ids)
    moved = disagreeing_first(session, campaign=review.name, scenario_ids=list(first))
    return ReviewOpened(review.name, added, moved)


def _add_items(session: Session, *, crowd: Campaign, review: Campaign, scenario_ids: list[str]) -> int:
    """Add the scenarios that are not yet items of ``review`` after its last item; return how many were added."""
    present = set(session.execute(select(col(Item.scenario_id)).where(col(Item.campaign_id) == review.id)).scalars())
    new = [sid for sid in scenario_ids if sid not in present]
    if new:
        last = session.execute(select(func.max(col(Item.position))).where(col(Item.campaign_id) == review.id)).scalar()
        start = -1 if last is None else int(last)
        session.execute(
            insert(Item),
            [
                {
                    "campaign_id": review.id,
                    "position": start + offset,
                    "scenario_id": sid,
                    "response_id": None,
                    "response_b_id": None,
                    "is_gold": False,
                    "gold_answers": None,
                    "answer_count": 0,
                }
                for offset, sid in enumerate(new, start=1)
            ],
        )
        session.add(
            AuditLog(
                actor="aggregate",
                action="campaign.add_items",
                entity="campaign",
                entity_id=review.name,
                detail={"from": crowd.name, "scenarios": new},
            )
        )
    return len(new)
