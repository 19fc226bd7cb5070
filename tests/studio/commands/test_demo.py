"""studio.commands.demo and `h2h demo`: a fresh folder becomes a working store; running it again changes nothing."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlmodel import func, select

from pipeline.paths import demo_dir
from studio.commands.demo import (
    companion_url,
    demo_accounts,
    demo_password,
    point_demo_campaigns,
    prepare_demo,
    recorded_companion_url,
    start_demo_companion,
)
from studio.db import create_db_engine, read_session, write_session
from studio.models import AuditLog, Campaign, Item, LiveTurn, ResponseRow, User
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
        "demo-live_safety",
    }
    counts = table_counts(summary.database_url)
    assert counts["User"] == 3 + 2 + 3 and counts["ResponseRow"] == 18 and counts["Campaign"] == 7
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
    assert "demo-live_safety" in result.output
    assert "the live campaign talks to the stand-in companion at http://127.0.0.1:8765/v1" in result.output
    assert "run `h2h standin-companion --port 8765`" in result.output


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


def test_the_live_campaign_talks_to_the_stand_in_companion_without_a_key(prepared: tuple[Path, object]) -> None:
    _folder, summary = prepared
    engine = create_db_engine(summary.database_url)
    try:
        with read_session(engine) as session:
            live = session.exec(select(Campaign).where(Campaign.name == "demo-live_safety")).one()
            items = session.exec(select(Item.scenario_id).where(Item.campaign_id == live.id)).all()
    finally:
        engine.dispose()
    assert live.target_kind == "live_session"
    assert live.live_endpoint == {
        "model": "standin-companion",
        "base_url": "http://127.0.0.1:8765/v1",
        "api_key_env": "H2H_LIVE_API_KEY",
        "token_budget": None,
        "classifier_url": None,
    }
    assert items == ["demo-dialogue_emotion-003"]  # the sample's one high-risk scenario
    assert summary.companion_url == "http://127.0.0.1:8765/v1"


def held_port() -> socket.socket:
    """A listening socket on a free port of 127.0.0.1: that port is taken until it is closed."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    return holder


def test_the_demo_stand_in_takes_a_free_port_when_its_own_is_taken_and_a_rater_can_talk_at_once(
    sample_source: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The recorded port is taken (another program): the stand-in listens elsewhere and the campaign follows it, so a
    rater's message gets the stand-in's reply through the use cases; the next start reuses the new port unchanged."""
    from studio.usecases.context import RequestContext
    from studio.usecases.live import send_message, start_session

    folder = tmp_path_factory.mktemp("demo-live")
    summary = prepare_demo(folder, annotators=1, experts=1, source=sample_source)
    engine = create_db_engine(summary.database_url)
    holder = held_port()
    try:
        taken = companion_url(holder.getsockname()[1])
        assert point_demo_campaigns(engine, taken) == ["demo-live_safety"]
        companion = start_demo_companion(summary.database_url, token_delay_s=0)
        try:
            assert companion.base_url != taken and recorded_companion_url(engine) == companion.base_url
            with write_session(engine) as session:
                token = login(session, username="annotator01", password=demo_password("annotator01"))
                caller = user_for_token(session, token=token)
                assert caller is not None
                opened = start_session(session, caller=caller, campaign="demo-live_safety", lease_seconds=600)
            assert opened is not None and opened[1]
            view = opened[0]
            streamed = list(
                send_message(RequestContext(engine, token), session_id=view.session_id, text="Hi, are you there?",
                             lease_seconds=600)
            )  # fmt: skip
            stored = streamed[-1]
            deltas = "".join(part for part in streamed if isinstance(part, str))
            assert not isinstance(stored, str) and stored.role == "assistant" and stored.text == deltas
            assert "Hi, are you there?" in json.dumps(companion.requests[-1], ensure_ascii=False)
            with read_session(engine) as session:
                query = select(LiveTurn.number, LiveTurn.role).where(LiveTurn.session_id == view.session_id)
                turns = sorted(session.exec(query).all())
            assert turns == [(1, "assistant"), (1, "user")]  # the message and its reply share number 1
        finally:
            companion.stop()
        moved = companion.base_url
        again = start_demo_companion(summary.database_url, token_delay_s=0)
        again.stop()
        assert again.base_url == moved == recorded_companion_url(engine)  # its port is free again: no change
        with read_session(engine) as session:
            audit = session.exec(select(AuditLog.detail).where(AuditLog.action == "campaign.companion")).all()
        assert audit == [{"base_url": taken}, {"base_url": moved}]
    finally:
        holder.close()
        engine.dispose()
