"""Table 2 from per-cell sums (``pipeline.leaderboard_cells.board_from_cells``) equals Table 2 from the items
(``pipeline.leaderboard.build_leaderboard``): random items with pending ones, a subtask where every item is pending,
a model without any item of a dimension and a model with no counted item at all; cells split in several groups."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pipeline.leaderboard import build_leaderboard, item_values
from pipeline.leaderboard_cells import board_from_cells
from pipeline.records import DIMENSION_OF_SUBTASK, JUDGED_SUBTASKS, SUBTASKS


def _items(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for model in ("m-a", "m-b", "m-c", "m-d", "m-e"):
        for subtask in SUBTASKS:
            if model == "m-c" and DIMENSION_OF_SUBTASK[subtask] == "recollection":
                continue  # no item of a whole dimension
            for _ in range(int(rng.integers(1, 9))):
                judged = subtask in JUDGED_SUBTASKS
                missing = model == "m-e" or (model == "m-d" and subtask == "dialogue_base") or rng.random() < 0.1
                flagged = judged and rng.random() < 0.3
                rows.append(
                    {
                        "model": model,
                        "subtask": subtask,
                        "S": None if missing else float(rng.random()),
                        "J_final": float(rng.uniform(0, 5)) if judged and not missing else None,
                        "needs_adjudication": flagged,
                        "J_human": float(rng.uniform(0, 5)) if flagged and rng.random() < 0.5 else None,
                        "group": int(rng.integers(0, 3)),  # a cell's items summed in up to 3 groups (e.g. judges)
                    }
                )
    return pd.DataFrame(rows)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_board_from_cells_equals_the_board_from_items(seed: int) -> None:
    items = _items(seed)
    values = item_values(items)
    cells = (
        items.assign(value=values, counted=values.notna().astype(int), items=1)
        .groupby(["model", "subtask", "group"], as_index=False)
        .agg(items=("items", "sum"), counted=("counted", "sum"), value_sum=("value", "sum"))
    )
    summed, per_item = board_from_cells(cells), build_leaderboard(items.drop(columns="group"))
    new, old = summed.table.set_index("model"), per_item.table.set_index("model")
    assert list(new.index) == list(old.index) and list(new.columns) == list(old.columns)
    np.testing.assert_allclose(new.to_numpy(dtype=float), old.to_numpy(dtype=float), rtol=1e-12, atol=1e-12)
    pd.testing.assert_frame_equal(summed.counted, per_item.counted)
    pd.testing.assert_frame_equal(summed.pending, per_item.pending)
    assert np.isnan(new.loc["m-c", "recollection_avg"]) and np.isnan(new.loc["m-d", "dialogue_avg"])
    assert np.isnan(new.loc["m-e", "overall"]) and new.index[-1] == "m-e"  # nothing counted: ranked last
    assert summed.pending_by_model()["m-e"] == int((items["model"] == "m-e").sum())
