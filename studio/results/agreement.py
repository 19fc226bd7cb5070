"""Inter-annotator agreement for one question: Krippendorff's α (+ bootstrap CI), Fleiss' κ, percent agreement,
each annotator's agreement with the others' majority, and accuracy on gold items.

Input is long form — one row per answer with columns ``item``, ``annotator``, ``value`` — where a missing
value (NaN, None or an empty string) means "no answer" and is dropped. Everything here is pure: plain
DataFrames in, numbers and DataFrames out; the caller fetches answers from the store.

Every figure of one campaign question is computed over one :class:`ItemSet` (:func:`choose_items`): by default the
*complete* items — those with the answers aggregation counts (``studio.results.aggregate.complete_answers`` at the
campaign's ``complete_at``) — and every report says which set it used and how many answered items it left out.
Items are coded in one canonical order (:func:`item_order`) whatever type their labels arrive as, so the one
bootstrap (:func:`studio.results.coincidence.bootstrap_alphas`) draws the same units for the same votes read from
the store or from a file. pandas is imported inside the functions that take DataFrames: a report of ratings coded
without it (``studio.results.coded_ratings``, :func:`report_from_ratings`) never loads it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from studio.results.coincidence import (
    LEVELS,
    Level,
    alpha_from_counts,
    bootstrap_alphas,
    fleiss_kappa,
    percent_agreement,
)
from studio.results.defaults import DEFAULT_RESAMPLES
from studio.results.item_sets import ItemSet, choose_items

if TYPE_CHECKING:
    import pandas as pd

COLUMNS: tuple[str, str, str] = ("item", "annotator", "value")
#: Re-exported: the count-matrix statistics live in ``studio.results.coincidence``.
__all__ = [
    "AgreementReport",
    "ItemSet",
    "Ratings",
    "agreement_by_question",
    "agreement_report",
    "annotator_agreement",
    "choose_items",
    "code_ratings",
    "fleiss_kappa",
    "gold_accuracy",
    "item_order",
    "percent_agreement",
    "report_from_ratings",
]


@dataclass(frozen=True)
class Ratings:
    """Answers of one question, coded: row ``i`` says annotator ``annotator_codes[i]`` gave item
    ``item_codes[i]`` the value ``domain[value_codes[i]]``. ``counts`` is the items × values count matrix."""

    level: Level
    items: np.ndarray
    annotators: np.ndarray
    domain: np.ndarray
    item_codes: np.ndarray
    annotator_codes: np.ndarray
    value_codes: np.ndarray
    counts: np.ndarray


@dataclass(frozen=True)
class AgreementReport:
    """Agreement statistics of one question. ``None`` marks a statistic that does not apply; ``*_note`` says why
    (or, beside a number, which items it could not use).

    ``items``, ``quota``, ``n_items_left_out`` and ``item_set`` name the :class:`ItemSet` every figure is computed
    over and, in words, how many answered items it left out. Within it, ``n_items`` counts items with at least one
    value, ``n_values`` the non-missing answers, ``n_pairable_items`` the items with two or more values (the only
    ones α, Fleiss' κ and percent agreement use).
    """

    level: str
    alpha: float | None
    alpha_ci: tuple[float, float] | None
    alpha_note: str | None
    fleiss_kappa: float | None
    fleiss_kappa_note: str | None
    percent_agreement: float | None
    n_items: int
    n_annotators: int
    n_values: int
    n_pairable_items: int
    resamples: int
    seed: int
    items: str
    quota: int | None
    n_items_left_out: int
    item_set: str

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict (the interval as a two-element list or None)."""
        data = asdict(self)
        data["alpha_ci"] = list(self.alpha_ci) if self.alpha_ci is not None else None
        return data


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip() == ""
    import pandas as pd

    return bool(pd.isna(value))


def _value_domain(values: pd.Series, level: Level, value_order: Sequence[Any] | None) -> tuple[np.ndarray, np.ndarray]:
    """Return (domain, codes): the ordered distinct values and each answer's index into them."""
    import pandas as pd

    if value_order is not None:
        domain = np.asarray(list(value_order), dtype=object)
        position = {value: index for index, value in enumerate(value_order)}
        unknown = sorted({str(v) for v in values if v not in position})
        if unknown:
            raise ValueError(f"values not in the given order: {', '.join(unknown[:5])}")
        return domain, values.map(position).to_numpy(dtype=np.int64)
    numbers = pd.to_numeric(values, errors="coerce")
    if numbers.notna().all():
        domain, codes = np.unique(numbers.to_numpy(dtype=float), return_inverse=True)
        return domain, codes.astype(np.int64)
    if level != "nominal":
        bad = values[numbers.isna()].iloc[0]
        raise ValueError(f"{level} data must be numbers (or pass value_order); got {bad!r}")
    domain, codes = np.unique(values.astype(str).str.strip().to_numpy(), return_inverse=True)
    return domain.astype(object), codes.astype(np.int64)


def item_order(items: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Return (codes, labels): each row's index into the distinct item labels, in one canonical order.

    Labels are compared as stripped text and ordered by number where every one is an integer (the store's item
    ids, and the same ids read back from a votes file as text), else by text. The bootstrap draws units in this
    order, so it must not depend on whether ids arrived as ``7`` or ``"7"`` (sorting those differently — "10"
    before "7" — once gave the store and a file different intervals for the same votes and seed).
    """
    import pandas as pd

    raw_codes, raw = pd.factorize(items)  # distinct labels first: only they are turned into text (speed)
    text_codes, distinct = pd.factorize(pd.Series([str(label).strip() for label in raw], dtype=object))
    labels = np.asarray(distinct, dtype=object)
    numbers = pd.to_numeric(pd.Series(labels, dtype=object), errors="coerce").to_numpy(dtype=float)
    integral = len(labels) > 0 and bool(np.isfinite(numbers).all()) and bool((numbers == np.round(numbers)).all())
    order = np.argsort(numbers if integral else labels.astype(str), kind="stable")
    rank = np.empty(len(labels), dtype=np.int64)
    rank[order] = np.arange(len(labels))
    return rank[np.asarray(text_codes)[raw_codes]], labels[order]


def code_ratings(frame: pd.DataFrame, *, level: Level, value_order: Sequence[Any] | None = None) -> Ratings:
    """Code long-form answers (columns ``item``, ``annotator``, ``value``) for the agreement statistics.

    Missing values are dropped. Numbers (or numeric strings) sort numerically; for ``nominal`` data labels are
    allowed and map to codes in sorted order; ``ordinal`` labels need ``value_order``. Raises ``ValueError``
    when a column is absent, an (item, annotator) pair answers twice, or a value cannot serve the level.
    """
    import pandas as pd

    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")
    absent = [column for column in COLUMNS if column not in frame.columns]
    if absent:
        raise ValueError(f"missing column(s): {', '.join(absent)}")
    answered = frame.loc[~frame["value"].map(_is_missing), list(COLUMNS)]
    twice = answered.duplicated(["item", "annotator"], keep=False)
    if twice.any():
        first = answered[twice].iloc[0]
        raise ValueError(f"annotator {first['annotator']!r} answered item {first['item']!r} more than once")
    domain, value_codes = _value_domain(answered["value"], level, value_order)
    item_codes, items = item_order(answered["item"])
    annotator_codes, annotators = pd.factorize(answered["annotator"], sort=True)
    flat = item_codes * len(domain) + value_codes
    counts = np.bincount(flat, minlength=len(items) * len(domain)).reshape(len(items), len(domain))
    return Ratings(
        level=level,
        items=np.asarray(items),
        annotators=np.asarray(annotators),
        domain=domain,
        item_codes=item_codes,
        annotator_codes=annotator_codes,
        value_codes=value_codes,
        counts=counts,
    )


def _alpha_and_interval(
    ratings: Ratings, *, resamples: int, seed: int, confidence: float
) -> tuple[float | None, tuple[float, float] | None, str | None]:
    if int((ratings.counts.sum(axis=1) >= 2).sum()) == 0:
        return None, None, "no item has two or more values"
    alpha = alpha_from_counts(ratings.counts, ratings.domain, ratings.level)
    if math.isnan(alpha):
        return None, None, "no disagreement is possible: every value is the same"
    if resamples <= 0:
        return alpha, None, None
    replicates = bootstrap_alphas(ratings.counts, ratings.domain, ratings.level, resamples=resamples, seed=seed)
    replicates = replicates[~np.isnan(replicates)]
    if len(replicates) == 0:
        return alpha, None, "every bootstrap resample had a single value"
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(replicates, [tail, 1.0 - tail])
    return alpha, (float(low), float(high)), None


def agreement_report(
    frame: pd.DataFrame,
    *,
    level: Level,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = 0.95,
    value_order: Sequence[Any] | None = None,
    item_set: ItemSet | None = None,
) -> AgreementReport:
    """Return α with its bootstrap percentile interval, Fleiss' κ, percent agreement and counts for one question,
    all over the items of ``item_set`` (every item of ``frame`` when None; the report names the set).

    The interval is the (1 − confidence)/2 and (1 + confidence)/2 percentiles of ``resamples`` bootstrap
    replicates of α, each computed on pairable units drawn with replacement (see
    :func:`studio.results.coincidence.bootstrap_alphas`) in :func:`item_order`; a fixed ``seed`` gives the same
    interval every run, wherever the votes were read from. ``resamples=0`` skips the interval.
    """
    chosen = item_set if item_set is not None else choose_items(frame, items="all", quota=None)
    ratings = code_ratings(chosen.select(frame), level=level, value_order=value_order)
    return report_from_ratings(ratings, chosen, resamples=resamples, seed=seed, confidence=confidence)


def report_from_ratings(
    ratings: Ratings, item_set: ItemSet, *, resamples: int, seed: int, confidence: float = 0.95
) -> AgreementReport:
    """:func:`agreement_report` of answers already coded (:func:`code_ratings`, or
    ``studio.results.coded_ratings.coded_ratings``) over the items of ``item_set``."""
    level, chosen = ratings.level, item_set
    alpha, interval, alpha_note = _alpha_and_interval(ratings, resamples=resamples, seed=seed, confidence=confidence)
    kappa, kappa_note = fleiss_kappa(ratings.counts)
    return AgreementReport(
        level=level,
        alpha=alpha,
        alpha_ci=interval,
        alpha_note=alpha_note,
        fleiss_kappa=kappa,
        fleiss_kappa_note=kappa_note,
        percent_agreement=percent_agreement(ratings.counts),
        n_items=len(ratings.items),
        n_annotators=len(ratings.annotators),
        n_values=len(ratings.value_codes),
        n_pairable_items=int((ratings.counts.sum(axis=1) >= 2).sum()),
        resamples=resamples,
        seed=seed,
        items=chosen.rule,
        quota=chosen.quota,
        n_items_left_out=chosen.left_out,
        item_set=chosen.describe(),
    )


def annotator_agreement(
    ratings: Ratings, *, k: float = 2.0, mad_floor: float = 0.05, min_scored: int = 5
) -> pd.DataFrame:
    """Return each annotator's agreement with the leave-one-out majority, flagging outliers.

    For each answer, the majority is the most common value among the *other* annotators of that item; the
    answer is scored only where that majority is unique (no tie, at least one other value), and agrees when it
    equals it. ``agreement`` = agreeing / scored answers. An annotator with at least ``min_scored`` scored answers
    is an ``outlier`` when agreement < median − k · max(MAD, mad_floor), where median and MAD (scaled by 1.4826
    to estimate a standard deviation) are taken over annotators with ``min_scored`` answers; the floor keeps a
    near-unanimous crowd from flagging everyone a hair below the median.
    Columns: annotator, n_answers, n_scored, agreement, outlier.
    """
    import pandas as pd

    rows = np.arange(len(ratings.value_codes))
    others = ratings.counts[ratings.item_codes].astype(np.int64)
    others[rows, ratings.value_codes] -= 1
    top = others.max(axis=1)
    unique_top = (others == top[:, None]).sum(axis=1) == 1
    scored = unique_top & (top > 0)
    agrees = scored & (others[rows, ratings.value_codes] == top)
    n_annotators = len(ratings.annotators)
    n_scored = np.bincount(ratings.annotator_codes, weights=scored, minlength=n_annotators).astype(int)
    n_agree = np.bincount(ratings.annotator_codes, weights=agrees, minlength=n_annotators)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(n_scored > 0, n_agree / np.maximum(n_scored, 1), np.nan)
    table = pd.DataFrame(
        {
            "annotator": ratings.annotators,
            "n_answers": np.bincount(ratings.annotator_codes, minlength=n_annotators),
            "n_scored": n_scored,
            "agreement": rate,
        }
    )
    return _flag_outliers(table, k=k, mad_floor=mad_floor, min_scored=min_scored)


def _flag_outliers(table: pd.DataFrame, *, k: float, mad_floor: float, min_scored: int) -> pd.DataFrame:
    eligible = table["n_scored"] >= min_scored
    table["outlier"] = False
    if eligible.any():
        median = float(table.loc[eligible, "agreement"].median())
        mad = 1.4826 * float((table.loc[eligible, "agreement"] - median).abs().median())
        threshold = median - k * max(mad, mad_floor)
        table["outlier"] = eligible & (table["agreement"] < threshold)
    return table


def agreement_by_question(
    answers: pd.DataFrame,
    levels: Mapping[str, Level],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    value_orders: Mapping[str, Sequence[Any]] | None = None,
    item_set: ItemSet | None = None,
) -> pd.DataFrame:
    """Return one row of :class:`AgreementReport` figures per question, each at its own level of measurement and
    all over the one ``item_set`` (every item of ``answers`` when None).

    ``answers`` is long form with a ``question`` column besides item, annotator, value; ``levels`` maps each
    question to agree on to its level (a schema question's ``level``); questions not in ``levels`` (free text)
    are skipped. ``value_orders`` gives ordered labels for ordinal label questions (a schema's option order).
    Multiple-choice answers (lists) have no single value: split them into one yes/no question per option first.
    """
    import pandas as pd

    if "question" not in answers.columns:
        raise ValueError("missing column(s): question")
    chosen = item_set if item_set is not None else choose_items(answers, items="all", quota=None)
    reports = []
    for question, level in levels.items():
        subset = answers.loc[answers["question"] == question, list(COLUMNS)]
        if subset["value"].map(lambda value: isinstance(value, list | tuple | dict)).any():
            raise ValueError(f"question {question!r}: list answers need one yes/no question per option")
        order = (value_orders or {}).get(question)
        report = agreement_report(
            subset, level=level, resamples=resamples, seed=seed, value_order=order, item_set=chosen
        )
        reports.append({"question": question, **report.to_dict()})
    return pd.DataFrame(reports)


def _normalise(value: Any) -> Any:
    """Compare numbers as floats and labels as stripped strings, so "3" from a CSV equals gold 3."""
    if isinstance(value, bool):
        return str(value).lower()
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value).strip()


def gold_accuracy(frame: pd.DataFrame, gold: Mapping[Any, Any]) -> pd.DataFrame:
    """Return each annotator's accuracy on gold items: answers compared with the known answers in ``gold``.

    ``frame`` is long form (item, annotator, value); items absent from ``gold`` and missing values are ignored.
    Columns: annotator, n_gold, n_correct, accuracy — annotators with no gold answer do not appear.
    """
    import pandas as pd

    answered = frame.loc[frame["item"].isin(list(gold)) & ~frame["value"].map(_is_missing)]
    expected = answered["item"].map(lambda item: _normalise(gold[item]))
    correct = answered["value"].map(_normalise) == expected
    table = (
        pd.DataFrame({"annotator": answered["annotator"], "correct": correct})
        .groupby("annotator", sort=True)["correct"]
        .agg(n_gold="size", n_correct="sum")
        .reset_index()
    )
    table["n_correct"] = table["n_correct"].astype(int)
    table["accuracy"] = table["n_correct"] / table["n_gold"]
    return table
