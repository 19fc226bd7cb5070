"""Percentile-bootstrap intervals and rank ranges for paper Table 2 (:mod:`pipeline.leaderboard`).

The bootstrap (:mod:`pipeline.bootstrap`) resamples *items*, stratified by subtask: each subtask's units are drawn
with replacement and each cell keeps its size. When the rows carry ``scenario_id`` the draw is *paired*: a unit is a
(subtask, scenario) and the same scenarios are drawn for every model (they answered the same scenarios); without it
every row is its own unit, drawn per (model, subtask). Per replicate: each subtask cell is the mean of its counted
items (weighted by how often each was drawn), a dimension's average the plain mean of its subtask cells (NaN unless
all are present, as in :func:`~pipeline.leaderboard.build_leaderboard`), ``overall`` the item-weighted mean.

Where human scores enter — an adjudicated itinerary I-III item whose row carries ``J_human_scores`` (the experts'
individual rubric scores) — each replicate also resamples that item's experts with replacement (two levels: items,
then raters within an item) and recomputes J_human = median, J_final = α·5S + (1 − α)·J_human
(:func:`pipeline.scoring.combine.combine_j`). Pending items stay out, as in the table.

Draw order (one ``numpy.random.default_rng(seed)``): subtasks in :data:`~pipeline.records.SUBTASKS` order; within a
subtask, first the units' counts (:func:`~pipeline.bootstrap.draw_counts`; paired: one draw over the subtask's
scenarios in order of first appearance; unpaired: one per model, models sorted), then, for each adjudicated item with
expert scores in row order, its raters (:func:`~pipeline.bootstrap.draw_indices`). So one model and one subtask gives
``scipy.stats.bootstrap(values, np.mean, method="percentile", rng=default_rng(seed))``'s interval.

Rank ranges: per replicate each model's rank by ``overall`` (1 = best; ties share the best rank, a model with no
overall ranks last); ``rank_low``/``rank_high`` are the 2.5/97.5 percentiles of those ranks, rounded outwards.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from pipeline.bootstrap import (
    CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    draw_counts,
    draw_indices,
    interval_words,
    percentile_bounds,
)
from pipeline.leaderboard import COLUMNS, DIMENSION_SUBTASKS, Leaderboard, build_leaderboard, item_values
from pipeline.records import ALPHA, JUDGED_SUBTASKS, SUBTASKS

#: The columns of :meth:`LeaderboardIntervals.long` (and of ``FILE.intervals.csv``).
INTERVAL_COLUMNS: tuple[str, ...] = ("model", "column", "value", "lower", "upper")
#: The columns of :attr:`LeaderboardIntervals.ranks`.
RANK_COLUMNS: tuple[str, ...] = ("model", "rank", "rank_low", "rank_high")


@dataclass(frozen=True)
class LeaderboardIntervals:
    """Table 2's point estimates (``board``) with percentile-bootstrap bounds.

    ``lower``/``upper`` are shaped like ``board.table`` (``model`` + :data:`~pipeline.leaderboard.COLUMNS`, same row
    order; NaN where the cell is NaN). ``ranks`` has :data:`RANK_COLUMNS`: the point rank by overall and its range.
    """

    board: Leaderboard
    lower: pd.DataFrame
    upper: pd.DataFrame
    ranks: pd.DataFrame
    resamples: int
    seed: int
    confidence: float
    paired: bool
    raters: bool

    def words(self) -> str:
        """How the intervals were computed, in one sentence (:func:`~pipeline.bootstrap.interval_words`)."""
        over = "items, stratified by subtask, " + ("paired across models by scenario" if self.paired else "per model")
        if self.raters:
            over += ", and the experts within each adjudicated item"
        words = interval_words(over=over, resamples=self.resamples, seed=self.seed, confidence=self.confidence)
        return f"Intervals: {words}; rank range = {self.confidence:.0%} range of each model's rank by overall."

    def long(self) -> pd.DataFrame:
        """One row per (model, column): value, lower, upper (:data:`INTERVAL_COLUMNS`), table order."""
        parts = [
            frame.melt(id_vars="model", var_name="column", value_name=name)
            for frame, name in ((self.board.table, "value"), (self.lower, "lower"), (self.upper, "upper"))
        ]
        merged = parts[0].merge(parts[1], on=["model", "column"], sort=False)
        return merged.merge(parts[2], on=["model", "column"], sort=False).loc[:, list(INTERVAL_COLUMNS)]


@dataclass
class _Sums:
    """Per model, subtask and replicate: the weighted sum of item values and the weighted item count."""

    sums: np.ndarray  # models × subtasks × resamples
    counts: np.ndarray


#: The columns the bootstrap reads from a counted item (the others are not carried into each subtask's cell: at the
#: paper's size copying them was a tenth of the bootstrap's time).
_DRAWN_COLUMNS: tuple[str, ...] = ("model", "subtask", "value", "S", "scenario_id", "J_human_scores")


def _counted(rows: pd.DataFrame) -> pd.DataFrame:
    """The counted items (pending left out) with their ``value`` and, when present, paired unit keys and the experts'
    scores (only :data:`_DRAWN_COLUMNS`)."""
    frame = rows.assign(value=item_values(rows)).dropna(subset=["value"])
    return frame.loc[:, [name for name in _DRAWN_COLUMNS if name in frame]].reset_index(drop=True)


def _is_paired(rows: pd.DataFrame) -> bool:
    return "scenario_id" in rows and bool(rows["scenario_id"].notna().all()) and not rows.empty


def _rater_deltas(cell: pd.DataFrame, *, resamples: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(positions, deltas): the items of ``cell`` (row positions, in row order) with expert scores, and per such item
    and replicate its value with its experts resampled minus its fixed value (shape positions × resamples). The other
    items' deltas are 0 and left out: at the paper's size a full items × resamples array of zeros was most of the
    bootstrap's time, and adding 0 changes no sum."""
    none = (np.zeros(0, dtype=int), np.zeros((0, resamples)))
    if cell.empty or "J_human_scores" not in cell or cell["subtask"].iloc[0] not in JUDGED_SUBTASKS:
        return none
    s_values = pd.to_numeric(cell["S"], errors="coerce").to_numpy(dtype=float)
    listed = cell["J_human_scores"].to_numpy(dtype=object)
    positions, deltas = [], []
    for position in np.flatnonzero(cell["J_human_scores"].notna().to_numpy()):  # row order; skips the many None
        scores = listed[position]
        if not _has_scores(scores) or np.isnan(s_values[position]):
            continue
        experts = np.asarray(scores, dtype=float)
        j_human = np.median(experts[draw_indices(len(experts), resamples=resamples, rng=rng)], axis=1)
        j_final = ALPHA * 5.0 * s_values[position] + (1.0 - ALPHA) * j_human
        positions.append(position)
        deltas.append(j_final * 100.0 / 5.0 - cell["value"].iloc[position])
    return (np.asarray(positions, dtype=int), np.asarray(deltas)) if positions else none


