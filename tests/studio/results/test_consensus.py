"""Crowd decisions (studio.results.consensus) on simulated crowds whose truth is known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from studio.results.consensus import (
    TIE,
    compare_methods,
    decide,
    decide_with_raters,
    mace,
    majority,
    method_name,
    rater_reliability,
)

LABELS = np.array(["keep", "revise", "discard"])


def simulated_crowd(
    *, seed: int, items: int = 600, per_item: int = 10
) -> tuple[pd.DataFrame, pd.Series, dict[str, str]]:
    """Votes of 15 careful raters (right 85% of the time), 15 spammers (uniform random) and 10 raters who always give
    the same answer; rater names are shuffled so no order of names matches the order they first appear in.

    Returns the votes (item, annotator, value), the true label per item and each rater's kind.
    """
    rng = np.random.default_rng(seed)
    kinds = ["careful"] * 15 + ["spammer"] * 15 + ["always"] * 10
    names = [f"r{code:02d}" for code in rng.permutation(len(kinds))]
    truth = rng.integers(0, 3, items)
    item_of = np.repeat(np.arange(items), per_item)
    rater_of = np.concatenate([rng.choice(len(kinds), per_item, replace=False) for _ in range(items)])
    careful = np.array([kind == "careful" for kind in kinds])[rater_of]
    values = np.where(careful & (rng.random(len(item_of)) < 0.85), truth[item_of], rng.integers(0, 3, len(item_of)))
    always = np.array([kind == "always" for kind in kinds])[rater_of]
    values = np.where(always, rater_of % 3, values)
    votes = pd.DataFrame(
        {"item": [f"s{i:04d}" for i in item_of], "annotator": [names[r] for r in rater_of], "value": LABELS[values]}
    )
    return (
        votes,
        pd.Series(LABELS[truth], index=[f"s{i:04d}" for i in range(items)]),
        dict(zip(names, kinds, strict=True)),
    )


def accuracy(decided: pd.DataFrame, truth: pd.Series) -> float:
    return float((decided.set_index("item")["decision"].reindex(truth.index) == truth).mean())


@pytest.mark.parametrize("seed", [1, 2])
def test_reliability_models_beat_the_majority_on_a_crowd_with_spammers(seed: int) -> None:
    votes, truth, _ = simulated_crowd(seed=seed)
    by_majority = accuracy(majority(votes), truth)
    for method in ("dawid_skene", "mace"):
        assert accuracy(decide(votes, method=method), truth) >= by_majority + 0.02, method


def test_reliability_ranks_careful_raters_above_spammers_and_constant_raters() -> None:
    votes, _, kinds = simulated_crowd(seed=3)
    table = rater_reliability(votes, methods=["majority", "dawid_skene", "mace"]).set_index("annotator")
    careful = [name for name, kind in kinds.items() if kind == "careful"]
    others = [name for name, kind in kinds.items() if kind != "careful"]
    for column in ("dawid_skene_reliability", "mace_competence"):
        assert table.loc[careful, column].min() > table.loc[others, column].max(), column
    assert table["votes"].sum() == len(votes)


def test_mace_names_each_raters_competence_by_the_rater() -> None:
    """Competence is read back by rater name (MACE numbers raters by first appearance), so a spammer whose vote
    comes first in the file is still found out."""
    votes, truth, kinds = simulated_crowd(seed=4)
    spammer = next(name for name, kind in kinds.items() if kind == "spammer")
    first = votes[votes["annotator"] == spammer].head(1)
    reordered = pd.concat([first, votes.drop(first.index)], ignore_index=True)
    decided, raters = mace(reordered)
    assert accuracy(decided, truth) >= accuracy(majority(votes), truth) + 0.02
    competence = raters.set_index("annotator")["reliability"]
    assert competence[spammer] < competence[[n for n, k in kinds.items() if k == "careful"]].min()


def test_a_majority_tie_is_written_tie_never_broken() -> None:
    votes = pd.DataFrame(
        {
            "item": ["a", "a", "a", "a", "b", "b", "b"],
            "annotator": ["p", "q", "r", "s", "p", "q", "r"],
            "value": ["keep", "discard", "keep", "discard", "keep", "keep", "discard"],
        }
    )
    decided = majority(votes).set_index("item")
    assert decided.loc["a", "decision"] == TIE and decided.loc["a", "confidence"] == 0.5
    assert decided.loc["b", "decision"] == "keep" and decided.loc["b", "confidence"] == pytest.approx(2 / 3)
    assert decided["votes"].to_dict() == {"a": 4, "b": 3}
    table = compare_methods(votes, methods=["majority", "dawid_skene"]).set_index("item")
    assert table.loc["a", "models_disagree"]  # a model always names a label; a tie disagrees with it


def test_an_empty_value_is_no_vote() -> None:
    votes = pd.DataFrame({"item": ["a", "a", "a"], "annotator": ["p", "q", "r"], "value": ["keep", "", "discard"]})
    decided = majority(votes).set_index("item")
    assert decided.loc["a", "votes"] == 2 and decided.loc["a", "decision"] == TIE


def test_decide_with_raters_under_majority_gives_agreement_with_the_majority() -> None:
    votes = pd.DataFrame(
        {
            "item": ["a", "a", "a", "b", "b"],
            "annotator": ["p", "q", "r", "p", "q"],
            "value": ["keep", "keep", "discard", "keep", "discard"],
        }
    )
    decided, raters = decide_with_raters(votes, method="majority")
    assert list(decided["decision"]) == ["keep", TIE]
    shares = raters.set_index("annotator")["reliability"]
    assert shares["p"] == 1.0 and shares["q"] == 1.0 and shares["r"] == 0.0  # item b (a tie) counts for no one


def test_decide_with_raters_fits_once_and_matches_decide() -> None:
    votes, _, _ = simulated_crowd(seed=5, items=200)
    for method in ("dawid_skene", "mace"):
        decided, raters = decide_with_raters(votes, method=method)
        pd.testing.assert_frame_equal(decided, decide(votes, method=method))
        assert set(raters["annotator"]) == set(votes["annotator"])


@pytest.mark.parametrize(
    ("text", "method"), [("dawid-skene", "dawid_skene"), ("MACE", "mace"), ("majority", "majority")]
)
def test_method_names(text: str, method: str) -> None:
    assert method_name(text) == method


def test_an_unknown_method_names_the_choices() -> None:
    with pytest.raises(ValueError, match="majority, dawid-skene, mace"):
        method_name("glad")
