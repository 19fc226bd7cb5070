"""``h2h consensus`` and ``h2h stopping-replay`` on real files: outputs, and each bad input named by file, line and
field with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine

from studio.commands.consensus import COMMANDS, consensus_command, stopping_replay_command
from studio.results.export_formats import read_table, write_table

HEADER = "item,annotator,question,value,answered_at"


def write(path: Path, *rows: str, header: str = HEADER) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def run(command: object, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(command, list(args))  # type: ignore[arg-type]
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def votes(tmp_path: Path) -> Path:
    """Item 1: keep 2–1; item 2: a tie; a comment question beside the verdict; one empty verdict (no vote)."""
    return write(
        tmp_path / "votes.csv",
        "1,ann,verdict,keep,2025-01-01T10:00:00",
        "1,bob,verdict,keep,2025-01-01T10:01:00",
        "1,cat,verdict,discard,2025-01-01T10:02:00",
        "1,ann,comment,=HYPERLINK(1),2025-01-01T10:00:00",
        "2,ann,verdict,keep,2025-01-01T10:03:00",
        "2,bob,verdict,discard,2025-01-01T10:04:00",
        "2,cat,verdict,,2025-01-01T10:05:00",
    )


def test_consensus_prints_one_row_per_item_and_a_tie_as_tie(votes: Path) -> None:
    code, out, _ = run(consensus_command, "--votes", str(votes), "--question", "verdict", "--method", "majority")
    assert code == 0
    assert out.splitlines() == ["item,decision,confidence,votes", "1,keep,0.6666666666666666,3", "2,tie,0.5,2"]


@pytest.mark.parametrize("method", ["majority", "dawid-skene", "mace"])
def test_consensus_writes_decisions_and_raters(votes: Path, tmp_path: Path, method: str) -> None:
    output, raters = tmp_path / "decisions.csv", tmp_path / "raters.jsonl"
    args = ["--votes", str(votes), "--question", "verdict", "--method", method, "-o", str(output)]
    code, out, _ = run(consensus_command, *args, "--raters", str(raters))
    assert code == 0 and out == ""
    decided = read_table(output)
    assert list(decided.columns) == ["item", "decision", "confidence", "votes"]
    assert list(decided["votes"]) == [3, 2] and decided["confidence"].between(0, 1).all()
    assert decided["decision"].iloc[0] == "keep"
    assert sorted(read_table(raters)["annotator"]) == ["ann", "bob", "cat"]


def test_the_same_votes_as_jsonl_give_the_same_decisions(votes: Path, tmp_path: Path) -> None:
    """The row-by-row reader (any export format) and the fast CSV reader agree."""
    as_jsonl = tmp_path / "votes.jsonl"
    write_table(pd.read_csv(votes, dtype=str, keep_default_na=False), as_jsonl)
    outputs = []
    for path in (votes, as_jsonl):
        code, out, _ = run(consensus_command, "--votes", str(path), "--question", "verdict", "--method", "majority")
        assert code == 0
        outputs.append(out)
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize(
    ("rows", "args", "message"),
    [
        (["1,ann,verdict,keep,t"], ["--method", "glad"], "unknown method 'glad': choose one of majority"),
        (["1,ann,verdict,keep,t"], ["--question", "tone"], "has no votes on 'tone' (it has verdict)"),
    ],
)
def test_bad_options_are_usage_errors(tmp_path: Path, rows: list[str], args: list[str], message: str) -> None:
    votes = write(tmp_path / "votes.csv", *rows)
    output = tmp_path / "out.csv"
    defaults = {"--method": "majority", "--question": "verdict"}
    for option, value in zip(args[::2], args[1::2], strict=True):
        defaults[option] = value
    flat = [part for pair in defaults.items() for part in pair]
    result = CliRunner().invoke(consensus_command, ["--votes", str(votes), *flat, "-o", str(output)])
    assert result.exit_code == 2 and message in result.output
    assert not output.exists()


def test_several_questions_and_none_named_lists_them(votes: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(consensus_command, ["--votes", str(votes), "--method", "majority"])
    assert result.exit_code == 2 and "holds the questions comment, verdict; pick one" in result.output


def test_a_rater_voting_twice_names_both_lines(tmp_path: Path) -> None:
    """Lines of the file given, though the comment row before them is filtered out before the check."""
    votes = write(
        tmp_path / "votes.csv",
        "1,ann,comment,hello,2025-01-01T10:00:00",
        "1,ann,verdict,keep,2025-01-01T10:00:00",
        "1,bob,verdict,keep,2025-01-01T10:00:00",
        "1,ann,verdict,discard,2025-01-01T10:01:00",
    )
    output = tmp_path / "out.csv"
    code, _, err = run(
        consensus_command, "--votes", str(votes), "--question", "verdict", "--method", "mace", "-o", str(output)
    )
    assert code == 1
    assert err.strip() == f"{votes}:5: annotator: 'ann' already rated item '1' on line 3"
    assert not output.exists()


def test_missing_columns_and_bad_rows_are_named(tmp_path: Path) -> None:
    missing = write(tmp_path / "missing.csv", "1,ann,keep", header="item,annotator,label")
    code, _, err = run(consensus_command, "--votes", str(missing), "--method", "majority")
    assert code == 1 and err.strip() == f"{missing}:1: value: missing column(s) in the header"
    short = write(tmp_path / "short.csv", "1,ann,verdict,keep,t", "2,,verdict,keep,t", "3,bob,verdict")
    code, _, err = run(consensus_command, "--votes", str(short), "--question", "verdict", "--method", "majority")
    assert code == 1
    assert err.splitlines() == [
        f"{short}:3: annotator: must not be empty",
        f"{short}:4: (row): number of fields differs from the header",
    ]


def test_stopping_replay_prints_one_json_object(tmp_path: Path) -> None:
    rows = [f"1,r{n:02d},verdict,keep,2025-01-01T10:{n:02d}:00" for n in range(20)]
    # item 2's votes come in out of file order: the discards were answered first
    rows += [f"2,r{n:02d},verdict,keep,2025-01-01T11:{59 - n:02d}:00" for n in range(6)]
    rows += [f"2,s{n:02d},verdict,discard,2025-01-01T11:{n:02d}:00" for n in range(14)]
    votes = write(tmp_path / "votes.csv", *rows)
    code, out, _ = run(stopping_replay_command, "--votes", str(votes), "--question", "verdict", "--rule", "curtail")
    assert code == 0
    report = json.loads(out)
    assert report["items"] == 2 and report["votes_total"] == 40
    assert report["votes_used"] == 11 + 11  # item 2: 11 discards first (answered_at) lead by 11 > 9; file order: 17
    assert report["identical_fraction"] == 1.0 and report["changed_items"] == []
    assert report["order"] == "answered_at" and report["labels"] == ["discard", "keep"]
    code, out, _ = run(
        stopping_replay_command,
        "--votes",
        str(votes),
        "--question",
        "verdict",
        "--rule",
        "predictive",
        "--confidence",
        "0.5",
    )
    assert code == 0
    assert {"saved_fraction", "confidence", "min_votes"} <= set(json.loads(out))


def test_stopping_replay_without_answered_at_says_file_order(tmp_path: Path) -> None:
    votes = write(tmp_path / "votes.csv", *[f"1,r{n},keep" for n in range(12)], header="item,annotator,value")
    code, out, _ = run(stopping_replay_command, "--votes", str(votes), "--rule", "curtail")
    report = json.loads(out)
    assert code == 0 and report["order"].startswith("file order") and report["items_below_quota"] == 1
    assert report["votes_used"] == 11


def test_stopping_replay_errors_name_file_line_and_field(tmp_path: Path) -> None:
    late = write(tmp_path / "late.csv", "1,ann,verdict,keep,yesterday")
    code, _, err = run(stopping_replay_command, "--votes", str(late), "--question", "verdict", "--rule", "curtail")
    assert code == 1 and err.strip() == f"{late}:2: answered_at: not an ISO 8601 time: 'yesterday'"
    crowded = write(tmp_path / "crowded.csv", *[f"1,r{n},verdict,keep,2025-01-01T10:0{n}:00" for n in range(4)])
    args = ["--votes", str(crowded), "--question", "verdict", "--rule", "curtail", "--quota", "3"]
    code, _, err = run(stopping_replay_command, *args)
    assert code == 1 and err.strip() == f"{crowded}:5: item: item '1' has more than --quota 3 votes; this is vote 4"


def test_commands_are_registered() -> None:
    from studio.cli import COMMAND_NAMES

    assert {command.name for command in COMMANDS} == {"consensus", "stopping-replay"} <= set(COMMAND_NAMES)


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_on_a_campaigns_votes_export(studied: Engine, db_url: str, tmp_path: Path) -> None:
    """What h2h export votes writes (a formula guard, every question, answered_at) is read as it is."""
    from studio.cli import build_cli

    exported = tmp_path / "votes.csv"
    args = ["export", "votes", "--campaign", "vote", "-o", str(exported), "--db", db_url]
    assert CliRunner().invoke(build_cli(), args).exit_code == 0
    output = tmp_path / "decisions.csv"
    args = ["--votes", str(exported), "--question", "verdict", "--method", "dawid-skene", "-o", str(output)]
    code, _, err = run(consensus_command, *args)
    assert code == 0, err
    export = read_table(exported)
    verdicts = export[(export["question"] == "verdict") & (export["value"].astype(str) != "")]
    decided = read_table(output)
    assert set(decided["item"]) == set(verdicts["item"]) and decided["votes"].sum() == len(verdicts)
    code, out, err = run(
        stopping_replay_command, "--votes", str(exported), "--question", "verdict", "--rule", "curtail"
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["order"] == "answered_at" and report["votes_total"] == len(verdicts)
    assert report["identical_fraction"] == 1.0
