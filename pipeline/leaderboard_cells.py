"""Paper Table 2 from per-cell sums instead of per-item rows: the same :class:`~pipeline.leaderboard.Leaderboard` as
:func:`~pipeline.leaderboard.build_leaderboard`, from what a store's ``GROUP BY`` gives (at the paper's size 550 groups
instead of 232,500 items per variant: ``studio.results.store_views.leaderboard_cells``).

Each input row is one group of items of one (model, subtask) — several rows may share a cell, e.g. one per judge —
with ``items`` (how many), ``counted`` (how many have a value: :func:`~pipeline.leaderboard.item_values`) and
``value_sum`` (the sum of those values). A subtask's cell is ``value_sum / counted``; a dimension's average and
``overall`` follow :func:`~pipeline.leaderboard.build_leaderboard`'s rules (the plain mean of the subtask cells, NaN
unless every one has counted items; the item-weighted mean). The means equal the per-item ones up to the order of
floating-point addition (relative difference ~1e-15).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.leaderboard import COLUMNS, DIMENSION_SUBTASKS, SUBTASKS_OF_AVERAGE, Leaderboard
from pipeline.records import SUBTASKS

#: The columns :func:`board_from_cells` reads.
CELL_INPUT_COLUMNS: tuple[str, ...] = ("model", "subtask", "items", "counted", "value_sum")


def _pivot(cells: pd.DataFrame, column: str, models: list[str]) -> pd.DataFrame:
    """Per model (rows, ``models`` order) and subtask (:data:`~pipeline.records.SUBTASKS` order): the sum of
    ``column`` over the cell's groups (0 where it has none)."""
    summed = cells.groupby(["model", "subtask"])[column].sum().unstack("subtask")
    return summed.reindex(index=models, columns=list(SUBTASKS)).fillna(0)


def _with_averages(counts: pd.DataFrame) -> pd.DataFrame:
    """``counts`` per subtask with each average's column: the sum over its subtasks (as ``_per_cell`` does)."""
    counts = counts.astype(int)
    for column, subtasks in SUBTASKS_OF_AVERAGE.items():
        counts[column] = counts[list(subtasks)].sum(axis=1)
    return counts.loc[:, list(COLUMNS[1:])]


def board_from_cells(cells: pd.DataFrame) -> Leaderboard:
    """Table 2 (best overall first) with its coverage from ``cells`` (:data:`CELL_INPUT_COLUMNS`; one variant,
    signature and judge, already chosen): what :func:`~pipeline.leaderboard.build_leaderboard` gives for the items
    the cells sum up."""
    cells = cells.assign(value_sum=cells["value_sum"].where(cells["counted"] > 0, 0.0))
    models = sorted(str(model) for model in cells["model"].unique())
    counted, items = _pivot(cells, "counted", models), _pivot(cells, "items", models)
    sums = _pivot(cells, "value_sum", models)
    with np.errstate(invalid="ignore", divide="ignore"):
        table = (sums / counted.where(counted > 0)).astype(float)
        overall = sums.sum(axis=1) / counted.sum(axis=1).where(counted.sum(axis=1) > 0)
    for dimension, subtasks in DIMENSION_SUBTASKS.items():
        # skipna=False: an average over some of the dimension's subtasks would look final (issue 17 item 3)
        table[f"{dimension}_avg"] = table[list(subtasks)].mean(axis=1, skipna=False)
    table["overall"] = overall.astype(float)
    table = table.loc[:, list(COLUMNS[1:])]
    order = table["overall"].sort_values(ascending=False, na_position="last", kind="stable").index
    frames = [
        frame.reindex(order).rename_axis(index="model", columns=None).reset_index()
        for frame in (table, _with_averages(counted), _with_averages(items - counted))
    ]
    return Leaderboard(table=frames[0], counted=frames[1], pending=frames[2])
