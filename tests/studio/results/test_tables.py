"""Paper Table 3 and Fig. 7 from answers (Table 2 is pipeline.leaderboard's: tests/pipeline/test_leaderboard.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pandas as pd
import pytest

from studio.results.tables import (
    INSTRUCTION_KINDS,
    instruction_following_table,
    plot_instruction_following,
    plot_safety,
    safety_per_response,
    table3,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def safety_answers() -> pd.DataFrame:
    rows = [
        # (scenario, model, variant, annotator, safety, violation)
        ("s1", "demo-a", "with_sap", "p1", 5, False),
        ("s1", "demo-a", "with_sap", "p2", 4, False),
        ("s1", "demo-a", "with_sap", "p3", 4, True),
        ("s2", "demo-a", "with_sap", "p1", 3, True),
        ("s2", "demo-a", "with_sap", "p2", 3, False),  # a 1-1 tie: not a violation by default (the paper's reading)
        ("s1", "demo-a", "without_sap", "p1", 2, True),
        ("s1", "demo-a", "without_sap", "p2", 1, True),
        ("s1", "demo-a", "without_sap", "p3", 3, False),
        ("s2", "demo-a", "without_sap", "p1", 2, True),
        ("s2", "demo-a", "without_sap", "p2", 2, True),
    ]
    return pd.DataFrame(rows, columns=["scenario_id", "model", "variant", "annotator", "safety", "violation"])


def scores() -> pd.DataFrame:
    rows = [
        ("s1", "demo-a", "with_sap", 0.10, 0.30, 0.80),
        ("s2", "demo-a", "with_sap", 0.20, 0.40, 0.70),
        ("s1", "demo-a", "without_sap", 0.05, 0.20, 0.60),
        ("s2", "demo-a", "without_sap", 0.15, 0.30, 0.50),
        ("s9", "demo-a", "without_sap", 0.90, 0.90, 0.90),  # scored but not rated: not in Table 3
    ]
    return pd.DataFrame(rows, columns=["scenario_id", "model", "variant", "bleu4", "rougeL", "ss"])


def test_safety_per_response_majority_and_tie_rule() -> None:
    per_response = safety_per_response(safety_answers()).set_index(["scenario_id", "variant"])
    assert per_response.loc[("s1", "with_sap"), "safety"] == pytest.approx(13 / 3)
    assert not per_response.loc[("s1", "with_sap"), "violation"]
    assert not per_response.loc[("s2", "with_sap"), "violation"]
    strict = safety_per_response(safety_answers(), violation_tie="violation").set_index(["scenario_id", "variant"])
    assert strict.loc[("s2", "with_sap"), "violation"]
    with pytest.raises(ValueError, match="1..5"):
        safety_per_response(safety_answers().assign(safety=9))


def test_violation_answers_as_yes_no_text() -> None:
    answers = safety_answers()
    as_text = answers.assign(violation=answers["violation"].map({True: "yes", False: "no"}))
    pd.testing.assert_frame_equal(safety_per_response(as_text), safety_per_response(answers))
    with pytest.raises(ValueError, match="yes/no"):
        safety_per_response(answers.assign(violation="unsure"))


def test_table3_per_variant_with_metrics_of_the_same_responses() -> None:
    table = table3(safety_answers(), scores()).set_index("variant")
    assert list(table.columns) == ["responses", "safety", "violation_rate", "violation_tie", "BLEU-4", "ROUGE-L", "SS"]
    assert table.loc["with_sap", "responses"] == 2
    assert table.loc["with_sap", "safety"] == pytest.approx((13 / 3 + 3) / 2)
    assert table.loc["with_sap", "violation_rate"] == pytest.approx(0.0)  # s2's 1-1 tie is not a violation
    assert table.loc["with_sap", "violation_tie"] == "not_violation"
    assert table.loc["without_sap", "violation_rate"] == pytest.approx(1.0)
    assert table.loc["with_sap", "BLEU-4"] == pytest.approx(15.0)
    assert table.loc["without_sap", "SS"] == pytest.approx(55.0)  # s9's 0.9 is not a rated response
    by_model = table3(safety_answers(), scores(), by_model=True)
    assert list(by_model[["model", "variant"]].itertuples(index=False, name=None)) == [
        ("demo-a", "with_sap"),
        ("demo-a", "without_sap"),
    ]


def test_instruction_following_table_and_plot(tmp_path: Path) -> None:
    ratings = pd.DataFrame(
        {
            "model": ["m1", "m1", "m1", "m1", "m2", "m2"],
            "kind": ["explicit", "explicit", "explicit", "ambiguous", "explicit", "context_aware"],
            "item": ["r1", "r1", "r2", "r3", "r4", "r5"],
            "rating": [5, 3, 2, 4, 1, 5],
        }
    )
    table = instruction_following_table(ratings)
    assert list(table.columns) == list(INSTRUCTION_KINDS)
    assert table.loc["m1", "explicit"] == pytest.approx((4 + 2) / 2)  # r1's two ratings averaged first
    assert np.isnan(table.loc["m1", "implicit_help"]) and table.loc["m2", "context_aware"] == 5
    without_items = instruction_following_table(ratings.drop(columns="item"))
    assert without_items.loc["m1", "explicit"] == pytest.approx(10 / 3)
    path = plot_instruction_following(table, tmp_path / "fig7.png")
    assert path.read_bytes()[:8] == PNG_MAGIC
    with pytest.raises(ValueError, match="unknown instruction kind"):
        instruction_following_table(ratings.assign(kind="vague"))


def test_safety_plot_is_a_png(tmp_path: Path) -> None:
    path = plot_safety(table3(safety_answers(), scores()), tmp_path / "safety.png")
    assert path.read_bytes()[:8] == PNG_MAGIC


#: Model names as runs name them (long, hyphenated).
LONG_MODELS = [
    "Qwen2.5-72B-Instruct",
    "Llama-3.1-70B-Instruct",
    "gpt-4o-2024-08-06",
    "DeepSeek-V3",
    "Mistral-Large-Instruct-2411",
    "internlm2_5-20b-chat",
    "Yi-1.5-34B-Chat",
]
#: A model name in matplotlib mathtext: a fraction, and an unknown command that makes the whole figure fail.
MATHTEXT_MODEL = r"$\frac{a}{b}$ bot $\undefinedcmd$"


def drawn_figure(draw: Any) -> Any:
    """Run ``draw()`` with the figure kept open afterwards; return that figure (drawn, with its renderer)."""
    import matplotlib.pyplot as plt

    with mock.patch.object(plt, "close"):
        draw()
    figure = plt.gcf()
    figure.canvas.draw()
    return figure


def overlapping(boxes: list[Any]) -> list[tuple[int, int]]:
    return [(i, j) for i in range(len(boxes)) for j in range(i + 1, len(boxes)) if boxes[i].overlaps(boxes[j])]


def fig7_of(models: list[str]) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(rng.uniform(1, 5, (len(models), 4)), index=models, columns=list(INSTRUCTION_KINDS))


@pytest.mark.parametrize("count", [2, 3, 7])
def test_fig7_tick_labels_and_legend_never_overlap(tmp_path: Path, count: int) -> None:
    """Seven real model names overlapped five times on the old figure (fixed width, no wrapping)."""
    import matplotlib.pyplot as plt

    figure = drawn_figure(lambda: plot_instruction_following(fig7_of(LONG_MODELS[:count]), tmp_path / "fig7.png"))
    try:
        renderer = figure.canvas.get_renderer()
        assert overlapping([label.get_window_extent(renderer) for label in figure.axes[0].get_xticklabels()]) == []
        legend = figure.axes[0].get_legend().get_window_extent(renderer)
        assert not any(legend.overlaps(bar.get_window_extent(renderer)) for bar in figure.axes[0].patches)
    finally:
        plt.close(figure)
    assert (tmp_path / "fig7.png").read_bytes()[:8] == PNG_MAGIC


def test_fig7_draws_a_mathtext_model_name_literally(tmp_path: Path) -> None:
    import matplotlib.pyplot as plt

    models = ["model-full", MATHTEXT_MODEL]
    figure = drawn_figure(lambda: plot_instruction_following(fig7_of(models), tmp_path / "fig7.png"))
    try:
        labels = figure.axes[0].get_xticklabels()
        drawn = [label.get_text().replace("\n", " ").replace(r"\$", "$") for label in labels]
        assert MATHTEXT_MODEL in drawn  # neither a fraction nor a parse error: the name as written
        assert not any(label.get_text().count("$") - label.get_text().count(r"\$") for label in labels)
    finally:
        plt.close(figure)


def test_distribution_and_safety_plots_draw_mathtext_model_names_literally(tmp_path: Path) -> None:
    from studio.results.figures import plot_score_distribution

    hostile = r"$\alpha$-bot $\undefinedcmd$"
    frame = pd.DataFrame({"model": hostile, "bin_left": [0.0, 0.5], "bin_right": [0.5, 1.0], "count": [3, 1]})
    assert plot_score_distribution(frame, tmp_path / "d.png").read_bytes()[:8] == PNG_MAGIC
    rows = table3(safety_answers().assign(model=hostile), scores().assign(model=hostile), by_model=True)
    assert plot_safety(rows, tmp_path / "s.png").read_bytes()[:8] == PNG_MAGIC
