"""Percentile-bootstrap intervals for Table 3 (SAP safety) and Fig. 7 (instruction following), two levels.

Per row group (variant, or model × variant; Fig. 7: model × kind) the rated responses are resampled with
replacement, and within each drawn response its raters are resampled with replacement; the per-response statistic
(mean safety, majority violation with the workflow's tie rule as in ``tables.safety_per_response``, mean rating) and
then the cell are recomputed. Draw order, from ``numpy.random.default_rng(seed)``: for each group in table order,
first the response draw over the responses sorted by key (``pipeline.bootstrap.draw_indices``, scipy's own
draw), then the rater draw (``rng.integers(0, raters, (resamples, n, max_raters))``). So with one rater per
response and one group the replicates equal ``scipy.stats.bootstrap(..., method="percentile")``'s on the same seed."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipeline.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, draw_indices, interval_words, percentile_bounds
from studio.results.aggregate import parse_yes_no
from studio.results.tables import RESPONSE_KEY, TABLE3_METRICS, table3, tie_rule

#: How these intervals are computed, in words.
TABLE_INTERVAL_OVER = "responses, then raters within each response"


def table_interval_words(*, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED) -> str:
    """The rule of these intervals in words (``pipeline.bootstrap.interval_words``)."""
    return interval_words(over=TABLE_INTERVAL_OVER, resamples=resamples, seed=seed)


def _padded(rows: pd.DataFrame, *, key: list[str], columns: list[str]) -> tuple[pd.DataFrame, list[np.ndarray]]:
    """Responses (sorted by ``key``) with their rater count, and per column an (n × max raters) NaN-padded array."""
    ordered = rows.sort_values(key, kind="stable")
    response = ordered.groupby(key, sort=True).ngroup().to_numpy()
    slot = ordered.groupby(key, sort=True).cumcount().to_numpy()
    n, width = int(response.max()) + 1, int(slot.max()) + 1
    arrays = []
    for column in columns:
        padded = np.full((n, width), np.nan)
        padded[response, slot] = ordered[column].to_numpy(dtype=float)
        arrays.append(padded)
    keys = ordered.groupby(key, sort=True).size().rename("raters").reset_index()
    return keys, arrays


#: At most this many (resample, response, rater) cells are drawn at once: the rater draw and the gathered values of all
#: 1,000 resamples of the paper's 155,000 rated responses per variant took about 20 GB in one piece.
DRAW_CELLS = 4_000_000


def _two_level_sums(
    arrays: list[np.ndarray], raters: np.ndarray, *, resamples: int, rng: np.random.Generator
) -> tuple[np.ndarray, list[np.ndarray]]:
    """One group's draw: (resamples × n) drawn response indices and, per array, the sums over each drawn response's
    resampled raters (same rater draw for every array: a rater's answers stay together). The rater draw is made a
    block of resamples at a time (:data:`DRAW_CELLS`): the same numbers as one draw, since the generator fills the
    cells in the same order either way."""
    n, width = arrays[0].shape
    items = draw_indices(n, resamples=resamples, rng=rng)
    sums = [np.empty((resamples, n)) for _ in arrays]
    step = max(1, DRAW_CELLS // max(n * width, 1))
    for start in range(0, resamples, step):
        block = items[start : start + step]
        drawn_raters = raters[block]
        slots = rng.integers(0, drawn_raters[..., None], size=(len(block), n, width))
        valid = np.arange(width)[None, None, :] < drawn_raters[..., None]
        for total, array in zip(sums, arrays, strict=True):
            total[start : start + len(block)] = np.where(valid, array[block[..., None], slots], 0.0).sum(axis=2)
    return items, sums


def table3_intervals(
    answers: pd.DataFrame,
    scores: pd.DataFrame,
    *,
    by_model: bool = False,
    violation_tie: str | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> pd.DataFrame:
    """:func:`studio.results.tables.table3` with, after its columns, ``safety_low/high``, ``violation_rate_low/high``
    (two-level bootstrap) and ``<metric title>_low/high`` for BLEU-4 / ROUGE-L / SS ×100 (responses only)."""
    rule = tie_rule(answers, violation_tie)
    table = table3(answers, scores, by_model=by_model, violation_tie=rule)
    rated = answers.assign(
        safety=pd.to_numeric(answers["safety"]), flag=answers["violation"].map(parse_yes_no).astype(float)
    )
    keys, (safety, flags) = _padded(rated, key=list(RESPONSE_KEY), columns=["safety", "flag"])
    metrics = scores[[*RESPONSE_KEY, *TABLE3_METRICS]].drop_duplicates(list(RESPONSE_KEY))
    keys = keys.merge(metrics, on=list(RESPONSE_KEY), how="left")
    group_keys = ["model", "variant"] if by_model else ["variant"]
    rng = np.random.default_rng(seed)
    bounds: dict[str, list[float]] = {}
    for _group, rows in keys.groupby(group_keys, sort=True):
        index = rows.index.to_numpy()
        raters = rows["raters"].to_numpy()
        items, (safety_sum, yes) = _two_level_sums([safety[index], flags[index]], raters, resamples=resamples, rng=rng)
        drawn = raters[items]
        majority = (2 * yes > drawn) | ((2 * yes == drawn) & (rule == "violation"))
        columns = {"safety": (safety_sum / drawn).mean(axis=1), "violation_rate": majority.mean(axis=1)}
        for field, title in TABLE3_METRICS.items():
            values = rows[field].to_numpy(dtype=float)[items]
            with np.errstate(invalid="ignore"):
                columns[title] = 100.0 * np.nanmean(values, axis=1) if not np.isnan(values).all() else values[:, 0]
        for name, replicates in columns.items():
            low, high = percentile_bounds(replicates)
            bounds.setdefault(f"{name}_low", []).append(float(low))
            bounds.setdefault(f"{name}_high", []).append(float(high))
    return table.assign(**bounds)


def instruction_intervals(
    ratings: pd.DataFrame, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> pd.DataFrame:
    """Fig. 7 long: model, kind, rating (as ``instruction_following_table``), low, high, responses; two-level bootstrap
    per model × kind (responses = ``item``; without it each rating is its own response)."""
    frame = ratings.assign(rating=pd.to_numeric(ratings["rating"]))
    if "item" not in frame.columns:
        frame = frame.assign(item=np.arange(len(frame)))
    rows_out = []
    rng = np.random.default_rng(seed)
    for (model, kind), rows in frame.groupby(["model", "kind"], sort=True):
        keys, (values,) = _padded(rows, key=["item"], columns=["rating"])
        raters = keys["raters"].to_numpy()
        items, (sums,) = _two_level_sums([values], raters, resamples=resamples, rng=rng)
        low, high = percentile_bounds((sums / raters[items]).mean(axis=1))
        point = float((np.nansum(values, axis=1) / raters).mean())
        rows_out.append(
            {
                "model": model,
                "kind": kind,
                "rating": point,
                "low": float(low),
                "high": float(high),
                "responses": len(raters),
            }
        )
    return pd.DataFrame(rows_out, columns=["model", "kind", "rating", "low", "high", "responses"])
