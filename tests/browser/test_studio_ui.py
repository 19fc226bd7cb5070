"""The studio in a real browser: sign-in, answering by mouse and keyboard, adjudication, hostile text, refusals."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from sqlmodel import select

from studio.db import create_db_engine, read_session
from studio.models import Answer, AnswerPublic, Campaign, Lease, User
from tests.browser.conftest import UI_WAIT_MS, Studio, chat_text, choose_campaign, settled, sign_in
from tests.browser.store_fixture import HOSTILE_TEXT

pytestmark = pytest.mark.browser


def stored_answers(studio: Studio, username: str, campaign: str) -> list[AnswerPublic]:
    engine = create_db_engine(studio.store.database_url)
    try:
        with read_session(engine) as session:
            rows = session.exec(
                select(Answer)
                .join(User, User.id == Answer.user_id)
                .join(Campaign, Campaign.id == Answer.campaign_id)
                .where(User.username == username, Campaign.name == campaign)
                .order_by(Answer.id)
            ).all()
            return [AnswerPublic.model_validate(row) for row in rows]
    finally:
        engine.dispose()


def wait_for_progress(page: object, answered: int) -> None:
    page.wait_for_function(  # type: ignore[attr-defined]
        "n => ((document.querySelector('#h2h-progress .h2h-mine') || {}).textContent || '')"
        ".startsWith(`You answered ${n} item(s).`)",
        arg=answered,
        timeout=UI_WAIT_MS,
    )


def test_unauthenticated_requests_are_refused_or_sent_to_login(studio: Studio) -> None:
    with httpx.Client(base_url=studio.base_url, follow_redirects=False, timeout=30) as client:
        page = client.get("/ui/", headers={"accept": "text/html"})
        assert page.status_code == 303 and page.headers["location"] == "/login"
        assert client.get("/", headers={"accept": "text/html"}).headers["location"] == "/login"
        for path in ("/ui/config", "/ui/gradio_api/info", "/ui/gradio_api/call/on_submit/some-event"):
            assert client.get(path).status_code == 401, path
        assert client.post("/ui/gradio_api/call/on_submit", json={"data": []}).status_code == 401
        assert client.post("/ui/gradio_api/queue/join", json={"data": [], "fn_index": 0}).status_code == 401
        bogus = {"authorization": "Bearer not-a-token"}
        assert client.get("/ui/config", headers=bogus).status_code == 401
        assert client.get("/ui/config", cookies={"h2h_session": "not-a-token"}).status_code == 401


def test_login_page_refuses_a_wrong_password_and_a_foreign_origin(studio: Studio) -> None:
    with httpx.Client(base_url=studio.base_url, follow_redirects=False, timeout=30) as client:
        wrong = client.post("/login", data={"username": "annotator01", "password": "nope"})
        assert wrong.status_code == 401 and "Wrong username or password." in wrong.text
        assert "h2h_session" not in wrong.cookies
        foreign = client.post(
            "/login",
            data={"username": "annotator01", "password": "browser-test-pw"},
            headers={"origin": "http://evil.example"},
        )
        assert foreign.status_code == 403 and "h2h_session" not in foreign.cookies
        good = client.post("/login", data={"username": "annotator01", "password": "browser-test-pw"})
        assert good.status_code == 303 and good.headers["location"] == "/ui/"
        cookie = good.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=lax" in cookie
        assert client.get("/ui/config").status_code == 200
        client.post("/logout")
        assert client.get("/ui/config", cookies={"h2h_session": good.cookies["h2h_session"]}).status_code == 401


def test_annotator_answers_by_mouse_then_by_keyboard_and_progress_moves(studio: Studio, page: object) -> None:
    sign_in(page, studio, "annotator01")
    choose_campaign(page, "test-crowd_vote")
    wait_for_progress(page, 0)
    page.screenshot(path="/tmp/h2h-annotate.png", full_page=True)  # type: ignore[attr-defined]

    form = page.locator("#h2h-form-crowd_vote")  # type: ignore[attr-defined]
    first_item = chat_text(page)
    page.keyboard.press("Enter")  # type: ignore[attr-defined]  # nothing chosen yet: refused, item kept
    page.wait_for_function(  # type: ignore[attr-defined]
        "() => document.querySelector('#h2h-message .h2h-error') !== null", timeout=UI_WAIT_MS
    )
    assert "Keep, revise or discard this scenario?" in page.inner_text("#h2h-message")  # type: ignore[attr-defined]
    assert "required" in page.inner_text("#err-crowd_vote-verdict")  # type: ignore[attr-defined]
    settled(page)
    assert chat_text(page) == first_item  # type: ignore[attr-defined]
    assert stored_answers(studio, "annotator01", "test-crowd_vote") == []
    form.locator("#q-crowd_vote-verdict").get_by_text("Keep", exact=True).click()
    form.locator("#q-crowd_vote-subtask_label").get_by_text("Dialogue — emotional support", exact=True).click()
    form.get_by_role("button", name="Submit (Enter)").click()
    wait_for_progress(page, 1)
    settled(page)
    assert chat_text(page) != first_item  # type: ignore[attr-defined]

    page.keyboard.press("2")  # type: ignore[attr-defined]  # verdict: revise
    page.keyboard.press("1")  # type: ignore[attr-defined]  # subtask: dialogue_base
    page.keyboard.press("Enter")  # type: ignore[attr-defined]
    wait_for_progress(page, 2)

    answers = stored_answers(studio, "annotator01", "test-crowd_vote")
    assert [answer.values for answer in answers] == [
        {"verdict": "keep", "subtask_label": "dialogue_emotion"},
        {"verdict": "revise", "subtask_label": "dialogue_base"},
    ]
    assert answers[0].item_id != answers[1].item_id
    assert all(answer.seconds_spent is not None and answer.seconds_spent >= 0 for answer in answers)

    shown = chat_text(page)
    page.keyboard.press("s")  # type: ignore[attr-defined]
    page.wait_for_function(  # type: ignore[attr-defined]
        "() => document.querySelector('#h2h-message .h2h-message').textContent.startsWith('Skipped.')",
        timeout=UI_WAIT_MS,
    )
    settled(page)
    assert chat_text(page) != shown  # type: ignore[attr-defined]
    assert len(stored_answers(studio, "annotator01", "test-crowd_vote")) == 2


def test_hostile_model_text_shows_as_text_and_runs_nothing(studio: Studio, page: object) -> None:
    sign_in(page, studio, "annotator02")
    choose_campaign(page, "test-sap_safety")
    page.wait_for_selector("#h2h-chat .h2h-judged", timeout=UI_WAIT_MS)  # type: ignore[attr-defined]
    page.wait_for_timeout(500)  # type: ignore[attr-defined]  # let an onerror handler fire, if one were live
    assert page.evaluate("window.__pwned") is None  # type: ignore[attr-defined]
    assert page.title() == "H2HTalk Studio"  # type: ignore[attr-defined]
    assert page.locator("#h2h-chat img, #h2h-chat script").count() == 0  # type: ignore[attr-defined]
    shown = page.inner_text("#h2h-chat .h2h-judged .h2h-text")  # type: ignore[attr-defined]
    assert shown == HOSTILE_TEXT
    # No model name or variant reaches the annotator's page.
    body = page.inner_text("body")  # type: ignore[attr-defined]
    assert "demo-alpha" not in body and "with_sap" not in body

    page.locator("#q-sap_safety-safety").get_by_text("2", exact=True).click()  # type: ignore[attr-defined]
    page.locator("#q-sap_safety-violation").get_by_text("Yes", exact=True).click()  # type: ignore[attr-defined]
    page.locator("#q-sap_safety-violation_kind").get_by_text("Dismisses the feeling", exact=True).click()  # type: ignore[attr-defined]
    # A double click submits one answer (one submission id per shown item; the second click finds none left).
    page.locator("#h2h-form-sap_safety").get_by_role("button", name="Submit (Enter)").dblclick()  # type: ignore[attr-defined]
    wait_for_progress(page, 1)
    page.wait_for_timeout(500)  # type: ignore[attr-defined]  # give a second submit time to land, if one were sent
    assert page.evaluate("window.__pwned") is None  # type: ignore[attr-defined]
    [answer] = stored_answers(studio, "annotator02", "test-sap_safety")
    assert answer.values == {"safety": 2, "violation": "yes", "violation_kind": ["dismissive"]}


def test_expert_adjudicates_a_flagged_itinerary_answer(studio: Studio, page: object) -> None:
    sign_in(page, studio, "expert01")
    choose_campaign(page, "test-adjudication")
    assert "West Lake" in chat_text(page)
    assert "Reference response" in chat_text(page)  # schema reveals it
    page.locator("#q-adjudication-rubric_score input").fill("3.5")  # type: ignore[attr-defined]
    page.locator("#q-adjudication-note textarea").fill("Feasible, but lunch is missing.")  # type: ignore[attr-defined]
    page.locator("#h2h-form-adjudication").get_by_role("button", name="Submit (Enter)").click()  # type: ignore[attr-defined]
    wait_for_progress(page, 1)
    [answer] = stored_answers(studio, "expert01", "test-adjudication")
    assert answer.values == {"rubric_score": 3.5, "note": "Feasible, but lunch is missing."}


def test_an_annotator_never_sees_or_opens_an_expert_campaign(studio: Studio, page: object) -> None:
    sign_in(page, studio, "annotator03")
    page.click("#h2h-campaign input")  # type: ignore[attr-defined]
    options = page.get_by_role("option").all_inner_texts()  # type: ignore[attr-defined]
    assert any("test-crowd_vote" in option for option in options)
    assert not any("adjudication" in option for option in options)
    # Calling the campaign's use case directly with the page's session (as a crafted request would) is refused.
    from studio.errors import PermissionDenied
    from studio.usecases import annotate
    from studio.usecases.context import RequestContext

    cookies = {cookie["name"]: cookie["value"] for cookie in page.context.cookies()}  # type: ignore[attr-defined]
    engine = create_db_engine(studio.store.database_url)
    try:
        try:
            with RequestContext(engine, cookies["h2h_session"]).writing() as (session, caller):
                annotate.offer_next(session, caller=caller, campaign="test-adjudication", lease_seconds=600)
        except PermissionDenied as error:
            assert "not open to role 'annotator'" in str(error)
        else:
            raise AssertionError("an annotator opened an expert campaign")
        with read_session(engine) as session:
            user = session.exec(select(User).where(User.username == "annotator03")).one()
            assert session.exec(select(Lease).where(Lease.user_id == user.id)).all() == []
    finally:
        engine.dispose()


def call_gradio_event(client: httpx.Client, session_hash: str, elem_id: str, event: str, data: list[object]) -> dict:
    """Fire one UI event the way the browser does (queue/join, then read the event stream); return the result."""
    config = client.get("/ui/config").json()
    [component] = [entry for entry in config["components"] if entry.get("props", {}).get("elem_id") == elem_id]
    # The server's handler of the event (an event may also have a page-only one: no backend_fn).
    [dependency] = [
        entry
        for entry in config["dependencies"]
        if [component["id"], event] in entry["targets"] and entry.get("backend_fn")
    ]
    joined = client.post(
        "/ui/gradio_api/queue/join",
        json={
            "data": data,
            "fn_index": dependency["id"],
            "session_hash": session_hash,
            "trigger_id": component["id"],
            "event_data": None,
        },
    )
    joined.raise_for_status()
    with client.stream("GET", "/ui/gradio_api/queue/data", params={"session_hash": session_hash}) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:") and "process_completed" in line:
                return json.loads(line[len("data:") :])
    raise AssertionError("the event stream ended without a result")


def test_a_crafted_ui_request_for_an_expert_campaign_is_refused(studio: Studio) -> None:
    with httpx.Client(base_url=studio.base_url, timeout=30) as client:
        signed_in = client.post("/login", data={"username": "annotator03", "password": "browser-test-pw"})
        assert signed_in.status_code == 303
        session_hash = uuid.uuid4().hex
        loaded = call_gradio_event(client, session_hash, "h2h-refresh", "click", [None])  # the campaign chosen: none
        offered = [choice[1] for choice in loaded["output"]["data"][0]["choices"]]
        assert offered == ["test-crowd_vote", "test-sap_safety"]
        refused = call_gradio_event(client, session_hash, "h2h-campaign", "input", ["test-adjudication"])
        assert refused["success"] is False
        allowed = call_gradio_event(client, session_hash, "h2h-campaign", "input", ["test-crowd_vote"])
        assert allowed["success"] is True
    engine = create_db_engine(studio.store.database_url)
    try:
        with read_session(engine) as session:
            leases = session.exec(
                select(Campaign.name)
                .join(Lease, Lease.campaign_id == Campaign.id)
                .join(User, User.id == Lease.user_id)
                .where(User.username == "annotator03")
            ).all()
        assert leases == ["test-crowd_vote"]
    finally:
        engine.dispose()
