"""h2h export votes: one CSV row per answer per question; formula-like cells neutralised."""

from __future__ import annotations

import csv
from pathlib import Path

from click.testing import CliRunner
from sqlalchemy import Engine

from studio.cli import build_cli
from studio.db import write_session
from studio.exports_votes import COLUMNS, export_votes, neutralise_cell
from studio.models import CampaignPublic, UserPublic
from studio.services.answers import submit_answer
from studio.services.queue import next_item


def test_neutralise_cell_prefixes_formula_starts_only() -> None:
    assert [neutralise_cell(v) for v in ("=1+1", "+1", "-2", "@SUM(A1)", "\tx", "ok", "中文", None, 3)] == [
        "'=1+1",
        "'+1",
        "'-2",
        "'@SUM(A1)",
        "'\tx",
        "ok",
        "中文",
        "",
        "3",
    ]


def test_export_votes_writes_one_row_per_answer_and_question(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], db_url: str, tmp_path: Path
) -> None:
    person = users["annotator"]
    comments = ['=HYPERLINK("http://evil")', "好的"]
    for number, comment in enumerate(comments):
        with write_session(corpus) as session:
            view = next_item(session, campaign="vote", user=person)
            submit_answer(
                session,
                campaign="vote",
                user=person,
                item_id=view.item_id,
                lease_id=view.lease_id,
                submission_id=f"s{number}",
                seconds_spent=2.0,
                answers={"verdict": "keep", "subtask_label": "dialogue_base", "comment": comment},
            )
    output = tmp_path / "votes.csv"
    assert export_votes(corpus, "vote", output) == 6
    with output.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == COLUMNS
    assert {row["question"] for row in rows} == {"verdict", "subtask_label", "comment"}
    assert [row["value"] for row in rows if row["question"] == "comment"] == ['\'=HYPERLINK("http://evil")', "好的"]
    assert {row["annotator"] for row in rows} == {"annotator"} and {row["seconds_spent"] for row in rows} == {"2.0"}
    assert rows[0]["target_id"] == "dlg-1" and rows[0]["campaign"] == "vote"
    cli_output = tmp_path / "cli.csv"
    result = CliRunner().invoke(
        build_cli(), ["export", "votes", "--campaign", "vote", "--db", db_url, "-o", str(cli_output)]
    )
    assert result.exit_code == 0, result.output
    assert cli_output.read_bytes() == output.read_bytes()
