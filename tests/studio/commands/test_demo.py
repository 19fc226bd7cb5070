"""studio.commands.demo and `h2h demo`: a fresh folder becomes a working store; running it again changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlmodel import func, select

from pipeline.paths import demo_dir
from studio.commands.demo import demo_accounts, demo_password, prepare_demo
from studio.db import create_db_engine, read_session, write_session
from studio.models import Campaign, Item, ResponseRow, User
from studio.services.auth import login, user_for_token

#: A slice of the bundled demo data: a high-risk dialogue, a plain dialogue and a level-I itinerary.
SAMPLE_IDS = ("demo-dialogue_base-001", "demo-dialogue_emotion-003", "demo-itinerary_basic-001")


@pytest.fixture(scope="module")
def sample_source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small copy of the bundled demo data (same format, three scenarios and their 18 responses)."""
    folder = tmp_path_factory.mktemp("demo-source")
    for name, key in (("scenarios.jsonl", "id"), ("responses.jsonl", "scenario_id")):
        lines = (demo_dir() / name).read_text(encoding="utf-8").splitlines()
        kept = [line for line in lines if json.loads(line)[key] in SAMPLE_IDS]
        (folder / name).write_text("\n".join(kept) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def prepared(sample_source: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    folder = tmp_path_factory.mktemp("demo")
    summary = prepare_demo(folder, annotators=3, experts=2, source=sample_source)
    return folder, summary


def table_counts(database_url: str) -> dict[str, int]:
    engine = create_db_engine(database_url)
    try:
        with read_session(engine) as session:
            return {
                table.__name__: session.exec(select(func.count()).select_from(table)).one()
                for table in (User, Campaign, Item, ResponseRow)
            }
    finally:
        engine.dispose()


def test_demo_accounts_cover_every_role_with_documented_passwords() -> None:
    accounts = demo_accounts()
    names = [account.username for account in accounts]
    assert len(names) == len(set(names)) == 56
    assert names[0] == "annotator01" and names[49] == "annotator50"
    assert {account.role for account in accounts} == {"annotator", "expert", "curator", "researcher", "admin"}
    assert sum(account.role == "expert" for account in accounts) == 3
    assert all(
        account.password == demo_password(account.username) == f"{account.username}-demo" for account in accounts
    )


def test_prepare_demo_scores_flags_ingests_and_opens_a_campaign_per_workflow(prepared: tuple[Path, object]) -> None:
    folder, summary = prepared
    assert summary.database_url == f"sqlite:///{(folder / 'studio.sqlite').resolve()}"
    run_files = {path.name for path in (folder / "run").iterdir()}
    assert {"scenarios.jsonl", "responses.jsonl", "scores.jsonl", "results.jsonl"} <= run_files
    results = [json.loads(line) for line in (folder / "run" / "results.jsonl").read_text().splitlines()]
    assert summary.scored == len(results) == 18
    itinerary = [result for result in results if result["subtask"] == "itinerary_basic"]
    assert len(itinerary) == 6 and all(result["needs_adjudication"] for result in itinerary)
    assert summary.flagged == 6
    assert all(result["signature"]["embedder"].startswith("minilm") for result in results)
    assert set(summary.campaigns) == {
        "demo-crowd_vote",
        "demo-expert_review",
        "demo-sap_safety",
        "demo-adjudication",
        "demo-instruction_following",
        "demo-pairwise",
    }
    counts = table_counts(summary.database_url)
    assert counts["User"] == 3 + 2 + 3 and counts["ResponseRow"] == 18 and counts["Campaign"] == 6
    engine = create_db_engine(summary.database_url)
    try:
        with read_session(engine) as session:
            sized = {row.name: (row.people_per_item, row.assignment) for row in session.exec(select(Campaign)).all()}
    finally:
        engine.dispose()
    # A handful of people trying the demo reach decided items and agreement figures: 5 votes, items filled first.
    assert sized["demo-crowd_vote"] == (5, "fill") and sized["demo-expert_review"] == (3, "fill")


def test_demo_accounts_can_sign_in_with_their_demo_password(prepared: tuple[Path, object]) -> None:
    _folder, summary = prepared
    engine = create_db_engine(summary.database_url)
    try:
        with write_session(engine) as session:
            token = login(session, username="expert02", password=demo_password("expert02"))
        with read_session(engine) as session:
            user = user_for_token(session, token=token)
        assert user is not None and user.username == "expert02" and user.role == "expert"
    finally:
        engine.dispose()


def test_running_the_demo_again_reuses_everything(prepared: tuple[Path, object], sample_source: Path) -> None:
    folder, summary = prepared
    scores_before = (folder / "run" / "scores.jsonl").read_bytes()
    counts_before = table_counts(summary.database_url)
    again = prepare_demo(folder, annotators=3, experts=2, source=sample_source)
    assert again.campaigns == summary.campaigns
    assert table_counts(again.database_url) == counts_before
    assert (folder / "run" / "scores.jsonl").read_bytes() == scores_before


def test_demo_command_without_serving_prints_the_accounts(prepared: tuple[Path, object]) -> None:
    """Runs over the prepared folder: its run directory already holds the sample, which the command keeps."""
    from studio.cli import build_cli

    folder, summary = prepared
    result = CliRunner().invoke(build_cli(), ["demo", "--no-serve", "--dir", str(folder), "--annotators", "3"])
    assert result.exit_code == 0, result.output
    assert f"store: {summary.database_url}" in result.output
    assert "annotator03 / annotator03-demo / annotator" in result.output
    assert "admin / admin-demo / admin" in result.output
    assert "campaigns: demo-adjudication" in result.output
    assert "(18 results, 6 flagged)" in result.output


def test_a_rerun_does_not_print_demo_passwords_that_stopped_working(
    sample_source: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """After an admin reset annotator02's password and deactivated annotator03, running the demo again printed their
    demo passwords as if they still worked (a newcomer's finding)."""
    from studio.cli import build_cli
    from studio.db import write_session
    from studio.services.auth import reset_password, set_active

    folder = tmp_path_factory.mktemp("demo-rerun")
    summary = prepare_demo(folder, annotators=3, experts=1, source=sample_source)
    engine = create_db_engine(summary.database_url)
    try:
        with write_session(engine) as session:
            reset_password(session, username="annotator02", password="a new password", actor="admin")
            set_active(session, username="annotator03", active=False, actor="admin")
    finally:
        engine.dispose()
    result = CliRunner().invoke(build_cli(), ["demo", "--no-serve", "--dir", str(folder), "--annotators", "3"])
    assert result.exit_code == 0, result.output
    assert "annotator01 / annotator01-demo / annotator" in result.output
    assert "annotator02 / (password changed since the demo set it) / annotator" in result.output
    assert "annotator03 / (deactivated) / annotator" in result.output
    assert "annotator02-demo" not in result.output and "annotator03-demo" not in result.output
