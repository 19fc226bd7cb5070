"""Krippendorff's α from value counts, and its bootstrap over units, in closed matrix form.

The input everywhere is a *value-count matrix* ``counts`` (units × values): ``counts[u, v]`` is how many
annotators gave value ``domain[v]`` to unit ``u``. Following Krippendorff (2011), a unit with ``m_u`` values
adds ``(n_u n_uᵀ − diag n_u) / (m_u − 1)`` to the coincidence matrix ``o`` (units with fewer than two values
add nothing: they are not *pairable*), the pairable marginals are ``n_c = Σ_k o_ck`` with total ``n``, and

    α = 1 − (n − 1) · Σ_ck o_ck δ²_ck / Σ_ck n_c n_k δ²_ck

with the level's difference function δ². This is exactly what ``krippendorff.alpha`` computes; the tests
prove the two equal to 1e-9. Writing it this way lets a bootstrap resample be a *weighted sum over units*
(integer weights = how often each unit was drawn), i.e. one matrix product for all resamples at once,
instead of rebuilding and re-counting the data once per resample.

Fleiss' κ and percent agreement, the other statistics of a value-count matrix, are here too (values as unordered
categories, items with a single value left out: they have no pair to agree).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from studio.results.defaults import DEFAULT_RESAMPLES

Level = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval", "ratio")

#: Resamples handled per matrix product; bounds the weight matrix at this many × units floats.
_RESAMPLE_CHUNK = 256
#: Units per chunk when the per-unit coincidence matrices (units × V²) would not fit comfortably.
_UNIT_CELLS_BUDGET = 4_000_000


def fixed_deltas(domain: np.ndarray, level: Level) -> np.ndarray:
    """Return the V × V matrix of squared differences δ² for a level whose δ² ignores the marginals.

    ``nominal``: 0 on the diagonal, 1 elsewhere; ``interval``: ``(c − k)²``; ``ratio``: ``((c − k)/(c + k))²``
    (0 where ``c + k = 0``, as in the ``krippendorff`` package). ``ordinal`` depends on the marginals: use
    :func:`ordinal_deltas`.
    """
    size = len(domain)
    if level == "nominal":
        return 1.0 - np.eye(size)
    values = np.asarray(domain, dtype=float)
    diff = values[:, None] - values[None, :]
    if level == "interval":
        squared: np.ndarray = diff**2
        return squared
    if level == "ratio":
        total = values[:, None] + values[None, :]
        ratio: np.ndarray = np.divide(diff, total, out=np.zeros_like(diff), where=total != 0) ** 2
        return ratio
    raise ValueError(f"level {level!r} has no fixed δ²; expected one of nominal, interval, ratio")


def ordinal_deltas(marginals: np.ndarray) -> np.ndarray:
    """Return ordinal δ² for marginals of shape (..., V): ``(Σ_{g=c..k} n_g − (n_c + n_k)/2)²``, shape (..., V, V).

    Values are ranks in domain order; ``marginals`` are the pairable value counts ``n_v``.
    """
    cumulative = np.cumsum(marginals, axis=-1)
    low = cumulative[..., :, None] - marginals[..., :, None]  # Σ n_g for g < c
    between = cumulative[..., None, :] - low  # Σ n_g for c ≤ g ≤ k (valid where c ≤ k)
    between = np.where(np.triu(np.ones(marginals.shape[-1], dtype=bool)), between, np.swapaxes(between, -1, -2))
    half = (marginals[..., :, None] + marginals[..., None, :]) / 2.0
    deltas: np.ndarray = (between - half) ** 2
    return deltas


def pairable(counts: np.ndarray) -> np.ndarray:
    """Return the rows of ``counts`` (as float) of units with at least two values: the only ones α uses."""
    counts = np.asarray(counts, dtype=float)
    units: np.ndarray = counts[counts.sum(axis=1) >= 2]
    return units


def coincidences(counts: np.ndarray) -> np.ndarray:
    """Return the V × V coincidence matrix ``o`` of the pairable units of ``counts``."""
    units = pairable(counts)
    scale = 1.0 / (units.sum(axis=1) - 1.0)
    observed: np.ndarray = (units * scale[:, None]).T @ units - np.diag(units.T @ scale)
    return observed


def alpha_from_coincidences(observed: np.ndarray, deltas: np.ndarray) -> float:
    """Return α for one coincidence matrix and its δ²; NaN where the expected disagreement is 0."""
    marginals = observed.sum(axis=0)
    total = marginals.sum()
    expected = marginals @ deltas @ marginals
    if expected <= 0.0:
        return float("nan")
    return float(1.0 - (total - 1.0) * float((observed * deltas).sum()) / expected)


def alpha_from_counts(counts: np.ndarray, domain: np.ndarray, level: Level) -> float:
    """Return Krippendorff's α of a value-count matrix; NaN where α is undefined (no pairable unit, one value)."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")
    if len(pairable(counts)) == 0:
        return float("nan")
    observed = coincidences(counts)
    deltas = ordinal_deltas(observed.sum(axis=0)) if level == "ordinal" else fixed_deltas(domain, level)
    return alpha_from_coincidences(observed, deltas)


