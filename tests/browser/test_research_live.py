"""The Research page's live section in Chromium: a researcher opens "Live sessions (SAP)", picks the live campaign
and sees the SAP table from its stored sessions (one row per variant, intervals, violation per reply with its counts,
tripwire hits, SAP pass rate), simulated users' sessions in their own table, and the rule in words — each cell equal to
what the store's sessions give (``studio.services.live_results``). Screenshot: ``research-live-sap``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from studio.db import create_db_engine, read_session, upgrade_db
from studio.services.auth import hash_password
from studio.services.live_results import live_sap_report
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import UI_WAIT_MS
from tests.browser.test_research_page import cells, compute
from tests.serving import serve_in_thread
from tests.studio.helpers import PASSWORD, add_people
from tests.studio.live_helpers import LIVE_CAMPAIGN, live_campaign
from tests.studio.services.test_live_results import DOWN, campaign_items, fill

pytestmark = pytest.mark.browser
READER = "researcher-live"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A store with the live campaign and known rated sessions (people's and one simulated), served; yields
    (base URL, database URL)."""
    from studio.settings import get_settings
    from studio.web.app import create_app

    url = f"sqlite:///{Path(tmp_path_factory.mktemp('research-live')) / 'studio.sqlite'}"
    engine = create_db_engine(url)
    upgrade_db(engine)
    secret = hash_password(PASSWORD)
    raters = live_campaign(engine, secret, base_url=DOWN, raters=3)
    add_people(engine, secret, [READER], "researcher")
    fill(engine, raters, campaign_items(engine))
    engine.dispose()
    with serve_in_thread(create_app(get_settings(database_url=url))) as base:
        yield base, url


def test_the_research_page_shows_the_live_sap_table(browser: Any, served: tuple[str, str]) -> None:
    base, url = served
    context = browser.new_context(viewport={"width": 1800, "height": 1100})
    page = context.new_page()
    page.goto(f"{base}/ui/")
    page.fill("#username", READER)
    page.fill("#password", PASSWORD)
    page.click("#login-button")
    page.wait_for_selector("#h2h-username", timeout=UI_WAIT_MS)
    page.get_by_role("tab", name="Research").click()
    page.get_by_role("tab", name="Live sessions (SAP)", exact=True).click()
    page.wait_for_function(  # the picker is filled by the page load with the live campaign
        f"() => (document.querySelector('#h2h-live-sap-campaign input') || {{}}).value === '{LIVE_CAMPAIGN}'",
        timeout=UI_WAIT_MS,
    )
    note = compute(page, "h2h-live-sap-button", "h2h-live-sap-note", "People's rated sessions only")
    assert "2000 resamples, seed 0" in note and "companion: standin-companion" in note
    assert "Krippendorff" in note and "1 scenario(s)" in note
    engine = create_db_engine(url)
    with read_session(engine) as session:
        stored = live_sap_report(session, campaign=LIVE_CAMPAIGN).human.set_index("variant")
    engine.dispose()
    header, with_sap, without = cells(page, "h2h-live-sap")
    assert header[:4] == ["Variant", "Sessions", "Raters", "Safety perception (1–5) [95% CI]"]
    assert with_sap[:3] == ["with SAP", "2", "2"] and without[:3] == ["without SAP", "2", "2"]
    low, high = stored.loc["with_sap", "safety_low"], stored.loc["with_sap", "safety_high"]
    assert with_sap[3] == f"4.50 [{low:.2f}, {high:.2f}]"
    assert without[5].startswith("28.6% [") and without[5].endswith("(2/7)")
    assert (with_sap[6], without[6]) == ("1", "2")  # tripwire hits
    assert (with_sap[7], without[7]) == ("100.0% (1/1)", "0.0% (0/1)")  # SAP check on replies to flagged messages
    assert with_sap[-3:] == ["", "", ""]  # no batch scores for the companion: empty cells
    _header, sim_with, sim_without = cells(page, "h2h-live-sap-simulated")
    assert (sim_with[1], sim_without[1], sim_without[3].split(" ")[0]) == ("0", "1", "1.00")
    assert "not people's ratings" in page.inner_text("#h2h-live-sap-simulated")
    page.locator("#h2h-live-sap").scroll_into_view_if_needed()
    save_screenshot(page, "research-live-sap")
    context.close()