def _paired_cell(
    cell: pd.DataFrame, models: list[str], *, resamples: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One subtask, paired by scenario: (sums, counts), each models × resamples."""
    units = pd.unique(cell["scenario_id"])
    unit_of = pd.Index(units).get_indexer(pd.Index(cell["scenario_id"]))
    model_of = pd.Index(models).get_indexer(pd.Index(cell["model"]))
    values, present = np.zeros((len(models), len(units))), np.zeros((len(models), len(units)))
    np.add.at(values, (model_of, unit_of), cell["value"].to_numpy(dtype=float))
    np.add.at(present, (model_of, unit_of), 1.0)
    weights = draw_counts(len(units), resamples=resamples, rng=rng)
    sums = values @ weights.T
    if (present == 1.0).all():  # each model counted once per scenario: a replicate's count is its draw's size
        counts = np.repeat(weights.sum(axis=1)[None, :], len(models), axis=0)  # exact integers: what @ gives
    else:
        counts = present @ weights.T
    positions, deltas = _rater_deltas(cell, resamples=resamples, rng=rng)
    if deltas.any():
        np.add.at(sums, model_of[positions], deltas * weights[:, unit_of[positions]].T)
    return sums, counts


def _unpaired_cell(
    cell: pd.DataFrame, models: list[str], *, resamples: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One subtask, every row its own unit, drawn per model (models sorted): (sums, counts), models × resamples."""
    sums, counts = np.zeros((len(models), resamples)), np.zeros((len(models), resamples))
    for index, model in enumerate(models):
        own = cell[cell["model"] == model]
        if own.empty:
            continue
        weights = draw_counts(len(own), resamples=resamples, rng=rng)
        values = np.repeat(own["value"].to_numpy(dtype=float)[:, None], resamples, axis=1)
        positions, deltas = _rater_deltas(own, resamples=resamples, rng=rng)
        values[positions] += deltas
        sums[index] = (weights * values.T).sum(axis=1)
        counts[index] = len(own)
    return sums, counts


def _replicate_sums(counted: pd.DataFrame, models: list[str], *, resamples: int, seed: int, paired: bool) -> _Sums:
    """Every replicate's per-(model, subtask) sums and counts, drawn in the module's documented order."""
    rng = np.random.default_rng(seed)
    shape = (len(models), len(SUBTASKS), resamples)
    sums, counts = np.zeros(shape), np.zeros(shape)
    cell_of = _paired_cell if paired else _unpaired_cell
    for index, subtask in enumerate(SUBTASKS):
        cell = counted[counted["subtask"] == subtask]
        if not cell.empty:
            sums[:, index], counts[:, index] = cell_of(cell, models, resamples=resamples, rng=rng)
    return _Sums(sums=sums, counts=counts)


def _replicate_table(totals: _Sums) -> np.ndarray:
    """Replicates of every column of :data:`COLUMNS` (without ``model``): models × columns × resamples."""
    with np.errstate(invalid="ignore", divide="ignore"):
        cells = totals.sums / totals.counts
        overall = totals.sums.sum(axis=1) / totals.counts.sum(axis=1)
    by_column = {subtask: cells[:, index] for index, subtask in enumerate(SUBTASKS)}
    for dimension, subtasks in DIMENSION_SUBTASKS.items():
        by_column[f"{dimension}_avg"] = np.mean([by_column[subtask] for subtask in subtasks], axis=0)
    by_column["overall"] = overall
    return np.stack([by_column[column] for column in COLUMNS[1:]], axis=1)


def _min_ranks(overall: np.ndarray) -> np.ndarray:
    """Per column of ``overall`` (models × replicates): 1 + how many models are strictly higher (ties share the best
    rank; NaN ranks last) — ``scipy.stats.rankdata(-overall, method="min")`` without NaN."""
    filled = np.nan_to_num(overall, nan=-np.inf)
    higher: np.ndarray = (filled[None, :, :] > filled[:, None, :]).sum(axis=1)
    return 1 + higher


def _rank_ranges(
    overall: np.ndarray, point: np.ndarray, *, confidence: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rank, rank_low, rank_high) per model from the point overall and the replicates (models × resamples)."""
    rank = _min_ranks(point[:, None])[:, 0]
    ranks = _min_ranks(overall)
    low, high = percentile_bounds(ranks.astype(float), confidence=confidence, axis=1)
    return rank.astype(int), np.floor(low).astype(int), np.ceil(high).astype(int)


def leaderboard_intervals(
    rows: pd.DataFrame,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
) -> LeaderboardIntervals:
    """Table 2 (:func:`~pipeline.leaderboard.build_leaderboard` of ``rows``) with bootstrap bounds and rank ranges.

    ``rows`` as for ``build_leaderboard``, optionally with ``scenario_id`` (pairs the draw across models) and
    ``J_human_scores`` (a list per adjudicated item: resamples raters too). Seeded: the same call gives the same
    bounds. ``resamples`` must be ≥ 1.
    """
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    board = build_leaderboard(rows)
    models = [str(model) for model in board.table["model"]]
    counted = _counted(rows)
    paired = _is_paired(counted)
    totals = _replicate_sums(counted, models, resamples=resamples, seed=seed, paired=paired)
    replicates = _replicate_table(totals)
    low, high = percentile_bounds(replicates, confidence=confidence, axis=2)
    point = board.table.loc[:, list(COLUMNS[1:])].to_numpy(dtype=float)
    low, high = np.where(np.isnan(point), np.nan, low), np.where(np.isnan(point), np.nan, high)
    rank, rank_low, rank_high = _rank_ranges(replicates[:, -1], point[:, -1], confidence=confidence)
    frame = {"model": models}
    raters = "J_human_scores" in counted and bool(counted["J_human_scores"].dropna().map(_has_scores).any())
    return LeaderboardIntervals(
        board=board,
        lower=pd.DataFrame({**frame, **dict(zip(COLUMNS[1:], low.T, strict=True))}),
        upper=pd.DataFrame({**frame, **dict(zip(COLUMNS[1:], high.T, strict=True))}),
        ranks=pd.DataFrame({**frame, "rank": rank, "rank_low": rank_low, "rank_high": rank_high}),
        resamples=resamples,
        seed=seed,
        confidence=confidence,
        paired=paired,
        raters=raters,
    )


def _has_scores(value: object) -> bool:
    return isinstance(value, list | tuple | np.ndarray) and len(value) > 0


#: The rank-range column's header in every front door.
RANK_RANGE = "Rank (95% range)"


def bracketed(*, text: str, lower: float, upper: float) -> str:
    """``text`` (a :func:`~pipeline.leaderboard.cell_text`) with its interval, e.g. ``62.31 [60.10, 64.52]``; ``text``
    unchanged where the cell has no value or no interval."""
    if not text or text.startswith("–") or np.isnan(lower) or np.isnan(upper):
        return text
    value, _, rest = text.partition(" ")
    return f"{value} [{lower:.2f}, {upper:.2f}]" + (f" {rest}" if rest else "")


def rank_text(*, rank: int, low: int, high: int) -> str:
    """A rank with its range, e.g. ``2 (1–4)``; just ``1`` when the range is that rank alone."""
    return str(rank) if low == high == rank else f"{rank} ({low}–{high})"


def interval_cell_texts(intervals: LeaderboardIntervals) -> pd.DataFrame:
    """:func:`~pipeline.leaderboard.cell_texts` with each cell's interval (:func:`bracketed`) and, after ``model``,
    the :data:`RANK_RANGE` column; rows in table order."""
    from pipeline.leaderboard import cell_texts

    shown = cell_texts(intervals.board)
    for column in COLUMNS[1:]:
        triples = zip(shown[column], intervals.lower[column], intervals.upper[column], strict=True)
        shown[column] = [bracketed(text=text, lower=low, upper=high) for text, low, high in triples]
    ranks = intervals.ranks
    texts = [
        rank_text(rank=int(rank), low=int(low), high=int(high))
        for rank, low, high in zip(ranks["rank"], ranks["rank_low"], ranks["rank_high"], strict=True)
    ]
    shown.insert(1, RANK_RANGE, texts)
    return shown


def write_intervals_csv(intervals: LeaderboardIntervals, path: object) -> None:
    """Write :meth:`LeaderboardIntervals.long` (model, column, value, lower, upper) as CSV: UTF-8 with a byte-order
    mark, two decimals, formula-safe."""
    from pipeline.csvsafe import CSV_ENCODING, neutralise_cell

    long = intervals.long()
    long = long.assign(model=long["model"].map(neutralise_cell))
    long.to_csv(path, index=False, float_format="%.2f", na_rep="", encoding=CSV_ENCODING)  # type: ignore[call-overload]
