"""Answers already coded as text labels, turned into :class:`studio.results.agreement.Ratings` with numpy alone.

``h2h agreement --votes FILE.csv`` reads the file into codes (``studio.results.votes_table.coded_votes``); coding
them again through pandas (:func:`studio.results.agreement.code_ratings`) cost the command pandas' import, about
a quarter of a second. :func:`coded_ratings` gives the very ``Ratings`` ``code_ratings`` gives for the same rows,
or ``None`` where the text could read otherwise there — a number pandas might parse differently from Python
(decimals, exponents, ``inf``), two item ids of one number (``7`` and ``07``) — and the caller then codes the rows
with pandas. Only integers (at most 15 digits, exact in any parser) are read as numbers here.
"""

from __future__ import annotations

import re

import numpy as np

from studio.results.agreement import Ratings
from studio.results.coincidence import LEVELS, Level

#: An integer every parser reads alike (a value; an item id is never negative here).
_INTEGER = re.compile(r"-?[0-9]{1,15}")
_ITEM_ID = re.compile(r"[0-9]{1,15}")


def _not_a_number(text: str) -> bool:
    """Whether ``text`` is no number to Python, hence none to pandas' stricter ``to_numeric`` either."""
    try:
        float(text)
    except ValueError:
        return True
    return False


def _domain(labels: np.ndarray, level: Level) -> tuple[np.ndarray, np.ndarray] | None:
    """``code_ratings``' value domain of the distinct, sorted, non-empty ``labels`` and each label's index into it:
    numbers in numeric order where every label is one, else (nominal only) the labels as text; ``None`` where
    pandas could read them otherwise."""
    if all(_INTEGER.fullmatch(label) for label in labels):
        domain, codes = np.unique(np.array([float(label) for label in labels]), return_inverse=True)
        return domain, np.asarray(codes, dtype=np.int64).reshape(-1)
    if level == "nominal" and any(_not_a_number(label) for label in labels) and not any("\0" in x for x in labels):
        return labels.astype(object), np.arange(len(labels), dtype=np.int64)
    return None


def _item_rank(labels: np.ndarray) -> np.ndarray | None:
    """Each of the distinct, sorted item ``labels``' place in ``item_order``'s canonical order (by number where every
    one is an integer, else by text), or ``None`` where pandas could read them otherwise."""
    if all(_ITEM_ID.fullmatch(label) for label in labels):
        numbers = np.array([int(label) for label in labels], dtype=np.int64)
        if len(np.unique(numbers)) != len(numbers):
            return None  # "7" and "07": item_order's tie-break is the rows' order, which codes do not keep
        rank = np.empty(len(labels), dtype=np.int64)
        rank[np.argsort(numbers, kind="stable")] = np.arange(len(labels))
        return rank
    if any(_not_a_number(label) for label in labels) and not any("\0" in label for label in labels):
        return np.arange(len(labels), dtype=np.int64)  # sorted already; numpy's text sort drops trailing NULs
    return None


def coded_ratings(
    *,
    level: Level,
    items: np.ndarray,
    item_codes: np.ndarray,
    annotators: np.ndarray,
    annotator_codes: np.ndarray,
    values: np.ndarray,
    value_codes: np.ndarray,
) -> Ratings | None:
    """The :class:`Ratings` that ``code_ratings`` gives for the rows (``item_codes[i]``, ``annotator_codes[i]``,
    ``value_codes[i]``) — codes into the sorted distinct stripped text labels ``items``, ``annotators`` and
    ``values`` (``""``: no answer, dropped), one row per (item, annotator) — or ``None`` where the labels could
    read otherwise through pandas, or no row has an answer: code those rows with ``code_ratings`` instead."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")
    answered = values[value_codes] != ""
    if not answered.any():
        return None
    used_values, value_inverse = np.unique(value_codes[answered], return_inverse=True)
    used_items, item_inverse = np.unique(item_codes[answered], return_inverse=True)
    used_annotators, annotator_inverse = np.unique(annotator_codes[answered], return_inverse=True)
    domain = _domain(values[used_values], level)
    rank = _item_rank(items[used_items])
    if domain is None or rank is None:
        return None
    final_values = domain[1][value_inverse.reshape(-1)]
    final_items = rank[item_inverse.reshape(-1)]
    labels = np.empty(len(used_items), dtype=object)
    labels[rank] = items[used_items]
    flat = final_items * len(domain[0]) + final_values
    counts = np.bincount(flat, minlength=len(used_items) * len(domain[0])).reshape(len(used_items), len(domain[0]))
    return Ratings(
        level=level,
        items=labels,
        annotators=np.asarray(annotators[used_annotators]),
        domain=domain[0],
        item_codes=final_items,
        annotator_codes=np.asarray(annotator_inverse, dtype=np.int64).reshape(-1),
        value_codes=final_values,
        counts=counts,
    )
