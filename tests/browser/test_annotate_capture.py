"""What a person types on the Annotate page is what is stored (issue 16 items 1, 3, 4 and the annotate parts of 9),
in Chromium, asserting what is rendered and what is stored: a numeric question starts empty and an empty required
one is refused under it; a revision with nothing changed stores nothing and says so, and digits work while
revising; a session ended by an admin leaves the page saying so with the typed answer kept; the item's id and the
options' keys are on the page."""

from __future__ import annotations

from typing import Any

import pytest

from studio.models import UserPublic
from tests.browser.annotate_store import ADMIN
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import UI_WAIT_MS, Studio, choose_campaign, settled, sign_in
from tests.browser.test_annotate_page import FORM, field_error, message, question, site, stored, wait_for_answers

pytestmark = pytest.mark.browser
__all__ = ["site"]  # the served store (tests.browser.annotate_store), one per module


def wait_for_message(page: Any, start: str) -> None:
    page.wait_for_function(
        "(start) => document.querySelector('#h2h-message').innerText.startsWith(start)", arg=start, timeout=UI_WAIT_MS
    )


def test_an_empty_score_is_refused_under_it_and_nothing_is_stored(site: Studio, page: Any) -> None:
    """Issue 16 item 1: the "Rubric score (0–5)" box showed 0 before anyone typed, and a note alone was stored as
    rubric_score 0.0 ("Saved."). The box starts empty; an empty score is refused under the question; a typed 0 is
    a score like any other."""
    sign_in(page, site, "pe02")
    choose_campaign(page, "page-adjudicate")
    score = question(page, "rubric_score").locator("input, textarea").first
    assert score.input_value() == ""  # nothing drawn in it before anyone types
    save_screenshot(page, "annotate-expert-score-starts-empty")
    question(page, "note").locator("textarea").fill("Only a note: I did not score it.")
    page.locator(f"{FORM} .h2h-submit").click()
    score_error = field_error(page, "rubric_score")
    score_error.wait_for(state="visible", timeout=UI_WAIT_MS)
    assert score_error.inner_text() == "This question is required: please answer it."
    assert message(page).startswith("Not saved: 1 question needs your attention")
    assert question(page, "note").locator("textarea").input_value() == "Only a note: I did not score it."
    assert score.input_value() == ""
    save_screenshot(page, "annotate-expert-empty-score-refused")
    assert stored(site, "pe02", "page-adjudicate") == []
    score.fill("0")  # a typed 0 is an answer, and Enter in the score box submits the form
    score.press("Enter")
    [answer] = wait_for_answers(site, "pe02", "page-adjudicate", 1)
    assert answer.values == {"rubric_score": 0.0, "note": "Only a note: I did not score it."}
    wait_for_message(page, "Saved.")
    settled(page)
    save_screenshot(page, "annotate-expert-typed-zero-saved")


def wait_checked(page: Any, value: str) -> None:
    """Wait until the form's option ``value`` is checked."""
    page.wait_for_function(
        "(value) => document.querySelector(`.h2h-form input[value=${value}]`)?.checked", arg=value, timeout=UI_WAIT_MS
    )


def open_to_revise(page: Any, item_id: int) -> None:
    """Open one's answer to ``item_id`` from "Go back" (the list read anew)."""
    if not page.locator("#h2h-mine-load").is_visible():
        page.get_by_text("Go back: revise one of your earlier answers").click()
    page.locator("#h2h-mine-load").click()
    page.wait_for_function("() => document.querySelector('#h2h-message').innerText.includes('listed')")
    page.click("#h2h-mine input")
    page.get_by_role("option", name=f"Item {item_id} “").first.click()
    wait_for_message(page, "Revising")
    settled(page)


