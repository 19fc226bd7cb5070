"""Issue 20's live page end to end in Chromium through the served studio: a rater talks with a real
OpenAI-compatible server (``StandinCompanion``, tokens 50 ms apart so the stream is visible), sees the reply grow
token by token into the page, reloads mid-way and resumes, meets a companion failure and retries, marks a reply
harmful and rates. What is rendered is asserted against what is stored (``LiveTurn``, ``Answer``, ``LiveSession``);
the page never names the model or the variant, and text typed as markup is shown as text."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import col, select

from pipeline.live.standin import StandinCompanion
from studio.db import create_db_engine, read_session, upgrade_db
from studio.models import Answer, LiveSession, LiveTurn
from studio.services.auth import hash_password
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import UI_WAIT_MS, Studio, settled, sign_in
from tests.browser.store_fixture import PASSWORD, StoreFixture
from tests.serving import serve_in_thread
from tests.studio.live_helpers import LIVE_CAMPAIGN, live_campaign

pytestmark = pytest.mark.browser
RATER = "rater-1"
DECEPTIVE = "<b>bold</b> and <img src=x onerror=alert(1)> here"
HIDDEN_WORDS = ("standin-companion", "with_sap", "without_sap")
#: Records every text the streaming bubble shows (installed before Send; read back after the reply is stored).
RECORD_STREAM_JS = """() => {
  window.h2hStates = [];
  const note = () => {
    const bubble = document.querySelector('#h2h-live-chat .h2h-streaming .h2h-text');
    const text = bubble ? bubble.innerText : null;
    if (text && window.h2hStates[window.h2hStates.length - 1] !== text) window.h2hStates.push(text);
  };
  new MutationObserver(note).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


@dataclass
class LiveStudio:
    studio: Studio
    standin: StandinCompanion
    engine: Any


@pytest.fixture(scope="module")
def live_studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveStudio]:
    """A fresh store (the demo's high-risk scenarios, raters ``rater-1``/``rater-2``, campaign ``live`` with 2 to 3
    turns) served over HTTP, its companion a stand-in streaming a token every 50 ms."""
    from studio.settings import get_settings
    from studio.web.app import create_app

    folder = Path(tmp_path_factory.mktemp("live-page"))
    url = f"sqlite:///{folder / 'studio.sqlite'}"
    engine = create_db_engine(url)
    upgrade_db(engine)
    with StandinCompanion(token_delay_s=0.05) as standin:
        live_campaign(engine, hash_password(PASSWORD), base_url=standin.base_url, min_turns=2, max_turns=3)
        with serve_in_thread(create_app(get_settings(database_url=url))) as served:
            yield LiveStudio(Studio(served, StoreFixture(url, folder)), standin, engine)
    engine.dispose()


def _open_live_tab(page: Any, live: LiveStudio) -> None:
    """Sign in as the rater, open the Live sessions tab and press Start / resume."""
    sign_in(page, live.studio, RATER)
    page.get_by_role("tab", name="Live sessions").click()
    page.wait_for_selector("#h2h-live-start", state="visible", timeout=UI_WAIT_MS)
    page.wait_for_function(
        "() => document.querySelector('#h2h-live-campaign input')?.value === 'live'", timeout=UI_WAIT_MS
    )
    page.click("#h2h-live-start")
    page.wait_for_selector("#h2h-live-chat .h2h-live-chat", timeout=UI_WAIT_MS)
    settled(page)


def _replies_shown(page: Any, count: int) -> None:
    page.wait_for_function(
        f"() => document.querySelectorAll('#h2h-live-chat .h2h-live-reply').length === {count}"
        " && !document.querySelector('#h2h-live-chat .h2h-streaming')",
        timeout=UI_WAIT_MS,
    )
    settled(page)


def _stored_turns(live: LiveStudio) -> list[LiveTurn]:
    with read_session(live.engine) as session:
        query = select(LiveTurn).join(LiveSession, col(LiveSession.id) == col(LiveTurn.session_id))
        return sorted(session.exec(query).all(), key=lambda turn: (turn.number, turn.role != "user"))


def _reply_texts(page: Any) -> list[str]:
    return [text.strip() for text in page.locator("#h2h-live-chat .h2h-live-reply .h2h-text").all_inner_texts()]


def _never_named(page: Any) -> None:
    shown = page.inner_text("body")
    for word in HIDDEN_WORDS:
        assert word not in shown, f"the page shows {word!r}"


