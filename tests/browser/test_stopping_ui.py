"""Issue 21's stopping, end to end in Chromium through the served studio: a crowd vote with ``stopping: {rule:
curtail}`` and five people per item; two people vote over the REST API and a third on the annotate page, lopsided on
three of the four dialogue scenarios, so each of those stops at 3 of 5 votes. What is rendered is asserted against
what is stored (``ItemStop``): the annotate page's progress line says "(stopped early: N)" as the items stop, a
fourth person is handed only the item still open, the Curate page's Stops tab lists each stop (votes at the stop,
rule, probability) under the rule in words, and the Admin campaigns table's "complete" cell counts them."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import col, select

from studio.db import create_db_engine, write_session
from studio.models import Item, ScenarioRow
from studio.models.campaigns import ItemStop
from studio.workflows import WorkflowSchema, load_schemas
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import Studio, chat_text, choose_campaign, settled, sign_in
from tests.browser.store_fixture import PASSWORD, build_store
from tests.browser.test_admin_page import wait_for_row
from tests.browser.test_curate_research_ui import choose, read_store, wait_for_text
from tests.serving import serve_in_thread

pytestmark = pytest.mark.browser
CAMPAIGN = "stopping-crowd"
CURATOR, ADMIN = "curator-stops", "admin-stops"
VOTERS = ("voter0", "voter1", "voter2", "voter3")
#: The REST voters' verdicts per scenario: b-dialogue-4 is split, so the page voter's "keep" cannot settle it.
REST_VOTES = {
    "b-dialogue-1": ("keep", "keep"),
    "b-dialogue-2": ("keep", "keep"),
    "b-dialogue-3": ("keep", "keep"),
    "b-dialogue-4": ("keep", "discard"),
}
OPEN_ITEM = "Work was long today (4)."
FORM = ".h2h-form:visible"
#: Scroll every horizontally overflowing box inside a component to its right end (for the picture only).
SCROLL_RIGHT_JS = """(id) => document.querySelectorAll(`#${id}, #${id} *`).forEach((box) => {
  if (box.scrollWidth > box.clientWidth + 1) { box.scrollLeft = box.scrollWidth; }
})"""


@pytest.fixture(scope="module")
def stopping(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    """The browser store with campaign :data:`CAMPAIGN` (crowd vote, curtail, 5 per item, the four dialogue_base
    scenarios), a curator, an admin and four voters; voter0 and voter1 have voted by :data:`REST_VOTES` over the
    served studio's REST API."""
    from studio.services.auth import create_user
    from studio.services.campaigns import TargetSelection, create_campaign
    from studio.settings import get_settings
    from studio.web.app import create_app

    store = build_store(Path(tmp_path_factory.mktemp("stopping")))
    engine = create_db_engine(store.database_url)
    data = load_schemas()["crowd_vote"].model_dump(mode="json")
    schema = WorkflowSchema.model_validate({**data, "stopping": {"rule": "curtail"}})
    with write_session(engine) as session:
        create_user(session, username=CURATOR, password=PASSWORD, role="curator")
        create_user(session, username=ADMIN, password=PASSWORD, role="admin")
        for name in VOTERS:
            create_user(session, username=name, password=PASSWORD, role="annotator")
        dialogue = TargetSelection(subtasks=["dialogue_base"])
        create_campaign(session, name=CAMPAIGN, schema=schema, people_per_item=5, selection=dialogue)
    scenario_of = _scenario_of_items(engine)
    engine.dispose()
    with serve_in_thread(create_app(get_settings(database_url=store.database_url))) as url:
        for number, name in enumerate(VOTERS[:2]):
            _vote_over_rest(f"{url}/api/v1", name, lambda item, number=number: REST_VOTES[scenario_of[item]][number])
        yield Studio(url, store)


def _scenario_of_items(engine: Any) -> dict[int, str]:
    with write_session(engine) as session:
        rows = session.execute(select(col(Item.id), col(Item.scenario_id))).tuples().all()
    return {int(item): str(scenario) for item, scenario in rows}


