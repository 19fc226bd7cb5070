"""The judge-bias card beside the judge-vs-human calibration: how the LLM judge errs, measure by measure.

Each measure has its n, a 95% interval where one is sensible — Wilson's for a proportion (scipy), otherwise the
project's percentile bootstrap over items or pairs (``pipeline.bootstrap``, seeded, so a rerun gives the same
interval) — a ``material`` flag by a threshold stated in its sentence, and one plain sentence:

- position flips: the share of pairs judged in both orders (``h2h judge-pairs``) whose two order verdicts disagree,
  and the first-shown preference (mean ``first_shown_rate``, 0.5 = none);
- length bias: Spearman ρ of J_judge vs the response's length in characters and, on the same items, of J_human vs
  length; the difference judge − human;
- calibration error: ECE = Σ_b (n_b/N)·|mean J_judge_b − mean J_human_b| over equal-width bins of J_judge on [0, 5],
  and the signed mean bias (J_judge − J_human);
- the adjudication decision J < τ (J = combine_j(S, J_judge) vs combine_j(S, J_human)): Cohen's κ
  (scikit-learn) with the 2×2 counts.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from pipeline.bootstrap import CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, draw_counts, draw_indices, percentile_bounds
from pipeline.curation.records import PairJudgment
from pipeline.scoring.combine import combine_j
from pipeline.taxonomy import TAU

#: A flip rate above this share is material.
FLIP_MATERIAL = 0.10
#: A first-shown preference further than this from 0.5, with its interval excluding 0.5, is material.
FIRST_SHOWN_MATERIAL = 0.10
#: A length-ρ difference (judge − human) larger than this in size, with its interval excluding 0, is material.
LENGTH_MATERIAL = 0.10
#: An ECE above this many points (of 5) is material.
ECE_MATERIAL = 0.5
#: A mean bias larger than this many points in size, with its interval excluding 0, is material.
BIAS_MATERIAL = 0.5
#: A decision κ below this is material.
KAPPA_MATERIAL = 0.6
#: Equal-width bins of J_judge on [0, 5] for the ECE unless asked otherwise.
DEFAULT_BINS = 5
#: The columns of :meth:`JudgeBiasCard.table` (the export table ``judge_bias``).
CARD_COLUMNS: list[str] = ["measure", "value", "low", "high", "n", "material", "sentence"]
#: The columns :func:`judge_bias_card` reads per item.
ITEM_COLUMNS: tuple[str, ...] = ("J_judge", "J_human", "S", "length")
#: What the flip-rate row says when no judge-pairs file was given.
NO_PAIRS = "No pairs judged in both orders: run h2h judge-pairs, then h2h judge-card --pairs FILE."


@dataclass(frozen=True)
class Measure:
    """One row of the card: the value, its interval (None where none), n, whether it is material, in words."""

    measure: str
    value: float | None
    low: float | None
    high: float | None
    n: int
    material: bool | None
    sentence: str


@dataclass(frozen=True)
class JudgeBiasCard:
    """The card: its measures in order, the 2×2 decision counts (``both_below``, ``judge_only``, ``human_only``,
    ``neither``), the ECE's bins, how the intervals were drawn, and the summary sentence."""

    measures: tuple[Measure, ...]
    decision_counts: dict[str, int]
    bins: int
    resamples: int
    seed: int
    summary: str

    def table(self) -> pd.DataFrame:
        """One row per measure (:data:`CARD_COLUMNS`)."""
        return pd.DataFrame([asdict(measure) for measure in self.measures], columns=CARD_COLUMNS)

    def to_dict(self) -> dict[str, Any]:
        """The card as a JSON-ready dict."""
        return {**asdict(self), "measures": [asdict(measure) for measure in self.measures]}


def _number(value: Any) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def _fmt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _interval(low: float | None, high: float | None, digits: int = 2) -> str:
    return "no interval" if low is None or high is None else f"95% [{_fmt(low, digits)}, {_fmt(high, digits)}]"