def resample_weights(n_units: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Return a (resamples × n_units) matrix: how many times each unit is drawn in each resample.

    Each row is one draw of ``n_units`` units with replacement (uniform), counted per unit.
    """
    draws = rng.integers(0, n_units, size=(resamples, n_units))
    offsets = (np.arange(resamples) * n_units)[:, None]
    return np.bincount((draws + offsets).ravel(), minlength=resamples * n_units).reshape(resamples, n_units)


def _weighted_coincidences(weights: np.ndarray, units: np.ndarray) -> np.ndarray:
    """Return Σ_u weights[b, u] · o_u for every resample b: shape (B, V, V)."""
    n_values = units.shape[1]
    scale = 1.0 / (units.sum(axis=1) - 1.0)
    chunk = max(1, _UNIT_CELLS_BUDGET // (n_values * n_values))
    result = np.zeros((weights.shape[0], n_values * n_values))
    for start in range(0, len(units), chunk):
        part = units[start : start + chunk]
        per_unit = part[:, :, None] * part[:, None, :]
        per_unit[:, np.arange(n_values), np.arange(n_values)] -= part
        per_unit *= scale[start : start + chunk, None, None]
        result += weights[:, start : start + chunk] @ per_unit.reshape(len(part), -1)
    return result.reshape(-1, n_values, n_values)


def alphas_for_weights(units: np.ndarray, domain: np.ndarray, level: Level, weights: np.ndarray) -> np.ndarray:
    """Return α for each row of ``weights`` (B × units): the data made of each unit repeated weight times.

    ``units`` are pairable value counts (see :func:`pairable`). Equal, resample by resample, to calling
    ``krippendorff.alpha`` on the repeated data. Levels with a fixed δ² need only per-unit scalars
    (one matrix-vector product); ordinal recomputes δ² from each resample's marginals.
    """
    weights = np.asarray(weights, dtype=float)
    sizes = units.sum(axis=1)
    marginals = weights @ units  # (B, V)
    totals = weights @ sizes
    if level == "ordinal":
        observed = _weighted_coincidences(weights, units)
        deltas = ordinal_deltas(marginals)
        disagreement = (observed * deltas).sum(axis=(1, 2))
        expected = np.einsum("bc,bck,bk->b", marginals, deltas, marginals)
    else:
        deltas = fixed_deltas(domain, level)
        per_unit = np.einsum("uc,ck,uk->u", units, deltas, units) / (sizes - 1.0)
        disagreement = weights @ per_unit
        expected = np.einsum("bc,ck,bk->b", marginals, deltas, marginals)
    with np.errstate(divide="ignore", invalid="ignore"):
        alphas = 1.0 - (totals - 1.0) * disagreement / expected
    return np.where(expected > 0.0, alphas, np.nan)


def bootstrap_alphas(
    counts: np.ndarray, domain: np.ndarray, level: Level, *, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> np.ndarray:
    """Return ``resamples`` bootstrap replicates of α (NaN where a replicate's α is undefined).

    Method: nonparametric bootstrap over *pairable units* — each replicate draws as many pairable units as
    there are, uniformly with replacement, from a ``numpy.random.default_rng(seed)`` stream, and computes α of
    that resampled data exactly (the ordinal δ² from the replicate's own marginals). Same seed, same replicates.
    """
    units = pairable(counts)
    if len(units) == 0:
        return np.full(resamples, np.nan)
    rng = np.random.default_rng(seed)
    replicates: list[np.ndarray] = []
    for start in range(0, resamples, _RESAMPLE_CHUNK):
        size = min(_RESAMPLE_CHUNK, resamples - start)
        weights = resample_weights(len(units), size, rng)
        replicates.append(alphas_for_weights(units, domain, level, weights))
    return np.concatenate(replicates) if replicates else np.empty(0)


def fleiss_kappa(counts: np.ndarray) -> tuple[float | None, str | None]:
    """Return (Fleiss' κ, note): κ, or None where it does not apply, and a note saying why or which items it left out.

    ``counts`` is items × categories; values are treated as unordered categories. Fleiss (1971) written for
    a number of raters n_i that may differ per item (some items rated by 19 people, others by 20): over the items
    with n_i ≥ 2, P_i = (Σ_j n_ij² − n_i) / (n_i(n_i − 1)), P̄ = mean P_i, p_j = Σ_i n_ij / Σ_i n_i,
    P̄e = Σ_j p_j² and κ = (P̄ − P̄e) / (1 − P̄e). With every n_i equal this is exactly Fleiss (1971) (and
    ``statsmodels.stats.inter_rater.fleiss_kappa``); P̄ is :func:`percent_agreement`. An item with one rater has
    no pair to agree and is left out (the note counts them); κ needs ratings in more than one category.
    """
    counts = np.asarray(counts, dtype=float)
    raters = counts.sum(axis=1)
    single = int((raters == 1).sum())
    counts, raters = counts[raters >= 2], raters[raters >= 2]
    if len(counts) == 0:
        return None, "no item has two or more raters" if single else "no ratings"
    shares = counts.sum(axis=0) / raters.sum()
    chance = float((shares**2).sum())
    if chance >= 1.0:
        return None, "every rating is in one category"
    observed = float((((counts**2).sum(axis=1) - raters) / (raters * (raters - 1.0))).mean())
    left = f"{single} item(s) with a single rater left out (no pair to agree)" if single else None
    return (observed - chance) / (1.0 - chance), left


def percent_agreement(counts: np.ndarray) -> float | None:
    """Return the mean over pairable items (≥ 2 values) of the share of agreeing annotator pairs, or None.

    For an item with m values of which n_c equal value c, the share is Σ_c n_c(n_c − 1) / (m(m − 1)): the
    fraction of ordered pairs of distinct annotators who gave the same value (exact match, at every level).
    """
    counts = np.asarray(counts, dtype=float)
    sizes = counts.sum(axis=1)
    keep = sizes >= 2
    if not keep.any():
        return None
    agreeing = (counts[keep] * (counts[keep] - 1.0)).sum(axis=1)
    return float((agreeing / (sizes[keep] * (sizes[keep] - 1.0))).mean())
