"""The live use cases end to end on the stand-in companion: the crisis tripwire and the SAP check of the reply per
variant, and the prompt the companion receives (the batch prompt of ``h2h generate``, then the conversation)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlmodel import col

from pipeline.dataset import load_scenarios
from pipeline.live.standin import StandinCompanion
from pipeline.paths import data_dir
from pipeline.prompts import build_messages
from pipeline.records import Variant
from studio.db import lock_item, read_session, write_session
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


class _Classifier(BaseHTTPRequestHandler):
    """A crisis classifier that says "crisis" to everything, after taking the store's write lock and the item's lock
    (so it answers within its timeout only when no write transaction of the message is open meanwhile)."""

    engine: Engine
    item_id: int
    seen: list[str]

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's method name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with write_session(self.engine) as session:
            lock_item(session, self.item_id)
        self.seen.append(body["text"])
        data = json.dumps({"crisis": True, "kind": "self_harm", "score": 0.9}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's parameter name
        return


def test_the_crisis_classifier_is_asked_outside_the_write_transaction(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    handler = type("Classifier", (_Classifier,), {"engine": engine, "item_id": 0, "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/classify"
        (rater, _other) = live_campaign(engine, password_hash, base_url=standin.base_url, classifier_url=url)
        context, opened = context_of(engine, rater), start(engine, rater)
        handler.item_id = opened.item_id
        say(context, opened.session_id, ORDINARY_TEXT)  # the lexicon sees nothing here; the classifier does
    finally:
        server.shutdown()
        server.server_close()
    live, (user, reply) = _stored(engine, opened.session_id)
    assert handler.seen == [ORDINARY_TEXT]
    assert [signal["source"] for signal in user.crisis] == ["classifier"] and live.needs_review
    assert reply.sap_check is not None
