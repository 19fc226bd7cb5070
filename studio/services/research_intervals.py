"""Table 2's intervals, rank ranges and rank fragility from the store (``pipeline.leaderboard_intervals`` and
``pipeline.leaderboard_fragility`` on the rows ``studio.services.research.leaderboard`` tabulates).

Read-only; who may read them is ``studio.policies.ResultsPolicy``, checked by ``studio.usecases.research``. The
bootstrap pairs models by ``scenario_id`` and, on an adjudicated itinerary I–III item, resamples the experts whose
rubric scores made its J_human: the complete answers of every campaign whose workflow aggregates by the median
yielding J_human (``studio.services.aggregation``'s adjudication), per response.
"""

from __future__ import annotations

import logging

import pandas as pd
from sqlalchemy import select
from sqlmodel import Session

from pipeline.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED
from pipeline.leaderboard_fragility import leaderboard_fragility
from pipeline.leaderboard_intervals import LeaderboardIntervals, leaderboard_intervals
from studio.models import Campaign
from studio.results.aggregate import complete_answers
from studio.results.store_views import campaign_answers
from studio.rules import MedianRule
from studio.services.progress import complete_at
from studio.services.queue import campaign_schema

logger = logging.getLogger(__name__)


def expert_scores(session: Session) -> dict[int, list[float]]:
    """Response id → the experts' individual rubric scores (every adjudication campaign's complete answers; the
    median of these is the J_human ``studio.services.aggregation`` wrote)."""
    scores: dict[int, list[float]] = {}
    for campaign in session.execute(select(Campaign)).scalars():
        rule = campaign_schema(campaign).aggregation
        if not isinstance(rule, MedianRule) or rule.yields != "J_human":
            continue
        complete = complete_answers(campaign_answers(session, campaign), quota=complete_at(campaign))
        if complete.empty:
            continue
        for response_id, values in zip(complete["response_id"], complete["values"], strict=True):
            score = values.get(rule.score) if isinstance(values, dict) else None
            if score is not None and not pd.isna(response_id):
                scores.setdefault(int(response_id), []).append(float(score))
    return scores


def with_expert_scores(rows: pd.DataFrame, scores: dict[int, list[float]]) -> pd.DataFrame:
    """``rows`` (with response_id, needs_adjudication, J_human) with ``J_human_scores``: the experts' scores on the
    flagged items they adjudicated (None elsewhere: those items' values are fixed within an item)."""
    adjudicated = rows["needs_adjudication"].astype("boolean").fillna(False).astype(bool) & rows["J_human"].notna()
    lists = [
        scores.get(int(response_id)) if flag else None
        for flag, response_id in zip(adjudicated.tolist(), rows["response_id"].tolist(), strict=True)
    ]
    return rows.assign(J_human_scores=pd.Series(lists, index=rows.index, dtype=object))


def leaderboard_uncertainty(
    session: Session, rows: pd.DataFrame, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> tuple[LeaderboardIntervals, pd.DataFrame]:
    """(intervals and rank ranges, fragility table) of Table 2 built from ``rows`` (one variant, signature and judge,
    with scenario_id and response_id). Seeded: the same store gives the same intervals."""
    chosen = with_expert_scores(rows, expert_scores(session)) if "response_id" in rows else rows
    intervals = leaderboard_intervals(chosen, resamples=resamples, seed=seed)
    return intervals, leaderboard_fragility(chosen, intervals.board.table)
