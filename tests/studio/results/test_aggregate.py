"""Aggregation rules of the built-in workflows."""

from __future__ import annotations

import pandas as pd
import pytest

from studio.results.aggregate import (
    adjudicate,
    crowd_majority,
    expert_review_status,
    pairwise_majority,
    position_bias,
)


def votes(item: str, values: list[str | None]) -> list[dict[str, object]]:
    return [{"item": item, "annotator": f"p{i}", "value": value} for i, value in enumerate(values)]


def test_crowd_majority_ties_and_weak_majorities_go_to_experts() -> None:
    frame = pd.DataFrame(
        votes("clear", ["keep"] * 14 + ["revise"] * 4 + ["discard"] * 2)
        + votes("tied", ["keep"] * 8 + ["revise"] * 8 + ["discard"] * 4)
        + votes("weak", ["keep"] * 9 + ["revise"] * 7 + ["discard"] * 4)
        + votes("gaps", ["保留", "保留", None, "", "删除"])
    )
    table = crowd_majority(frame, min_share=0.5).set_index("item")
    assert table.loc["clear", "decision"] == "keep" and not table.loc["clear", "needs_expert_review"]
    assert table.loc["clear", "top_share"] == pytest.approx(0.7)
    assert pd.isna(table.loc["tied", "decision"]) and table.loc["tied", "needs_expert_review"]
    assert table.loc["weak", "decision"] == "keep" and table.loc["weak", "needs_expert_review"]
    assert table.loc["gaps", "votes"] == 3 and table.loc["gaps", "decision"] == "保留"
    stricter = crowd_majority(frame, min_share=0.75).set_index("item")
    assert stricter.loc["clear", "needs_expert_review"]


def review(item: str, marks: dict[str, list[object]]) -> list[dict[str, object]]:
    return [
        {"item": item, "reviewer": f"e{i}", "criterion": criterion, "passed": mark}
        for criterion, criterion_marks in marks.items()
        for i, mark in enumerate(criterion_marks)
    ]


def test_expert_review_status_rule() -> None:
    ok = {"accuracy": [True, True, False], "consistency": ["pass", "pass", "pass"], "domain_compliance": [1, 1, 0]}
    wrong = {"accuracy": [False, False, True], "consistency": [True] * 3, "domain_compliance": [True] * 3}
    fixable = {"accuracy": [True] * 3, "consistency": ["fail", "fail", "pass"], "domain_compliance": [True] * 3}
    split = {"accuracy": ["yes", "no"], "consistency": [True, True], "domain_compliance": [True, True]}
    partial = {"accuracy": [True, True, True], "consistency": [True, True, True]}
    frame = pd.DataFrame(
        review("ok", ok)
        + review("wrong", wrong)
        + review("fixable", fixable)
        + review("split", split)
        + review("partial", partial)
    )
    table = expert_review_status(frame).set_index("item")
    assert table.loc["ok", "status"] == "accepted"
    assert table.loc["wrong", "status"] == "rejected" and table.loc["wrong", "accuracy"] == "fail"
    assert table.loc["fixable", "status"] == "needs_revision" and table.loc["fixable", "consistency"] == "fail"
    assert table.loc["split", "accuracy"] == "tie" and table.loc["split", "status"] == "needs_revision"
    assert table.loc["partial", "domain_compliance"] == "missing" and table.loc["partial", "status"] == "needs_revision"


def test_expert_review_refuses_unknown_marks() -> None:
    with pytest.raises(ValueError, match="pass/fail"):
        expert_review_status(pd.DataFrame(review("x", {"accuracy": ["maybe"]})))
    with pytest.raises(ValueError, match="unknown criterion"):
        expert_review_status(pd.DataFrame(review("x", {"tone": [True]})))


def test_adjudication_median_and_j_final() -> None:
    rubric = pd.DataFrame(
        {
            "item": ["a", "a", "a", "b", "b", "c"],
            "expert": ["e1", "e2", "e3", "e1", "e2", "e1"],
            "score": [2, 4, 5, 3, 4, 1],
        }
    )
    table = adjudicate(rubric, {"a": 0.5, "b": 0.2, "c": None}).set_index("item")
    assert table.loc["a", "J_human"] == 4.0 and table.loc["a", "n_experts"] == 3
    assert table.loc["a", "J_final"] == pytest.approx(0.6 * 5 * 0.5 + 0.4 * 4.0)
    assert table.loc["b", "J_human"] == 3.5
    assert table.loc["b", "J_final"] == pytest.approx(0.6 * 5 * 0.2 + 0.4 * 3.5)
    assert pd.isna(table.loc["c", "J_final"]) and pd.isna(table.loc["c", "S"])
    with pytest.raises(ValueError, match=r"\[0, 5\]"):
        adjudicate(rubric.assign(score=[2, 4, 6, 3, 4, 1]), {})


def pair_votes(item: str, shown: list[tuple[str, str, str]]) -> list[dict[str, object]]:
    return [
        {"item": item, "annotator": f"p{i}", "system_a": a, "system_b": b, "choice": choice}
        for i, (a, b, choice) in enumerate(shown)
    ]


def test_pairwise_majority_is_position_balanced() -> None:
    # "biased": people mostly pick position A; x was shown first 3 times and second once.
    # Order x-first: x wins 3/3 -> share 1.0; order y-first: y (in A) wins -> share 0.0; balanced 0.5 -> tie.
    biased = pair_votes("biased", [("x", "y", "A")] * 3 + [("y", "x", "A")])
    clear = pair_votes("clear", [("m", "n", "A"), ("n", "m", "B"), ("n", "m", "tie"), ("m", "n", "A")])
    table = pairwise_majority(pd.DataFrame(biased + clear)).set_index("item")
    assert table.loc["biased", "winner"] == "tie" and table.loc["biased", "first_share"] == 0.5
    assert table.loc["biased", "votes"] == 4 and table.loc["biased", "orders_shown"] == 2
    # m-first: 1.0; n-first: (1 + 0.5) / 2 = 0.75; balanced 0.875
    assert table.loc["clear", "first_share"] == pytest.approx(0.875) and table.loc["clear", "winner"] == "m"


def test_position_bias_counts_wins_per_position() -> None:
    frame = pd.DataFrame(pair_votes("i", [("x", "y", "A")] * 3 + [("y", "x", "b"), ("x", "y", "Tie")]))
    bias = position_bias(frame).set_index("position")
    assert bias.loc["A", "votes"] == 3 and bias.loc["A", "rate"] == pytest.approx(0.6)
    assert bias.loc["B", "rate"] == pytest.approx(0.2) and bias.loc["tie", "votes"] == 1
    with pytest.raises(ValueError, match="A, B or tie"):
        pairwise_majority(pd.DataFrame(pair_votes("i", [("x", "y", "C")])))
