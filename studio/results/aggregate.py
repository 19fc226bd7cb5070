"""Aggregation rules of the built-in workflows (ARCHITECTURE.md "Human evaluation"), as pure functions on DataFrames.

Every function takes long-form answers (one row per person and item, ``item`` being any hashable key the caller
chooses, e.g. a scenario id or a ``(scenario_id, model, variant)`` tuple) and returns one row per item.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from pipeline.scoring.combine import combine_j
from studio.workflows import CriteriaRule, MajorityRule

EXPERT_CRITERIA: tuple[str, ...] = ("accuracy", "consistency", "domain_compliance")
_PASS_WORDS: dict[str, bool] = {
    **dict.fromkeys(("pass", "yes", "true", "1"), True),
    **dict.fromkeys(("fail", "no", "false", "0"), False),
}


def _require(frame: pd.DataFrame, columns: Sequence[str]) -> None:
    absent = [column for column in columns if column not in frame.columns]
    if absent:
        raise ValueError(f"missing column(s): {', '.join(absent)}")


def complete_answers(answers: pd.DataFrame, *, quota: int) -> pd.DataFrame:
    """The answers of the items that reached ``quota`` answers (the campaign's ``complete_at``), and of the items
    stopped early whatever their count.

    The one rule for which items a campaign's results count (aggregation, Table 3, Fig. 7): an item still short of
    its people is not decided yet — unless the workflow's ``stopping:`` rule stopped it (a true ``stopped`` column,
    as ``studio.results.store_views.campaign_answers`` gives it: its decision can no longer change, or almost surely
    will not, and it is decided on the votes it has). ``answers`` has one row per answer with an ``item`` column.
    """
    if quota <= 1 or answers.empty:
        return answers
    counts = answers.groupby("item")["item"].transform("size")
    keep = counts >= quota
    if "stopped" in answers.columns:
        keep |= answers["stopped"].eq(True)
    return answers[keep]


def completion_quota(rule: object, *, people_per_item: int, min_people_per_item: int) -> int:
    """How many answers make an item complete for :func:`complete_answers`: the campaign's ``people_per_item`` for a
    vote by majority (crowd vote) or per criterion (expert review), where every planned voice counts; the schema's
    ``min_people_per_item`` for the other rules (median, mean, pairwise). ``rule`` is the schema's aggregation."""
    return people_per_item if isinstance(rule, MajorityRule | CriteriaRule) else min_people_per_item


def crowd_majority(votes: pd.DataFrame, *, min_share: float = 0.5) -> pd.DataFrame:
    """Return the crowd's decision per item: the most common ``value`` among its votes.

    An item ``needs_expert_review`` when two or more values tie for the most votes (its ``decision`` is then
    missing: None/NaN) or when the winning value has less than ``min_share`` of the item's votes (the decision
    is kept, for the expert to confirm). Missing values are not votes. Columns: item, decision, votes, top_share,
    needs_expert_review.
    """
    _require(votes, ("item", "value"))
    cast = votes.dropna(subset=["value"])
    cast = cast[cast["value"].astype(str).str.strip() != ""]
    tally = cast.groupby(["item", "value"], sort=True).size().rename("n").reset_index()
    tally["total"] = tally.groupby("item")["n"].transform("sum")
    tally["top"] = tally.groupby("item")["n"].transform("max")
    leaders = tally[tally["n"] == tally["top"]]
    per_item = leaders.groupby("item", sort=True).agg(
        decision=("value", "first"), n_leaders=("value", "size"), votes=("total", "first"), top=("top", "first")
    )
    per_item["top_share"] = per_item["top"] / per_item["votes"]
    tied = per_item["n_leaders"] > 1
    per_item["decision"] = per_item["decision"].where(~tied, None)
    per_item["needs_expert_review"] = tied | (per_item["top_share"] < min_share)
    return per_item.reset_index()[["item", "decision", "votes", "top_share", "needs_expert_review"]]


def parse_yes_no(value: Any) -> bool:
    """Return a yes/no answer as a bool: accepts bools and pass/fail, yes/no, true/false, 1/0 (any case).

    Raises ``ValueError`` for anything else, so a stray "maybe" (or ``bool("no")`` being True) never passes.
    """
    if isinstance(value, bool | np.bool_):
        return bool(value)
    word = str(value).strip().lower()
    if word not in _PASS_WORDS:
        raise ValueError(f"a yes/no answer must be pass/fail, yes/no or true/false; got {value!r}")
    return _PASS_WORDS[word]


def _entry_status(verdicts: Mapping[str, str]) -> str:
    if verdicts.get("accuracy") == "fail":
        return "rejected"
    if all(verdict == "pass" for verdict in verdicts.values()):
        return "accepted"
    return "needs_revision"