def _excludes(low: float | None, high: float | None, point: float) -> bool:
    return low is not None and high is not None and (low > point or high < point)


def flip_measures(pairs: Sequence[PairJudgment] | None, *, resamples: int, seed: int) -> list[Measure]:
    """The flip rate (pairs with both order verdicts whose verdicts differ; Wilson interval) and the first-shown
    preference (mean ``first_shown_rate``; bootstrap over pairs). ``pairs`` None: both rows say :data:`NO_PAIRS`."""
    from scipy import stats

    if pairs is None:
        return [Measure(name, None, None, None, 0, None, NO_PAIRS) for name in ("flip_rate", "first_shown")]
    both = [pair for pair in pairs if None not in (pair.order_verdicts.get("ab"), pair.order_verdicts.get("ba"))]
    flips = sum(pair.order_verdicts["ab"] != pair.order_verdicts["ba"] for pair in both)
    rate = low = high = None
    if both:
        rate = flips / len(both)
        found = stats.binomtest(flips, len(both)).proportion_ci(confidence_level=CONFIDENCE, method="wilson")
        low, high = float(found.low), float(found.high)
    material = rate is not None and rate > FLIP_MATERIAL
    flip = Measure(
        "flip_rate", rate, low, high, len(both), material,
        f"{flips} of {len(both)} pairs flip verdict when the order is swapped ({_fmt(rate)}, Wilson "
        f"{_interval(low, high)}); material above {FLIP_MATERIAL:.0%}.",
    )  # fmt: skip
    rates = np.array([pair.first_shown_rate for pair in pairs if pair.first_shown_rate is not None], dtype=float)
    mean, (f_low, f_high) = _bootstrap_mean(rates, resamples=resamples, seed=seed)
    leaning = mean is not None and abs(mean - 0.5) > FIRST_SHOWN_MATERIAL and _excludes(f_low, f_high, 0.5)
    first = Measure(
        "first_shown", mean, f_low, f_high, len(rates), leaning,
        f"The judge picks the response shown first {_fmt(mean)} of the time ({_interval(f_low, f_high)}; 0.5 is "
        f"no preference); material when further than {FIRST_SHOWN_MATERIAL} from 0.5 with the interval "
        "excluding 0.5.",
    )  # fmt: skip
    return [flip, first]


def _bootstrap(
    n: int, statistic: Callable[[np.ndarray], np.ndarray], *, resamples: int, seed: int
) -> tuple[float | None, float | None]:
    """The percentile interval of ``statistic`` (a (resamples × n) index array → one value per row) over units."""
    if n < 2:
        return None, None
    indices = draw_indices(n, resamples=resamples, rng=np.random.default_rng(seed))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        low, high = percentile_bounds(np.asarray(statistic(indices), dtype=float))
    return _number(low), _number(high)


def _bootstrap_mean(values: np.ndarray, *, resamples: int, seed: int) -> tuple[float | None, tuple[Any, Any]]:
    if len(values) == 0:
        return None, (None, None)
    counts = draw_counts(len(values), resamples=resamples, rng=np.random.default_rng(seed))
    if len(values) < 2:
        return float(values.mean()), (None, None)
    low, high = percentile_bounds(counts @ values / len(values))
    return float(values.mean()), (_number(low), _number(high))


