"""What a person types on the Annotate page is what is stored (issue 16 items 1, 3, 4 and the annotate parts of 9),
in Chromium, asserting what is rendered and what is stored: a numeric question starts empty and an empty required
one is refused under it; a revision with nothing changed stores nothing and says so, and digits work while
revising; a session ended by an admin leaves the page saying so with the typed answer kept; the item's id and the
options' keys are on the page."""

from __future__ import annotations

from typing import Any

import pytest

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
