"""The Research page's judge-bias card in Chromium: under the calibration plot on "Judge vs human", the button
"Judge-bias card" fills a table of the measures (position flips, length bias, ECE, mean bias, the J < τ decision's
κ) with n, the 95% interval, whether each is material and a sentence stating its threshold, and the summary in the
note. The store: the audited hostile research run of ``test_research_ppi`` (every with_sap itinerary item scored by
an expert and aggregated) with the judge's own score varied per item. The cells shown must equal
``studio.services.research_judge`` through ``studio.ui.research_judge.card_display``; nothing becomes markup."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import update
from sqlmodel import col

from studio.db import create_db_engine, read_session, write_session
from studio.models import ScoreRow
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import UI_WAIT_MS
from tests.browser.research_store import PASSWORD
from tests.browser.test_research_page import LIVE_DATA_MARKUP, cells, choose, compute, open_tab, wait_for_rows
from tests.browser.test_research_ppi import build_audited_store
from tests.serving import serve_in_thread

pytestmark = pytest.mark.browser

JUDGE = "judge=judge-x|prompt=v1"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, str]]:
    from studio.settings import get_settings
    from studio.web.app import create_app

    url, label = build_audited_store(tmp_path_factory.mktemp("judge-card-store"))
    engine = create_db_engine(url)
    with write_session(engine) as session:  # the judge's own score varies from item to item
        judged = col(ScoreRow.J_judge).is_not(None)
        session.execute(update(ScoreRow).where(judged).values(J_judge=1.0 + 0.5 * (col(ScoreRow.response_id) % 7)))
    engine.dispose()
    with serve_in_thread(create_app(get_settings(database_url=url))) as base_url:
        yield base_url, url, label


def expected_rows(database_url: str, signature: str) -> tuple[list[list[str]], str]:
    from studio.services.research_judge import judge_bias
    from studio.ui.research_judge import card_display

    engine = create_db_engine(database_url)
    try:
        with read_session(engine) as session:
            card = judge_bias(session, variant="with_sap", signature=signature, judge=JUDGE)
    finally:
        engine.dispose()
    frame = card_display(card)
    rows = [list(frame.columns), *[[str(value) for value in row] for row in frame.itertuples(index=False)]]
    return rows, card.summary


def test_the_judge_bias_card_sits_under_the_calibration_plot(browser: Any, served: tuple[str, str, str]) -> None:
    base_url, database_url, signature = served
    context = browser.new_context(viewport={"width": 1800, "height": 1000})
    page = context.new_page()
    try:
        page.goto(f"{base_url}/ui/")
        page.fill("#username", "researcher01")
        page.fill("#password", PASSWORD)
        page.click("#login-button")
        page.wait_for_selector("#h2h-username", timeout=UI_WAIT_MS)
        page.get_by_role("tab", name="Research").click()
        page.wait_for_function(
            "() => (document.querySelector('#h2h-research-variant input') || {}).value === 'with_sap'",
            timeout=UI_WAIT_MS,
        )
        choose(page, "h2h-research-signature", signature)
        open_tab(page, "Judge vs human")
        compute(page, "h2h-calibration-button", "h2h-calibration-note", "Computed for variant with_sap")
        note = compute(page, "h2h-judge-bias-button", "h2h-judge-bias-note", "by the thresholds stated in each row")
        wait_for_rows(page, "h2h-judge-bias", "Decision J < τ")
        shown = cells(page, "h2h-judge-bias")
        expected, summary = expected_rows(database_url, signature)
        assert shown == expected
        assert summary in note and "seed 0" in note
        names = [row[0] for row in shown[1:]]
        assert names[:3] == ["Position-flip rate", "First-shown preference", "Length ρ (judge)"]
        assert "Calibration error (ECE)" in names and "Decision J < τ: Cohen's κ" in names
        flip = shown[1]
        assert flip[1:4] == ["", "0", ""] and flip[4] == "> 10%"
        assert "No pairs judged in both orders: run h2h judge-pairs, then h2h judge-card --pairs FILE." in note
        ece = shown[names.index("Calibration error (ECE)") + 1]
        assert int(ece[2]) > 3 and "[" in ece[1] and ece[4] == "> 0.5 points"
        assert "5 equal-width bins of J_judge on [0, 5]); material above 0.5 points." in note
        kappa = shown[names.index("Decision J < τ: Cohen's κ") + 1]
        assert kappa[4] == "< 0.6" and kappa[3] in ("yes", "no") and "material below 0.6." in note
        page.wait_for_timeout(200)
        assert page.locator(LIVE_DATA_MARKUP).count() == 0
        assert page.evaluate("window.__pwned") is None
        box_plot = page.locator("#h2h-calibration-plot").bounding_box()
        box_card = page.locator("#h2h-judge-bias").bounding_box()
        assert box_plot and box_card and box_card["y"] > box_plot["y"]  # under the plot
        page.locator("#h2h-judge-bias").scroll_into_view_if_needed()
        save_screenshot(page, "research-judge-bias-card")
    finally:
        context.close()