def _rho_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman ρ of each row pair of ``x`` and ``y`` (ranks with ties averaged, then Pearson: scipy's definition)."""
    from scipy import stats

    rx, ry = stats.rankdata(x, axis=1), stats.rankdata(y, axis=1)
    rx, ry = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean(axis=1, keepdims=True)
    return np.asarray((rx * ry).sum(axis=1) / np.sqrt((rx**2).sum(axis=1) * (ry**2).sum(axis=1)))


def length_measures(items: pd.DataFrame, *, resamples: int, seed: int) -> list[Measure]:
    """Spearman ρ of J_judge vs length and of J_human vs length (scipy, same items), and their difference with a
    bootstrap interval over items."""
    from scipy import stats

    n = len(items)
    judge, human, length = (items[name].to_numpy(float) for name in ("J_judge", "J_human", "length"))
    rho_j = rho_h = None
    if n >= 3:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rho_j, rho_h = (_number(stats.spearmanr(score, length).statistic) for score in (judge, human))
    diff = None if rho_j is None or rho_h is None else rho_j - rho_h
    low, high = _bootstrap(
        n,
        lambda idx: _rho_rows(judge[idx], length[idx]) - _rho_rows(human[idx], length[idx]),
        resamples=resamples,
        seed=seed,
    )
    material = diff is not None and abs(diff) > LENGTH_MATERIAL and _excludes(low, high, 0.0)
    leans = "neither longer nor shorter" if round(diff or 0.0, 2) == 0 else "longer" if (diff or 0) > 0 else "shorter"
    return [
        Measure("length_rho_judge", rho_j, None, None, n, None, f"Judge score vs length: Spearman ρ {_fmt(rho_j)}."),
        Measure("length_rho_human", rho_h, None, None, n, None, f"Human score vs length: Spearman ρ {_fmt(rho_h)}."),
        Measure(
            "length_bias", diff, low, high, n, material,
            f"Against the humans the judge favours {leans} answers: ρ difference {_fmt(diff)} "
            f"({_interval(low, high)}); "
            f"material when the interval excludes 0 and |difference| > {LENGTH_MATERIAL}.",
        ),
    ]  # fmt: skip


def expected_calibration_error(judge: np.ndarray, human: np.ndarray, *, bins: int = DEFAULT_BINS) -> float | None:
    """ECE = Σ_b (n_b/N)·|mean judge_b − mean human_b| over ``bins`` equal-width bins of ``judge`` on [0, 5] (the
    top edge in the last bin); None with no items."""
    if len(judge) == 0:
        return None
    which = _bin_of(judge, bins)
    return float(sum(abs((judge - human)[which == b].sum()) for b in range(bins)) / len(judge))


def _bin_of(judge: np.ndarray, bins: int) -> np.ndarray:
    return np.clip(np.floor(judge * bins / 5.0).astype(int), 0, bins - 1)


def calibration_measures(items: pd.DataFrame, *, bins: int, resamples: int, seed: int) -> list[Measure]:
    """The ECE and the signed mean bias (J_judge − J_human), each with a bootstrap interval over items."""
    judge, human = items["J_judge"].to_numpy(float), items["J_human"].to_numpy(float)
    n, gap = len(judge), judge - human
    ece = expected_calibration_error(judge, human, bins=bins)
    onehot = np.eye(bins)[_bin_of(judge, bins)] if n else np.zeros((0, bins))
    counts = draw_counts(n, resamples=resamples, rng=np.random.default_rng(seed)) if n >= 2 else None
    low = high = None
    if counts is not None:
        low, high = (_number(v) for v in percentile_bounds(np.abs((counts * gap) @ onehot).sum(axis=1) / n))
    bias, (b_low, b_high) = _bootstrap_mean(gap, resamples=resamples, seed=seed)
    material = bias is not None and abs(bias) > BIAS_MATERIAL and _excludes(b_low, b_high, 0.0)
    return [
        Measure(
            "ece", ece, low, high, n, ece is not None and ece > ECE_MATERIAL,
            f"Calibration error of J_judge against J_human: ECE {_fmt(ece)} points ({_interval(low, high)}; "
            f"{bins} equal-width bins of J_judge on [0, 5]); material above {ECE_MATERIAL} points.",
        ),
        Measure(
            "mean_bias", bias, b_low, b_high, n, material,
            f"The judge scores {_fmt(bias)} points {'above' if (bias or 0) >= 0 else 'below'} the humans on average "
            f"({_interval(b_low, b_high)}); material when |bias| > {BIAS_MATERIAL} with the interval excluding 0.",
        ),
    ]  # fmt: skip


def decision_below(items: pd.DataFrame, score: str) -> np.ndarray:
    """Whether J = combine_j(S, ``score``) is below τ per item (the adjudication decision)."""
    values = [combine_j(float(s), float(j)) for s, j in zip(items["S"], items[score], strict=True)]
    return np.array([value is not None and value < TAU for value in values], dtype=bool)


def decision_measure(items: pd.DataFrame, *, resamples: int, seed: int) -> tuple[Measure, dict[str, int]]:
    """Cohen's κ (scikit-learn) of J < τ with the judge's score vs with the humans', a bootstrap interval over
    items, and the 2×2 counts."""
    from sklearn.metrics import cohen_kappa_score

    judge, human = decision_below(items, "J_judge"), decision_below(items, "J_human")
    counts = {
        "both_below": int((judge & human).sum()),
        "judge_only": int((judge & ~human).sum()),
        "human_only": int((~judge & human).sum()),
        "neither": int((~judge & ~human).sum()),
    }

    def kappa(a: np.ndarray, b: np.ndarray) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(cohen_kappa_score(a, b, labels=[False, True]))

    value = _number(kappa(judge, human)) if len(judge) else None
    low, high = _bootstrap(len(judge), lambda idx: _kappa_rows(judge[idx], human[idx]), resamples=resamples, seed=seed)
    sentence = (
        f"The decision J < {TAU} agrees between judge and humans with Cohen's κ {_fmt(value)} "
        f"({_interval(low, high)}): both below on {counts['both_below']}, judge only {counts['judge_only']}, humans "
        f"only {counts['human_only']}, neither {counts['neither']}; material below {KAPPA_MATERIAL}."
    )
    material = value is not None and value < KAPPA_MATERIAL
    return Measure("decision_kappa", value, low, high, len(judge), material, sentence), counts


def _kappa_rows(judge: np.ndarray, human: np.ndarray) -> np.ndarray:
    """Cohen's κ of each row pair of two boolean arrays, vectorised for the bootstrap's replicates: the same
    (p_o − p_e)/(1 − p_e) scikit-learn's ``cohen_kappa_score`` gives one pair (tests hold this); NaN with p_e = 1."""
    p_judge, p_human = judge.mean(axis=1), human.mean(axis=1)
    observed = (judge == human).mean(axis=1)
    expected = p_judge * p_human + (1 - p_judge) * (1 - p_human)
    return np.asarray((observed - expected) / (1 - expected))


def _summary(measures: Sequence[Measure]) -> str:
    material = [measure.measure for measure in measures if measure.material]
    if material:
        return f"Material judge biases: {', '.join(material)} (by the thresholds stated in each row)."
    return "No judge bias is material by the thresholds stated in each row."


def judge_bias_card(
    items: pd.DataFrame,
    *,
    pairs: Sequence[PairJudgment] | None = None,
    bins: int = DEFAULT_BINS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> JudgeBiasCard:
    """The card over ``items`` (one row per adjudicated item: :data:`ITEM_COLUMNS`; rows missing any are left
    out) and, for the position rows, ``pairs`` (None: no judge-pairs file). ``ValueError`` for bins < 1 or a
    missing column."""
    if bins < 1:
        raise ValueError("bins: must be at least 1")
    absent = [name for name in ITEM_COLUMNS if name not in items.columns]
    if absent:
        raise ValueError(f"missing column(s): {', '.join(absent)}")
    rows = items.loc[:, list(ITEM_COLUMNS)].apply(pd.to_numeric, errors="raise").dropna().reset_index(drop=True)
    decision, counts = decision_measure(rows, resamples=resamples, seed=seed)
    measures = (
        *flip_measures(pairs, resamples=resamples, seed=seed),
        *length_measures(rows, resamples=resamples, seed=seed),
        *calibration_measures(rows, bins=bins, resamples=resamples, seed=seed),
        decision,
    )
    return JudgeBiasCard(measures, counts, bins, resamples, seed, _summary(measures))
