"""The order in which a campaign's items are shown: the most uncertain scenarios first (FairEval's Human-in-the-Loop
Calibration; ``pipeline.curation.review_queue`` orders the refine run's queue the same way).

Applied once, when a campaign is created: its items' ``position`` follows this order, and the queue hands out the
least-answered items by position (``studio.services.queue_rows``), so the answering path reads nothing more. Among
items equally answered, those whose scenario the LLM pre-screen was least sure about come first (higher
``uncertainty``; then the ones it said need a person; then the run's queue rank); scenarios with no pre-screen
verdict keep their order after them.

Expert review puts first the scenarios whose crowd models disagree (:func:`disagreeing_first`): a reliability-weighted
model (Dawid–Skene, MACE) decided them differently from the majority, so the crowd's decision is least certain there
(``studio.rules.MajorityRule.also``).
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import select
from sqlmodel import Session, col

from studio.models import Campaign, Item, PrescreenRow


def order_by_uncertainty(session: Session, targets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``targets`` (item rows naming ``scenario_id``) most uncertain first; a stable sort, so ties keep their order."""
    if not targets:
        return targets
    screened = {
        row.scenario_id: (-row.uncertainty, not row.needs_human, row.queue_rank or math.inf)
        for row in session.execute(
            select(
                col(PrescreenRow.scenario_id),
                col(PrescreenRow.uncertainty),
                col(PrescreenRow.needs_human),
                col(PrescreenRow.queue_rank),
            ).where(col(PrescreenRow.scenario_id).in_(sorted({target["scenario_id"] for target in targets})))
        )
    }
    if not screened:
        return targets
    unscreened = (math.inf, True, math.inf)
    return sorted(targets, key=lambda target: screened.get(target["scenario_id"], unscreened))


def disagreeing_first(session: Session, *, campaign: str | None, scenario_ids: list[str]) -> int:
    """Move the items of ``scenario_ids`` (in this order) ahead of every other item of ``campaign`` (an expert-review
    campaign); return how many items moved (0 when they are already first, so a re-run changes nothing).

    They take positions below the campaign's smallest, so no two items ever share a position (a unique constraint)
    and the queue, which hands out items by answer count then position, gives them out first."""
    if campaign is None or not scenario_ids:
        return 0
    campaign_id = session.execute(select(col(Campaign.id)).where(col(Campaign.name) == campaign)).scalar_one()
    items = list(
        session.execute(select(Item).where(col(Item.campaign_id) == campaign_id).order_by(col(Item.position))).scalars()
    )
    wanted = set(scenario_ids)
    first = [item for item in items if item.scenario_id in wanted]
    others = [item for item in items if item.scenario_id not in wanted]
    if not first or not others or max(i.position for i in first) < min(i.position for i in others):
        return 0
    rank = {sid: index for index, sid in enumerate(scenario_ids)}
    start = items[0].position - len(first)
    for offset, item in enumerate(sorted(first, key=lambda item: rank[str(item.scenario_id)])):
        item.position = start + offset
    session.flush()
    return len(first)
