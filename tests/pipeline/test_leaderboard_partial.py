"""Issue 17 item 3: a dimension's average over fewer than all its subtasks is left empty and marked, the same way in
``h2h leaderboard`` (text, CSV, coverage) and on the Research page; paper Table 2's column order (item 5)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.leaderboard import (
    AVERAGES_RULE,
    COLUMNS,
    build_leaderboard,
    cell_texts,
    describe_partial,
    partial_columns,
)
from studio.cli import build_cli
from tests.pipeline.test_leaderboard import frame, row_of, write_scores

#: alpha: every dialogue subtask, 2 of 5 itinerary subtasks (I-III awaiting adjudication in the issue's case: here
#: level I has one counted item and one pending, the others none), no recollection item; beta: 1 dialogue subtask.
ITEMS = [
    ("alpha", "dialogue_base", 0.5, None),
    ("alpha", "dialogue_emotion", 0.7, None),
    ("alpha", "dialogue_schedule", 0.3, None),
    ("alpha", "itinerary_basic", 0.1, 4.0),  # judged: 100 * 4.0 / 5 = 80
    ("alpha", "itinerary_basic", 0.2, None),  # judged without J_final: pending
    ("alpha", "itinerary_response", 0.4, None),
    ("beta", "dialogue_base", 0.9, None),
]


def cells(board_rows: list[tuple]) -> dict[str, dict[str, str]]:
    shown = cell_texts(build_leaderboard(frame(board_rows)))
    return {row["model"]: row for row in shown.to_dict("records")}


def test_columns_follow_paper_table_2() -> None:
    assert list(COLUMNS) == [
        "model",
        "dialogue_base",
        "dialogue_emotion",
        "dialogue_schedule",
        "dialogue_avg",
        "recollection_synthesis",
        "recollection_refinement",
        "recollection_initialization",
        "recollection_avg",
        "itinerary_basic",
        "itinerary_middle",
        "itinerary_advanced",
        "itinerary_response",
        "itinerary_initialization",
        "itinerary_avg",
        "overall",
    ]
    board = build_leaderboard(frame(ITEMS))
    for part in (board.table, board.counted, board.pending, board.subtasks_counted(), cell_texts(board)):
        assert list(part.columns) == list(COLUMNS)


def test_a_dimension_average_over_some_of_its_subtasks_is_left_empty() -> None:
    board = build_leaderboard(frame(ITEMS))
    alpha, beta = row_of(board, "alpha"), row_of(board, "beta")
    assert alpha["dialogue_avg"] == pytest.approx((50 + 70 + 30) / 3)  # all three subtasks: shown
    assert math.isnan(alpha["itinerary_avg"])  # 2 of 5 subtasks: no average that looks final
    assert alpha["itinerary_basic"] == pytest.approx(80.0) and alpha["itinerary_response"] == pytest.approx(40.0)
    assert math.isnan(beta["dialogue_avg"])  # 1 of 3
    # overall stays the item-weighted mean of the counted items, and says how many subtasks it covers
    assert alpha["overall"] == pytest.approx((50 + 70 + 30 + 80 + 40) / 5)
    coverage = board.coverage().set_index(["model", "column"])
    assert coverage.loc[("alpha", "itinerary_avg"), ["subtasks_counted", "subtasks"]].tolist() == [2, 5]
    assert coverage.loc[("alpha", "dialogue_avg"), ["subtasks_counted", "subtasks"]].tolist() == [3, 3]
    assert coverage.loc[("alpha", "overall"), ["subtasks_counted", "subtasks"]].tolist() == [5, 11]
    assert coverage.loc[("alpha", "itinerary_basic"), ["counted", "pending", "subtasks_counted"]].tolist() == [1, 1, 1]
    assert coverage.loc[("alpha", "itinerary_middle"), ["subtasks_counted", "subtasks"]].tolist() == [0, 1]


def test_partial_averages_are_shown_as_coverage_and_their_columns_marked() -> None:
    shown = cells(ITEMS)
    assert shown["alpha"]["itinerary_avg"] == "– (2/3) (2/5 subtasks)"  # level I: one of its two items still pending
    assert shown["alpha"]["dialogue_avg"] == "50.00"
    assert shown["beta"]["dialogue_avg"] == "– (1/3 subtasks)"
    assert shown["beta"]["itinerary_avg"] == ""  # beta has no itinerary item: nothing to mark
    assert shown["alpha"]["overall"] == "54.00 (5/6) (5/11 subtasks)"
    assert shown["alpha"]["itinerary_basic"] == "80.00 (1/2)" and shown["alpha"]["itinerary_middle"] == ""
    assert cells([("alpha", "itinerary_basic", 0.5, None)])["alpha"]["itinerary_basic"] == "– (0/1)"
    board = build_leaderboard(frame(ITEMS))
    assert partial_columns(board) == ["dialogue_avg", "itinerary_basic", "itinerary_avg", "overall"]
    assert describe_partial(board) == [  # in table order: beta's overall is higher
        "beta: dialogue_avg left empty (1 of 3 dialogue subtasks have counted items; none in dialogue_emotion, "
        "dialogue_schedule); overall over 1 of 11 subtasks",
        "alpha: itinerary_avg left empty (2 of 5 itinerary subtasks have counted items; none in itinerary_middle, "
        "itinerary_advanced, itinerary_initialization); overall over 5 of 11 subtasks",
    ]


def test_a_subtask_whose_items_all_await_adjudication_leaves_the_average_empty() -> None:
    every_itinerary = [("alpha", subtask, 0.5, 5.0) for subtask in COLUMNS[9:14]]
    board = build_leaderboard(frame(every_itinerary))
    assert row_of(board, "alpha")["itinerary_avg"] == pytest.approx(
        (100 + 100 + 100 + 50 + 50) / 5  # I-III: 100 * J_final / 5; response, initialization: 100 * S
    )
    awaiting = every_itinerary[:1] + [("alpha", "itinerary_middle", 0.5, None), *every_itinerary[2:]]
    assert cells(awaiting)["alpha"]["itinerary_avg"] == "– (4/5) (4/5 subtasks)"


def test_cli_text_csv_and_coverage_say_the_same(tmp_path: Path) -> None:
    scores = write_scores(tmp_path / "results.jsonl", ITEMS)
    printed = CliRunner().invoke(build_cli(), ["leaderboard", "--scores", str(scores), "--resamples", "0"])
    assert printed.exit_code == 0, printed.output
    header, *rows = printed.stdout.split("\n\n")[0].splitlines()
    assert header.split()[:5] == ["model", "dialogue_base", "dialogue_emotion", "dialogue_schedule", "dialogue_avg"]
    assert "itinerary_avg *" in header and "overall *" in header and "recollection_avg *" not in header
    assert "– (2/3) (2/5 subtasks)" in next(row for row in rows if row.lstrip().startswith("alpha"))
    assert "Columns marked *: dialogue_avg, itinerary_basic, itinerary_avg, overall" in printed.stdout
    assert AVERAGES_RULE in printed.stdout.replace("\n", " ")
    assert "alpha: itinerary_avg left empty (2 of 5 itinerary subtasks" in printed.stderr
    output, coverage = tmp_path / "table.csv", tmp_path / "coverage.csv"
    args = ["leaderboard", "--scores", str(scores), "-o", str(output), "--coverage", str(coverage)]
    written = CliRunner().invoke(build_cli(), args)
    assert written.exit_code == 0, written.output
    assert "beta: dialogue_avg left empty (1 of 3 dialogue subtasks" in written.stderr
    with open(output, encoding="utf-8-sig", newline="") as handle:
        table = {row["model"]: row for row in csv.DictReader(handle)}
    assert list(table["alpha"]) == list(COLUMNS)
    assert table["alpha"]["itinerary_avg"] == "" and table["alpha"]["dialogue_avg"] == "50.00"
    with open(coverage, encoding="utf-8-sig", newline="") as handle:
        cover = {(row["model"], row["column"]): row for row in csv.DictReader(handle)}
    assert (cover[("alpha", "itinerary_avg")]["subtasks_counted"], cover[("alpha", "itinerary_avg")]["subtasks"]) == (
        "2",
        "5",
    )


def test_the_research_page_shows_the_same_cells_marks_and_rule() -> None:
    from studio.services.research import LeaderboardView
    from studio.ui import research_views as views

    board = build_leaderboard(frame(ITEMS))
    view = LeaderboardView(board=board, adjudicated=0, awaiting={}, applied={"variant": "with_sap"})
    shown = views.leaderboard_display(view).set_index("model")
    assert shown.loc["alpha", "itin. avg *"] == cells(ITEMS)["alpha"]["itinerary_avg"] == "– (2/3) (2/5 subtasks)"
    assert shown.loc["beta", "dial. avg *"] == "– (1/3 subtasks)"
    assert shown.loc["alpha", "overall *"] == "54.00 (5/6) (5/11 subtasks)"
    assert "recol. avg" not in " ".join(shown.columns)  # no model has a recollection item
    note = views.leaderboard_note(view)
    assert "Columns marked *: dialogue avg, itinerary basic, itinerary avg, overall." in note
    assert "shown only when every one of them has counted items" in note
    full = [(model, subtask, 0.5, 5.0) for model in ("a", "b") for subtask in COLUMNS[1:-1] if "_avg" not in subtask]
    complete = build_leaderboard(frame(full))
    complete_view = LeaderboardView(board=complete, adjudicated=0, awaiting={}, applied={})
    assert not any(column.endswith("*") for column in views.leaderboard_display(complete_view).columns)
    assert "Every item is counted" in views.leaderboard_note(complete_view)


def test_h2h_export_leaderboard_from_the_store_says_what_h2h_leaderboard_says(tmp_path: Path) -> None:
    """The studio's export of an ingested run (dialogue: 3 of 3 subtasks; itinerary: levels I and II, 2 of 5) leaves
    the same averages empty and names the same partial averages as ``h2h leaderboard`` on the run's results."""
    from pipeline.results import write_results
    from tests.studio.helpers import write_run

    run = write_run(tmp_path / "run")
    write_results(run)
    db_url = f"sqlite:///{tmp_path / 'studio.db'}"
    cli = build_cli()
    assert CliRunner().invoke(cli, ["ingest", "--run", str(run.root), "--db", db_url]).exit_code == 0
    outputs = {}
    for name, args in (
        ("run", ["leaderboard", "--scores", str(run.results)]),
        ("store", ["export", "leaderboard", "--db", db_url]),
    ):
        path = tmp_path / f"{name}.csv"
        result = CliRunner().invoke(cli, [*args, "--variant", "with_sap", "-o", str(path)])
        assert result.exit_code == 0, result.output
        with open(path, encoding="utf-8-sig", newline="") as handle:
            table = {row["model"]: row for row in csv.DictReader(handle)}
        partial = [line.removeprefix("partial: ") for line in result.stderr.splitlines() if "left empty (" in line]
        outputs[name] = (table, partial)
    (run_table, run_partial), (store_table, store_partial) = outputs["run"], outputs["store"]
    assert run_partial == store_partial and len(store_partial) == 2
    assert all("itinerary_avg left empty (" in line for line in store_partial)  # levels I-II: at most 2 of 5
    for table in (run_table, store_table):
        assert {row["itinerary_avg"] for row in table.values()} == {""}
        assert all(row["dialogue_avg"] for row in table.values())  # all three dialogue subtasks counted
    for model, row in store_table.items():  # the store's export keeps full precision, the CLI's CSV two decimals
        assert float(row["dialogue_avg"]) == pytest.approx(float(run_table[model]["dialogue_avg"]), abs=0.005)
