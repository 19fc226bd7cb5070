"""The combined scores of ARCHITECTURE.md "Scores": S, J, the adjudication flag and J_final."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pipeline.records import ALPHA, TAU
from pipeline.taxonomy import COMBINED_METRIC, METRIC_NAMES, S_TERMS, SIMILARITY_METRIC


def s_of(terms: Mapping[str, float | None]) -> float | None:
    """Return S, the mean of ``terms``' values of :data:`~pipeline.taxonomy.S_TERMS` (summed in that order).

    Any term None (no similarity: no embedder) leaves S undefined: None. A term missing from ``terms`` is a KeyError.
    """
    values = [terms[name] for name in S_TERMS]
    if any(value is None for value in values):
        return None
    # summed left to right from the first term, as (BLEU-1 + ... + SS) / 7 always was: the same float, bit for bit
    return sum(value for value in values if value is not None) / float(len(values))


def automatic_scores(lexical: Mapping[str, float], ss: float | None) -> dict[str, float | None]:
    """Every automatic metric of one response by name, in :data:`~pipeline.taxonomy.METRIC_NAMES` order, S included.

    ``lexical`` holds the lexical metrics (``LexicalScores._asdict()``), ``ss`` the similarity (None without one).
    """
    terms: dict[str, float | None] = {**lexical, SIMILARITY_METRIC: ss}
    terms[COMBINED_METRIC] = s_of(terms)
    return {name: terms[name] for name in METRIC_NAMES}


def combine_s(bleu: Sequence[float], rouge1: float, rouge_l: float, ss: float | None) -> float | None:
    """Return ``S = (BLEU-1 + BLEU-2 + BLEU-3 + BLEU-4 + ROUGE-1 + ROUGE-L + SS) / 7`` (:func:`s_of` by position).

    ``bleu`` holds BLEU-1..4 in order. Without a similarity (``ss`` None) S is undefined: None.
    """
    if len(bleu) != 4:
        raise ValueError(f"expected BLEU-1..4, got {len(bleu)} values")
    return s_of(dict(zip(S_TERMS, (*bleu, rouge1, rouge_l, ss), strict=True)))


#: :func:`combine_j` in words, as run manifests record it: Eq. 3 with S scaled to [0, 5] (README "Where this project
#: departs from the paper"); J_final is the same with J_human in J_judge's place.
J_FORMULA = "J = alpha*5S + (1-alpha)*J_judge; J_final = alpha*5S + (1-alpha)*J_human"


def combine_j(s: float | None, j_score: float | None, *, alpha: float = ALPHA) -> float | None:
    """Return ``J = alpha * 5S + (1 - alpha) * j_score`` in [0, 5], or None when either part is missing.

    ``j_score`` is the judge's ``J_judge`` (giving J) or the experts' ``J_human`` (giving J_final).
    """
    if s is None or j_score is None or (isinstance(j_score, float) and math.isnan(j_score)):
        return None
    if not 0.0 <= j_score <= 5.0:
        raise ValueError(f"a rubric score must lie in [0, 5], got {j_score}")
    return alpha * 5.0 * s + (1.0 - alpha) * j_score


def needs_adjudication(j: float | None, *, tau: float = TAU) -> bool:
    """True when J is below tau or there is no J at all (no judge score): a human must adjudicate."""
    return j is None or j < tau
