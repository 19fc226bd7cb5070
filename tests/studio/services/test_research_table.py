"""Table 2 summed in the store (``research.leaderboard_table``, one GROUP BY) equals Table 2 from every item
(``pipeline.leaderboard.build_leaderboard`` on the store's rows, what ``research.leaderboard`` tabulates), on SQLite
and PostgreSQL, for random scores with pending, awaiting and adjudicated items and two judges."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import Engine, update

from pipeline.leaderboard import build_leaderboard
from studio.db import read_session
from studio.errors import InvalidInput, NotFound
from studio.models import ScoreRow
from studio.services import research
from tests.studio.helpers import insert_synthetic_scores

MODELS = ("m-a", "m-b", "m-c", "m-d")
JUDGE_A, JUDGE_B = "judge=judge-a|prompt=j1", "judge=judge-b|prompt=j1"


def _per_item(engine: Engine, **choice: str) -> research.LeaderboardView:
    """The table the per-item way (``research.leaderboard``'s rows and rules), without its intervals."""
    with read_session(engine) as session:
        rows = research.leaderboard_rows(session, variant=choice.get("variant"), columns=research._BOARD_COLUMNS)
        chosen = research.choose_rows(rows, **choice)
    awaiting = research.awaiting_adjudication(chosen) & research.item_values(chosen).isna()
    return research.LeaderboardView(
        board=build_leaderboard(chosen),
        adjudicated=int(chosen["J_human"].notna().sum()),
        awaiting={str(model): int(n) for model, n in chosen.loc[awaiting, "model"].value_counts().items()},
        applied={column: research._sole_value(chosen, column) for column in ("variant", "signature", "judge")},
    )


def _assert_same(summed: research.LeaderboardView, items: research.LeaderboardView) -> None:
    new, old = summed.board.table.set_index("model"), items.board.table.set_index("model")
    assert list(new.index) == list(old.index) and list(new.columns) == list(old.columns)
    np.testing.assert_allclose(new.to_numpy(dtype=float), old.to_numpy(dtype=float), rtol=1e-12, atol=1e-12)
    pd.testing.assert_frame_equal(summed.board.counted, items.board.counted)
    pd.testing.assert_frame_equal(summed.board.pending, items.board.pending)
    assert (summed.adjudicated, summed.awaiting, summed.applied) == (items.adjudicated, items.awaiting, items.applied)


@pytest.mark.parametrize("seed", [3, 11])
def test_table_summed_in_the_store_equals_the_per_item_table(store: Engine, seed: int) -> None:
    insert_synthetic_scores(store, models=MODELS, per_subtask=12, seed=seed)
    for choice in (
        {"variant": "with_sap", "judge": JUDGE_A},
        {"variant": "with_sap", "judge": JUDGE_B},
        {"variant": "without_sap", "judge": JUDGE_A, "signature": "sig"},
    ):
        with read_session(store) as session:
            summed = research.leaderboard_table(session, **choice)
            via_flag = research.leaderboard(session, intervals=False, **choice)
        items = _per_item(store, **choice)
        _assert_same(summed, items)
        _assert_same(via_flag, items)
        assert summed.intervals is None and summed.board.pending_by_model() == items.board.pending_by_model()
    assert items.adjudicated > 0 and items.awaiting and items.board.pending_by_model()


def test_table_summed_in_the_store_refuses_what_the_per_item_table_refuses(store: Engine) -> None:
    with read_session(store) as session, pytest.raises(NotFound, match="no scores"):
        research.leaderboard_table(session, variant="with_sap")
    insert_synthetic_scores(store, models=MODELS, per_subtask=12, seed=3)
    with store.begin() as connection:  # a second signature on some scores: a table must pick one
        connection.execute(update(ScoreRow).where(ScoreRow.id % 7 == 0).values(signature_label="sig-2"))
    for choice, problem in (
        ({}, "different variants"),
        ({"variant": "no-such"}, "no rows with variant 'no-such'; present: with_sap, without_sap"),
        ({"variant": "with_sap", "judge": JUDGE_A}, "different signatures"),
        ({"variant": "with_sap", "signature": "sig"}, "different judges"),
    ):
        with read_session(store) as session:
            with pytest.raises(InvalidInput, match=problem) as summed:
                research.leaderboard_table(session, **choice)
            with pytest.raises(InvalidInput) as per_item:
                research.leaderboard(session, **choice)
        assert str(summed.value) == str(per_item.value)
    with read_session(store) as session:
        summed = research.leaderboard_table(session, variant="with_sap", signature="sig-2", judge=JUDGE_A)
    _assert_same(summed, _per_item(store, variant="with_sap", signature="sig-2", judge=JUDGE_A))
