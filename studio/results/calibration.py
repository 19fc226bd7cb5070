"""How well the LLM judge tracks the human experts: rank correlations, mean absolute difference, a scatter plot."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from studio.results.figures import saved_figure


@dataclass(frozen=True)
class Calibration:
    """Judge vs human on the items scored by both. Correlations are None with fewer than 3 items or no spread."""

    n: int
    spearman_rho: float | None
    spearman_p: float | None
    kendall_tau: float | None
    kendall_p: float | None
    mean_abs_diff: float | None

    def to_dict(self) -> dict[str, Any]:
        """Return the figures as a JSON-ready dict."""
        return asdict(self)


def _paired(frame: pd.DataFrame, judge: str, human: str) -> pd.DataFrame:
    absent = [column for column in (judge, human) if column not in frame.columns]
    if absent:
        raise ValueError(f"missing column(s): {', '.join(absent)}")
    both: pd.DataFrame = frame[[judge, human]].apply(pd.to_numeric, errors="raise").dropna()
    return both


def _finite(value: float) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def judge_human_calibration(frame: pd.DataFrame, *, judge: str = "J_judge", human: str = "J_human") -> Calibration:
    """Return Spearman ρ, Kendall τ-b (scipy.stats, with p-values) and mean |J_judge − J_human| over rows with both.

    ``frame`` has one row per item with the judge's and the experts' rubric scores (0–5); rows where either is
    missing are left out and ``n`` counts the rest.
    """
    from scipy import stats

    both = _paired(frame, judge, human)
    n = len(both)
    if n == 0:
        return Calibration(0, None, None, None, None, None)
    mean_abs_diff = float((both[judge] - both[human]).abs().mean())
    spread = both[judge].nunique() > 1 and both[human].nunique() > 1
    if n < 3 or not spread:
        return Calibration(n, None, None, None, None, mean_abs_diff)
    rho = stats.spearmanr(both[judge], both[human])
    tau = stats.kendalltau(both[judge], both[human])
    return Calibration(
        n=n,
        spearman_rho=_finite(rho.statistic),
        spearman_p=_finite(rho.pvalue),
        kendall_tau=_finite(tau.statistic),
        kendall_p=_finite(tau.pvalue),
        mean_abs_diff=mean_abs_diff,
    )


def plot_calibration(frame: pd.DataFrame, path: Path, *, judge: str = "J_judge", human: str = "J_human") -> Path:
    """Write a scatter plot of J_judge (x) against J_human (y) with the identity line to ``path`` (PNG/SVG/PDF).

    Returns ``path``. Uses matplotlib's Agg backend, so it needs no display.
    """
    both = _paired(frame, judge, human)
    with saved_figure(path, size=(4.5, 4.5)) as axes:
        axes.scatter(both[judge], both[human], s=14, alpha=0.6)
        axes.plot([0, 5], [0, 5], linestyle="--", linewidth=1, color="grey")
        axes.set(xlim=(-0.1, 5.1), ylim=(-0.1, 5.1), xlabel="J_judge (LLM judge)", ylabel="J_human (experts)")
        axes.set_title(f"Judge vs human (n = {len(both)})")
    return Path(path)
