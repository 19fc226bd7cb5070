"""The order in which a campaign's items are shown: the most uncertain scenarios first (FairEval's Human-in-the-Loop
Calibration; ``pipeline.curation.review_queue`` orders the refine run's queue the same way).

Applied once, when a campaign is created: its items' ``position`` follows this order, and the queue hands out the
least-answered items by position (``studio.services.queue_rows``), so the answering path reads nothing more. Among
items equally answered, those whose scenario the LLM pre-screen was least sure about come first (higher
``uncertainty``; then the ones it said need a person; then the run's queue rank); scenarios with no pre-screen
verdict keep their order after them.
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import select
from sqlmodel import Session, col

from studio.models import PrescreenRow


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
