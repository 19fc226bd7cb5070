"""Issue 18 item 10: Enter then S on the annotate page, in Chromium. The answer given is the one stored, and the page
never says "Skipped." for the item just answered. Before, S named the item just submitted: its skip raced the submit
and the page said "Skipped." after the answer was saved (or the skip won and the answer was refused)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.annotate_store import annotate_site
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import UI_WAIT_MS, Studio, chat_text, choose_campaign, settled, sign_in
from tests.browser.test_annotate_page import message, stored, wait_for_answers

pytestmark = pytest.mark.browser

SHOWN_JS = "() => document.querySelector('#h2h-shown-item textarea, #h2h-shown-item input').value"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    yield from annotate_site(Path(tmp_path_factory.mktemp("annotate-keys-skip")))


def test_enter_then_s_stores_the_answer_and_claims_no_skip(site: Studio, page: Any) -> None:
    sign_in(page, site, "pa01")
    choose_campaign(page, "page-vote")
    first_item, first_shown = chat_text(page), page.evaluate(SHOWN_JS)
    page.keyboard.press("1")  # verdict: keep
    page.keyboard.press("2")  # subtask: dialogue_emotion
    page.wait_for_function("() => document.querySelector('.h2h-form:not([hidden]) input[value=keep]')?.checked")
    page.keyboard.press("Enter")
    page.keyboard.press("s")  # straight after Enter: it names the item just submitted
    [answer] = wait_for_answers(site, "pa01", "page-vote", 1)
    page.wait_for_function(f"() => ({SHOWN_JS})() !== {first_shown!r}", timeout=UI_WAIT_MS)
    settled(page)
    assert answer.values == {"verdict": "keep", "subtask_label": "dialogue_emotion"}
    assert "Skipped." not in message(page) and message(page).startswith("Saved.")
    save_screenshot(page, "annotate-annotator-enter-then-s-saved")
    assert chat_text(page) != first_item  # the next item, which S did not skip either
    page.keyboard.press("s")  # once the next item is shown, S skips it as before
    page.wait_for_function("() => document.querySelector('#h2h-message').innerText.includes('Skipped.')")
    assert len(stored(site, "pa01", "page-vote")) == 1
