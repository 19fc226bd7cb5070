"""Table 2's intervals and fragility from the store: the experts' individual rubric scores enter the bootstrap."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import Engine, select

from pipeline.leaderboard_fragility import FRAGILITY_COLUMNS, leaderboard_fragility
from pipeline.leaderboard_intervals import leaderboard_intervals
from studio.db import read_session, write_session
from studio.models import CampaignPublic, ResponseRow, UserPublic
from studio.services import research, research_intervals
from studio.services.aggregation import aggregate_all
from studio.services.campaigns import create_campaign
from studio.usecases import research as results
from studio.workflows import load_schemas
from tests.studio.helpers import RUBRIC, adjudicate


def test_adjudicated_items_carry_their_experts_into_the_bootstrap(
    store: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], password_hash: str
) -> None:
    with read_session(store) as session:
        before = results.leaderboard(session, caller=users["researcher"], variant="with_sap")
    assert before.intervals is not None and not before.intervals.raters and before.intervals.paired
    with write_session(store) as session:
        create_campaign(session, name="adj", schema=load_schemas()["adjudication"], people_per_item=3)
    adjudicate(store, password_hash)
    with write_session(store) as session:
        aggregate_all(session)
    with read_session(store) as session:
        flagged = set(session.execute(select(ResponseRow.id).where(ResponseRow.needs_adjudication.is_(True))).scalars())
        scores = research_intervals.expert_scores(session)
        view = results.leaderboard(session, caller=users["researcher"], variant="with_sap")
        rows = research_intervals.with_expert_scores(
            research.leaderboard_rows(session, variant="with_sap", columns=research._BOARD_COLUMNS), scores
        )
    assert set(scores) == flagged and all(sorted(found) == sorted(RUBRIC) for found in scores.values())
    assert view.intervals is not None and view.intervals.raters and view.fragility is not None
    expected = leaderboard_intervals(rows, resamples=1000, seed=0)
    pd.testing.assert_frame_equal(view.intervals.lower, expected.lower)
    pd.testing.assert_frame_equal(view.intervals.ranks, expected.ranks)
    pd.testing.assert_frame_equal(view.fragility, leaderboard_fragility(rows, expected.board.table))
    assert view.fragility.columns.tolist() == list(FRAGILITY_COLUMNS)
    assert (view.intervals.lower["itinerary_basic"] <= view.table["itinerary_basic"]).all()
    fixed = leaderboard_intervals(rows.drop(columns="J_human_scores"), resamples=1000, seed=0)
    width = (view.intervals.upper["itinerary_basic"] - view.intervals.lower["itinerary_basic"]).sum()
    assert width > (fixed.upper["itinerary_basic"] - fixed.lower["itinerary_basic"]).sum()  # experts resampled too
