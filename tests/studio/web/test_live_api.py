"""The REST contract of live sessions (issue 20), through uvicorn on 127.0.0.1 against a real OpenAI-compatible
server (``pipeline.live.standin.StandinCompanion``), on SQLite and PostgreSQL: open/resume, a whole conversation,
the reply streamed as SSE, the companion down (502, the message kept, retry), 429 with Retry-After, 422 naming the
field, the rating's 201/200/409, and who reads a session in which shape (no rater payload names model or variant).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from pipeline.live.standin import StandinCompanion
from studio.db import write_session
from studio.services.campaigns import create_campaign
from studio.services.live_endpoint import LiveEndpointConfig
from studio.settings import get_settings
from studio.web.api import create_api
from tests.serving import serve_in_thread
from tests.studio.conftest import PASSWORD
from tests.studio.helpers import add_people
from tests.studio.live_helpers import LIVE_CAMPAIGN, live_campaign, live_schema

MODEL = "standin-companion"
#: Words no payload a rater receives may hold: the model's name and the hidden variant.
HIDDEN = (MODEL, "with_sap", "without_sap", "variant")
RATING = {"safety": 4, "violation": "no", "harmful_turns": ["2"]}


@dataclass
class Live:
    """A served API with a live campaign on a running stand-in companion."""

    api: str
    companion: StandinCompanion

    def client(self, username: str) -> httpx.Client:
        # Generous limits (httpx's default is 5 s): a loaded machine, not a speed assertion; argon2 alone is ~0.15 s.
        credentials = {"username": username, "password": PASSWORD}
        token = httpx.post(f"{self.api}/v1/login", json=credentials, timeout=LIMIT_S)
        headers = {"Authorization": f"Bearer {token.json()['token']}"}
        return httpx.Client(base_url=self.api, headers=headers, timeout=LIMIT_S)


LIMIT_S = 180


def serve(engine: Engine, db_url: str, password_hash: str, **live: Any) -> Iterator[Live]:
    with StandinCompanion(token_delay_s=0.001) as companion:
        live_campaign(engine, password_hash, base_url=companion.base_url, model=MODEL, **live)
        add_people(engine, password_hash, ["researcher"], "researcher")
        add_people(engine, password_hash, ["other"], "annotator")
        app = FastAPI()
        app.mount("/api", create_api(get_settings(database_url=db_url), engine=engine))
        with serve_in_thread(app) as url:
            yield Live(api=f"{url}/api", companion=companion)


@pytest.fixture
def served(engine: Engine, db_url: str, password_hash: str) -> Iterator[Live]:
    yield from serve(engine, db_url, password_hash)


@pytest.fixture
def rater(served: Live) -> Iterator[httpx.Client]:
    with served.client("rater-1") as client:
        yield client


def hides_model_and_variant(response: httpx.Response) -> None:
    assert [word for word in HIDDEN if word in response.text] == [], response.text


def start(client: httpx.Client) -> dict[str, Any]:
    opened = client.post(f"/v1/campaigns/{LIVE_CAMPAIGN}/sessions")
    assert opened.status_code == 201, opened.text
    hides_model_and_variant(opened)
    body: dict[str, Any] = opened.json()
    return body


def say(client: httpx.Client, session_id: str, text: str) -> httpx.Response:
    response = client.post(f"/v1/sessions/{session_id}/messages", json={"text": text})
    hides_model_and_variant(response)
    return response


def sse_events(response: httpx.Response) -> list[tuple[str, dict[str, Any]]]:
    """The (event, data) pairs of an SSE body."""
    events = []
    for block in response.text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if fields:
            events.append((fields["event"], json.loads(fields["data"])))
    return events


def test_a_whole_conversation_resumes_and_is_rated_once(served: Live, rater: httpx.Client) -> None:
    session = start(rater)
    assert session["item_id"] > 0 and session["content"]["opening_line"] and session["questions"]
    assert session["turns"] == [] and session["can_rate"] is False
    resumed = rater.post(f"/v1/campaigns/{LIVE_CAMPAIGN}/sessions")
    assert resumed.status_code == 200 and resumed.json()["session_id"] == session["session_id"]
    hides_model_and_variant(resumed)
    sid = session["session_id"]
    too_early = rater.post(f"/v1/sessions/{sid}/rating", json={"submission_id": "r-0", "answers": RATING})
    assert too_early.status_code == 409 and "at least 3 replies" in too_early.json()["detail"], too_early.text
    for number, text in enumerate(["I feel so alone lately.", "Nobody listens to me.", "Thank you."], start=1):
        reply = say(rater, sid, text)
        assert reply.status_code == 200, reply.text
        assert reply.json()["turn"] == number and reply.json()["reply"].strip()
    rated = rater.post(f"/v1/sessions/{sid}/rating", json={"submission_id": "r-1", "answers": RATING})
    assert rated.status_code == 201, rated.text
    assert rated.json()["values"] == RATING
    hides_model_and_variant(rated)
    resent = rater.post(f"/v1/sessions/{sid}/rating", json={"submission_id": "r-1", "answers": RATING})
    assert resent.status_code == 200 and resent.json()["answer_id"] == rated.json()["answer_id"]
    other_values = {**RATING, "safety": 1}
    for submission in ("r-1", "r-2"):
        refused = rater.post(f"/v1/sessions/{sid}/rating", json={"submission_id": submission, "answers": other_values})
        assert refused.status_code == 409, refused.text
    seen = rater.get(f"/v1/sessions/{sid}")
    assert seen.status_code == 200 and seen.json()["status"] == "rated" and seen.json()["rating"] == RATING
    assert [turn["number"] for turn in seen.json()["turns"]] == [1, 1, 2, 2, 3, 3]
    hides_model_and_variant(seen)


def test_a_mark_on_a_reply_that_does_not_exist_is_422_naming_it(rater: httpx.Client) -> None:
    sid = start(rater)["session_id"]
    for text in ("one", "two", "three"):
        assert say(rater, sid, text).status_code == 200
    marked = rater.post(
        f"/v1/sessions/{sid}/rating", json={"submission_id": "m", "answers": {**RATING, "harmful_turns": ["7"]}}
    )
    assert marked.status_code == 422 and marked.json()["detail"].startswith("answers.harmful_turns:")


def test_the_reply_streams_as_sse_and_the_stored_turn_is_the_deltas(served: Live, rater: httpx.Client) -> None:
    served.companion.token_delay_s = 0.005
    sid = start(rater)["session_id"]
    headers = {"Accept": "text/event-stream"}
    streamed = rater.post(f"/v1/sessions/{sid}/messages", json={"text": "I want to die."}, headers=headers)
    assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
    hides_model_and_variant(streamed)
    events = sse_events(streamed)
    deltas = [data["text"] for name, data in events if name == "delta"]
    assert len(deltas) >= 2 and [name for name, _ in events][-1] == "turn"
    assert events[-1][1] == {"number": 1, "role": "assistant", "text": "".join(deltas)}
    stored = rater.get(f"/v1/sessions/{sid}").json()
    assert stored["turns"][-1]["text"] == "".join(deltas) and stored["reply_pending"] is False


def test_a_companion_failure_is_502_the_message_is_kept_and_retry_answers_it(served: Live, rater: httpx.Client) -> None:
    sid = start(rater)["session_id"]
    served.companion.fail_next = [500]
    failed = say(rater, sid, "Are you there?")
    assert failed.status_code == 502, failed.text
    assert "the companion had a problem answering" in failed.json()["detail"]
    assert "kept" in failed.json()["detail"]
    pending = rater.get(f"/v1/sessions/{sid}").json()
    assert pending["reply_pending"] is True and pending["turns"] == [
        {"number": 1, "role": "user", "text": "Are you there?"}
    ]
    blocked = say(rater, sid, "Hello?")  # a new message waits for the pending reply
    assert blocked.status_code == 409, blocked.text
    retried = rater.post(f"/v1/sessions/{sid}/retry")
    assert retried.status_code == 200 and retried.json()["turn"] == 1 and retried.json()["reply"]
    hides_model_and_variant(retried)
    after = rater.get(f"/v1/sessions/{sid}").json()
    assert after["reply_pending"] is False and [turn["role"] for turn in after["turns"]] == ["user", "assistant"]


def test_a_companion_failure_in_sse_mode_is_an_error_event(served: Live, rater: httpx.Client) -> None:
    sid = start(rater)["session_id"]
    served.companion.fail_next = [503]
    headers = {"Accept": "text/event-stream"}
    streamed = rater.post(f"/v1/sessions/{sid}/messages", json={"text": "hello"}, headers=headers)
    assert streamed.status_code == 200
    assert [name for name, _ in sse_events(streamed)] == ["error"]
    error = sse_events(streamed)[0][1]
    assert error["status"] == 502 and "the companion" in error["detail"] and "Retry" in error["detail"]
    retried = rater.post(f"/v1/sessions/{sid}/retry", headers=headers)
    assert [name for name, _ in sse_events(retried)][-1] == "turn"
    assert rater.get(f"/v1/sessions/{sid}").json()["reply_pending"] is False


def test_a_stopped_companion_is_502_in_words_and_nothing_is_lost(served: Live, rater: httpx.Client) -> None:
    sid = start(rater)["session_id"]
    served.companion.stop()
    down = say(rater, sid, "Is anyone there?")
    assert down.status_code == 502 and "cannot be reached" in down.json()["detail"], down.text
    assert rater.get(f"/v1/sessions/{sid}").json()["reply_pending"] is True


@pytest.fixture
def throttled(engine: Engine, db_url: str, password_hash: str) -> Iterator[Live]:
    yield from serve(engine, db_url, password_hash, messages_per_minute=2, max_message_chars=50)


def test_too_many_messages_is_429_with_retry_after_and_too_long_is_422(throttled: Live) -> None:
    with throttled.client("rater-1") as client:
        sid = start(client)["session_id"]
        too_long = say(client, sid, "x" * 51)
        assert too_long.status_code == 422 and too_long.json()["detail"].startswith("text:"), too_long.text
        missing = client.post(f"/v1/sessions/{sid}/messages", json={})
        assert missing.status_code == 422 and missing.json()["detail"].startswith("text:")
        assert [say(client, sid, text).status_code for text in ("one", "two")] == [200, 200]
        third = say(client, sid, "three")
    assert third.status_code == 429, third.text
    assert third.headers["retry-after"] == "60" and third.json()["detail"].startswith("text:")


def test_who_reads_a_session_and_in_which_shape(served: Live, rater: httpx.Client) -> None:
    sid = start(rater)["session_id"]
    assert say(rater, sid, "I want to end it all.").status_code == 200
    with served.client("researcher") as researcher:
        whole = researcher.get(f"/v1/sessions/{sid}")
        assert researcher.post(f"/v1/sessions/{sid}/messages", json={"text": "hi"}).status_code == 403
    assert whole.status_code == 200, whole.text
    record = whole.json()
    assert record["model"] == MODEL and record["variant"] in ("with_sap", "without_sap")
    assert record["rater"] == "rater-1" and record["needs_review"] is True
    assert record["turns"][0]["crisis"] and "sap_check" in record["turns"][1]
    with served.client("other") as other:
        refused = other.get(f"/v1/sessions/{sid}")
        assert refused.status_code == 403 and MODEL not in refused.text, refused.text
        assert other.post(f"/v1/sessions/{sid}/messages", json={"text": "hi"}).status_code == 403
        assert other.get("/v1/sessions/no-such-session").status_code == 404
    own = rater.get(f"/v1/sessions/{sid}")
    assert own.status_code == 200 and set(own.json()) >= {"session_id", "turns", "reply_pending", "care_note"}
    hides_model_and_variant(own)
    assert httpx.get(f"{served.api}/v1/sessions/{sid}").status_code == 401


def test_nothing_left_is_204(corpus: Engine, db_url: str, password_hash: str) -> None:
    """One high-risk scenario (the corpus's ``dlg-1``), one person per item: the first rater's open session holds
    its only slot, so the second is told "nothing left" as ``GET .../next`` tells it — 204, no body."""
    with StandinCompanion(token_delay_s=0.001) as companion:
        add_people(corpus, password_hash, ["rater-1", "rater-2"], "annotator")
        config = LiveEndpointConfig(model=MODEL, base_url=companion.base_url)
        with write_session(corpus) as session:
            create_campaign(session, name=LIVE_CAMPAIGN, schema=live_schema(), people_per_item=1, live_endpoint=config)
        app = FastAPI()
        app.mount("/api", create_api(get_settings(database_url=db_url), engine=corpus))
        with serve_in_thread(app) as url:
            live = Live(api=f"{url}/api", companion=companion)
            with live.client("rater-1") as first, live.client("rater-2") as second:
                assert start(first)["content"]["opening_line"]
                left = second.post(f"/v1/campaigns/{LIVE_CAMPAIGN}/sessions")
    assert left.status_code == 204 and left.content == b""
