"""h2h export votes: one row per answer per question, naming what was rated (model and variant; both sides of a pair
in the order that person saw them); CSV in UTF-8 with a BOM (Excel reads Chinese right), formula-like cells
neutralised."""

from __future__ import annotations

import csv
from pathlib import Path

from click.testing import CliRunner
from sqlalchemy import Engine, select

from studio.cli import build_cli
from studio.db import read_session, write_session
from studio.models import Campaign, CampaignPublic, Item, ResponseRow, UserPublic
from studio.services.answers import submit_answer
from studio.services.campaigns import create_campaign
from studio.services.queue import next_item, pair_order
from studio.services.votes_export import COLUMNS, export_votes, neutralise_cell
from studio.workflows import load_schemas
from tests.studio.helpers import add_people, answer_all

UTF8_BOM = b"\xef\xbb\xbf"


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
    assert output.read_bytes().startswith(UTF8_BOM + b"campaign,")  # Excel takes it for UTF-8 only with the mark
    with output.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert tuple(rows[0]) == COLUMNS
    assert {row[column] for row in rows for column in ("model", "variant", "model_a", "model_b")} == {""}
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


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return list(csv.DictReader(handle))


def test_a_response_campaign_exports_each_answers_model_and_variant(
    corpus: Engine, users: dict[str, UserPublic], password_hash: str, tmp_path: Path
) -> None:
    with write_session(corpus) as session:
        create_campaign(session, name="sap", schema=load_schemas()["sap_safety"], people_per_item=3)
    raters = add_people(corpus, password_hash, ["r-1", "r-2", "r-3"], "annotator")
    answer_all(corpus, "sap", raters, lambda _i, _r, _p: {"safety": 4, "violation": "no"})
    rows = read_rows(tmp_path / "sap.csv") if export_votes(corpus, "sap", tmp_path / "sap.csv") else []
    with read_session(corpus) as session:
        rated = {
            str(item.id): (response.model, response.variant)
            for item, response in session.execute(
                select(Item, ResponseRow).join(ResponseRow, ResponseRow.id == Item.response_id)
            ).all()
        }
    assert len(rows) == 2 * 3 * 4  # two questions answered by three people on four responses of dlg-2
    assert {(row["model"], row["variant"]) for row in rows} == {
        (model, variant) for model in ("model-alpha", "model-beta") for variant in ("with_sap", "without_sap")
    }
    for row in rows:
        assert (row["model"], row["variant"]) == rated[row["item"]] and row["model_a"] == row["model_b"] == ""


def test_a_pairwise_answer_exports_both_sides_in_the_order_shown_and_the_choice_as_made(
    corpus: Engine, users: dict[str, UserPublic], password_hash: str, tmp_path: Path
) -> None:
    with write_session(corpus) as session:
        create_campaign(session, name="pairs", schema=load_schemas()["pairwise"], people_per_item=2)
    people = add_people(corpus, password_hash, ["p-1", "p-2"], "annotator")
    # p-1 always picks what they saw as A, p-2 what they saw as B.
    answer_all(corpus, "pairs", people, lambda _i, _r, person: {"preference": "A" if person.username == "p-1" else "B"})
    export_votes(corpus, "pairs", tmp_path / "pairs.jsonl")
    export_votes(corpus, "pairs", tmp_path / "pairs.csv")
    rows = [row for row in read_rows(tmp_path / "pairs.csv") if row["question"] == "preference"]
    with read_session(corpus) as session:
        campaign = session.execute(select(Campaign).where(Campaign.name == "pairs")).scalars().one()
        items = {str(item.id): item for item in session.execute(select(Item)).scalars()}
        responses = {row.id: row for row in session.execute(select(ResponseRow)).scalars()}
        ids = {person.username: person.id for person in people}
        orders = {
            (row["item"], row["annotator"]): pair_order(campaign, ids[row["annotator"]], items[row["item"]])
            for row in rows
        }
    assert rows and {row["value_shown"] for row in rows} == {"A", "B"}
    swapped = 0
    for row in rows:
        shown_a, shown_b = orders[(row["item"], row["annotator"])]
        swapped += shown_a != items[row["item"]].response_id
        assert (row["model_a"], row["variant_a"]) == (responses[shown_a].model, responses[shown_a].variant)
        assert (row["model_b"], row["variant_b"]) == (responses[shown_b].model, responses[shown_b].variant)
        assert row["value_shown"] == ("A" if row["annotator"] == "p-1" else "B")
        assert row["value"] == str(shown_a if row["value_shown"] == "A" else shown_b)  # stored: the chosen response
        assert row["model"] == row["variant"] == ""
    assert 0 < swapped < len(rows)  # some people saw a pair the other way round: the order is theirs, not stored
