"""The annotate page as people use it (issue 11 items 1, 3, 6, 8; issue 9 item 6), in Chromium, asserting what is
rendered: the context beside the chat, errors on their fields, going back to revise, keys for options 10 and 11 and
for multiple choice, a conditional question, a 10 MB reply cut with "show the whole text", bidi controls shown."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from studio.db import create_db_engine, read_session
from studio.models import Answer, Campaign, User
from tests.browser.annotate_store import DECEPTIVE, END_MARKER, MEMORY, annotate_site
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import UI_WAIT_MS, Studio, chat_text, choose_campaign, settled, sign_in

pytestmark = pytest.mark.browser

FORM = ".h2h-form:visible"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    yield from annotate_site(Path(tmp_path_factory.mktemp("annotate-page")))


def stored(site: Studio, username: str, campaign: str) -> list[Answer]:
    engine = create_db_engine(site.store.database_url)
    try:
        with read_session(engine) as session:
            query = (
                select(Answer)
                .join(User, User.id == Answer.user_id)
                .join(Campaign, Campaign.id == Answer.campaign_id)
                .where(User.username == username, Campaign.name == campaign)
                .order_by(Answer.id)
            )
            return list(session.exec(query).all())
    finally:
        engine.dispose()


def wait_for_answers(site: Studio, username: str, campaign: str, count: int) -> list[Answer]:
    deadline = time.monotonic() + UI_WAIT_MS / 1000
    while time.monotonic() < deadline:
        answers = stored(site, username, campaign)
        if len(answers) >= count:
            return answers
        time.sleep(0.1)
    raise AssertionError(f"{username} has {len(stored(site, username, campaign))} answers, expected {count}")


def question(page: Any, question_id: str) -> Any:
    """The box of a question of the visible form (its field and its error line)."""
    return page.locator(f"{FORM} [id^='q-box-'][id$='-{question_id}']")


def field_error(page: Any, question_id: str) -> Any:
    return page.locator(f"{FORM} [id^='err-'][id$='-{question_id}'] .h2h-field-error")


def message(page: Any) -> str:
    return str(page.inner_text("#h2h-message"))


def test_the_context_panel_shows_the_memories_in_chinese_and_bidi_controls_visibly(site: Studio, page: Any) -> None:
    sign_in(page, site, "pa01")
    choose_campaign(page, "page-vote")
    for _ in range(5):  # skip to the recollection scenario (the order of items is the queue's)
        if MEMORY in page.inner_text("#h2h-context"):
            break
        shown = chat_text(page)
        page.keyboard.press("s")
        page.wait_for_function(
            "(before) => document.querySelector('#h2h-chat').innerText !== before &&"
            " document.querySelector('#h2h-message').innerText.startsWith('Skipped.') &&"
            " document.querySelector('#h2h-context dl, #h2h-context .h2h-empty') !== null",
            arg=shown,
        )
    context = page.inner_text("#h2h-context")
    assert "Memories of the user" in context and MEMORY in context and "用户不吃辣" in context
    assert "Date" in context and "2026-05-02" in context
    assert page.locator("#h2h-context li").count() == 2
    user_input = page.inner_text("#h2h-chat .h2h-input .h2h-text")
    assert user_input == "Please open abc⟨U+202E⟩exe.txt for me" and DECEPTIVE not in user_input
    assert "\u202e" not in chat_text(page)
    assert "Mia, a warm illustrator." in page.inner_text("#h2h-persona")  # the persona is open beside the chat
    save_screenshot(page, "annotate-annotator-context-panel")


def test_an_out_of_range_score_is_said_on_its_field_and_the_form_stays_usable(site: Studio, page: Any) -> None:
    """Issue 11 item 1: a score of 7 on 0..5 locked the form under six red overlays until a reload."""
    sign_in(page, site, "pe01")
    choose_campaign(page, "page-adjudicate")
    question(page, "rubric_score").locator("input").fill("7")
    page.locator(f"{FORM} .h2h-submit").click()
    score_error = field_error(page, "rubric_score")
    score_error.wait_for(state="visible", timeout=UI_WAIT_MS)
    assert score_error.inner_text() == "7 is not allowed here. A number from 0 to 5, in steps of 0.5."
    assert field_error(page, "note").inner_text() == "This question is required: please answer it."
    assert message(page).startswith("Not saved: 2 questions need your attention")
    assert "Rubric score (0–5)" in message(page) and "answers." not in message(page)
    assert page.locator(".error, [class*='error-overlay']").filter(has_text="Error").count() == 0
    save_screenshot(page, "annotate-expert-out-of-range-error-on-field")
    assert stored(site, "pe01", "page-adjudicate") == []
    submit = page.locator(f"{FORM} .h2h-submit")
    assert submit.is_visible() and submit.is_enabled()
    score = question(page, "rubric_score").locator("input")
    score.fill("")
    score.press_sequentially("3.5")  # typed, as a person does (Gradio's text box says "input" on key presses)
    # Changing an answer takes its error away at once (before: it stayed until the next Submit)...
    page.wait_for_function(
        "() => !document.querySelector(\"[id^='err-'][id$='-rubric_score']\").innerText.trim()", timeout=UI_WAIT_MS
    )
    assert field_error(page, "note").inner_text() == "This question is required: please answer it."  # ...its own only
    question(page, "note").locator("textarea").fill("Feasible, but rushed.")
    submit.click()
    [answer] = wait_for_answers(site, "pe01", "page-adjudicate", 1)
    assert answer.values == {"rubric_score": 3.5, "note": "Feasible, but rushed."}
    page.wait_for_function("() => document.querySelector('#h2h-message').innerText.startsWith('Saved.')")
    assert not score_error.is_visible()
    save_screenshot(page, "annotate-expert-corrected-and-saved")


def test_going_back_revises_a_stored_answer(site: Studio, page: Any) -> None:
    sign_in(page, site, "pa02")
    choose_campaign(page, "page-vote")
    first = chat_text(page)
    question(page, "verdict").get_by_text("Keep", exact=True).click()
    question(page, "subtask_label").get_by_text("Dialogue — everyday chat", exact=True).click()
    page.locator(f"{FORM} .h2h-submit").click()
    [answer] = wait_for_answers(site, "pa02", "page-vote", 1)
    page.wait_for_function("() => document.querySelector('#h2h-message').innerText.startsWith('Saved.')")
    page.get_by_text("Go back: revise one of your earlier answers").click()
    page.locator("#h2h-mine-load").click()
    page.wait_for_function("() => document.querySelector('#h2h-message').innerText.includes('listed')")
    page.click("#h2h-mine input")
    options = page.get_by_role("option").all_inner_texts()
    [listed] = [option for option in options if option.startswith(f"Item {answer.item_id} “")]
    assert listed.split("“")[1].split("”")[0] in first  # the item named by the start of its user input
    assert listed.endswith("Keep · Dialogue — everyday chat")
    page.get_by_role("option", name=f"Item {answer.item_id} “").first.click()
    page.wait_for_function("() => document.querySelector('#h2h-message').innerText.startsWith('Revising')")
    settled(page)
    assert chat_text(page) == first  # the answered item is back on screen
    assert question(page, "verdict").locator("input[value=keep]").is_checked()
    save_screenshot(page, "annotate-annotator-revise-opened")
    question(page, "verdict").get_by_text("Discard", exact=True).click()
    page.locator(f"{FORM} .h2h-submit").click()
    page.wait_for_function(
        "() => document.querySelector('#h2h-message').innerText.startsWith('Saved your revised answer.')"
    )
    [revised] = stored(site, "pa02", "page-vote")
    assert revised.id == answer.id and revised.revision == 1
    assert revised.values == {"verdict": "discard", "subtask_label": "dialogue_base"}
    settled(page)
    assert chat_text(page) != first  # back to the next item to answer
    page.click("#h2h-mine input")  # the list was read anew: it shows the revised answer (before: the old one)
    options = page.get_by_role("option").all_inner_texts()
    [listed] = [option for option in options if option.startswith(f"Item {answer.item_id} “")]
    assert "revised 1×" in listed and listed.endswith("Discard · Dialogue — everyday chat"), listed
    page.keyboard.press("Escape")
    save_screenshot(page, "annotate-annotator-revise-saved")


def test_options_ten_and_eleven_are_reachable_by_keyboard(site: Studio, page: Any) -> None:
    sign_in(page, site, "pa03")
    choose_campaign(page, "page-vote")
    for keys, expected in ((["1", "1", "1"], "itinerary_initialization"), (["2", "1", "0"], "itinerary_response")):
        before = len(stored(site, "pa03", "page-vote"))
        for key in keys:
            page.keyboard.press(key)
        subtask = question(page, "subtask_label")
        subtask.locator(f"input[value={expected}]").wait_for(state="attached")
        page.wait_for_function(
            "(value) => document.querySelector(`.h2h-form input[value=${value}]`)?.checked", arg=expected
        )
        save_screenshot(page, f"annotate-annotator-keyboard-option-{expected}")
        page.keyboard.press("Enter")
        answers = wait_for_answers(site, "pa03", "page-vote", before + 1)
        assert answers[-1].values["subtask_label"] == expected
        page.wait_for_function(  # the next item is on screen, its form empty
            "() => document.querySelector('#h2h-message').innerText.startsWith('Saved.') &&"
            " !document.querySelector('.h2h-form input:checked')"
        )


def test_a_conditional_question_is_hidden_until_its_condition_holds(site: Studio, page: Any) -> None:
    sign_in(page, site, "pa04")
    choose_campaign(page, "page-safety")
    kinds = question(page, "violation_kind")
    assert not kinds.is_visible()
    save_screenshot(page, "annotate-annotator-conditional-hidden")
    page.keyboard.press("2")  # safety: 2
    page.keyboard.press("2")  # violation: yes
    kinds.wait_for(state="visible", timeout=UI_WAIT_MS)
    page.keyboard.press("1")  # the multiple-choice question: tick the first kind ...
    page.keyboard.press("3")  # ... and the third
    page.wait_for_function("() => document.querySelectorAll('.h2h-form .h2h-key-check input:checked').length === 2")
    save_screenshot(page, "annotate-annotator-conditional-shown")
    page.keyboard.press("Enter")
    [answer] = wait_for_answers(site, "pa04", "page-safety", 1)
    assert answer.values == {"safety": 2, "violation": "yes", "violation_kind": ["dismissive", "no_risk_check"]}


def test_a_giant_reply_is_cut_and_show_all_loads_it(site: Studio, page: Any) -> None:
    sign_in(page, site, "pa05")
    choose_campaign(page, "page-safety")
    judged = page.locator("#h2h-chat .h2h-judged")
    assert "Cut here: showing the first 20,000 of 10,485,760 characters." in judged.inner_text()
    assert END_MARKER not in judged.inner_text()
    assert len(page.inner_text("#h2h-chat .h2h-judged .h2h-text")) == 20_000
    save_screenshot(page, "annotate-annotator-giant-cut", full_page=False)
    page.locator("#h2h-show-all").click()
    page.wait_for_function(
        "(marker) => document.querySelector('#h2h-chat .h2h-judged .h2h-text').textContent.endsWith(marker)",
        arg=END_MARKER,
        timeout=UI_WAIT_MS * 2,
    )
    assert "Cut here" not in page.inner_text("#h2h-chat .h2h-who")
    assert not page.locator("#h2h-show-all").is_visible()
    save_screenshot(page, "annotate-annotator-giant-shown-whole", full_page=False)
