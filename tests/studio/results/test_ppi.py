"""Prediction-powered itinerary scores (``studio.results.ppi``): coverage by simulation, equality with ``ppi_py``
called directly, and the flagged-but-not-audited items kept out of the labelled set."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

from studio.results.ppi import PPI_COLUMNS, cell_estimate, ppi_cells


def simulated_study(
    rng: np.random.Generator, *, n: int, big_n: int, rho: float = 0.7, bias: float = 8.0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Human scores ~ N(60, 15²); the judge correlated ``rho`` with them and ``bias`` points too kind."""
    human = rng.normal(60.0, 15.0, size=n + big_n)
    noise = rng.normal(0.0, 15.0, size=n + big_n)
    judge = rho * (human - 60.0) + math.sqrt(1 - rho**2) * noise + 60.0 + bias
    return human[:n], judge[:n], judge[n:]


def test_the_95_percent_ppi_interval_covers_the_true_mean_in_93_to_97_percent_of_1000_studies() -> None:
    rng = np.random.default_rng(2026)
    covered = 0
    for _ in range(1000):
        y, yhat, unlabelled = simulated_study(rng, n=150, big_n=1500)
        estimate = cell_estimate(y=y, yhat=yhat, yhat_unlabelled=unlabelled)
        covered += estimate["ppi_low"] <= 60.0 <= estimate["ppi_high"]
    assert 930 <= covered <= 970


def test_the_figures_are_ppi_py_called_directly() -> None:
    y, yhat, unlabelled = simulated_study(np.random.default_rng(1), n=40, big_n=400)
    estimate = cell_estimate(y=y, yhat=yhat, yhat_unlabelled=unlabelled)
    low, high = ppi_mean_ci(y, yhat, unlabelled, alpha=0.05)
    human_low, human_high = classical_mean_ci(y, alpha=0.05)
    assert estimate["ppi"] == pytest.approx(float(ppi_mean_pointestimate(y, yhat, unlabelled)[0]))
    assert (estimate["ppi_low"], estimate["ppi_high"]) == pytest.approx((float(low[0]), float(high[0])))
    assert (estimate["human_low"], estimate["human_high"]) == pytest.approx((human_low, human_high))
    assert estimate["human_only"] == pytest.approx(float(np.mean(y)))
    ratio = (human_high - human_low) / (high[0] - low[0])
    assert estimate["effective_n"] == pytest.approx(40 * ratio**2)
    assert estimate["effective_n"] > 40  # a judge correlated 0.7 is worth more than nothing


def _rows() -> pd.DataFrame:
    """One cell: 6 judged items; items 0-2 audited with expert scores, item 3 flagged (J < 3.5) and adjudicated but
    not audited, item 4 audited without expert scores yet, item 5 plain; plus a dialogue row (not judged)."""
    return pd.DataFrame(
        {
            "model": ["m"] * 7,
            "subtask": ["itinerary_basic"] * 6 + ["dialogue_emotion"],
            "S": [0.5, 0.6, 0.4, 0.2, 0.7, 0.8, 0.9],
            "J": [4.0, 3.8, 3.6, 2.0, 4.2, 4.5, None],
            "J_final": [2.9, 3.6, 3.0, 1.0, 4.2, 4.5, None],
            "J_human": [2.5, 3.5, 3.0, 0.5, None, None, None],
            "needs_adjudication": [False, False, False, True, False, False, False],
            "audit": [True, True, True, False, True, False, False],
        }
    )


def test_flagged_items_not_audited_never_enter_the_labelled_set() -> None:
    table = ppi_cells(_rows())
    assert list(table.columns) == list(PPI_COLUMNS)
    assert len(table) == 1
    row = table.iloc[0]
    assert (row["n_audited"], row["n_judged"]) == (3, 6)
    # Y = 100 · (0.6·5S + 0.4·J_human) / 5 on the audited items only
    y = np.array([100 * (3 * s + 0.4 * h) / 5 for s, h in [(0.5, 2.5), (0.6, 3.5), (0.4, 3.0)]])
    yhat = np.array([80.0, 76.0, 72.0])
    unlabelled = np.array([40.0, 84.0, 90.0])  # the flagged item (judge only), the unscored audit, the plain item
    assert row["ppi"] == pytest.approx(float(ppi_mean_pointestimate(y, yhat, unlabelled)[0]))
    assert row["human_only"] == pytest.approx(y.mean())
    # classic: Table 2's mean of 100 · J_final / 5 over the six items
    assert row["classic"] == pytest.approx(100 * np.mean([2.9, 3.6, 3.0, 1.0, 4.2, 4.5]) / 5)


def test_a_cell_with_one_audited_item_has_no_ppi_and_says_why() -> None:
    rows = _rows().assign(audit=[True, False, False, False, False, False, False])
    row = ppi_cells(rows).iloc[0]
    assert math.isnan(row["ppi"]) and math.isnan(row["effective_n"])
    assert row["n_audited"] == 1 and "PPI needs 2" in row["note"]


def test_a_judge_with_one_score_for_every_item_leaves_the_audits_own_mean() -> None:
    y = np.array([40.0, 60.0, 70.0])
    estimate = cell_estimate(y=y, yhat=np.full(3, 20.0), yhat_unlabelled=np.full(10, 20.0))
    low, high = classical_mean_ci(y, alpha=0.05)
    assert estimate["ppi"] == pytest.approx(y.mean())
    assert (estimate["ppi_low"], estimate["ppi_high"]) == pytest.approx((low, high), rel=0.05)
