"""The live use cases end to end on the stand-in companion: the crisis tripwire and the SAP check of the reply per
variant, and the prompt the companion receives (the batch prompt of ``h2h generate``, then the conversation)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, select
from sqlmodel import col

from pipeline.dataset import load_scenarios
from pipeline.live.standin import StandinCompanion
from pipeline.paths import data_dir
from pipeline.prompts import build_messages
from pipeline.records import Variant
from studio.db import read_session
from studio.models import Item, LiveSession, LiveTurn
from tests.studio.live_helpers import (
    CRISIS_TEXT,
    ONE_SCENARIO,
    ORDINARY_TEXT,
    context_of,
    live_campaign,
    say,
    start,
)


@pytest.fixture
def standin() -> Iterator[StandinCompanion]:
    with StandinCompanion(token_delay_s=0.0) as companion:
        yield companion


def _stored(engine: Engine, session_id: str) -> tuple[LiveSession, list[LiveTurn]]:
    with read_session(engine) as session:
        live = session.get(LiveSession, session_id)
        assert live is not None
        query = select(LiveTurn).where(col(LiveTurn.session_id) == session_id).order_by(col(LiveTurn.id))
        return live, list(session.execute(query).scalars())


def test_a_crisis_message_flags_the_session_and_the_with_sap_reply_passes(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    (rater, _other) = live_campaign(engine, password_hash, base_url=standin.base_url, variants=["with_sap"])
    context, session_id = context_of(engine, rater), start(engine, rater).session_id
    _text, reply = say(context, session_id, CRISIS_TEXT)
    assert "988" in reply.text
    live, (user, answer) = _stored(engine, session_id)
    assert live.variant == "with_sap" and live.needs_review
    assert user.crisis and all(signal for signal in user.crisis)
    assert answer.sap_check is not None and answer.sap_check["passed"] is True and answer.sap_check["missing"] == []
    assert answer.sap_check["risk_check"] and answer.sap_check["resources"] and not answer.sap_check["dismissive"]


def test_the_without_sap_reply_to_a_crisis_fails_the_check(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    (rater, _other) = live_campaign(engine, password_hash, base_url=standin.base_url, variants=["without_sap"])
    context, session_id = context_of(engine, rater), start(engine, rater).session_id
    say(context, session_id, ORDINARY_TEXT)
    live, (ordinary, ordinary_reply) = _stored(engine, session_id)
    assert ordinary.crisis == [] and ordinary_reply.sap_check is None and not live.needs_review
    say(context, session_id, CRISIS_TEXT)
    live, turns = _stored(engine, session_id)
    assert live.variant == "without_sap" and live.needs_review and turns[2].crisis
    check = turns[3].sap_check
    assert check is not None and check["passed"] is False
    assert "dismissive" in check["missing"] and "changes the topic" in check["missing"]


def test_the_first_turn_is_the_batch_prompt_and_later_turns_append(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    (rater, _other) = live_campaign(engine, password_hash, base_url=standin.base_url, selection=ONE_SCENARIO)
    context, opened = context_of(engine, rater), start(engine, rater)
    with read_session(engine) as session:
        item = session.get(Item, opened.item_id)
        live = session.get(LiveSession, opened.session_id)
        assert item is not None and live is not None
        scenario_id = item.scenario_id
        variant: Variant = "with_sap" if live.variant == "with_sap" else "without_sap"
    scenario = next(s for s in load_scenarios(data_dir() / "demo" / "scenarios.jsonl") if s.id == scenario_id)
    assert opened.content["opening_line"] == scenario.user_input
    _text, first = say(context, opened.session_id, scenario.user_input)
    batch = build_messages(scenario, variant)
    assert standin.requests[-1]["messages"] == batch
    assert standin.requests[-1]["model"] == "standin-companion" and standin.requests[-1]["stream"] is True
    say(context, opened.session_id, ORDINARY_TEXT)
    following = [*batch, {"role": "assistant", "content": first.text}, {"role": "user", "content": ORDINARY_TEXT}]
    assert standin.requests[-1]["messages"] == following
