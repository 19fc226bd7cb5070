"""Prediction-powered itinerary scores (PPI, Angelopoulos et al. 2023; PPI++ power tuning): per (model, judged
subtask) cell, the judge's score on every judged item, rectified by the experts' scores on a uniform random AUDIT
sample (``item.audit``; ``studio.workflows.AuditSpec``). Pure: a frame in, a frame out; the statistics are
``ppi_py``'s (``ppi_mean_pointestimate``, ``ppi_mean_ci``, ``classical_mean_ci``), never hand-rolled.

Per cell: Yhat = 100 · J / 5 (J, the judge's combined score) on every judged item; Y = 100 · J_final / 5 with
J_final = combine_j(S, J_human) (the experts' median rubric score) on the audited items that have one: the labelled
set (n). Every other judged item of the cell is unlabelled (N), flagged or not: items sent to experts only because
the judge scored them low are no random sample and never enter the labelled set.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from pipeline.bootstrap import CONFIDENCE
from pipeline.leaderboard import item_values
from pipeline.scoring.combine import combine_j
from pipeline.taxonomy import JUDGED_SUBTASKS

#: The columns of :func:`ppi_cells`' frame.
PPI_COLUMNS: tuple[str, ...] = (
    "model",
    "subtask",
    "ppi",
    "ppi_low",
    "ppi_high",
    "classic",
    "human_only",
    "human_low",
    "human_high",
    "n_audited",
    "n_judged",
    "effective_n",
    "note",
)
#: Fewer audited items with expert scores than this: no PPI interval for the cell.
MIN_AUDITED = 2
ALPHA = 1.0 - CONFIDENCE
RULE = (
    "Prediction-powered score (PPI++, ppi_py.ppi_mean_ci, power-tuned λ): the judge's 100·J/5 averaged over every "
    "judged item of the cell, corrected by how far the experts' 100·J_final/5 (J_final = 0.6·5S + 0.4·J_human) sits "
    "from the judge on the AUDITED items — a uniform random sample drawn with a seed, flagged or not. Items sent to "
    "experts only because the judge scored them low are no random sample and never correct the judge. "
    f"{CONFIDENCE:.0%} interval (CLT). Classic is Table 2's mean of J_final; human only is the audit's own mean and "
    "interval; effective n = n × (human-only width / PPI width)², the number of expert-scored items the judge is "
    f"worth. A cell with fewer than {MIN_AUDITED} audited items that have expert scores has no PPI."
)


def labelled_values(rows: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    """``(judged, labelled, y)`` for per-item ``rows`` (columns S, J, J_human, audit): judged where J is known;
    labelled where also audited, with S and J_human known; ``y`` = 100 · combine_j(S, J_human) / 5 (NaN elsewhere)."""
    judged = pd.to_numeric(rows["J"], errors="coerce").notna()
    y = pd.Series(
        [
            _score(combine_j(None if pd.isna(s) else float(s), None if pd.isna(h) else float(h)))
            for s, h in zip(rows["S"].tolist(), rows["J_human"].tolist(), strict=True)
        ],
        index=rows.index,
        dtype=float,
    )
    audited = rows["audit"].astype("boolean").fillna(False).astype(bool)
    labelled = judged & audited & y.notna()
    return judged, labelled, y.where(labelled)


def _score(j_final: float | None) -> float:
    return float("nan") if j_final is None else 100.0 * j_final / 5.0


def cell_estimate(*, y: np.ndarray, yhat: np.ndarray, yhat_unlabelled: np.ndarray) -> dict[str, Any]:
    """One cell's PPI point and interval, the audit's own mean and interval and the effective n (``ppi_py``).

    ``y``/``yhat``: the experts' and the judge's scores on the n labelled items; ``yhat_unlabelled``: the judge's
    on the N others. Fewer than :data:`MIN_AUDITED` labelled or no unlabelled item: NaN figures and a note why."""
    # imported here: ppi_py pulls scikit-learn and statsmodels (~1.2 s), which the studio's start should not pay
    from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

    n, big_n = len(y), len(yhat_unlabelled)
    empty = {"ppi": math.nan, "ppi_low": math.nan, "ppi_high": math.nan, "effective_n": math.nan}
    human = {"human_only": float(np.mean(y)) if n else math.nan, "human_low": math.nan, "human_high": math.nan}
    if n < MIN_AUDITED:
        return {**empty, **human, "note": f"{n} audited item(s) with expert scores: PPI needs {MIN_AUDITED}"}
    low, high = classical_mean_ci(y, alpha=ALPHA)
    human.update(human_low=float(low), human_high=float(high))
    if big_n == 0:
        return {**empty, **human, "note": "every judged item is audited: the human mean is the score"}
    # A judge that gives every item of the cell one score carries no information: PPI++'s tuned λ is then 0/0, and
    # λ = 1 makes the estimate the audit's own mean (the judge's constant cancels).
    lam = 1.0 if np.ptp(np.concatenate([yhat, yhat_unlabelled])) == 0 else None
    point = ppi_mean_pointestimate(y, yhat, yhat_unlabelled, lam=lam)
    ppi_low, ppi_high = ppi_mean_ci(y, yhat, yhat_unlabelled, alpha=ALPHA, lam=lam)
    width = float(ppi_high[0] - ppi_low[0])
    effective = n * ((float(high) - float(low)) / width) ** 2 if width > 0 else math.nan
    figures = {"ppi": float(point[0]), "ppi_low": float(ppi_low[0]), "ppi_high": float(ppi_high[0])}
    return {**figures, **human, "effective_n": effective, "note": ""}


def ppi_cells(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (model, judged subtask) cell of per-item ``rows`` (columns model, subtask, S, J, J_final, J_human,
    needs_adjudication, audit; one variant, signature and judge, as Table 2 takes them): the columns
    :data:`PPI_COLUMNS`, sorted by model then subtask. ``classic`` is Table 2's value for the cell
    (``pipeline.leaderboard.item_values``: pending items left out)."""
    rows = rows[rows["subtask"].isin(JUDGED_SUBTASKS)]
    if rows.empty:
        return pd.DataFrame(columns=list(PPI_COLUMNS))
    judged, labelled, y = labelled_values(rows)
    yhat = pd.to_numeric(rows["J"], errors="coerce") * 100.0 / 5.0
    classic = item_values(rows)
    records = []
    for (model, subtask), cell in rows.groupby(["model", "subtask"], sort=True):
        index = cell.index
        is_labelled, is_judged = labelled[index], judged[index]
        estimate = cell_estimate(
            y=y[index][is_labelled].to_numpy(float),
            yhat=yhat[index][is_labelled].to_numpy(float),
            yhat_unlabelled=yhat[index][is_judged & ~is_labelled].to_numpy(float),
        )
        counted = classic[index].dropna()
        records.append(
            {
                "model": model,
                "subtask": subtask,
                "classic": float(counted.mean()) if len(counted) else math.nan,
                "n_audited": int(is_labelled.sum()),
                "n_judged": int(is_judged.sum()),
                **estimate,
            }
        )
    return pd.DataFrame.from_records(records, columns=list(PPI_COLUMNS))
