"""Paper Table 2: aggregation against hand-computed numbers, signature/variant rules, CSV safety."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from pipeline.csvsafe import neutralise_cell
from pipeline.leaderboard import (
    COLUMNS,
    Leaderboard,
    LeaderboardError,
    build_leaderboard,
    describe_pending,
    load_score_rows,
    select_rows,
)
from pipeline.records import SUBTASKS, Result, ScoreSignature
from studio.cli import build_cli

SIG_A = ScoreSignature(sacrebleu="2.4.0", rouge_score="0.1.2", tokenizer="cjk-13a", embedder="bge-m3")
SIG_B = SIG_A.model_copy(update={"embedder": "minilm:all-MiniLM-L6-v2"})

# (model, subtask, S, J_final): hand-computed below
ITEMS = [
    ("alpha", "dialogue_base", 0.5, None),
    ("alpha", "dialogue_base", 0.7, None),
    ("alpha", "dialogue_emotion", 0.2, None),
    ("alpha", "recollection_synthesis", 0.4, None),
    ("alpha", "recollection_synthesis", 0.6, None),
    ("alpha", "recollection_synthesis", 0.8, None),
    ("alpha", "itinerary_basic", 0.1, 4.0),  # judged: 100 * 4.0 / 5 = 80, S is not used
    ("alpha", "itinerary_basic", 0.9, None),  # judged, no J_final: pending
    ("alpha", "itinerary_response", 0.3, None),  # not judged: 100 * S
    ("beta", "dialogue_base", 1.0, None),
]


def frame(items: list[tuple] = ITEMS, **columns: object) -> pd.DataFrame:
    rows = pd.DataFrame(items, columns=["model", "subtask", "S", "J_final"])
    return rows.assign(**columns)


def row_of(table: pd.DataFrame | Leaderboard, model: str) -> pd.Series:
    frame = table.table if isinstance(table, Leaderboard) else table
    return frame.set_index("model").loc[model]


def test_hand_computed_table() -> None:
    table = build_leaderboard(frame()).table
    assert list(table.columns) == list(COLUMNS)
    assert (
        list(table.columns)
        == [  # paper Table 2: each dimension's subtasks, then its average
            "model",
            *SUBTASKS[:3],
            "dialogue_avg",
            *SUBTASKS[3:6],
            "recollection_avg",
            *SUBTASKS[6:],
            "itinerary_avg",
            "overall",
        ]
    )
    alpha = row_of(table, "alpha")
    assert alpha["dialogue_base"] == pytest.approx(60.0)
    assert alpha["dialogue_emotion"] == pytest.approx(20.0)
    assert alpha["recollection_synthesis"] == pytest.approx(60.0)
    assert alpha["itinerary_basic"] == pytest.approx(80.0)
    assert alpha["itinerary_response"] == pytest.approx(30.0)
    assert math.isnan(alpha["dialogue_schedule"]) and math.isnan(alpha["itinerary_middle"])
    # a dimension's average only over all its subtasks (tests/pipeline/test_leaderboard_partial.py): alpha has 2 of 3
    # dialogue, 1 of 3 recollection and 2 of 5 itinerary subtasks
    assert math.isnan(alpha["dialogue_avg"]) and math.isnan(alpha["recollection_avg"])
    assert math.isnan(alpha["itinerary_avg"])
    # item-weighted: (50 + 70 + 20 + 40 + 60 + 80 + 80 + 30) / 8, not the mean of subtask cells (50)
    assert alpha["overall"] == pytest.approx(430 / 8)
    subtask_cells = alpha[list(SUBTASKS)].dropna()
    assert subtask_cells.mean() == pytest.approx(50.0)
    beta = row_of(table, "beta")
    assert beta["overall"] == pytest.approx(100.0)
    assert math.isnan(beta["itinerary_avg"]) and math.isnan(beta["recollection_avg"])
    assert list(table["model"]) == ["beta", "alpha"]  # best overall first


def test_pending_items_are_counted_and_left_out() -> None:
    board = build_leaderboard(frame())
    assert board.pending_by_model() == {"alpha": 1}
    pending, counted = board.pending.set_index("model"), board.counted.set_index("model")
    assert list(board.pending.columns) == list(COLUMNS) and list(board.counted["model"]) == ["beta", "alpha"]
    assert pending.loc["alpha", "itinerary_basic"] == 1 and counted.loc["alpha", "itinerary_basic"] == 1
    assert pending.loc["alpha", "itinerary_avg"] == 1 and pending.loc["alpha", "overall"] == 1
    assert counted.loc["alpha", "overall"] == 8 and counted.loc["alpha", "dialogue_avg"] == 3
    assert counted.loc["beta", "dialogue_base"] == 1 and pending.loc["beta"].sum() == 0
    only_pending = build_leaderboard(frame([("gamma", "itinerary_advanced", 0.5, None)]))
    assert only_pending.table["model"].tolist() == ["gamma"]
    assert math.isnan(row_of(only_pending, "gamma")["overall"])
    assert only_pending.pending_by_model() == {"gamma": 1}


def test_flagged_items_are_pending_until_experts_adjudicate() -> None:
    """J_final of a flagged item is J until experts score it: it counts only once J_human is there."""
    rows = frame(
        [
            ("alpha", "itinerary_middle", 0.5, 4.5),  # J >= tau: final
            ("alpha", "itinerary_middle", 0.5, 2.0),  # flagged, not adjudicated: pending, J is no final score
            ("alpha", "itinerary_middle", 0.5, 3.0),  # flagged, adjudicated: J_final counts
            ("alpha", "dialogue_base", 0.5, None),  # a flag on an unjudged subtask changes nothing
        ]
    ).assign(needs_adjudication=[False, True, True, False], J_human=[None, None, 3.0, None])
    board = build_leaderboard(rows)
    alpha = row_of(board, "alpha")
    assert alpha["itinerary_middle"] == pytest.approx((90 + 60) / 2)
    assert alpha["overall"] == pytest.approx((90 + 60 + 50) / 3)
    assert board.pending_by_model() == {"alpha": 1}
    assert describe_pending(board) == ["alpha: 1 item(s) pending (left out of the means): itinerary_middle 1 of 3"]
    coverage = board.coverage().set_index(["model", "column"])
    assert list(board.coverage().columns) == ["model", "column", "counted", "pending", "subtasks_counted", "subtasks"]
    assert coverage.loc[("alpha", "itinerary_middle")].tolist() == [2, 1, 1, 1]
    assert coverage.loc[("alpha", "overall")].tolist() == [3, 1, 2, 11]


def test_signatures_and_variants_never_mix() -> None:
    rows = pd.concat([frame(signature=SIG_A.label()), frame(signature=SIG_B.label())], ignore_index=True)
    with pytest.raises(LeaderboardError, match="different signatures must not be mixed") as caught:
        build_leaderboard(rows)
    assert SIG_A.label() in str(caught.value) and SIG_B.label() in str(caught.value)
    picked = select_rows(rows, signature=SIG_B.label())
    assert row_of(build_leaderboard(picked), "alpha")["overall"] == pytest.approx(430 / 8)
    with pytest.raises(LeaderboardError, match="present: "):
        select_rows(rows, signature="emb=none")
    variants = pd.concat([frame(variant="with_sap"), frame(variant="without_sap")], ignore_index=True)
    with pytest.raises(LeaderboardError, match="--variant"):
        select_rows(variants)
    assert len(select_rows(variants, variant="with_sap")) == len(ITEMS)


def write_scores(path: Path, items: list[tuple] = ITEMS, variant: str = "with_sap") -> Path:
    """Half the lines as Result records, half as plain dicts with a string signature."""
    with open(path, "a", encoding="utf-8") as handle:
        for number, (model, subtask, s_value, j_final) in enumerate(items):
            if number % 2:
                line = {
                    "model": model,
                    "subtask": subtask,
                    "S": s_value,
                    "J_final": j_final,
                    "variant": variant,
                    "signature": SIG_A.label(),
                }
            else:
                line = Result(
                    scenario_id=f"s{number}",
                    model=model,
                    variant=variant,
                    subtask=subtask,
                    S=s_value,
                    J_final=j_final,
                    signature=SIG_A,
                ).model_dump(mode="json")
            handle.write(json.dumps(line) + "\n")
    return path


def test_load_accepts_results_and_plain_dicts_alike(tmp_path: Path) -> None:
    rows = load_score_rows(write_scores(tmp_path / "results.jsonl"))
    assert rows["signature"].unique().tolist() == [SIG_A.label()]
    assert row_of(build_leaderboard(rows), "alpha")["overall"] == pytest.approx(430 / 8)


def test_load_lists_every_bad_line(tmp_path: Path) -> None:
    path = write_scores(tmp_path / "results.jsonl")
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"model": "x", "subtask": "dialogue_base", "S": 1.5}\n{"model": "x", "S": 0.5}\nnope\n')
    with pytest.raises(LeaderboardError) as caught:
        load_score_rows(path)
    message = str(caught.value)
    assert message.startswith("3 bad line(s)")
    for where in (":11: S:", ":12: subtask:", ":13: (line): invalid JSON"):
        assert f"{path}{where}" in message


def test_csv_safe_neutralises_formula_cells() -> None:
    assert [neutralise_cell(value) for value in ("=1+1", "+SUM(A1)", "-2", "@cmd", "\tx", "qwen-7b", 3.5)] == [
        "'=1+1",
        "'+SUM(A1)",
        "'-2",
        "'@cmd",
        "'\tx",
        "qwen-7b",
        3.5,
    ]


def test_cli_writes_a_formula_safe_csv_and_reports_pending(tmp_path: Path) -> None:
    hostile = [('=HYPERLINK("http://x")', "dialogue_base", 0.25, None), ("@evil", "dialogue_base", 0.5, None)]
    scores = write_scores(tmp_path / "results.jsonl", ITEMS + hostile)
    output = tmp_path / "table.csv"
    result = CliRunner().invoke(build_cli(), ["leaderboard", "--scores", str(scores), "-o", str(output)])
    assert result.exit_code == 0, result.output
    assert "alpha: 1 item(s) pending" in result.stderr
    assert output.read_bytes().startswith(b"\xef\xbb\xbfmodel,")  # UTF-8 with a BOM: Excel reads it as UTF-8
    with open(output, encoding="utf-8-sig", newline="") as handle:
        table = list(csv.DictReader(handle))
    assert list(table[0]) == list(COLUMNS)
    by_model = {row["model"]: row for row in table}
    assert set(by_model) == {"alpha", "beta", '\'=HYPERLINK("http://x")', "'@evil"}
    assert by_model["alpha"]["overall"] == "53.75"
    assert by_model["alpha"]["dialogue_schedule"] == ""
    assert by_model["'@evil"]["dialogue_base"] == "50.00"


def test_cli_prints_a_table_and_explains_mixed_input(tmp_path: Path) -> None:
    scores = write_scores(tmp_path / "results.jsonl")
    printed = CliRunner().invoke(build_cli(), ["leaderboard", "--scores", str(scores)])
    assert printed.exit_code == 0, printed.output
    header = ["model", "Rank", "(95%", "range)", "dialogue_base"]  # intervals by default: the rank range after model
    assert printed.stdout.splitlines()[0].split()[:5] == header
    assert "53.75" in printed.stdout
    write_scores(scores, variant="without_sap")
    mixed = CliRunner().invoke(build_cli(), ["leaderboard", "--scores", str(scores)])
    assert mixed.exit_code == 1
    assert "pick one with --variant" in mixed.output and "without_sap" in mixed.output
    chosen = CliRunner().invoke(build_cli(), ["leaderboard", "--scores", str(scores), "--variant", "without_sap"])
    assert chosen.exit_code == 0 and "53.75" in chosen.stdout


def test_judges_never_mix_for_judged_subtasks(tmp_path: Path) -> None:
    path = write_scores(tmp_path / "results.jsonl", [("alpha", "dialogue_base", 0.5, None)])
    judged = {"model": "alpha", "subtask": "itinerary_basic", "S": 0.5, "variant": "with_sap",
              "signature": SIG_A.label()}  # fmt: skip
    lines = [
        {**judged, "J_final": 4.0, "judge_model": "gpt-4o", "judge_prompt_version": "judge-v1-aaaa"},
        {**judged, "J_final": 2.0, "judge_model": "gpt-4o", "judge_prompt_version": "judge-v1-bbbb"},
        {**judged, "J_final": 3.0, "judge_model": "qwen-judge", "judge_prompt_version": "judge-v1-aaaa"},
        # a judge named on a subtask that is not judged does not count
        {**judged, "subtask": "itinerary_response", "judge_model": "other", "judge_prompt_version": "x"},
    ]
    with open(path, "a", encoding="utf-8") as handle:
        handle.writelines(json.dumps(line) + "\n" for line in lines)
    rows = load_score_rows(path)
    with pytest.raises(LeaderboardError, match="different judges") as caught:
        build_leaderboard(rows)
    labels = (
        "judge=gpt-4o|prompt=judge-v1-aaaa",
        "judge=gpt-4o|prompt=judge-v1-bbbb",
        "judge=qwen-judge|prompt=judge-v1-aaaa",
    )
    assert all(label in str(caught.value) for label in labels)
    assert "judge=other" not in str(caught.value)
    picked = select_rows(rows, judge=labels[1])
    alpha = row_of(build_leaderboard(picked), "alpha")
    assert alpha["itinerary_basic"] == pytest.approx(40.0)  # only the bbbb prompt's item: 100 * 2.0 / 5
    assert alpha["dialogue_base"] == pytest.approx(50.0)  # rows without a judge stay
    assert alpha["itinerary_response"] == pytest.approx(50.0)
    cli = build_cli()
    mixed = CliRunner().invoke(cli, ["leaderboard", "--scores", str(path)])
    assert mixed.exit_code == 1 and "pick one with --judge" in mixed.output and labels[2] in mixed.output
    chosen = CliRunner().invoke(cli, ["leaderboard", "--scores", str(path), "--judge", labels[2]])
    assert chosen.exit_code == 0, chosen.output
    assert row_of(build_leaderboard(select_rows(rows, judge=labels[2])), "alpha")["itinerary_basic"] == 60.0
    unknown = CliRunner().invoke(cli, ["leaderboard", "--scores", str(path), "--judge", "judge=x|prompt=y"])
    assert unknown.exit_code == 1 and "present: " in unknown.output


def test_cli_leaves_flagged_results_pending_and_writes_the_coverage(tmp_path: Path) -> None:
    """RUN/results.jsonl carries J_final = J on flagged items (no expert has scored them): the CLI counts them as
    pending, as the studio does, instead of scoring them with J."""
    scores = tmp_path / "results.jsonl"
    judged = {"model": "alpha", "variant": "with_sap", "subtask": "itinerary_middle", "S": 0.5, "signature": SIG_A}
    lines = [
        Result(scenario_id="a", J_judge=5.0, J=3.5, J_final=3.5, **judged),
        Result(scenario_id="b", J_judge=1.0, J=1.9, J_final=1.9, needs_adjudication=True, **judged),
        Result(scenario_id="c", needs_adjudication=True, **judged),  # no judge score at all
    ]
    scores.write_text("".join(line.model_dump_json() + "\n" for line in lines), encoding="utf-8")
    output, coverage = tmp_path / "table.csv", tmp_path / "coverage.csv"
    args = ["leaderboard", "--scores", str(scores), "-o", str(output), "--coverage", str(coverage)]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 0, result.output
    assert "alpha: 2 item(s) pending (left out of the means): itinerary_middle 2 of 3" in result.stderr
    with open(output, encoding="utf-8-sig", newline="") as handle:
        assert next(csv.DictReader(handle))["itinerary_middle"] == "70.00"  # 100 * 3.5 / 5 only
    with open(coverage, encoding="utf-8-sig", newline="") as handle:
        cells = {(row["model"], row["column"]): (row["counted"], row["pending"]) for row in csv.DictReader(handle)}
    assert cells[("alpha", "itinerary_middle")] == ("1", "2") and cells[("alpha", "overall")] == ("1", "2")
    assert cells[("alpha", "dialogue_base")] == ("0", "0")