def expert_review_status(reviews: pd.DataFrame, *, criteria: Sequence[str] = EXPERT_CRITERIA) -> pd.DataFrame:
    """Return each reviewed item's verdict per criterion and its entry status.

    ``reviews`` has columns item, reviewer, criterion, passed (bool or pass/fail, yes/no, true/false). A
    criterion's verdict is ``pass`` when more reviewers pass than fail it, ``fail`` when more fail, ``tie``
    when equal, ``missing`` when nobody judged it. Status rule: a majority ``fail`` on **accuracy** rejects the
    entry (a wrong reference cannot be kept); all criteria ``pass`` accepts it; anything else — another
    criterion failed, a tie, a missing criterion — means ``needs_revision`` (a curator edits or decides).
    Columns: item, one column per criterion, status.
    """
    _require(reviews, ("item", "reviewer", "criterion", "passed"))
    unknown = sorted(set(reviews["criterion"]) - set(criteria))
    if unknown:
        raise ValueError(f"unknown criterion: {', '.join(map(str, unknown))}")
    marks = reviews.assign(vote=reviews["passed"].map(parse_yes_no).map({True: 1, False: -1}))
    balance = marks.pivot_table(index="item", columns="criterion", values="vote", aggfunc="sum")
    balance = balance.reindex(columns=list(criteria))
    verdicts = balance.apply(
        lambda column: column.map(
            lambda net: "missing" if pd.isna(net) else "pass" if net > 0 else "fail" if net < 0 else "tie"
        )
    )
    verdicts["status"] = [_entry_status(row) for row in verdicts.to_dict("records")]
    verdicts.columns.name = None
    table: pd.DataFrame = verdicts.reset_index()
    return table


def adjudicate(rubric: pd.DataFrame, s_by_item: Mapping[Any, float | None]) -> pd.DataFrame:
    """Return J_human (median of the experts' rubric scores, 0–5) and J_final = combine_j(S, J_human) per item.

    ``rubric`` has columns item, expert, score; ``s_by_item`` maps each item to its S (None where S is
    undefined, which leaves J_final missing: NaN). Columns: item, n_experts, J_human, S, J_final.
    """
    _require(rubric, ("item", "expert", "score"))
    scores = pd.to_numeric(rubric["score"], errors="raise")
    if ((scores < 0) | (scores > 5)).any():
        raise ValueError("a rubric score must lie in [0, 5]")
    per_item = (
        rubric.assign(score=scores)
        .dropna(subset=["score"])
        .groupby("item", sort=True)["score"]
        .agg(n_experts="size", J_human="median")
        .reset_index()
    )
    s_values = [s_by_item.get(item) for item in per_item["item"]]
    per_item["S"] = pd.Series(s_values, index=per_item.index, dtype=float)
    per_item["J_final"] = pd.Series(
        [combine_j(s, float(j_human)) for s, j_human in zip(s_values, per_item["J_human"], strict=True)],
        index=per_item.index,
        dtype=float,
    )
    return per_item


def _preferred(votes: pd.DataFrame) -> pd.Series:
    choice = votes["choice"].astype(str).str.strip().str.upper()
    bad = ~choice.isin(["A", "B", "TIE"])
    if bad.any():
        raise ValueError(f"a pairwise choice must be A, B or tie; got {votes.loc[bad, 'choice'].iloc[0]!r}")
    # the system in the chosen position; missing on a tie
    return votes["system_a"].where(choice == "A", votes["system_b"].where(choice == "B"))


def pairwise_majority(votes: pd.DataFrame) -> pd.DataFrame:
    """Return the position-balanced winner of each pairwise item.

    ``votes`` has columns item, annotator, choice (A / B / tie: the *position* chosen) and system_a, system_b (what
    that person saw in each position). Per item the two systems are named ``first``/``second`` in sorted order.
    Within each presentation order, ``first``'s share is (wins + ½ ties) / votes; the balanced share is the mean
    of the shares of the orders shown, so a position bias cannot tip an item shown more often one way round.
    ``winner`` is ``first`` above ½, ``second`` below, "tie" at ½. Columns: item, first, second, votes,
    orders_shown, first_share, winner.
    """
    _require(votes, ("item", "annotator", "choice", "system_a", "system_b"))
    frame = votes.assign(preferred=_preferred(votes))
    frame["first"] = frame[["system_a", "system_b"]].min(axis=1)
    frame["second"] = frame[["system_a", "system_b"]].max(axis=1)
    frame["order"] = np.where(frame["system_a"] == frame["first"], "first_in_A", "first_in_B")
    frame["points"] = np.where(frame["preferred"].isna(), 0.5, (frame["preferred"] == frame["first"]).astype(float))
    by_order = frame.groupby(["item", "order"], sort=True).agg(share=("points", "mean"), n=("points", "size"))
    per_item = by_order.groupby("item", sort=True).agg(
        first_share=("share", "mean"), votes=("n", "sum"), orders_shown=("share", "size")
    )
    names = frame.groupby("item", sort=True)[["first", "second"]].first()
    per_item = names.join(per_item).reset_index()
    per_item["winner"] = np.where(
        per_item["first_share"] > 0.5,
        per_item["first"],
        np.where(per_item["first_share"] < 0.5, per_item["second"], "tie"),
    )
    return per_item[["item", "first", "second", "votes", "orders_shown", "first_share", "winner"]]


def position_bias(votes: pd.DataFrame) -> pd.DataFrame:
    """Return how often each position wins: rows A, B, tie with columns position, votes, rate (share of all votes).

    With randomised order and no bias, A and B win about equally often; a gap shows a position preference.
    """
    _require(votes, ("choice",))
    choice = votes["choice"].astype(str).str.strip().str.upper().replace({"TIE": "tie"})
    counts = choice.value_counts().reindex(["A", "B", "tie"], fill_value=0)
    total = int(counts.sum())
    return pd.DataFrame(
        {
            "position": counts.index,
            "votes": counts.to_numpy(),
            "rate": counts.to_numpy() / total if total else np.nan,
        }
    )
