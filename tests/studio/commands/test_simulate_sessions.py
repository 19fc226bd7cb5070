"""``h2h simulate-sessions``: the command over a real store, the real stand-in companion and a scripted user model
(both real HTTP servers on 127.0.0.1); a run killed mid-way and rerun ends as a clean run does."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import Engine, func, select
from sqlmodel import col

from pipeline.live.standin import StandinCompanion
from studio.cli import build_cli
from studio.db import read_session, write_session
from studio.models import Answer, LiveSession, LiveTurn
from studio.services.campaigns import create_campaign
from studio.services.live_endpoint import LiveEndpointConfig
from tests.studio.live_helpers import LIVE_CAMPAIGN, ONE_SCENARIO, live_campaign, live_schema
from tests.studio.services.test_live_simulated import USER_MODEL, ScriptedUser, shape

H2H = "import sys; from studio.cli import main; sys.argv = ['h2h', *sys.argv[1:]]; main()"


@pytest.fixture
def scripted() -> Iterator[ScriptedUser]:
    with ScriptedUser() as server:
        yield server


def arguments(db_url: str, user: ScriptedUser, *, sessions: int, campaign: str = LIVE_CAMPAIGN) -> list[str]:
    return [
        "simulate-sessions",
        f"--campaign={campaign}",
        f"--user-model={USER_MODEL}",
        f"--user-base-url={user.base_url}",
        f"--sessions={sessions}",
        "--turns=3",
        "--seed=1",
        "--no-progress",
        f"--db={db_url}",
    ]


def h2h(*args: str) -> Result:
    return CliRunner().invoke(build_cli(), list(args), catch_exceptions=False)


def second_campaign(engine: Engine, companion: StandinCompanion, name: str) -> None:
    """Another live campaign over the same scenario (its own item), for a clean run beside the resumed one."""
    config = LiveEndpointConfig(model="standin-companion", base_url=companion.base_url)
    with write_session(engine) as session:
        create_campaign(
            session,
            name=name,
            schema=live_schema(min_turns=2, max_turns=4),
            selection=ONE_SCENARIO,
            live_endpoint=config,
        )


def test_the_command_stores_the_sessions_and_prints_a_summary(
    db_url: str, engine: Engine, password_hash: str, scripted: ScriptedUser
) -> None:
    with StandinCompanion(token_delay_s=0) as companion:
        live_campaign(
            engine, password_hash, base_url=companion.base_url, selection=ONE_SCENARIO, min_turns=2, max_turns=4
        )
        first = h2h(*arguments(db_url, scripted, sessions=2))
        second = h2h(*[argument for argument in arguments(db_url, scripted, sessions=4) if argument != "--no-progress"])

    assert first.exit_code == 0, first.output
    assert "sessions: 100%" in second.stderr and "2/2" in second.stderr  # the bar counts this run's sessions
    summary = json.loads(second.stdout.strip().splitlines()[-1])
    assert summary["sessions"] == 4 and summary["added"] == 2 and summary["turns"] == 12
    assert summary["variants"] == {"with_sap": 2, "without_sap": 2} and summary["rated"] == 4
    with read_session(engine) as session:
        assert session.execute(select(func.count()).select_from(Answer)).scalar() == 0


def test_bad_turns_and_an_unreachable_user_model_are_clear_errors(
    db_url: str, engine: Engine, password_hash: str, scripted: ScriptedUser
) -> None:
    with StandinCompanion(token_delay_s=0) as companion:
        live_campaign(
            engine, password_hash, base_url=companion.base_url, selection=ONE_SCENARIO, min_turns=2, max_turns=4
        )
        too_many = h2h(*[*arguments(db_url, scripted, sessions=1), "--turns=9"])
        down = arguments(db_url, scripted, sessions=1)
        down[3] = "--user-base-url=http://127.0.0.1:9/v1"
        unreachable = h2h(*down)

    assert too_many.exit_code == 1 and "turns: must lie within 2..4" in too_many.output
    assert (
        unreachable.exit_code == 1 and "--user-base-url" in unreachable.output and "unreachable" in unreachable.output
    )


def _cut_off(engine: Engine) -> bool:
    """A session is stored part-way (some turns, not rated) after another one was rated: kill now."""
    with read_session(engine) as session:
        rated = session.execute(
            select(func.count()).select_from(LiveSession).where(col(LiveSession.status) == "rated")
        ).scalar()
        partial = session.execute(
            select(func.count(func.distinct(col(LiveTurn.session_id))))
            .join(LiveSession, col(LiveSession.id) == col(LiveTurn.session_id))
            .where(col(LiveSession.status) == "open")
        ).scalar()
    return bool(rated) and bool(partial)


def test_a_killed_run_rerun_ends_as_a_clean_run_does(
    db_url: str, engine: Engine, password_hash: str, scripted: ScriptedUser
) -> None:
    with StandinCompanion(token_delay_s=0.01) as companion:
        live_campaign(
            engine, password_hash, base_url=companion.base_url, selection=ONE_SCENARIO, min_turns=2, max_turns=4
        )
        second_campaign(engine, companion, "clean")
        command = [sys.executable, "-c", H2H, *arguments(db_url, scripted, sessions=4)]
        running = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 120
            while not _cut_off(engine) and running.poll() is None and time.monotonic() < deadline:
                time.sleep(0.02)
        finally:
            running.kill()
            running.wait()
        killed = shape(engine)
        companion.token_delay_s = 0  # slow only while the first run was to be cut off
        resumed = h2h(*arguments(db_url, scripted, sessions=4))
        clean = h2h(*arguments(db_url, scripted, sessions=4, campaign="clean"))

    assert killed[0] < 4 or "open" in killed[3], f"the run was not cut off: {killed}"
    assert resumed.exit_code == 0 and clean.exit_code == 0, resumed.output + clean.output
    assert json.loads(resumed.output.strip().splitlines()[-1])["resumed"] >= 1
    assert (
        shape(engine) == shape(engine, "clean") == (4, [3, 3, 3, 3], {"with_sap": 2, "without_sap": 2}, ["rated"] * 4)
    )
