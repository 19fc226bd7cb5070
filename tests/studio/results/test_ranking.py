"""studio.results.ranking: arena-rank's Bradley–Terry, win rates, position bias and fragility, checked against the
libraries called directly and against hand-counted values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from arena_rank.models.bradley_terry import BradleyTerry
from arena_rank.utils.data_utils import PairDataset
from scipy.stats import binomtest

from studio.results.ranking import (
    Ranking,
    battles,
    bradley_terry,
    system_labels,
    win_rate_rows,
)
from studio.results.ranking_fragility import _swapped_arena, arena_ratings, removal_order, scipy_ratings, score_matrix


def _votes(seed: int = 3, count: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    strength = {"alpha": 0.9, "beta": 0.3, "gamma": -0.2, "delta": -0.6}
    names = list(strength)
    rows = []
    for _ in range(count):
        a, b = rng.choice(names, 2, replace=False)
        p = 1 / (1 + np.exp(-(strength[a] - strength[b] + 0.3)))  # A is favoured: a position bias
        choice = "tie" if rng.random() < 0.1 else ("A" if rng.random() < p else "B")
        rows.append({"model_a": a, "variant_a": "base", "model_b": b, "variant_b": "base", "value_shown": choice})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def votes() -> pd.DataFrame:
    return _votes()


@pytest.fixture(scope="module")
def ranking(votes: pd.DataFrame) -> Ranking:
    return bradley_terry(votes)


def test_ratings_and_sandwich_intervals_equal_arena_rank_called_directly(votes: pd.DataFrame, ranking: Ranking) -> None:
    frame = pd.DataFrame(
        {
            "model_a": votes["model_a"],
            "model_b": votes["model_b"],
            "winner": votes["value_shown"].map({"A": "model_a", "B": "model_b", "tie": "tie"}),
        }
    )
    dataset = PairDataset.from_pandas(frame, competitor_cols=["model_a", "model_b"], outcome_col="winner")
    direct = BradleyTerry(n_competitors=dataset.n_competitors).compute_ratings_and_cis(dataset, 0.05)
    expected = pd.DataFrame(
        {
            "rating": np.asarray(direct["ratings"]),
            "lower": np.asarray(direct["rating_lower"]),
            "upper": np.asarray(direct["rating_upper"]),
        },  # fmt: skip
        index=direct["competitors"],
    )
    got = ranking.table.set_index("competitor")
    for column in ("rating", "lower", "upper"):
        assert np.max(np.abs(got[column] - expected.loc[got.index, column])) < 1e-6
    assert ranking.table["competitor"].tolist() == ["alpha", "beta", "gamma", "delta"]
    assert ranking.table["rank"].tolist() == [1, 2, 3, 4]
    assert (ranking.table["lower"] < ranking.table["rating"]).all()


def test_counts_and_win_rates_are_hand_counted(votes: pd.DataFrame, ranking: Ranking) -> None:
    row = ranking.table.set_index("competitor").loc["alpha"]
    took_part = (votes["model_a"] == "alpha") | (votes["model_b"] == "alpha")
    won = ((votes["model_a"] == "alpha") & (votes["value_shown"] == "A")) | (
        (votes["model_b"] == "alpha") & (votes["value_shown"] == "B")
    )
    assert row["votes"] == took_part.sum() and row["wins"] == won.sum()
    assert row["ties"] == (took_part & (votes["value_shown"] == "tie")).sum()
    assert row["wins"] + row["losses"] + row["ties"] == row["votes"]
    met = ((votes["model_a"] == "alpha") & (votes["model_b"] == "beta")) | (
        (votes["model_a"] == "beta") & (votes["model_b"] == "alpha")
    )
    alpha_won = met & won
    ties = met & (votes["value_shown"] == "tie")
    rates = ranking.win_rates.to_numpy(dtype=float)  # rows and columns in rank order: alpha, beta, gamma, delta
    assert rates[0, 1] == pytest.approx((alpha_won.sum() + ties.sum() / 2) / met.sum())
    assert rates[0, 1] + rates[1, 0] == pytest.approx(1.0)
    assert ranking.meetings.loc["alpha", "beta"] == met.sum()


def test_a_tie_counts_half_a_win() -> None:
    # x beats y once and they tie twice: x's score is 2 of 3, so P(x beats y) = 2/3 and the gap is log(2) in
    # natural units, times 400 / ln 10 on the reported scale
    rows = [("x", "y", "A"), ("x", "y", "tie"), ("y", "x", "tie")]
    votes = pd.DataFrame(
        [{"model_a": a, "variant_a": "", "model_b": b, "variant_b": "", "value_shown": v} for a, b, v in rows]
    )
    table = bradley_terry(votes, fragility=False).table.set_index("competitor")
    rating = table["rating"].astype(float).to_dict()
    assert rating["x"] - rating["y"] == pytest.approx(400 / np.log(10) * np.log(2), abs=1e-3)
    assert table.loc["x", "ties"] == 2 and table.loc["x", "wins"] == 1 and table.loc["y", "losses"] == 1


def test_position_bias_counts_and_wilson_interval_equal_scipy(votes: pd.DataFrame, ranking: Ranking) -> None:
    first = int((votes["value_shown"] == "A").sum())
    decided = int(votes["value_shown"].isin(["A", "B"]).sum())
    interval = binomtest(first, decided).proportion_ci(method="wilson")
    bias = ranking.position_bias
    assert (bias["first_wins"], bias["decided"]) == (first, decided)
    assert bias["lower"] == pytest.approx(interval.low) and bias["upper"] == pytest.approx(interval.high)
    assert bias["material"] is bool(interval.low > 0.5 or interval.high < 0.5)
    assert f"won {first} of {decided} decided votes" in str(bias["sentence"])


def test_removing_the_reported_votes_really_swaps_the_pair(votes: pd.DataFrame, ranking: Ranking) -> None:
    frame = battles(votes)
    row = ranking.fragility.iloc[0]
    assert row["method"] == "greedy upper bound" and row["votes"] == len(votes)
    count = int(row["votes_to_swap"])
    order = removal_order(frame, upper=row["upper"], lower=row["lower"])
    kept = frame.drop(index=list(order[:count])).reset_index(drop=True)
    refit = arena_ratings(kept).set_index("competitor")["rating"]
    assert refit[row["lower"]] >= refit[row["upper"]]
    assert not _swapped_arena(frame, order[: count - 1], upper=row["upper"], lower=row["lower"]) or count == 1


def test_fragility_hand_built_case() -> None:
    # p beats q 3 times, q beats p once: p on top; removing two of p's wins leaves 1–1, a tie in rating (swapped:
    # the lower at or above the upper), removing one leaves 2–1 (not yet)
    rows = [("p", "q", "A")] * 3 + [("q", "p", "A")]
    votes = pd.DataFrame(
        [{"model_a": a, "variant_a": "", "model_b": b, "variant_b": "", "value_shown": v} for a, b, v in rows]
    )
    result = bradley_terry(votes)
    assert result.fragility["votes_to_swap"].tolist() == [2]
    assert result.fragility["upper"].tolist() == ["p"]


def test_system_names_follow_what_varies() -> None:
    same_model = pd.DataFrame([{"model_a": "m", "variant_a": "with_sap", "model_b": "m", "variant_b": "without_sap"}])
    assert system_labels(same_model)[0].tolist() == ["with_sap"]
    mixed = pd.DataFrame([{"model_a": "m", "variant_a": "with_sap", "model_b": "n", "variant_b": "without_sap"}])
    assert system_labels(mixed)[1].tolist() == ["n / without_sap"]


def test_scipy_search_fit_matches_arena_rank_gaps(votes: pd.DataFrame) -> None:
    frame = battles(votes)
    names = sorted(set(frame["model_a"]))
    scores, _ = score_matrix(frame, names)
    natural = scipy_ratings(scores)
    arena = arena_ratings(frame).set_index("competitor").loc[names, "rating"].to_numpy()
    gaps = (natural - natural.mean()) * 400 / np.log(10) - (arena - arena.mean())
    assert np.max(np.abs(gaps)) < 0.05


def test_win_rate_rows_show_counts_and_bad_choice_is_refused(ranking: Ranking) -> None:
    rows = win_rate_rows(ranking)
    assert rows.loc[0, "alpha"] == "—"
    assert str(rows.loc[0, "beta"]).endswith(f"({int(ranking.meetings.to_numpy()[0, 1])})")
    bad = pd.DataFrame([{"model_a": "m", "variant_a": "", "model_b": "n", "variant_b": "", "value_shown": "C"}])
    with pytest.raises(ValueError, match="value_shown"):
        bradley_terry(bad)