def test_a_revision_that_changes_nothing_is_not_stored_and_digits_work_while_revising(site: Studio, page: Any) -> None:
    """Issue 16 item 3: submitting an opened answer unchanged said "Saved your revised answer." and counted a
    revision; and once every question was answered, digits did nothing."""
    sign_in(page, site, "pa06")
    choose_campaign(page, "page-vote")
    question(page, "verdict").get_by_text("Keep", exact=True).click()
    question(page, "subtask_label").get_by_text("Dialogue — everyday chat", exact=True).click()
    page.locator(f"{FORM} .h2h-submit").click()
    [answer] = wait_for_answers(site, "pa06", "page-vote", 1)
    wait_for_message(page, "Saved.")
    open_to_revise(page, answer.item_id)
    page.keyboard.press("Enter")  # nothing changed
    wait_for_message(page, "Nothing changed: your answer is as it was.")
    settled(page)
    save_screenshot(page, "annotate-annotator-revise-nothing-changed")
    [kept] = stored(site, "pa06", "page-vote")
    assert (kept.revision, kept.values, kept.updated_at) == (0, answer.values, answer.updated_at)
    open_to_revise(page, answer.item_id)
    # as a person would, act once the stored answer is drawn (on a busy machine a key pressed before the form is
    # redrawn with it is overwritten by that redraw)
    wait_checked(page, "keep")
    page.keyboard.press("3")  # every question answered: the digit goes to the first question (3 = discard)
    wait_checked(page, "discard")
    page.keyboard.press("2")  # ... and the next one to the question the last digit went to (2 = revise)
    wait_checked(page, "revise")
    save_screenshot(page, "annotate-annotator-revise-by-keys")
    page.keyboard.press("Enter")
    wait_for_message(page, "Saved your revised answer.")
    [revised] = stored(site, "pa06", "page-vote")
    assert revised.revision == 1 and revised.values == {"verdict": "revise", "subtask_label": "dialogue_base"}


def end_sessions(site: Studio, username: str, how: str) -> None:
    """An admin ends ``username``'s sessions from the server (the admin use cases the Admin page calls)."""
    from studio.db import create_db_engine, write_session
    from studio.services.auth import find_user
    from studio.usecases import admin

    engine = create_db_engine(site.store.database_url)
    try:
        with write_session(engine) as session:
            caller = UserPublic.model_validate(find_user(session, ADMIN))
            if how == "deactivate":
                admin.set_active(session, caller=caller, username=username, active=False)
            else:
                admin.revoke_sessions(session, caller=caller, username=username)
    finally:
        engine.dispose()


SIGNED_OUT = "You were signed out — sign in again"


@pytest.mark.parametrize(("username", "how"), [("pa07", "revoke_sessions"), ("pa08", "deactivate")])
def test_a_session_ended_by_an_admin_says_so_keeps_the_typed_answer_and_stores_nothing(
    site: Studio, page: Any, username: str, how: str
) -> None:
    """Issue 16 item 4: after an admin ended the session, Submit covered the page with bare red "Error" badges, the
    form's fields hidden under them. The page says "You were signed out — sign in again" (a link to the sign-in page),
    keeps what was typed, and nothing is stored. Signed in again (in another tab), the same Submit stores it."""
    sign_in(page, site, username)
    choose_campaign(page, "page-vote")
    question(page, "comment").locator("textarea").fill("Half of my note, typed before the admin acted.")
    question(page, "verdict").get_by_text("Discard", exact=True).click()
    end_sessions(site, username, how)
    page.keyboard.press("Enter")
    page.wait_for_function(
        "(text) => document.querySelector('#h2h-message').innerText.includes(text)", arg=SIGNED_OUT, timeout=UI_WAIT_MS
    )
    settled(page)
    link = page.locator("#h2h-message a", has_text="sign in again")
    assert link.get_attribute("href") == "/login"
    assert question(page, "verdict").locator("input[value=discard]").is_checked()
    assert (
        question(page, "comment").locator("textarea").input_value() == "Half of my note, typed before the admin acted."
    )
    assert page.locator(".gradio-container .error").filter(has_text="Error").count() == 0
    save_screenshot(page, f"annotate-annotator-signed-out-by-admin-{how.replace('_', '-')}")
    assert stored(site, username, "page-vote") == []
    if how != "revoke_sessions":
        return
    again = page.context.new_page()  # the link opens the sign-in page in a new tab; the page keeps the answer
    sign_in(again, site, username)
    again.close()
    question(page, "subtask_label").get_by_text("Dialogue — everyday chat", exact=True).click()
    page.keyboard.press("Enter")
    [answer] = wait_for_answers(site, username, "page-vote", 1)
    assert answer.values == {
        "verdict": "discard",
        "subtask_label": "dialogue_base",
        "comment": "Half of my note, typed before the admin acted.",
    }


