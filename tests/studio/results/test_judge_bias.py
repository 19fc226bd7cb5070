"""The judge-bias card (studio.results.judge_bias): the ECE by hand, κ equal to scikit-learn's and statsmodels',
the length-bias sign on a planted case, the flip rate on records, and the thresholds that make a measure material."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from pipeline.curation.records import PairJudgment
from pipeline.scoring.combine import combine_j
from studio.results.judge_bias import (
    NO_PAIRS,
    JudgeBiasCard,
    _kappa_rows,
    expected_calibration_error,
    judge_bias_card,
)


def pair(ident: str, ab: str | None, ba: str | None, first: float | None = 0.5) -> PairJudgment:
    consistent = ab == ba and ab is not None
    return PairJudgment(
        id=ident,
        winner=ab if consistent else None,
        consistent=consistent,
        needs_human=not consistent,
        uncertainty=0.0,
        order_verdicts={"ab": ab, "ba": ba},
        votes={"a": 0, "b": 0, "tie": 0},
        first_shown_rate=first,
        samples=[],
        judge_model="judge",
        prompt_version="v1",
    )


def by_measure(card: JudgeBiasCard) -> dict[str, dict[str, Any]]:
    return {str(row["measure"]): {str(k): v for k, v in row.items()} for row in card.table().to_dict("records")}


def planted(n: int = 120, seed: int = 3) -> pd.DataFrame:
    """The judge's score rises with length; the humans' does not."""
    rng = np.random.default_rng(seed)
    length = rng.integers(200, 4000, n)
    human = rng.uniform(0, 5, n)
    judge = np.clip(length / 800 + rng.normal(0, 0.3, n), 0, 5)
    return pd.DataFrame({"J_judge": judge, "J_human": human, "S": rng.uniform(0, 1, n), "length": length})


def test_ece_equals_the_hand_computed_value() -> None:
    judge = np.array([0.5, 0.9, 2.5, 4.2, 5.0])
    human = np.array([1.5, 1.9, 2.0, 3.0, 4.0])
    # bins of width 1: [0,1) holds 0.5, 0.9 (gaps -1, -1); [2,3) holds 2.5 (+0.5); [4,5] holds 4.2, 5.0 (+1.2, +1)
    assert expected_calibration_error(judge, human, bins=5) == pytest.approx((2.0 + 0.5 + 2.2) / 5)
    # one bin: |mean gap| only
    assert expected_calibration_error(judge, human, bins=1) == pytest.approx(abs((judge - human).mean()))
    frame = pd.DataFrame({"J_judge": judge, "J_human": human, "S": 0.5, "length": [10, 20, 30, 40, 50]})
    card = by_measure(judge_bias_card(frame, resamples=200))
    assert card["ece"]["value"] == pytest.approx(0.94) and card["ece"]["n"] == 5
    assert card["mean_bias"]["value"] == pytest.approx((judge - human).mean())


def test_kappa_equals_sklearn_and_statsmodels_with_the_2x2_counts() -> None:
    from statsmodels.stats.inter_rater import cohens_kappa

    frame = planted()
    card = judge_bias_card(frame, resamples=200)
    below_j = np.array([(combine_j(s, j) or 0.0) < 3.5 for s, j in zip(frame["S"], frame["J_judge"], strict=True)])
    below_h = np.array([(combine_j(s, j) or 0.0) < 3.5 for s, j in zip(frame["S"], frame["J_human"], strict=True)])
    row = by_measure(card)["decision_kappa"]
    assert row["value"] == pytest.approx(cohen_kappa_score(below_j, below_h))
    counts = card.decision_counts
    table = [[counts["both_below"], counts["judge_only"]], [counts["human_only"], counts["neither"]]]
    assert row["value"] == pytest.approx(cohens_kappa(np.array(table)).kappa)
    assert counts["both_below"] == int((below_j & below_h).sum()) and sum(counts.values()) == len(frame)
    assert row["low"] <= row["value"] <= row["high"]
    # the vectorised replicate κ is scikit-learn's
    assert _kappa_rows(below_j[None, :], below_h[None, :])[0] == pytest.approx(cohen_kappa_score(below_j, below_h))


def test_length_bias_is_positive_where_the_judge_prefers_long_answers() -> None:
    frame = planted()
    rows = by_measure(judge_bias_card(frame))
    rho_j = stats.spearmanr(frame["J_judge"], frame["length"]).statistic
    rho_h = stats.spearmanr(frame["J_human"], frame["length"]).statistic
    assert rows["length_rho_judge"]["value"] == pytest.approx(rho_j) and rho_j > 0.8
    assert rows["length_bias"]["value"] == pytest.approx(rho_j - rho_h)
    assert rows["length_bias"]["low"] > 0.1 and rows["length_bias"]["material"]
    assert "longer" in rows["length_bias"]["sentence"]
    # the humans preferring length instead flips the sign
    swapped = frame.rename(columns={"J_judge": "J_human", "J_human": "J_judge"})
    other = by_measure(judge_bias_card(swapped))["length_bias"]
    assert other["value"] == pytest.approx(rho_h - rho_j) and other["high"] < 0 and "shorter" in other["sentence"]


def test_the_card_is_seeded() -> None:
    frame = planted()
    assert judge_bias_card(frame, seed=7).table().equals(judge_bias_card(frame, seed=7).table())


def test_flip_rate_on_records_with_wilson_interval() -> None:
    pairs = [pair(f"p{i}", "a", "a", 0.5) for i in range(7)]
    pairs += [pair("f1", "a", "b", 1.0), pair("f2", "b", "tie", 1.0), pair("none", None, "a", None)]
    rows = by_measure(judge_bias_card(planted(), pairs=pairs))
    flip = rows["flip_rate"]
    wilson = stats.binomtest(2, 9).proportion_ci(method="wilson")
    assert flip["value"] == pytest.approx(2 / 9) and flip["n"] == 9  # the pair missing a verdict is left out
    assert (flip["low"], flip["high"]) == pytest.approx((wilson.low, wilson.high))
    assert flip["material"] and "10%" in flip["sentence"]
    first = rows["first_shown"]
    assert first["value"] == pytest.approx((7 * 0.5 + 2) / 9) and first["n"] == 9


def test_no_pairs_file_says_how_to_make_one() -> None:
    rows = by_measure(judge_bias_card(planted()))
    assert rows["flip_rate"]["sentence"] == NO_PAIRS and pd.isna(rows["flip_rate"]["value"])
    assert "h2h judge-card --pairs FILE" in rows["first_shown"]["sentence"]


def test_thresholds_decide_what_is_material() -> None:
    rng = np.random.default_rng(0)
    n = 200
    human = rng.uniform(0, 5, n)
    honest = pd.DataFrame(
        {
            "J_judge": np.clip(human + rng.normal(0, 0.05, n), 0, 5),
            "J_human": human,
            "S": 0.6,
            "length": rng.integers(1, 999, n),
        }
    )
    card = judge_bias_card(honest, pairs=[pair(f"p{i}", "a", "a") for i in range(20)])
    assert not any(row["material"] for row in card.table().to_dict("records"))
    assert card.summary.startswith("No judge bias is material")
    harsh = honest.assign(J_judge=np.clip(human - 1.5, 0, 5))  # 1.5 points below: ECE and bias material
    rows = by_measure(judge_bias_card(harsh))
    assert rows["ece"]["material"] and rows["ece"]["value"] > 0.5 and "0.5 points" in rows["ece"]["sentence"]
    assert rows["mean_bias"]["material"] and rows["mean_bias"]["value"] < -1
    assert rows["decision_kappa"]["value"] < 0.6 and rows["decision_kappa"]["material"]
    assert "ece" in judge_bias_card(harsh).summary


def test_rows_missing_a_value_are_left_out_and_bad_input_refused() -> None:
    frame = planted(10).astype({"S": float})
    frame.loc[0, "S"] = np.nan
    assert by_measure(judge_bias_card(frame))["ece"]["n"] == 9
    with pytest.raises(ValueError, match="length"):
        judge_bias_card(frame.drop(columns="length"))
    with pytest.raises(ValueError, match="bins"):
        judge_bias_card(frame, bins=0)
