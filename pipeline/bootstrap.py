"""The one bootstrap every published interval uses (Table 2, Table 3, Fig. 7, rankings, live sessions).

A percentile bootstrap: ``resamples`` resamples with replacement of the units the number is an average over (items,
responses, sessions; raters within an item where human scores enter), drawn from ``numpy.random.default_rng(seed)``,
and the interval is the (1 − confidence)/2 and (1 + confidence)/2 percentiles of the replicates. :func:`draw_indices`
is the same draw ``scipy.stats.bootstrap(data, ..., method="percentile", rng=numpy.random.default_rng(seed))`` makes
for one sample of size n, so a one-level interval equals scipy's on the same seed (tests hold this). Seeded: a rerun
gives the same interval; the seed and the resamples are stated wherever an interval is shown (:func:`interval_words`).
"""

from __future__ import annotations

import warnings

import numpy as np

#: Resamples of every published interval unless the caller asks for another number.
DEFAULT_RESAMPLES = 1000
#: The seed of every published interval unless the caller asks for another.
DEFAULT_SEED = 0
#: The coverage of every published interval.
CONFIDENCE = 0.95


def draw_indices(n: int, *, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """A (resamples × n) array of indices in [0, n), drawn with replacement: ``rng.integers(0, n, (resamples, n))``,
    scipy.stats.bootstrap's own draw for one sample."""
    return rng.integers(0, n, size=(resamples, n))


def draw_counts(n: int, *, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The draw of :func:`draw_indices` as counts: a (resamples × n) float array, entry (b, j) = how often unit j is
    in resample b (each row sums to n). A weighted sum ``values @ counts.T`` is then every replicate's sum at once."""
    indices = draw_indices(n, resamples=resamples, rng=rng)
    offsets = (np.arange(resamples) * n)[:, None]
    counts = np.bincount((indices + offsets).ravel(), minlength=resamples * n)
    return counts.reshape(resamples, n).astype(float)


def percentile_bounds(
    replicates: np.ndarray, *, confidence: float = CONFIDENCE, axis: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval of ``replicates`` along ``axis`` (replicates that are NaN — a resample with no unit of
    a cell — are left out; all NaN gives NaN)."""
    tail = 100.0 * (1.0 - confidence) / 2.0
    with warnings.catch_warnings():
        # an all-NaN cell (no unit in any resample) is an expected empty interval, not a problem
        warnings.filterwarnings("ignore", message="All-NaN slice encountered")
        low, high = np.nanpercentile(replicates, [tail, 100.0 - tail], axis=axis)
    return low, high


def interval_words(*, over: str, resamples: int, seed: int, confidence: float = CONFIDENCE) -> str:
    """How an interval was computed, in words, e.g. ``95% percentile bootstrap over items (1,000 resamples,
    seed 0)``."""
    return f"{confidence:.0%} percentile bootstrap over {over} ({resamples:,} resamples, seed {seed})"