def _vote_over_rest(api: str, username: str, verdict: Any) -> None:
    """``username`` answers every item the queue hands them, the verdict ``verdict(item_id)``."""
    # httpx's default 5 s is too short on a busy machine (argon2 at sign-in, the queue's locks): a limit, not a speed
    # assertion.
    credentials = {"username": username, "password": PASSWORD}
    token = httpx.post(f"{api}/login", json=credentials, timeout=60).json()["token"]
    with httpx.Client(base_url=api, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        while (offered := client.get(f"/campaigns/{CAMPAIGN}/next")).status_code == 200:
            item = offered.json()
            answers = {"verdict": verdict(item["item_id"]), "subtask_label": "dialogue_base"}
            body = {"item_id": item["item_id"], "lease_id": item["lease_id"], "submission_id": uuid.uuid4().hex}
            assert client.post(f"/campaigns/{CAMPAIGN}/answers", json=body | {"answers": answers}).status_code == 201
        assert offered.status_code == 204


def stored_stops(studio: Studio) -> dict[str, ItemStop]:
    """The stored stops by scenario id."""
    query = select(ItemStop, ScenarioRow.id).join(Item, col(Item.id) == col(ItemStop.item_id))
    query = query.join(ScenarioRow, col(ScenarioRow.id) == col(Item.scenario_id))
    rows: list[Any] = read_store(studio, query)
    return {str(row[1]): row[0] for row in rows}


def third_voter_has_voted(studio: Studio) -> None:
    """voter2 keeps every item still offered to them, over REST: what the first test does on the page. A no-op where
    that test ran first on this worker; it lets each later test run alone or on another xdist worker."""
    _vote_over_rest(f"{studio.base_url}/api/v1", VOTERS[2], lambda _item: "keep")


def vote_keep_on_the_page(page: Any) -> None:
    """Answer the item on screen "Keep · Dialogue — everyday chat" and wait for the next one (or the end)."""
    page.locator(f"{FORM} [id$='-verdict']").get_by_text("Keep", exact=True).first.click()
    page.locator(f"{FORM} [id$='-subtask_label']").get_by_text("Dialogue — everyday chat", exact=True).first.click()
    page.locator(f"{FORM} .h2h-submit").click()
    settled(page)


def test_items_stop_on_the_annotate_page_and_the_stops_show_on_curate_and_admin(stopping: Studio, page: Any) -> None:
    assert stored_stops(stopping) == {}  # two votes settle nothing under a quota of five
    sign_in(page, stopping, VOTERS[2])
    choose_campaign(page, CAMPAIGN)
    wait_for_text(page, "#h2h-progress", "4 items complete (0%) (stopped early: 0).")
    save_screenshot(page, "annotate-stopping-before")
    for answered in range(1, 5):
        vote_keep_on_the_page(page)
        wait_for_text(page, "#h2h-progress", f"Campaign: {8 + answered} answers;")
        # The page's count against the store's, after each vote: the lopsided items stop one by one.
        wait_for_text(page, "#h2h-progress", f"(stopped early: {len(stored_stops(stopping))}).")
    wait_for_text(page, "#h2h-message", "No more items for you in this campaign")
    stops = stored_stops(stopping)
    assert sorted(stops) == ["b-dialogue-1", "b-dialogue-2", "b-dialogue-3"]
    assert {(stop.votes_at_stop, stop.rule, stop.probability) for stop in stops.values()} == {(3, "curtail", 1.0)}
    wait_for_text(page, "#h2h-progress", "Campaign: 12 answers; 3 / 4 items complete (75%) (stopped early: 3).")
    save_screenshot(page, "annotate-stopping-three-stopped")


def test_a_fourth_person_is_handed_only_the_item_still_open(stopping: Studio, page: Any) -> None:
    third_voter_has_voted(stopping)
    sign_in(page, stopping, VOTERS[3])
    choose_campaign(page, CAMPAIGN)
    assert OPEN_ITEM in chat_text(page)  # without the stops any of the four (each 3 of 5) could come first
    wait_for_text(page, "#h2h-progress", "1 of 4 left for you.")
    wait_for_text(page, "#h2h-progress", "3 / 4 items complete (75%) (stopped early: 3).")
    save_screenshot(page, "annotate-stopping-only-the-open-item")


def test_the_stops_tab_lists_each_stop_under_the_rule_in_words(stopping: Studio, page: Any) -> None:
    third_voter_has_voted(stopping)
    stops = stored_stops(stopping)
    assert len(stops) == 3
    sign_in(page, stopping, CURATOR)
    page.get_by_role("tab", name="Curate").click()
    page.get_by_role("tab", name="Stops").click()
    choose(page, "h2h-stops-campaign", CAMPAIGN)
    page.click("#h2h-stops-show")
    wait_for_text(page, "#h2h-stops-rule", f"{CAMPAIGN}: 3 item(s) stopped early.")
    wait_for_text(page, "#h2h-stops-rule", "Stopping (curtail): an item stops being handed out once the votes still")
    wait_for_text(page, "#h2h-stops-rule", "so a stopped item's decision is the one its full quota would have given.")
    for scenario in stops:
        wait_for_row(page, "h2h-stops", str(stops[scenario].item_id), 1, scenario)
    shown = _rows(page, "h2h-stops")
    assert shown == {
        str(stop.item_id): [str(stop.item_id), scenario, "3", "curtail", "1", stop.stopped_at.isoformat("T", "seconds")]
        for scenario, stop in stops.items()
    }
    save_screenshot(page, "curate-stopping-stops-tab")


def test_the_admin_campaigns_table_counts_the_stops_in_its_complete_cell(stopping: Studio, page: Any) -> None:
    third_voter_has_voted(stopping)
    sign_in(page, stopping, ADMIN)
    page.get_by_role("tab", name="Admin").click()
    page.get_by_role("tab", name="Campaigns", exact=True).click()
    row = wait_for_row(page, "h2h-campaigns", CAMPAIGN, 9, "stopped early")
    assert row[7:10] == ["4", "12", "3 / 4 complete (stopped early: 3)"]
    # The table is wider than the page: scroll its "complete" cell into view for the picture.
    page.evaluate(SCROLL_RIGHT_JS, "h2h-campaigns")
    save_screenshot(page, "admin-stopping-campaigns-complete")


def _rows(page: Any, elem_id: str) -> dict[str, list[str]]:
    from tests.browser.test_admin_page import rows_of

    return rows_of(page, elem_id)
