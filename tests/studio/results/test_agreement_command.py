"""``h2h agreement`` on real CSV files."""

from __future__ import annotations

import json
from pathlib import Path

import krippendorff
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine

from studio.commands.agreement import COMMANDS, agreement_command
from studio.results.defaults import DEFAULT_RESAMPLES
from studio.results.export_formats import read_table
from tests.studio.results.worked_examples import KRIPPENDORFF_2011


def write_votes(path: Path, matrix: object, labels: dict[float, str] | None = None) -> Path:
    lines = ["item,annotator,value"]
    for rater, values in enumerate(matrix):
        for item, value in enumerate(values):
            cell = "" if value != value else (labels or {}).get(value, f"{value:g}")
            lines.append(f"unit-{item},obs-{rater},{cell}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(agreement_command, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_prints_the_report_as_json(tmp_path: Path, level: str) -> None:
    votes = write_votes(tmp_path / "votes.csv", KRIPPENDORFF_2011)
    code, out, _ = run("--votes", str(votes), "--level", level, "--seed", "3", "--resamples", "300")
    assert code == 0
    report = json.loads(out)
    assert set(report) == {
        "alpha",
        "alpha_ci",
        "fleiss_kappa",
        "percent_agreement",
        "n_items",
        "n_annotators",
        "n_pairable_items",
        "items",
        "quota",
        "n_items_left_out",
        "item_set",
    }
    assert abs(report["alpha"] - krippendorff.alpha(KRIPPENDORFF_2011, level_of_measurement=level)) <= 1e-9
    assert report["alpha_ci"][0] <= report["alpha"] <= report["alpha_ci"][1]
    assert report["fleiss_kappa"] is not None  # 3 or 4 raters per unit: Fleiss' kappa for unequal raters
    assert (report["n_items"], report["n_annotators"]) == (12, 4)
    assert (report["items"], report["quota"], report["n_items_left_out"]) == ("all", None, 0)
    assert report["item_set"] == "over all 12 items given (no quota given: none left out)"
    _, again, _ = run("--votes", str(votes), "--level", level, "--seed", "3", "--resamples", "300")
    assert again == out


def test_labels_and_annotator_table(tmp_path: Path) -> None:
    labels = {1.0: "保留", 2.0: "修改", 3.0: "删除", 4.0: "其他", 5.0: "未知"}
    votes = write_votes(tmp_path / "votes.csv", KRIPPENDORFF_2011, labels)
    code, out, err = run("--votes", str(votes), "--level", "nominal", "--annotators", str(tmp_path / "ann.csv"))
    assert code == 0
    assert round(json.loads(out)["alpha"], 3) == 0.743
    assert "note: 1 item(s) with a single rater left out (no pair to agree)" in err
    annotators = read_table(tmp_path / "ann.csv")
    assert sorted(annotators["annotator"]) == ["obs-0", "obs-1", "obs-2", "obs-3"]


def test_equal_raters_gives_fleiss_kappa(tmp_path: Path) -> None:
    votes = tmp_path / "v.csv"
    votes.write_text("item,annotator,value\na,x,1\na,y,1\nb,x,2\nb,y,2\nc,x,1\nc,y,2\n", encoding="utf-8")
    code, out, _ = run("--votes", str(votes), "--level", "nominal", "--resamples", "0")
    report = json.loads(out)
    assert code == 0 and report["alpha_ci"] is None
    # p = (1/2, 1/2): Pe = 0.5; P_i = 1, 1, 0 -> mean 2/3; kappa = (2/3 - 1/2) / (1/2) = 1/3
    assert report["fleiss_kappa"] == pytest.approx(1 / 3)
    assert report["percent_agreement"] == pytest.approx(2 / 3)


def test_bad_rows_are_named_by_file_line_and_column(tmp_path: Path) -> None:
    votes = tmp_path / "bad.csv"
    votes.write_text('item,annotator,value\na,x,1\n,y,2\na,x,3\nb,z,many\n"c\nd",w,4\ne,v\n', encoding="utf-8")
    code, out, err = run("--votes", str(votes), "--level", "interval")
    assert code == 1 and out == ""
    assert err.splitlines() == [
        f"{votes}:3: item: must not be empty",
        f"{votes}:4: annotator: 'x' already rated item 'a' on line 2",
        f"{votes}:5: value: interval data needs a number, got 'many'",
        f"{votes}:8: (row): number of fields differs from the header",
    ]


def test_missing_header_column(tmp_path: Path) -> None:
    votes = tmp_path / "bad.csv"
    votes.write_text("item,rater,value\na,x,1\n", encoding="utf-8")
    code, _, err = run("--votes", str(votes), "--level", "nominal")
    assert code == 1 and err.strip() == f"{votes}:1: annotator: missing column(s) in the header"


def test_command_is_registered() -> None:
    assert agreement_command in COMMANDS
    assert agreement_command.name == "agreement"


def test_every_front_door_gives_the_same_interval_by_default(studied: Engine, db_url: str, tmp_path: Path) -> None:
    """One default number of resamples (studio.results.defaults): ``h2h agreement`` on exported votes, ``h2h export
    agreement`` and the service the UI and REST API call print the same α interval for the same question."""
    from studio.cli import build_cli
    from studio.db import read_session
    from studio.services import research_quality

    cli = build_cli()
    votes, table = tmp_path / "votes.csv", tmp_path / "agreement.csv"
    exported = ["export", "votes", "--campaign", "vote", "--question", "verdict", "-o", str(votes), "--db", db_url]
    assert CliRunner().invoke(cli, exported).exit_code == 0
    code, out, _ = run("--votes", str(votes), "--level", "nominal")
    assert code == 0, out
    from_file = json.loads(out)["alpha_ci"]
    written = CliRunner().invoke(cli, ["export", "agreement", "--campaign", "vote", "-o", str(table), "--db", db_url])
    assert written.exit_code == 0, written.output
    from_export = read_table(table).set_index("question").loc["verdict"]
    with read_session(studied) as session:
        from_service = research_quality.campaign_agreement(session, campaign="vote").by_question.set_index("question")
    assert from_file is not None and from_export["resamples"] == DEFAULT_RESAMPLES
    assert from_file == pytest.approx(list(from_service.loc["verdict", "alpha_ci"]), abs=1e-12)
    assert json.loads(from_export["alpha_ci"]) == pytest.approx(from_file, abs=1e-12)


def test_a_duplicates_earlier_line_is_named_in_the_files_numbering_when_other_questions_come_first(
    tmp_path: Path,
) -> None:
    """``--question`` copies the question's rows to a temporary file: the earlier line a duplicate names must be
    the file's own (line 4 here), not the copy's (line 2)."""
    votes = tmp_path / "votes.csv"
    votes.write_text(
        "item,annotator,question,value\n"
        "a,x,comment,fine\n"  # line 2: another question, left out of the copy
        "a,y,comment,ok\n"  # line 3
        "a,x,verdict,1\n"  # line 4: the copy's line 2
        "b,y,comment,hm\n"  # line 5
        "a,x,verdict,2\n",  # line 6: the duplicate, the copy's line 3
        encoding="utf-8",
    )
    code, out, err = run("--votes", str(votes), "--question", "verdict", "--level", "nominal")
    assert code == 1 and out == ""
    assert err.strip() == f"{votes}:6: annotator: 'x' already rated item 'a' on line 4"
