"""Two-level bootstrap intervals of Table 3 and Fig. 7 (studio.results.table_intervals)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from studio.results.table_intervals import instruction_intervals, table3_intervals
from studio.results.tables import instruction_following_table, table3


def _answers(raters: int, n: int = 40, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [
        {
            "scenario_id": f"s{i}",
            "model": "m",
            "variant": "v",
            "annotator": f"a{r}",
            "safety": int(rng.integers(1, 6)),
            "violation": bool(rng.integers(0, 2)),
        }
        for i in range(n)
        for r in range(raters)
    ]
    return pd.DataFrame(rows)


def _scores(answers: pd.DataFrame) -> pd.DataFrame:
    keys = answers[["scenario_id", "model", "variant"]].drop_duplicates()
    return keys.assign(bleu4=0.1, rougeL=0.2, ss=0.3)


def test_one_rater_equals_scipy_and_points_equal_table3() -> None:
    answers = _answers(1)
    got = table3_intervals(answers, _scores(answers))
    assert got.drop(columns=[c for c in got.columns if c.endswith(("_low", "_high"))]).equals(
        table3(answers, _scores(answers))
    )
    ref = stats.bootstrap(
        (answers.sort_values("scenario_id")["safety"].to_numpy(dtype=float),),  # responses in key order
        np.mean,
        n_resamples=1000,
        method="percentile",
        rng=np.random.default_rng(0),
    ).bootstrap_distribution  # scipy's own draw; bounds by numpy's linear percentile, as pipeline.bootstrap does
    low, high = np.percentile(ref, [2.5, 97.5])
    assert got.loc[0, "safety_low"] == pytest.approx(low)
    assert got.loc[0, "safety_high"] == pytest.approx(high)


def test_rater_resampling_widens_and_seed_fixes() -> None:
    answers = _answers(3)
    two = table3_intervals(answers, _scores(answers))
    assert two.equals(table3_intervals(answers, _scores(answers)))
    means = answers.groupby("scenario_id", as_index=False).agg(safety=("safety", "mean"))
    fixed = stats.bootstrap(
        (means["safety"].to_numpy(),), np.mean, n_resamples=1000, method="percentile", rng=np.random.default_rng(0)
    ).confidence_interval
    assert two.loc[0, "safety_high"] - two.loc[0, "safety_low"] > fixed.high - fixed.low


def test_instruction_points_and_tiny_case() -> None:
    ratings = pd.DataFrame({"model": "m", "kind": "explicit", "rating": [2, 4, 3, 3], "item": [1, 1, 2, 2]})
    long = instruction_intervals(ratings)
    table = instruction_following_table(ratings)
    assert long.loc[0, "rating"] == pytest.approx(table.loc["m", "explicit"]) == 3.0
    assert long.loc[0, "responses"] == 2
    low, high = float(long["low"].iloc[0]), float(long["high"].iloc[0])
    assert 2.0 <= low <= 3.0 <= high <= 4.0
    constant = ratings.assign(rating=3)
    flat = instruction_intervals(constant)
    assert (float(flat["low"].iloc[0]), float(flat["high"].iloc[0])) == (3.0, 3.0)
