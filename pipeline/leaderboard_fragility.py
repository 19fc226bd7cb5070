"""Rank fragility of paper Table 2: how many items must go for two adjacent models to swap places by ``overall``.

For each pair of models adjacent by overall (``upper`` above ``lower``), ``items_to_swap`` is the smallest number of
units whose removal puts ``lower``'s overall strictly above ``upper``'s (empty when no removal does).

* ``exact``: the rows carry ``scenario_id`` and both models have counted items on the same scenarios. A unit is a
  (subtask, scenario) and removing it removes both models' items there; with equal counts the gap after removing k
  units is (Σd − top-k d)/(n − k) for d = upper − lower per unit, so removing the units with the largest difference
  first is optimal and the count is minimal.
* ``greedy upper bound``: otherwise (no scenario_id, or the models' scenarios differ). Items are removed one at a time,
  each time the upper model's highest or the lower model's lowest item, whichever narrows the gap more; the count is
  an upper bound on the minimum, not the minimum.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.leaderboard import item_values

#: The columns of :func:`leaderboard_fragility`.
FRAGILITY_COLUMNS: tuple[str, ...] = ("upper", "lower", "gap", "items_to_swap", "items", "method")
EXACT = "exact"
GREEDY = "greedy upper bound"
#: What the fragility table means, in words (printed under it by every front door).
FRAGILITY_WORDS = (
    "Fragility: items_to_swap = fewest items (scenarios, for paired models) whose removal puts the lower model of an "
    "adjacent pair above the upper one by overall, of `items`; 'exact' when both models answered the same scenarios "
    "(largest differences removed first), else a 'greedy upper bound'; '–' (empty in a file): no removal of items "
    "that the search tries swaps them."
)


def _unit_values(counted: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per model: its counted values' sum and count per (subtask, scenario_id) unit, units sorted."""
    grouped = counted.groupby(["model", "subtask", "scenario_id"])["value"].agg(["sum", "count"])
    return {str(model): frame.droplevel("model") for model, frame in grouped.groupby(level="model")}


def exact_items_to_swap(differences: np.ndarray) -> int | None:
    """Fewest units to remove (largest ``upper − lower`` differences first) so the mean difference of the rest is
    negative; None when even removing all but the most negative one does not."""
    ordered = np.sort(np.asarray(differences, dtype=float))[::-1]
    n = len(ordered)
    remaining = ordered.sum() - np.concatenate([[0.0], np.cumsum(ordered)[:-1]])
    swaps = np.flatnonzero(remaining[: max(n - 1, 0) + 1] / np.arange(n, 0, -1) < 0)
    return int(swaps[0]) if swaps.size else None


def greedy_items_to_swap(upper: np.ndarray, lower: np.ndarray) -> int | None:
    """Items removed one by one (upper's highest or lower's lowest, whichever narrows the gap more) until lower's mean
    exceeds upper's; None when it never does. An upper bound on the minimum."""
    high, low = np.sort(upper)[::-1], np.sort(lower)
    sum_u, sum_l, i, j = float(high.sum()), float(low.sum()), 0, 0
    while sum_l / (len(low) - j) <= sum_u / (len(high) - i):
        drop_u = sum_u - high[i] if len(high) - i > 1 else None
        drop_l = sum_l - low[j] if len(low) - j > 1 else None
        gap_u = drop_u / (len(high) - i - 1) - sum_l / (len(low) - j) if drop_u is not None else np.inf
        gap_l = sum_u / (len(high) - i) - drop_l / (len(low) - j - 1) if drop_l is not None else np.inf
        if drop_u is None and drop_l is None:
            return None
        if gap_u <= gap_l:
            sum_u, i = float(drop_u), i + 1  # type: ignore[arg-type]
        else:
            sum_l, j = float(drop_l), j + 1  # type: ignore[arg-type]
    return i + j


def _pair(
    counted: pd.DataFrame, units: dict[str, pd.DataFrame] | None, upper: str, lower: str
) -> tuple[int | None, int, str]:
    """(items_to_swap, items, method) for one adjacent pair (``units``: :func:`_unit_values` when paired)."""
    if units is not None:
        mine, theirs = units[upper], units[lower]
        if mine.index.equals(theirs.index) and np.array_equal(mine["count"].to_numpy(), theirs["count"].to_numpy()):
            differences = (mine["sum"] - theirs["sum"]).to_numpy(dtype=float)
            return exact_items_to_swap(differences), len(differences), EXACT
    upper_values = counted.loc[counted["model"] == upper, "value"].to_numpy(dtype=float)
    lower_values = counted.loc[counted["model"] == lower, "value"].to_numpy(dtype=float)
    found = greedy_items_to_swap(upper_values, lower_values)
    return found, len(upper_values) + len(lower_values), GREEDY


def leaderboard_fragility(rows: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """Per adjacent pair of ``table`` (a :class:`~pipeline.leaderboard.Leaderboard` table, best first) with an
    overall: :data:`FRAGILITY_COLUMNS`. ``gap`` = upper's overall − lower's; ``items`` = the units the count is
    out of (shared scenarios for ``exact``; both models' counted items for ``greedy upper bound``)."""
    counted = rows.assign(value=item_values(rows)).dropna(subset=["value"])
    paired = "scenario_id" in counted and bool(counted["scenario_id"].notna().all()) and not counted.empty
    units = _unit_values(counted) if paired else None
    ranked = table.dropna(subset=["overall"])
    models, overall = ranked["model"].astype(str).tolist(), ranked["overall"].tolist()
    records = []
    for index in range(len(models) - 1):
        found, items, method = _pair(counted, units, models[index], models[index + 1])
        gap = float(overall[index]) - float(overall[index + 1])
        records.append((models[index], models[index + 1], gap, found, items, method))
    frame = pd.DataFrame(records, columns=list(FRAGILITY_COLUMNS))
    frame["items_to_swap"] = frame["items_to_swap"].astype("Int64")
    return frame


def format_fragility(frame: pd.DataFrame) -> list[str]:
    """One line per adjacent pair, e.g. ``alpha > beta by 1.20: 3 of 200 items swap them (exact)``."""
    lines = []
    for upper, lower, gap, found, items, method in frame.itertuples(index=False):
        count = "no removal" if pd.isna(found) else f"{int(found)} of {items} items"
        lines.append(f"{upper} > {lower} by {gap:.2f}: {count} swap them ({method})")
    return lines


def write_fragility_csv(frame: pd.DataFrame, path: object) -> None:
    """Write :func:`leaderboard_fragility` as CSV (UTF-8 with a byte-order mark, formula-safe model names)."""
    from pipeline.csvsafe import CSV_ENCODING, neutralise_cell

    safe = frame.assign(upper=frame["upper"].map(neutralise_cell), lower=frame["lower"].map(neutralise_cell))
    safe.to_csv(path, index=False, float_format="%.2f", encoding=CSV_ENCODING)  # type: ignore[call-overload]