#: Records each event the page sends to the server (Gradio's queue/join bodies), from the first byte of the page.
EVENTS_JS = """
  window.__events = [];
  const send = window.fetch;
  window.fetch = (resource, options) => {
    const url = String((resource && resource.url) || resource);
    if (url.includes('/queue/join')) window.__events.push(JSON.parse((options && options.body) || '{}').fn_index);
    return send(resource, options);
  };
"""


def test_the_campaign_list_is_loaded_once_and_a_first_click_is_kept(site: Studio, page: Any) -> None:
    """Issue 16 item 10: filling the campaign list on page load counted as a "change" of the picker, which sent a
    second event whose blur then closed the list a person had opened ("element was detached from the DOM" in two
    browser tests on a busy machine). The page load is the only event the page sends before the person acts."""
    page.add_init_script(EVENTS_JS)
    sign_in(page, site, "pa09")
    page.click("#h2h-campaign input")  # at once: the list opens
    option = page.get_by_role("option", name="page-vote").first
    option.wait_for(timeout=UI_WAIT_MS)
    handle = option.element_handle()
    settled(page)
    assert len(page.evaluate("() => window.__events")) == 1  # the page load; before: the load, then choose(None)
    assert handle.evaluate("(element) => element.isConnected")  # the list the person opened is still open
    handle.click()
    page.wait_for_selector("#h2h-chat .h2h-input", timeout=UI_WAIT_MS)
    wait_for_message(page, "Answer the questions below")


KEY_BEFORE_JS = """(selector) => [...document.querySelectorAll(selector)].map(
  (label) => getComputedStyle(label, '::before').content)"""


def test_the_item_id_and_each_option_s_key_are_on_the_page(site: Studio, page: Any) -> None:
    """Issue 16 item 9 (the annotate page): the item's id above the chat; each option's button shows its key, as the
    keyboard counts them ("1 · Keep"; a rating's options already are their numbers), and what is stored is still the
    option's value."""
    sign_in(page, site, "pa09")
    choose_campaign(page, "page-safety")
    shown = page.evaluate("() => JSON.parse(document.querySelector('#h2h-shown-item textarea').value)")
    assert page.inner_text("#h2h-chat .h2h-item-id") == f"Item {shown['item_id']}"
    keyed = page.evaluate(KEY_BEFORE_JS, ".h2h-form fieldset[id$='-violation'] .wrap > label > span")
    assert keyed == ['counter(h2h-key) " · "'] * 2  # drawn "1 · No", "2 · Yes"
    ratings = page.evaluate(KEY_BEFORE_JS, ".h2h-form fieldset[id$='-safety'] .wrap > label > span")
    assert ratings == ["none"] * 5  # "1 — unsafe", "2", ... show their keys already
    page.keyboard.press("4")
    page.keyboard.press("2")
    page.keyboard.press("7")
    save_screenshot(page, "annotate-annotator-item-id-and-option-keys")
    page.keyboard.press("Enter")
    [answer] = wait_for_answers(site, "pa09", "page-safety", 1)
    assert answer.values == {"safety": 4, "violation": "yes", "violation_kind": ["other"]}
