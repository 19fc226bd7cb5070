"""Agreement statistics of one question from long-form answers."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss_kappa

from studio.results.agreement import (
    agreement_by_question,
    agreement_report,
    annotator_agreement,
    code_ratings,
    fleiss_kappa,
    gold_accuracy,
    percent_agreement,
)
from tests.studio.results.worked_examples import KRIPPENDORFF_2011

#: Fleiss (1971) as in Wikipedia's "Fleiss' kappa" article: 10 subjects, 14 raters, 5 categories.
FLEISS_1971 = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)


def long_form(matrix: np.ndarray, labels: dict[float, str] | None = None) -> pd.DataFrame:
    """Rows (item, annotator, value) of a raters × items matrix; NaN stays as a missing value row."""
    rows = []
    for rater, values in enumerate(matrix):
        for item, value in enumerate(values):
            shown = labels.get(value, value) if labels and not np.isnan(value) else value
            rows.append({"item": f"unit-{item:02d}", "annotator": f"obs-{rater}", "value": shown})
    return pd.DataFrame(rows)


def crowd(rng: np.random.Generator, items: int, raters: int, careless: int = 0) -> pd.DataFrame:
    """Raters who report each item's true label (1..3) with probability 0.85; ``careless`` ones answer at random."""
    truth = rng.integers(1, 4, size=items)
    matrix = np.where(rng.random((raters, items)) < 0.85, truth, rng.integers(1, 4, size=(raters, items)))
    matrix[:careless] = rng.integers(1, 4, size=(careless, items))
    return long_form(matrix.astype(float))


def test_fleiss_1971_example_matches_published_and_statsmodels() -> None:
    kappa, note = fleiss_kappa(FLEISS_1971)
    assert note is None
    assert round(kappa, 3) == 0.210
    assert kappa == pytest.approx(statsmodels_fleiss_kappa(FLEISS_1971), abs=1e-12)


def test_fleiss_equals_statsmodels_on_random_tables() -> None:
    rng = np.random.default_rng(42)
    for _ in range(10):
        raters = int(rng.integers(2, 25))
        table = np.stack([rng.multinomial(raters, rng.dirichlet(np.ones(4))) for _ in range(50)])
        kappa, _ = fleiss_kappa(table)
        assert kappa == pytest.approx(statsmodels_fleiss_kappa(table), abs=1e-12)


def test_fleiss_with_unequal_raters_and_where_it_does_not_apply() -> None:
    # n = 3 and 2: P_1 = (4 + 1 - 3) / 6 = 1/3, P_2 = (1 + 1 - 2) / 2 = 0, P = 1/6; p = (3/5, 2/5), Pe = 13/25;
    # kappa = (1/6 - 13/25) / (12/25) = -53/72
    kappa, note = fleiss_kappa(np.array([[2, 1], [1, 1]]))
    assert kappa == pytest.approx(-53 / 72) and note is None
    assert fleiss_kappa(np.array([[3, 0], [3, 0]])) == (None, "every rating is in one category")
    assert fleiss_kappa(np.array([[1, 0], [0, 1]])) == (None, "no item has two or more raters")


def test_percent_agreement_is_mean_share_of_agreeing_pairs() -> None:
    # item 1: 3 of 3 agree -> 1; item 2: values a,a,b -> 1 agreeing pair of 3 -> 1/3; item 3 has one value: skipped
    counts = np.array([[3, 0], [2, 1], [1, 0]])
    assert percent_agreement(counts) == pytest.approx((1 + 1 / 3) / 2)
    assert percent_agreement(np.array([[1, 0]])) is None


def test_report_on_krippendorff_example_with_labels() -> None:
    labels = {1.0: "很低", 2.0: "低", 3.0: "中", 4.0: "高", 5.0: "很高"}
    report = agreement_report(long_form(KRIPPENDORFF_2011, labels), level="nominal", resamples=200, seed=1)
    assert round(report.alpha, 3) == 0.743
    assert report.alpha_ci is not None and report.alpha_ci[0] < report.alpha <= report.alpha_ci[1]
    # 3 or 4 values per unit: kappa over the 11 pairable units; the unit with one value is left out, and said so
    assert report.fleiss_kappa is not None
    assert report.fleiss_kappa_note == "1 item(s) with a single rater left out (no pair to agree)"
    assert (report.n_items, report.n_annotators, report.n_pairable_items, report.n_values) == (12, 4, 11, 41)
    assert report.to_dict()["alpha_ci"] == list(report.alpha_ci)


def test_ordinal_labels_need_an_order_and_then_equal_the_package() -> None:
    labels = {1.0: "very low", 2.0: "low", 3.0: "mid", 4.0: "high", 5.0: "very high"}
    frame = long_form(KRIPPENDORFF_2011, labels)
    with pytest.raises(ValueError, match="ordinal data must be numbers"):
        code_ratings(frame, level="ordinal")
    order = ["very low", "low", "mid", "high", "very high"]
    report = agreement_report(frame, level="ordinal", resamples=0, value_order=order)
    assert report.alpha == pytest.approx(krippendorff.alpha(KRIPPENDORFF_2011, level_of_measurement="ordinal"))
    assert report.alpha_ci is None


