"""The annotate page while the store fails, in Chromium: a readable error, the answer kept on the form, and the page
working again — the very same submit stored once — when the store is back.

Two faults: SQLite locked by another process past the studio's busy timeout (reads still work: the submit's own
handler says it), and the store unreachable (even the sign-in check of Gradio's queue fails: its JSON ``detail`` is
what the page shows). Checked: with Gradio's sign-in check failing on the unreachable store (``RecentCallers`` off),
every field of the form was covered with an "Error" box that blocked the next click, and the message area said
nothing. On the old code the locked store's submit put no message in the page's message area at all (the first test
times out waiting for it).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, func, select
from sqlalchemy.engine import make_url

from studio.db import create_db_engine, read_session
from studio.models import Answer
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import UI_WAIT_MS, Studio, chat_text, choose_campaign, settled, sign_in
from tests.browser.store_fixture import build_store
from tests.serving import serve_in_thread

UNAVAILABLE = "the database is unavailable right now"


@pytest.fixture(scope="module")
def fragile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Studio, Any]]:
    """A studio of its own (a short busy timeout), and its engine (what the unreachable fault is done to)."""
    from studio.settings import get_settings
    from studio.web.app import create_app

    store = build_store(Path(tmp_path_factory.mktemp("fault-store")))
    app = create_app(get_settings(database_url=store.database_url, sqlite_busy_timeout_ms=300))
    with serve_in_thread(app) as url:
        yield Studio(url, store), app.state.engine


def answers_stored(studio: Studio) -> int:
    engine = create_db_engine(studio.store.database_url)
    try:
        with read_session(engine) as session:
            return int(session.execute(select(func.count(Answer.id))).scalar_one())
    finally:
        engine.dispose()


def fill_and_submit(page: Any) -> None:
    form = page.locator("#h2h-form-crowd_vote")
    form.locator("#q-crowd_vote-verdict").get_by_text("Keep", exact=True).click()
    form.locator("#q-crowd_vote-subtask_label").get_by_text("Dialogue — emotional support", exact=True).click()
    form.get_by_role("button", name="Submit (Enter)").click()


def wait_for_text(page: Any, text: str) -> None:
    page.wait_for_function("t => document.body.innerText.includes(t)", arg=text, timeout=UI_WAIT_MS)


def wait_for_progress(page: Any, answered: int) -> None:
    page.wait_for_function(
        "n => ((document.querySelector('#h2h-progress .h2h-mine') || {}).textContent || '')"
        ".startsWith(`You answered ${n} item(s).`)",
        arg=answered,
        timeout=UI_WAIT_MS,
    )


def test_a_locked_store_says_retry_keeps_the_answer_and_the_retry_is_saved(
    fragile: tuple[Studio, Any], page: Any
) -> None:
    studio, _engine = fragile
    sign_in(page, studio, "annotator01")
    choose_campaign(page, "test-crowd_vote")
    shown = chat_text(page)
    before = answers_stored(studio)
    holder = sqlite3.connect(make_url(studio.store.database_url).database, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process writing, longer than the studio waits
    try:
        fill_and_submit(page)
        page.wait_for_selector("#h2h-message .h2h-error", timeout=UI_WAIT_MS)
        message = page.inner_text("#h2h-message")
        assert UNAVAILABLE in message and "your answer was not saved" in message and "retry" in message
        assert "Could not parse server response" not in page.inner_text("body")
        settled(page)
        assert chat_text(page) == shown  # the same item, the answer still chosen
        assert page.locator("#q-crowd_vote-verdict input[value='keep']").is_checked()
        save_screenshot(page, "faults-annotate-annotator-store-locked")
        assert answers_stored(studio) == before
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    page.locator("#h2h-form-crowd_vote").get_by_role("button", name="Submit (Enter)").click()
    wait_for_progress(page, 1)
    settled(page)
    assert chat_text(page) != shown
    assert answers_stored(studio) == before + 1
    save_screenshot(page, "faults-annotate-annotator-store-back")


def test_an_unreachable_store_is_named_on_the_page_and_the_page_recovers(
    fragile: tuple[Studio, Any], page: Any
) -> None:
    studio, engine = fragile
    sign_in(page, studio, "annotator02")
    choose_campaign(page, "test-crowd_vote")
    shown = chat_text(page)
    before = answers_stored(studio)

    def refuse(_dbapi: Any, _record: Any) -> None:
        raise sqlite3.OperationalError("unable to open database file")

    event.listen(engine, "connect", refuse)
    engine.dispose()
    try:
        fill_and_submit(page)
        wait_for_text(page, UNAVAILABLE)
        # Said where the page says everything (not as "Error" boxes over every field, which block the form).
        assert UNAVAILABLE in page.inner_text("#h2h-message .h2h-error")
        assert "Could not parse server response" not in page.inner_text("body")
        assert page.locator("[data-testid='status-tracker'].error").count() == 0
        save_screenshot(page, "faults-annotate-annotator-store-unreachable")
        assert answers_stored(studio) == before
    finally:
        event.remove(engine, "connect", refuse)
        engine.dispose()
    page.locator("#h2h-form-crowd_vote").get_by_role("button", name="Submit (Enter)").click()
    wait_for_progress(page, 1)
    settled(page)
    assert chat_text(page) != shown
    assert answers_stored(studio) == before + 1
    save_screenshot(page, "faults-annotate-annotator-store-unreachable-back")
