"""``h2h ingest-curation`` on the real store (SQLite and PostgreSQL): a refine folder made by the pipeline itself
is stored (flags, PII before/after, LLM verdicts, queue ranks), strictly (every bad line named, nothing stored) and
idempotently; campaigns over it show the most uncertain scenarios first; annotators' items carry no LLM verdict; the
LLM rater's agreement with the humans equals a hand-computed value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, func, select

from studio.cli import build_cli
from studio.db import read_session, write_session
from studio.models import Campaign, CurationReport, Item, PairJudgmentRow, PrescreenRow, ScenarioRow, UserPublic
from studio.services.campaigns import TargetSelection, create_campaign
from studio.services.curation_ingest import ingest_curation
from studio.services.ingest import IngestError
from studio.services.listing import ScenarioFilters
from studio.services.rater import cohen_kappa, llm_human_agreement, pair_inputs
from studio.usecases import annotate, curate
from studio.workflows import load_schemas
from tests.studio.curation_run import PHONE, REASON, vote_and_judge, write_refine_dir
from tests.studio.helpers import add_people


def count(engine: Engine, model: Any) -> int:
    with read_session(engine) as session:
        return int(session.execute(select(func.count()).select_from(model)).scalar_one())


@pytest.fixture
def refined(corpus: Engine, tmp_path: Path) -> tuple[Engine, Path]:
    """The corpus (run ingested) and a refine folder over the same scenarios, ingested."""
    folder = write_refine_dir(tmp_path / "curation").root
    ingest_curation(corpus, folder)
    return corpus, folder


def test_a_refine_folder_is_stored_with_flags_pii_and_verdicts(refined: tuple[Engine, Path]) -> None:
    engine, _ = refined
    with read_session(engine) as session:
        dlg1 = session.get(CurationReport, "dlg-1")
        verdict = session.get(PrescreenRow, "dlg-1")
        scenario = session.get(ScenarioRow, "dlg-1")
        ranks = dict(session.execute(select(PrescreenRow.scenario_id, PrescreenRow.queue_rank)).all())
    assert dlg1 is not None and verdict is not None and scenario is not None
    [phone] = dlg1.flags
    assert (phone["kind"], phone["entity"], phone["before"], phone["after"]) == ("pii", "PHONE", PHONE, "[PHONE]")
    assert dlg1.flag_kinds == ["pii"] and dlg1.edits[0]["after"].endswith("[PHONE]。")
    assert PHONE not in scenario.user_input and "[PHONE]" in scenario.user_input  # the cleaned text is stored
    assert (verdict.verdict, verdict.votes, verdict.uncertainty, verdict.reasons) == (
        "revise",
        {"keep": 1, "revise": 2, "discard": 0},
        0.58,
        [REASON],
    )
    assert ranks == {"iti-1": 1, "dlg-1": 2, "dlg-3": 3, "iti-3": 4, "dlg-2": 5, "iti-2": 6}


def test_a_second_run_changes_nothing(refined: tuple[Engine, Path]) -> None:
    engine, folder = refined
    with read_session(engine) as session:
        before = [row.model_dump() for row in session.execute(select(PrescreenRow)).scalars()]
    again = ingest_curation(engine, folder)
    assert again.model_dump(exclude={"repeated_lines"}) == {
        "scenarios_added": 0,
        "scenarios_updated": 0,
        "reports_written": 0,
        "prescreen_written": 0,
        "pair_judgments_written": 0,
    }
    with read_session(engine) as session:
        assert [row.model_dump() for row in session.execute(select(PrescreenRow)).scalars()] == before


def test_bad_lines_are_all_named_and_nothing_is_stored(engine: Engine, tmp_path: Path) -> None:
    folder = write_refine_dir(tmp_path / "bad").root
    report = folder / "preprocess_report.jsonl"
    lines = report.read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].replace('"flags": []', '"flags": [{"kind": "pii"}]')
    lines[2] = "{not json"
    report.write_text("\n".join([*lines, '{"id": "ghost", "flags": []}']) + "\n", encoding="utf-8")
    with (folder / "prescreen.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"id": "dlg-1", "verdict": "maybe"}) + "\n")
    with pytest.raises(IngestError) as refused:
        ingest_curation(engine, folder)
    shown = [str(problem) for problem in refused.value.problems]
    assert any(line.startswith(f"{report}:2: flags.0.pii.entity: Field required") for line in shown), shown
    assert any(line.startswith(f"{report}:3: ") and "JSON" in line for line in shown), shown
    assert f"{report}:7: id: no scenario 'ghost' in cleaned.jsonl" in shown
    assert any(line.startswith(f"{folder / 'prescreen.jsonl'}:7: verdict") for line in shown), shown
    for model in (ScenarioRow, CurationReport, PrescreenRow):
        assert count(engine, model) == 0


def test_the_command_lists_problems_and_reports_what_it_stored(engine: Engine, db_url: str, tmp_path: Path) -> None:
    folder = write_refine_dir(tmp_path / "cli").root
    runner = CliRunner()
    done = runner.invoke(build_cli(), ["ingest-curation", str(folder), "--db", db_url])
    assert done.exit_code == 0, done.output
    assert "scenarios_added: 6" in done.output and "prescreen_written: 6" in done.output
    again = runner.invoke(build_cli(), ["ingest-curation", str(folder), "--db", db_url])
    assert "reports_written: 0" in again.output and "prescreen_written: 0" in again.output
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"id": "nope"}\n', encoding="utf-8")
    refused = runner.invoke(build_cli(), ["ingest-curation", str(folder), "--pairs", str(pairs), "--db", db_url])
    assert refused.exit_code == 1 and f"{pairs}:1: winner: Field required" in refused.output


def test_campaigns_show_the_most_uncertain_scenarios_first(
    refined: tuple[Engine, Path], users: dict[str, UserPublic], password_hash: str
) -> None:
    engine, _ = refined
    with write_session(engine) as session:
        create_campaign(session, name="vote-u", schema=load_schemas()["crowd_vote"], people_per_item=1)
    with read_session(engine) as session:
        order = list(
            session.execute(
                select(Item.scenario_id).join(Campaign).where(Campaign.name == "vote-u").order_by(Item.position)
            ).scalars()
        )
    assert order == ["iti-1", "dlg-1", "dlg-3", "iti-3", "dlg-2", "iti-2"]
    [voter] = add_people(engine, password_hash, ["voter-u"], "annotator")
    with write_session(engine) as session:
        view = annotate.next_item(session, caller=voter, campaign="vote-u", lease_seconds=60)
    assert view is not None
    payload = view.model_dump_json()
    assert json.loads(payload)["content"]["user_input"] == "我和同事[NAME_1]周末去杭州玩两天"  # iti-1, served first
    for secret in ("uncertainty", "needs_human", "judge-test", "as the samples say", "evidence", "votes"):
        assert secret not in payload  # annotators never see the LLM's verdict
    # ...while the curator page shows it beside the crowd.
    with read_session(engine) as session:
        detail = curate.scenario_detail(session, caller=users["curator"], scenario_id="iti-1")
    assert detail["findings"]["prescreen"]["verdict"] == "discard"
    assert detail["findings"]["flags"][0]["before"] == "王小明"


def test_the_llm_rater_agrees_with_the_humans_as_computed_by_hand(
    refined: tuple[Engine, Path], password_hash: str, tmp_path: Path
) -> None:
    engine, folder = refined
    selection = TargetSelection(subtasks=["dialogue_base", "dialogue_emotion"])
    with write_session(engine) as session:
        create_campaign(
            session, name="pairs", schema=load_schemas()["pairwise"], people_per_item=3, selection=selection
        )
    people = add_people(engine, password_hash, ["p1", "p2", "p3"], "annotator")
    pairs_file = tmp_path / "pair_verdicts.jsonl"
    items = vote_and_judge(engine, "pairs", people, pairs_file)
    assert len(items) == 8
    with read_session(engine) as session:
        inputs = pair_inputs(session, campaign="pairs")
    assert ingest_curation(engine, folder, pairs=pairs_file).pair_judgments_written == 5
    assert count(engine, PairJudgmentRow) == 5
    with read_session(engine) as session:
        agreement = llm_human_agreement(session, campaign="pairs")
    # Compared: (a, a), (a, b), (tie, tie): 2 of 3 agree. Chance: LLM a 2/3, tie 1/3; people a, b, tie 1/3 each:
    # pe = 2/9 + 1/9 = 1/3, kappa = (2/3 - 1/3) / (1 - 1/3) = 1/2. Votes on the 4 items with a winner: 2+0+1+2 of 12.
    assert agreement.model_dump() == {
        "campaign": "pairs",
        "items_with_llm": 5,
        "llm_without_winner": 1,
        "humans_split": 1,
        "items_compared": 3,
        "agreement": pytest.approx(2 / 3),
        "cohen_kappa": pytest.approx(0.5),
        "human_votes": 12,
        "vote_agreement": pytest.approx(5 / 12),
    }
    assert [pair.id for pair in inputs] == [f"item-{item.id}" for item in items]
    assert cohen_kappa([("a", "a"), ("a", "a")]) is None


def test_the_command_prints_the_agreement(refined: tuple[Engine, Path], db_url: str) -> None:
    engine, _ = refined
    with write_session(engine) as session:
        create_campaign(session, name="pairs-cli", schema=load_schemas()["pairwise"])
    done = CliRunner().invoke(build_cli(), ["rater-agreement", "--campaign", "pairs-cli", "--db", db_url])
    assert done.exit_code == 0, done.output
    assert "items_with_llm: 0" in done.output and "agreement: None" in done.output
    refused = CliRunner().invoke(build_cli(), ["rater-agreement", "--campaign", "vote", "--db", db_url])
    assert refused.exit_code != 0


def test_the_listing_orders_by_uncertainty_and_filters_by_flags(
    refined: tuple[Engine, Path], users: dict[str, UserPublic]
) -> None:
    engine, _ = refined
    with read_session(engine) as session:
        uncertain = curate.browse_scenarios(
            session, caller=users["researcher"], filters=ScenarioFilters(order="uncertainty")
        )
        flagged = curate.browse_scenarios(session, caller=users["curator"], filters=ScenarioFilters(flagged=True))
        clean = curate.browse_scenarios(session, caller=users["curator"], filters=ScenarioFilters(flagged=False))
    assert [(row["id"], row["uncertainty"]) for row in uncertain.rows[:3]] == [
        ("iti-1", 1.0),
        ("dlg-1", 0.58),
        ("dlg-3", 0.58),
    ]
    assert uncertain.rows[0]["llm_verdict"] == "discard" and uncertain.rows[0]["flags"] == ["pii"]
    assert [row["id"] for row in flagged.rows] == ["dlg-1", "iti-1"]
    assert [row["id"] for row in clean.rows] == ["dlg-2", "dlg-3", "iti-2", "iti-3"]