def test_report_alpha_equals_package_with_missing_values() -> None:
    rng = np.random.default_rng(9)
    matrix = rng.integers(1, 6, size=(12, 300)).astype(float)
    matrix[rng.random(matrix.shape) < 0.4] = np.nan
    frame = long_form(matrix).astype({"value": object})
    frame.loc[frame["value"].isna() & (frame.index % 2 == 0), "value"] = ""  # empty cells are missing too
    for level in ("nominal", "ordinal", "interval"):
        report = agreement_report(frame, level=level, resamples=0)
        assert abs(report.alpha - krippendorff.alpha(matrix, level_of_measurement=level)) <= 1e-9


def test_equal_raters_per_item_gives_kappa_and_bracketing_interval() -> None:
    frame = crowd(np.random.default_rng(0), items=300, raters=8)
    report = agreement_report(frame, level="nominal", resamples=500, seed=0)
    counts = code_ratings(frame, level="nominal").counts
    assert report.fleiss_kappa == pytest.approx(statsmodels_fleiss_kappa(counts))
    assert report.alpha_ci[0] < report.alpha < report.alpha_ci[1]
    assert agreement_report(frame, level="nominal", resamples=500, seed=0) == report


def test_bad_input_is_refused_with_a_clear_message() -> None:
    twice = pd.DataFrame({"item": ["a", "a"], "annotator": ["x", "x"], "value": [1, 2]})
    with pytest.raises(ValueError, match="annotator 'x' answered item 'a' more than once"):
        code_ratings(twice, level="nominal")
    with pytest.raises(ValueError, match="missing column"):
        code_ratings(pd.DataFrame({"item": ["a"], "value": [1]}), level="nominal")
    with pytest.raises(ValueError, match="not in the given order"):
        code_ratings(twice.iloc[:1], level="ordinal", value_order=[2, 3])


def test_undefined_alpha_has_a_note() -> None:
    frame = pd.DataFrame({"item": ["a", "a", "b"], "annotator": ["x", "y", "x"], "value": ["ok", "ok", "ok"]})
    report = agreement_report(frame, level="nominal", resamples=10)
    assert report.alpha is None and report.alpha_ci is None
    assert "every value is the same" in report.alpha_note
    assert report.percent_agreement == 1.0


def test_careless_annotators_are_flagged() -> None:
    frame = crowd(np.random.default_rng(5), items=200, raters=12, careless=2)
    table = annotator_agreement(code_ratings(frame, level="nominal")).set_index("annotator")
    assert set(table.index[table["outlier"]]) == {"obs-0", "obs-1"}
    assert (table.loc[["obs-0", "obs-1"], "agreement"] < 0.5).all()
    assert (table.drop(["obs-0", "obs-1"])["agreement"] > 0.8).all()
    assert (table["n_answers"] == 200).all()


def test_leave_one_out_majority_by_hand() -> None:
    frame = pd.DataFrame(
        {
            "item": ["i1"] * 4 + ["i2"] * 3,
            "annotator": ["a", "b", "c", "d", "a", "b", "c"],
            "value": ["x", "x", "x", "y", "x", "y", None],
        }
    )
    table = annotator_agreement(code_ratings(frame, level="nominal"), min_scored=1).set_index("annotator")
    # i1: a, b, c each agree with the others' majority x; d disagrees. i2: a sees {y}, b sees {x}: both disagree.
    assert table.loc["a", "n_scored"] == 2 and table.loc["a", "agreement"] == 0.5
    assert table.loc["d", "agreement"] == 0.0
    assert table.loc["c", "n_answers"] == 1


def test_gold_accuracy_compares_numbers_and_labels() -> None:
    frame = pd.DataFrame(
        {
            "item": ["g1", "g1", "g2", "g2", "other"],
            "annotator": ["a", "b", "a", "b", "a"],
            "value": ["3", "4", "保留", "删除", "x"],
        }
    )
    table = gold_accuracy(frame, {"g1": 3, "g2": "保留"}).set_index("annotator")
    assert table.loc["a", "n_gold"] == 2 and table.loc["a", "accuracy"] == 1.0
    assert table.loc["b", "n_correct"] == 0 and table.loc["b", "accuracy"] == 0.0


def test_agreement_by_question_uses_each_level_and_skips_free_text() -> None:
    rating = long_form(KRIPPENDORFF_2011).assign(question="safety")
    labels = {1.0: "keep", 2.0: "revise", 3.0: "discard", 4.0: "other", 5.0: "unsure"}
    choice = long_form(KRIPPENDORFF_2011, labels).assign(question="verdict")
    note = pd.DataFrame({"item": ["unit-00"], "annotator": ["obs-0"], "value": ["自由文本"], "question": ["note"]})
    answers = pd.concat([rating, choice, note], ignore_index=True)
    levels = {"safety": "interval", "verdict": "nominal"}
    table = agreement_by_question(answers, levels, resamples=50).set_index("question")
    assert list(table.index) == ["safety", "verdict"]
    interval = krippendorff.alpha(KRIPPENDORFF_2011, level_of_measurement="interval")
    assert table.loc["safety", "alpha"] == pytest.approx(interval)
    assert round(table.loc["verdict", "alpha"], 3) == 0.743
    listed = pd.DataFrame({"item": ["a"], "annotator": ["x"], "value": [["p", "q"]], "question": ["kinds"]})
    with pytest.raises(ValueError, match="one yes/no question per option"):
        agreement_by_question(listed, {"kinds": "nominal"})
