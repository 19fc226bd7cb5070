"""The item set every agreement figure of a campaign question is computed over (issue 17 item 4).

By default the *complete* items — those with the answers aggregation counts (``studio.results.aggregate
.complete_answers`` at the campaign's ``complete_at``) — or, when asked, every answered item; an :class:`ItemSet`
says in words which set it is and how many answered items it leaves out.

pandas is imported inside :func:`choose_items`, and ``studio.results.aggregate`` (workflows, pydantic) only where a
quota is given: ``h2h agreement`` without ``--quota`` loads neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

#: The item sets agreement can be computed over: the complete items (the default) or every answered item.
ITEM_SETS: tuple[str, ...] = ("complete", "all")
ItemRule = Literal["complete", "all"]


def _items(count: int) -> str:
    return f"{count} item" if count == 1 else f"{count} items"


@dataclass(frozen=True)
class ItemSet:
    """The items every agreement figure of a campaign (or a votes file) is computed over.

    ``rule`` is ``complete`` (items with at least ``quota`` answers, as aggregation counts them) or ``all`` (every
    answered item); ``quota`` is None where it is not known (a votes file read without ``--quota``). ``answered``
    counts the items with an answer, ``below_quota`` those of them short of the quota.
    """

    rule: ItemRule
    quota: int | None
    items: tuple[Any, ...]
    answered: int
    below_quota: int

    @property
    def left_out(self) -> int:
        """Answered items this set leaves out (those below quota under ``complete``; none under ``all``)."""
        return self.below_quota if self.rule == "complete" else 0

    def describe(self) -> str:
        """The set in words, e.g. "over the 58 complete items (quota 20); 7 items below quota left out"."""
        if self.rule == "complete":
            left = f"{_items(self.left_out)} below quota left out" if self.left_out else "no item below quota"
            return f"over the {_items(len(self.items)).replace('item', 'complete item')} (quota {self.quota}); {left}"
        if self.quota is None:
            return f"over all {_items(len(self.items))} given (no quota given: none left out)"
        return (
            f"over all {_items(len(self.items))} answered (items=all), "
            f"{self.below_quota} of them below the quota of {self.quota}"
        )

    def select(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The rows of ``frame`` (with an ``item`` column) whose item is in this set."""
        return frame[frame["item"].isin(list(self.items))]


def _check_rule(items: str, quota: int | None) -> None:
    if items not in ITEM_SETS:
        raise ValueError(f"items: {items!r} is not one of {', '.join(ITEM_SETS)}")
    if items == "complete" and quota is None:
        raise ValueError("items: 'complete' needs the quota of answers that makes an item complete")


def choose_items(answers: pd.DataFrame, *, items: str = "complete", quota: int | None) -> ItemSet:
    """Return the item set of ``answers`` (one row per answer, or per answer and question, with columns ``item``
    and ``annotator``): under ``complete`` the items with at least ``quota`` distinct annotators — the rule of
    :func:`studio.results.aggregate.complete_answers`, which aggregation, Table 3 and Fig. 7 use — under ``all``
    every item. Raises ``ValueError`` for another ``items`` or for ``complete`` without a quota.
    """
    _check_rule(items, quota)
    import pandas as pd

    pairs = answers.loc[:, ["item", "annotator"]].drop_duplicates()
    answered = pd.unique(pairs["item"])
    complete = answered
    if quota is not None:
        from studio.results.aggregate import complete_answers  # workflows + pydantic: only where a quota is given

        complete = pd.unique(complete_answers(pairs, quota=quota)["item"])
    kept = complete if items == "complete" else answered
    return ItemSet(
        rule="complete" if items == "complete" else "all",
        quota=quota,
        items=tuple(kept),
        answered=len(answered),
        below_quota=len(answered) - len(complete),
    )


def choose_coded_items(
    *, labels: np.ndarray, pair_items: np.ndarray, items: str, quota: int | None
) -> tuple[ItemSet, np.ndarray]:
    """:func:`choose_items` for answers given as ``pair_items``, the codes into the sorted distinct item ``labels``
    of every distinct (item, annotator) pair, in numpy alone: the same set (same items, in label order) for the same
    pairs, and a mask over ``labels`` of the items in it. A votes file has no ``stopped`` column, so an item is
    complete by its count of annotators alone."""
    import numpy as np

    _check_rule(items, quota)
    per_item = np.bincount(pair_items, minlength=len(labels))
    answered = np.flatnonzero(per_item > 0)
    # complete_answers keeps every item where the quota is 1 or less
    complete = answered if quota is None or quota <= 1 else answered[per_item[answered] >= quota]
    kept = complete if items == "complete" else answered
    chosen = ItemSet(
        rule="complete" if items == "complete" else "all",
        quota=quota,
        items=tuple(labels[kept]),
        answered=len(answered),
        below_quota=len(answered) - len(complete),
    )
    mask = np.zeros(len(labels), dtype=bool)
    mask[kept] = True
    return chosen, mask
