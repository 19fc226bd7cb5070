"""The Research page's "Rankings (pairwise)" section in Chromium: a researcher picks a pairwise campaign and sees the
Bradley–Terry ranking with its 95% intervals, the plot, the win-rate matrix, the position-bias sentence and the votes
to swap each two neighbours — each equal to what the store's votes give (``studio.services.research_ranking``).
Screenshot: ``research-ranking``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from studio.db import create_db_engine, read_session, upgrade_db, write_session
from studio.services.auth import hash_password
from studio.services.campaigns import create_campaign
from studio.services.ingest import ingest_run
from studio.services.research_ranking import ranking
from studio.workflows import load_schemas
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import UI_WAIT_MS
from tests.browser.test_research_page import cells, compute
from tests.serving import serve_in_thread
from tests.studio.helpers import PASSWORD, add_people, answer_all, write_run

pytestmark = pytest.mark.browser
READER = "researcher-ranking"
CAMPAIGN = "pairs"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """A store with a pairwise campaign answered by three people (two pick what they saw as A, one B), served;
    yields (base URL, database URL)."""
    from studio.settings import get_settings
    from studio.web.app import create_app

    folder = Path(tmp_path_factory.mktemp("research-ranking"))
    url = f"sqlite:///{folder / 'studio.sqlite'}"
    engine = create_db_engine(url)
    upgrade_db(engine)
    ingest_run(engine, write_run(folder / "run"))
    secret = hash_password(PASSWORD)
    add_people(engine, secret, [READER], "researcher")
    with write_session(engine) as session:
        create_campaign(session, name=CAMPAIGN, schema=load_schemas()["pairwise"], people_per_item=3)
    people = add_people(engine, secret, ["p-1", "p-2", "p-3"], "annotator")
    answer_all(
        engine, CAMPAIGN, people, lambda _i, _r, person: {"preference": "B" if person.username == "p-3" else "A"}
    )
    engine.dispose()
    with serve_in_thread(create_app(get_settings(database_url=url))) as base:
        yield base, url


def test_the_research_page_shows_the_pairwise_ranking(browser: Any, served: tuple[str, str]) -> None:
    base, url = served
    context = browser.new_context(viewport={"width": 1800, "height": 1100})
    page = context.new_page()
    page.goto(f"{base}/ui/")
    page.fill("#username", READER)
    page.fill("#password", PASSWORD)
    page.click("#login-button")
    page.wait_for_selector("#h2h-username", timeout=UI_WAIT_MS)
    page.get_by_role("tab", name="Research").click()
    page.get_by_role("tab", name="Rankings (pairwise)", exact=True).click()
    page.wait_for_function(
        f"() => (document.querySelector('#h2h-ranking-campaign input') || {{}}).value === '{CAMPAIGN}'",
        timeout=UI_WAIT_MS,
    )
    note = compute(page, "h2h-ranking-button", "h2h-ranking-note", "Position bias")
    engine = create_db_engine(url)
    with read_session(engine) as session:
        view = ranking(session, campaign=CAMPAIGN)
    engine.dispose()
    stored = view.ranking.table
    assert str(view.ranking.position_bias["sentence"]) in note
    assert "material: the interval excludes ½" in note  # two of three people always pick A
    assert "arena-rank" in note and "greedy upper bound" in note
    header, *rows = cells(page, "h2h-ranking")
    assert header == ["Rank", "System", "Rating", "95% CI", "Votes", "Wins / losses / ties"]
    assert len(rows) == len(stored)
    for row, expected in zip(rows, stored.to_dict("records"), strict=True):
        assert row[1] == expected["competitor"] and row[2] == f"{expected['rating']:.1f}"
        assert row[3] == f"[{expected['lower']:.1f}, {expected['upper']:.1f}]" and row[4] == str(expected["votes"])
    win_header, *win_rows = cells(page, "h2h-ranking-winrates")
    assert win_header[0] == "competitor" and len(win_rows) == len(stored) and win_rows[0][1] == "—"
    _frag_header, *frag_rows = cells(page, "h2h-ranking-fragility")
    assert len(frag_rows) == len(stored) - 1 and frag_rows[0][-1] == "greedy upper bound"
    page.wait_for_selector("#h2h-ranking-plot img", timeout=UI_WAIT_MS)
    page.locator("#h2h-ranking").scroll_into_view_if_needed()
    save_screenshot(page, "research-ranking")
    context.close()
