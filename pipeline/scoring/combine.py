"""The combined scores of ARCHITECTURE.md "Scores": S, J, the adjudication flag and J_final."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pipeline.records import ALPHA, TAU


def combine_s(bleu: Sequence[float], rouge1: float, rouge_l: float, ss: float | None) -> float | None:
    """Return ``S = (BLEU-1 + BLEU-2 + BLEU-3 + BLEU-4 + ROUGE-1 + ROUGE-L + SS) / 7``.

    ``bleu`` holds BLEU-1..4 in order. Without a similarity (``ss`` None) S is undefined: None.
    """
    if len(bleu) != 4:
        raise ValueError(f"expected BLEU-1..4, got {len(bleu)} values")
    if ss is None:
        return None
    return (sum(bleu) + rouge1 + rouge_l + ss) / 7.0


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
