"""Issue 11 item 8: the annotate page by keyboard alone, in Chromium — sign in, choose a campaign, answer every
question (option 11 of the subtask included, the free-text comment too) and submit without the mouse; every control
is labelled and the focus moves through the form in its order."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.a11y import tab_order, unlabelled_controls
from tests.browser.annotate_store import ANNOTATORS
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import UI_WAIT_MS, Studio, settled
from tests.browser.store_fixture import PASSWORD
from tests.browser.test_annotate_page import site, stored, wait_for_answers

pytestmark = pytest.mark.browser
__all__ = ["site"]  # the served store, shared with test_annotate_page

COMMENT_LABEL = "Anything the curator should know? (optional)"


def focused_label(page: Any) -> str:
    return str(
        page.evaluate(
            """() => { const el = document.activeElement; if (!el) return '';
              const label = (el.labels && el.labels[0]?.textContent) || el.getAttribute('aria-label');
              return (label || el.id || '').trim(); }"""
        )
    )


def tab_until(page: Any, label: str, *, limit: int = 60) -> None:
    """Press Tab until the focused control's label (or id) is ``label``."""
    for _ in range(limit):
        if focused_label(page) == label:
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {label!r}")


def test_a_person_finishes_an_item_with_the_keyboard_alone(site: Studio, page: Any) -> None:
    username = ANNOTATORS[-1]
    page.goto(f"{site.base_url}/ui/")
    page.wait_for_selector("#username")
    assert focused_label(page) in ("Username", "username")  # the login form starts in its first field
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    page.wait_for_selector("#h2h-username", timeout=UI_WAIT_MS)
    settled(page)  # the campaign list has arrived

    tab_until(page, "Campaign")
    page.keyboard.type("page-vote")
    # A person reads the filtered list before choosing from it (on a loaded machine it can take a moment).
    page.get_by_role("option", name="page-vote").first.wait_for(timeout=UI_WAIT_MS)
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_selector("#h2h-chat .h2h-input", timeout=UI_WAIT_MS)
    settled(page)
    assert unlabelled_controls(page) == []

    page.keyboard.press("3")  # verdict: discard
    page.keyboard.press("1")  # subtask: 1 then 1 within the wait is option 11
    page.keyboard.press("1")
    page.wait_for_function("() => document.querySelector('.h2h-form:not([hidden]) input[value=discard]')?.checked")
    tab_until(page, COMMENT_LABEL)
    page.keyboard.type("Typed with the keyboard; 1 and S stay text here.")
    page.keyboard.press("Tab")  # to Submit
    assert page.evaluate("() => document.activeElement.textContent.trim()") == "Submit (Enter)"
    save_screenshot(page, "annotate-annotator-keyboard-only-before-submit")
    page.keyboard.press("Enter")
    [answer] = wait_for_answers(site, username, "page-vote", 1)
    assert answer.values == {
        "verdict": "discard",
        "subtask_label": "itinerary_initialization",
        "comment": "Typed with the keyboard; 1 and S stay text here.",
    }
    assert len(stored(site, username, "page-vote")) == 1


def test_the_focus_order_follows_the_form(site: Studio, page: Any) -> None:
    from tests.browser.conftest import choose_campaign, sign_in

    sign_in(page, site, ANNOTATORS[-2])
    choose_campaign(page, "page-safety")
    page.keyboard.press("2")
    page.keyboard.press("2")  # violation: yes — the conditional question appears, in its place in the order
    page.wait_for_selector(".h2h-key-check input", state="visible", timeout=UI_WAIT_MS)
    tab_until(page, "Campaign")
    stops = tab_order(page, presses=40)
    order = ["1 — unsafe", "No", "Yes", "Dismisses the feeling", "Other"]
    positions = [stops.index(stop) for stop in order]
    assert positions == sorted(positions), stops
    assert unlabelled_controls(page) == []
    save_screenshot(page, "annotate-annotator-focus-order")
