"""Table 2's bootstrap intervals, rank ranges and rank fragility (pipeline.leaderboard_intervals / _fragility)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy.stats import bootstrap

from pipeline.cli import build_cli
from pipeline.leaderboard import COLUMNS, build_leaderboard
from pipeline.leaderboard_fragility import (
    EXACT,
    GREEDY,
    exact_items_to_swap,
    greedy_items_to_swap,
    leaderboard_fragility,
)
from pipeline.leaderboard_intervals import leaderboard_intervals
from pipeline.records import SUBTASKS
from pipeline.scoring.combine import combine_j

BASE = SUBTASKS[0]  # dialogue_base: value = 100 * S
BASIC = "itinerary_basic"  # judged: value = 100 * J_final / 5


def scores_frame(values: dict[str, list[float]], *, subtask: str = BASE, paired: bool = True) -> pd.DataFrame:
    rows = [
        {"model": model, "subtask": subtask, "S": value, **({"scenario_id": f"s{index}"} if paired else {})}
        for model, column in values.items()
        for index, value in enumerate(column)
    ]
    return pd.DataFrame(rows)


def test_one_model_one_subtask_is_scipys_percentile_bootstrap() -> None:
    values = np.random.default_rng(7).random(40)
    for paired in (True, False):
        intervals = leaderboard_intervals(scores_frame({"a": list(values)}, paired=paired), resamples=500, seed=11)
        expected = bootstrap(
            (values * 100,), np.mean, n_resamples=500, method="percentile", rng=np.random.default_rng(11)
        ).confidence_interval
        assert intervals.lower[BASE].iloc[0] == pytest.approx(expected.low)
        assert intervals.upper[BASE].iloc[0] == pytest.approx(expected.high)
        assert intervals.lower["overall"].iloc[0] == pytest.approx(expected.low)  # one subtask: overall = cell


def mixed_rows() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    rows = []
    for model, shift in (("a", 0.2), ("b", 0.0), ("c", -0.1)):
        for subtask in SUBTASKS:
            for index in range(12):
                s = float(np.clip(0.5 + shift + rng.normal(0, 0.15), 0, 1))
                row = {"model": model, "subtask": subtask, "S": s, "scenario_id": f"{subtask}-{index}"}
                if subtask in ("itinerary_basic", "itinerary_middle", "itinerary_advanced"):
                    row["J_final"] = float(np.clip(5 * s + rng.normal(0, 0.3), 0, 5))
                rows.append(row)
    return pd.DataFrame(rows)


def test_points_equal_the_table_and_bounds_surround_them() -> None:
    rows = mixed_rows()
    intervals = leaderboard_intervals(rows, resamples=300, seed=0)
    board = build_leaderboard(rows)
    pd.testing.assert_frame_equal(intervals.board.table, board.table)
    assert intervals.lower["model"].tolist() == board.table["model"].tolist()
    columns = list(COLUMNS[1:])
    assert (intervals.lower[columns] <= board.table[columns]).all().all()
    assert (board.table[columns] <= intervals.upper[columns]).all().all()
    assert intervals.paired


def test_the_seed_fixes_the_result_and_another_seed_moves_it() -> None:
    rows = mixed_rows()
    first, again = (leaderboard_intervals(rows, resamples=200, seed=5) for _ in range(2))
    pd.testing.assert_frame_equal(first.lower, again.lower)
    other = leaderboard_intervals(rows, resamples=200, seed=6)
    assert not np.allclose(first.lower["overall"], other.lower["overall"])


def test_a_clearly_separated_model_ranks_first_in_every_replicate() -> None:
    rng = np.random.default_rng(1)
    values = {
        "top": list(0.9 + rng.random(30) * 0.1),
        "mid": list(rng.random(30) * 0.5),
        "low": list(rng.random(30) * 0.5),
    }
    ranks = leaderboard_intervals(scores_frame(values), resamples=300, seed=0).ranks.set_index("model")
    assert ranks.loc["top", ["rank", "rank_low", "rank_high"]].tolist() == [1, 1, 1]
    assert ranks.loc["mid", "rank_low"] == 2 and ranks.loc["mid", "rank_high"] == 3


def judged_row(experts: list[float] | None, *, s: float = 0.5, scenario: str = "s0") -> dict[str, object]:
    j_human = float(np.median(experts)) if experts else 4.0
    return {
        "model": "a",
        "subtask": BASIC,
        "S": s,
        "J_final": combine_j(s, j_human),
        "needs_adjudication": True,
        "J_human": j_human,
        "J_human_scores": experts,
        "scenario_id": scenario,
    }


def test_one_item_three_experts_is_the_median_of_resampled_raters() -> None:
    experts = [1.0, 3.0, 5.0]
    intervals = leaderboard_intervals(pd.DataFrame([judged_row(experts)]), resamples=400, seed=2)
    rng = np.random.default_rng(2)
    rng.integers(0, 1, size=(400, 1))  # the item draw comes first (documented order); one item: always itself
    medians = np.median(np.asarray(experts)[rng.integers(0, 3, size=(400, 3))], axis=1)
    replicates = np.array([combine_j(0.5, float(m)) for m in medians]) * 100 / 5  # type: ignore[operator]
    low, high = np.percentile(replicates, [2.5, 97.5])
    assert intervals.lower[BASIC].iloc[0] == pytest.approx(low)
    assert intervals.upper[BASIC].iloc[0] == pytest.approx(high)
    assert (low, high) == pytest.approx((100 * (0.6 * 2.5 + 0.4 * 1) / 5, 100 * (0.6 * 2.5 + 0.4 * 5) / 5))
    assert intervals.raters


def test_rater_resampling_widens_a_judged_cell() -> None:
    rng = np.random.default_rng(4)
    rows = [judged_row([float(x) for x in rng.integers(0, 6, 3)], scenario=f"s{i}") for i in range(15)]
    with_raters = leaderboard_intervals(pd.DataFrame(rows), resamples=500, seed=0)
    fixed = leaderboard_intervals(pd.DataFrame(rows).drop(columns="J_human_scores"), resamples=500, seed=0)
    assert with_raters.board.table[BASIC].iloc[0] == fixed.board.table[BASIC].iloc[0]
    width = (with_raters.upper[BASIC] - with_raters.lower[BASIC]).iloc[0]
    assert width > (fixed.upper[BASIC] - fixed.lower[BASIC]).iloc[0]


def test_exact_fragility_by_hand_and_minimal_by_brute_force() -> None:
    # upper - lower per scenario: 3, 1, 0, -1 -> mean 0.75; drop 3: (0)/3 = 0 (no swap); drop 3 and 1: -1/2 < 0
    assert exact_items_to_swap(np.array([1.0, 3.0, 0.0, -1.0])) == 2
    assert exact_items_to_swap(np.array([1.0, 2.0])) is None
    rng = np.random.default_rng(9)
    upper, lower = rng.random(9) + 0.1, rng.random(9)
    found = exact_items_to_swap(upper - lower)
    assert found is not None
    for k in range(found):
        for kept in itertools.combinations(range(9), 9 - k):
            assert upper[list(kept)].mean() >= lower[list(kept)].mean()
    assert any(
        upper[list(kept)].mean() < lower[list(kept)].mean() for kept in itertools.combinations(range(9), 9 - found)
    )


def test_fragility_table_exact_when_paired_greedy_otherwise() -> None:
    values = {"a": [0.9, 0.5, 0.5, 0.4], "b": [0.2, 0.5, 0.5, 0.5]}  # differences 70, 0, 0, -10 (x100)
    paired = scores_frame(values)
    frame = leaderboard_fragility(paired, build_leaderboard(paired).table)
    assert frame.iloc[0].tolist() == ["a", "b", pytest.approx(15.0), 1, 4, EXACT]
    unpaired = scores_frame(values, paired=False)
    frame = leaderboard_fragility(unpaired, build_leaderboard(unpaired).table)
    # greedy: drop a's 90 (46.67 vs 42.50), then b's 20 (46.67 vs 50.00): 2 of 8 items (exact on scenarios: 1)
    assert frame.iloc[0].tolist() == ["a", "b", pytest.approx(15.0), 2, 8, GREEDY]
    # greedy by hand: upper [3, 3], lower [1, 2, 2.5]: dropping upper's items never lowers it; lower's reach 2.5 < 3
    assert greedy_items_to_swap(np.array([3.0, 3.0]), np.array([1.0, 2.0, 2.5])) is None
    assert greedy_items_to_swap(np.array([4.0, 1.0]), np.array([2.0, 2.0])) == 1


def test_cli_prints_intervals_and_writes_the_csvs(tmp_path: Path) -> None:
    scores = tmp_path / "scores.jsonl"
    rows = scores_frame({"a": [0.9, 0.8, 0.7, 0.6], "b": [0.2, 0.3, 0.1, 0.4]})
    scores.write_text("".join(json.dumps(row) + "\n" for row in rows.to_dict("records")))
    printed = CliRunner().invoke(build_cli(), ["leaderboard", "--scores", str(scores), "--resamples", "100"])
    assert printed.exit_code == 0, printed.output
    intervals = leaderboard_intervals(rows, resamples=100, seed=0)
    low, high = intervals.lower[BASE].iloc[0], intervals.upper[BASE].iloc[0]
    assert f"75.00 [{low:.2f}, {high:.2f}]" in printed.stdout
    assert "a > b by 50.00: no removal swap them (exact)" in printed.stdout
    assert "95% percentile bootstrap over items" in printed.stdout and "100 resamples, seed 0" in printed.stdout
    out = tmp_path / "table.csv"
    written = CliRunner().invoke(
        build_cli(), ["leaderboard", "--scores", str(scores), "--resamples", "100", "-o", str(out)]
    )
    assert written.exit_code == 0, written.output
    long = pd.read_csv(tmp_path / "table.intervals.csv", encoding="utf-8-sig")
    assert long.columns.tolist() == ["model", "column", "value", "lower", "upper"]
    first = long[(long["model"] == "a") & (long["column"] == BASE)].iloc[0]
    assert (first["lower"], first["upper"]) == (round(low, 2), round(high, 2))
    fragility = pd.read_csv(tmp_path / "table.fragility.csv", encoding="utf-8-sig")
    assert fragility.columns.tolist() == ["upper", "lower", "gap", "items_to_swap", "items", "method"]
    assert pd.read_csv(out, encoding="utf-8-sig").columns.tolist() == list(COLUMNS)