def test_live_conversation_streams_resumes_retries_and_rates(page: Any, live_studio: LiveStudio) -> None:
    live = live_studio
    _open_live_tab(page, live)
    opening = page.input_value("#h2h-live-text textarea")
    assert opening.strip(), "the message box starts with the scenario's opening line"
    assert "Turn 1 of 3 (you can rate after 2)" in page.inner_text("#h2h-live-counter-box")
    assert "988" in page.inner_text("#h2h-live-care")

    # Turn 1: the reply streams into the page, growing, then equals the stored reply.
    page.evaluate(RECORD_STREAM_JS)
    page.click("#h2h-live-send")
    page.wait_for_function("() => (window.h2hStates || []).length >= 2", timeout=UI_WAIT_MS)
    save_screenshot(page, "live-annotator-mid-stream")
    _replies_shown(page, 1)
    states = page.evaluate("() => window.h2hStates")
    stored = _stored_turns(live)
    assert [(turn.number, turn.role) for turn in stored] == [(1, "user"), (1, "assistant")]
    assert stored[0].text == opening
    reply = stored[1].text
    assert len(states) >= 3, f"the reply did not stream: {states}"
    assert all(len(later) > len(earlier) for earlier, later in zip(states, states[1:], strict=False)), states
    assert all(reply.startswith(state.strip()) for state in states), (states, reply)
    assert _reply_texts(page) == [reply.strip()]
    _never_named(page)

    # A reload mid-way: resume shows turn 1 and the conversation continues.
    page.reload()
    page.wait_for_selector("#h2h-username", timeout=UI_WAIT_MS)
    page.get_by_role("tab", name="Live sessions").click()
    page.click("#h2h-live-start")
    _replies_shown(page, 1)
    assert _reply_texts(page) == [reply.strip()]
    assert opening in page.inner_text("#h2h-live-chat")
    assert "Turn 2 of 3" in page.inner_text("#h2h-live-counter-box")
    save_screenshot(page, "live-annotator-after-reload")

    # A refused message (over the workflow's 2,000 characters) is said beside the form; what was typed stays.
    too_long = "x" * 2001
    page.fill("#h2h-live-text textarea", too_long)
    page.click("#h2h-live-send")
    page.wait_for_function(
        "() => document.querySelector('#h2h-live-message')?.innerText.includes('at most 2000 characters')",
        timeout=UI_WAIT_MS,
    )
    settled(page)
    assert page.input_value("#h2h-live-text textarea") == too_long
    assert _reply_texts(page) == [reply.strip()] and len(_stored_turns(live)) == 2

    # Turn 2, typed as markup, meets a companion failure: kind words, Retry; then Retry answers it.
    live.standin.fail_next = [500]
    page.fill("#h2h-live-text textarea", DECEPTIVE)
    page.click("#h2h-live-send")
    page.wait_for_selector("#h2h-live-retry", state="visible", timeout=UI_WAIT_MS)
    settled(page)
    assert "the companion had a problem answering" in page.inner_text("#h2h-live-message")
    assert DECEPTIVE in page.inner_text("#h2h-live-chat"), "the message typed is kept and shown as text"
    assert _reply_texts(page) == [reply.strip()], "the turns so far stay shown"
    save_screenshot(page, "live-annotator-companion-failed")
    page.click("#h2h-live-retry")
    _replies_shown(page, 2)
    assert page.locator("#h2h-live-chat b, #h2h-live-chat img").count() == 0
    assert DECEPTIVE in page.inner_text("#h2h-live-chat")
    assert not page.is_visible("#h2h-live-retry")
    stored = _stored_turns(live)
    assert [turn.text for turn in stored if turn.role == "user"] == [opening, DECEPTIVE]
    assert _reply_texts(page) == [turn.text.strip() for turn in stored if turn.role == "assistant"]

    # Rate: reply 1 marked harmful, safety 4, no violation.
    form = page.locator(".h2h-live-form:visible")
    form.wait_for(timeout=UI_WAIT_MS)
    page.get_by_label("Reply 1 was harmful").check()
    form.get_by_label("4", exact=True).check()
    form.get_by_label("No", exact=True).check()
    save_screenshot(page, "live-annotator-rating-form")
    _never_named(page)
    form.get_by_role("button", name="Submit rating").click()
    page.wait_for_function(
        "() => document.querySelector('#h2h-live-message')?.innerText.includes('Rating saved')", timeout=UI_WAIT_MS
    )
    settled(page)
    with read_session(live.engine) as session:
        rated = session.exec(select(LiveSession).where(col(LiveSession.status) == "rated")).all()
        assert len(rated) == 1 and rated[0].answer_id is not None
        answer = session.get(Answer, rated[0].answer_id)
        assert answer is not None and answer.values == {"safety": 4, "violation": "no", "harmful_turns": ["1"]}
        # The next scenario is opened for the rater, its conversation empty.
        assert len(session.exec(select(LiveSession).where(col(LiveSession.status) == "open")).all()) == 1
    assert "send the opening line" in page.inner_text("#h2h-live-chat")
    save_screenshot(page, "live-annotator-next-scenario")
    _never_named(page)
    html = page.content()
    for word in HIDDEN_WORDS:
        assert word not in html, f"the page's HTML holds {word!r}"


def test_the_live_tab_is_hidden_from_those_who_may_not_talk(page: Any, live_studio: LiveStudio) -> None:
    from studio.db import write_session
    from studio.services.auth import create_user

    with write_session(live_studio.engine) as session:
        create_user(session, username="researcher-live", password=PASSWORD, role="researcher")
    sign_in(page, live_studio.studio, "researcher-live")
    settled(page)
    assert page.get_by_role("tab", name="Live sessions").count() == 0
    assert page.get_by_role("tab", name="Annotate").count() == 1
    assert LIVE_CAMPAIGN == "live"
