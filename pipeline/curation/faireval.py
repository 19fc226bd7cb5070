"""FairEval's calibrations (Wang et al. 2023, "Large Language Models are not Fair Evaluators"), as plain functions.

- Multiple Evidence Calibration: the judge writes its evidence before its verdict, k samples are drawn, and the
  verdicts are aggregated (majority; :func:`majority`).
- Balanced Position Calibration: a pair is judged in both orders; the verdicts are mapped back to the underlying
  responses and combined (:func:`combine_orders`): a judge that contradicts itself across orders gives no winner.
- Human-in-the-Loop Calibration: the entropy of the verdicts (:func:`uncertainty`) ranks the items, the most
  uncertain going to people first.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import TypeVar

from pipeline.curation.records import PAIR_VERDICTS, SCREEN_VERDICTS, PairOrder, PairVerdict, ScreenVerdict

V = TypeVar("V", bound=str)

_SCREEN_TAG = re.compile(r"\[\[\s*(KEEP|REVISE|DISCARD)\s*\]\]", re.IGNORECASE)
_PAIR_TAG = re.compile(r"\[\[\s*([ABC])\s*\]\]")
#: Ties of a screen majority go to the middle, more cautious verdict.
SCREEN_TIE_ORDER: tuple[ScreenVerdict, ...] = ("revise", "discard", "keep")


def parse_screen_answer(raw: str | None) -> tuple[str | None, ScreenVerdict | None, str | None]:
    """``(evidence, verdict, error)`` of one pre-screen answer: the verdict is the *last* ``[[KEEP]]``/
    ``[[REVISE]]``/``[[DISCARD]]``; the evidence is the text before it."""
    if raw is None or not raw.strip():
        return None, None, "empty answer"
    matches = list(_SCREEN_TAG.finditer(raw))
    if not matches:
        return raw.strip(), None, "no [[KEEP]], [[REVISE]] or [[DISCARD]] in the answer"
    last = matches[-1]
    verdict: ScreenVerdict = last.group(1).lower()  # type: ignore[assignment]
    return raw[: last.start()].strip() or None, verdict, None


def parse_pair_answer(raw: str | None) -> tuple[str | None, str | None]:
    """``(shown, error)``: the last ``[[A]]``, ``[[B]]`` or ``[[C]]`` of a pair judge's answer (A = shown first)."""
    if raw is None or not raw.strip():
        return None, "empty answer"
    matches = _PAIR_TAG.findall(raw)
    if not matches:
        return None, "no [[A]], [[B]] or [[C]] in the answer"
    return matches[-1], None


def underlying(order: PairOrder, shown: str) -> PairVerdict:
    """What a shown verdict means for the pair: in order ``ba`` the first response shown is ``b``."""
    if shown == "C":
        return "tie"
    first_is_a = order == "ab"
    return "a" if (shown == "A") == first_is_a else "b"


def uncertainty(verdicts: Sequence[str], categories: int) -> float:
    """Shannon entropy of the verdicts' distribution, divided by its maximum ``log(categories)``: 0 when all
    agree, 1 when they spread evenly over every category. No verdicts at all is maximal uncertainty (1)."""
    if not verdicts:
        return 1.0
    counts = Counter(verdicts).values()
    total = sum(counts)
    entropy = -sum(count / total * math.log(count / total) for count in counts)
    return round(min(entropy / math.log(categories), 1.0), 6)


def majority(verdicts: Sequence[V], tie_order: Sequence[V]) -> V | None:
    """The most frequent verdict; a tie is broken by ``tie_order`` (earlier wins). None when there are none."""
    if not verdicts:
        return None
    counts = Counter(verdicts)
    top = max(counts.values())
    return next(verdict for verdict in tie_order if counts.get(verdict, 0) == top)


def screen_majority(verdicts: Sequence[ScreenVerdict]) -> ScreenVerdict | None:
    return majority(verdicts, SCREEN_TIE_ORDER)


def order_majority(verdicts: Sequence[PairVerdict]) -> PairVerdict | None:
    """One order's verdict over its samples; a tie between a and b is a tie."""
    if not verdicts:
        return None
    counts = Counter(verdicts)
    top = max(counts.values())
    leaders = [verdict for verdict in PAIR_VERDICTS if counts.get(verdict, 0) == top]
    return leaders[0] if len(leaders) == 1 else "tie"


def combine_orders(ab: PairVerdict | None, ba: PairVerdict | None) -> tuple[PairVerdict | None, bool]:
    """Balanced Position Calibration: ``(winner, consistent)``; a winner only when both orders agree."""
    consistent = ab is not None and ab == ba
    return (ab if consistent else None), consistent


SCREEN_CATEGORIES = len(SCREEN_VERDICTS)
PAIR_CATEGORIES = len(PAIR_VERDICTS)
