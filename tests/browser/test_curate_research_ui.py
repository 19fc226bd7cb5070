"""The Curate tab in a real browser: a curator filters, opens, rejects with a reason, publishes and downloads; an
annotator sees neither the Curate nor the Research tab and is refused when calling the Curate handlers by hand
(the Research tab's own tests: ``test_research_page.py``); hostile scenario text and comments show as text and run
nothing."""

from __future__ import annotations

import csv
import io
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlmodel import select

from pipeline.records import Scenario
from pipeline.rundir import RunDir, model_dump_line
from studio.db import create_db_engine, read_session, write_session
from studio.models import AuditLog
from studio.models.curation import DatasetVersion, ScenarioStatus
from studio.ui.tables import LIST_TEXT_CHARS
from tests.browser.conftest import UI_WAIT_MS, Studio, sign_in
from tests.browser.store_fixture import PASSWORD
from tests.browser.test_studio_ui import call_gradio_event

pytestmark = pytest.mark.browser

#: Scenario text and a comment that would run script if rendered as HTML, Markdown or a template.
HOSTILE_INPUT = "<img src=x onerror=\"window.__pwned='img'\"><script>window.__pwned='s'</script>${1+1} **bold**"
HOSTILE_REFERENCE = '=HYPERLINK("http://evil.example","x")'
HOSTILE_COMMENT = "<b onmouseover=\"window.__pwned='c'\">nice</b><img src=y onerror=\"window.__pwned='c'\">"
HOSTILE_ID = "b-evil-1"


@pytest.fixture(scope="module")
def curation(studio: Studio, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    """Curator and researcher accounts, a hostile scenario with a hostile crowd comment (its campaign closed)."""
    from studio.services.answers import submit_answer
    from studio.services.auth import create_user
    from studio.services.campaigns import TargetSelection, create_campaign, set_campaign_status
    from studio.services.ingest import ingest_run
    from studio.services.queue import next_item
    from studio.workflows import load_schemas

    engine = create_db_engine(studio.store.database_url)
    run = RunDir(tmp_path_factory.mktemp("hostile-run")).ensure()
    hostile = Scenario(
        id=HOSTILE_ID,
        subtask="dialogue_schedule",
        persona="<i>persona</i>",
        user_input=HOSTILE_INPUT,
        reference=HOSTILE_REFERENCE,
    )
    run.scenarios.write_text(model_dump_line(hostile) + "\n", encoding="utf-8")
    ingest_run(engine, run)
    with write_session(engine) as session:
        for role in ("curator", "researcher"):
            create_user(session, username=f"{role}01", password=PASSWORD, role=role)
        voter = create_user(session, username="annotator-h", password=PASSWORD, role="annotator")
        create_campaign(
            session,
            name="test-hostile-vote",
            schema=load_schemas()["crowd_vote"],
            people_per_item=1,
            selection=TargetSelection(subtasks=["dialogue_schedule"]),
            actor="test",
        )
        view = next_item(session, campaign="test-hostile-vote", user=voter)
        submit_answer(
            session,
            campaign="test-hostile-vote",
            user=voter,
            item_id=view.item_id,
            lease_id=view.lease_id,
            submission_id=uuid.uuid4().hex,
            seconds_spent=2.0,
            answers={"verdict": "keep", "subtask_label": "dialogue_schedule", "comment": HOSTILE_COMMENT},
        )
        set_campaign_status(session, name="test-hostile-vote", status="closed", actor="test")
    engine.dispose()
    yield studio


def read_store(studio: Studio, query: object) -> list[object]:
    engine = create_db_engine(studio.store.database_url)
    try:
        with read_session(engine) as session:
            return list(session.exec(query).all())  # type: ignore[call-overload]
    finally:
        engine.dispose()


def choose(page: object, elem_id: str, option: str) -> None:
    page.click(f"#{elem_id} input")  # type: ignore[attr-defined]
    page.get_by_role("option", name=option, exact=True).first.click()  # type: ignore[attr-defined]


def fill(page: object, elem_id: str, text: str) -> None:
    page.locator(f"#{elem_id} textarea, #{elem_id} input").first.fill(text)  # type: ignore[attr-defined]


def wait_for_text(page: object, selector: str, text: str) -> None:
    page.wait_for_function(  # type: ignore[attr-defined]
        "([selector, text]) => (document.querySelector(selector) || {innerText: ''}).innerText.includes(text)",
        arg=[selector, text],
        timeout=UI_WAIT_MS,
    )


def assert_nothing_ran(page: object) -> None:
    page.wait_for_timeout(300)  # type: ignore[attr-defined]  # let an onerror handler fire, if one were live
    assert page.evaluate("window.__pwned") is None  # type: ignore[attr-defined]
    assert page.title() == "H2HTalk Studio"  # type: ignore[attr-defined]


def test_curator_filters_opens_rejects_publishes_and_downloads(curation: Studio, page: object) -> None:
    open_hostile_scenario(page, curation)
    reject_without_then_with_a_reason(page, curation)
    accept_publish_and_download(page, curation)
    open_a_flagged_response(page)


def open_hostile_scenario(page: object, curation: Studio) -> None:
    """Sign in as the curator, filter to the hostile scenario and open it: its text, tallies and comment show as
    inert text."""
    sign_in(page, curation, "curator01")
    page.get_by_role("tab", name="Curate").click()  # type: ignore[attr-defined]
    # The first page of scenarios is listed as soon as the page loads, before any search.
    wait_for_text(page, "#h2h-browse-summary", "match")
    assert page.locator("#h2h-scenarios tbody tr").count() > 0  # type: ignore[attr-defined]
    choose(page, "h2h-filter-subtask", "dialogue_schedule")
    page.click("#h2h-search")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-browse-summary", "1 match")
    table = page.locator("#h2h-scenarios")  # type: ignore[attr-defined]
    assert table.locator("tbody img, tbody script, tbody b, tbody strong").count() == 0
    assert HOSTILE_INPUT[: LIST_TEXT_CHARS - 1] + "…" in table.inner_text()  # the list shows its start, as text
    table.get_by_text(HOSTILE_ID, exact=True).locator("visible=true").first.click()  # select the row
    wait_for_text(page, "#h2h-comments", "nice")
    assert page.input_value("#h2h-scenario-id textarea") == HOSTILE_ID  # type: ignore[attr-defined]
    assert page.inner_text("#h2h-detail-item .h2h-input .h2h-text") == HOSTILE_INPUT  # type: ignore[attr-defined]
    assert HOSTILE_COMMENT in page.inner_text("#h2h-comments")  # type: ignore[attr-defined]
    assert "keep" in page.inner_text("#h2h-tallies")  # type: ignore[attr-defined]
    for area in ("#h2h-detail-item", "#h2h-comments", "#h2h-detail-persona"):
        assert page.locator(f"{area} img, {area} script, {area} i, {area} b").count() == 0  # type: ignore[attr-defined]
    assert_nothing_ran(page)
    page.screenshot(path="/tmp/h2h-curate.png", full_page=True)  # type: ignore[attr-defined]


def reject_without_then_with_a_reason(page: object, curation: Studio) -> None:
    """Rejecting without a reason is refused and stores nothing; with one, the decision and its audit entry land."""
    page.locator("#h2h-action").get_by_text("Reject", exact=True).click()  # type: ignore[attr-defined]
    page.click("#h2h-decide")  # type: ignore[attr-defined]  # no reason: refused (a message), nothing stored
    wait_for_text(page, "#h2h-decision-message", "Not saved — reason: a reason is required")
    assert read_store(curation, select(ScenarioStatus).where(ScenarioStatus.scenario_id == HOSTILE_ID)) == []
    fill(page, "h2h-reason", "Not a companion conversation.")
    page.click("#h2h-decide")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-decision-message", "reject saved")
    page.get_by_role("tab", name="This scenario's audit log", exact=True).click()  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-detail-audit", "Not a companion conversation.")
    [entry] = read_store(curation, select(AuditLog).where(AuditLog.entity_id == HOSTILE_ID))
    assert (entry.actor, entry.action, entry.detail["reason"]) == (
        "curator01",
        "scenario.reject",
        "Not a companion conversation.",
    )
    assert entry.detail["before"]["status"] == "pending" and entry.detail["after"]["status"] == "rejected"


def accept_publish_and_download(page: object, curation: Studio) -> None:
    """Accept one clean scenario, publish it as a version, and download the version as CSV."""
    fill(page, "h2h-scenario-id", "b-dialogue-1")
    page.click("#h2h-open")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-detail-item", "Work was long today (1).")
    page.locator("#h2h-action").get_by_text("Accept", exact=True).click()  # type: ignore[attr-defined]
    fill(page, "h2h-reason", "Checked.")
    page.click("#h2h-decide")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-decision-message", "b-dialogue-1: accept saved")
    page.get_by_role("tab", name="Dataset versions").click()  # type: ignore[attr-defined]
    fill(page, "h2h-version-name", "browser-v1")
    fill(page, "h2h-version-note", "from the browser test")
    page.click("#h2h-publish-preview")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-publish-message", "1 scenario(s) would be published: 1 by a curator.")
    wait_for_text(page, "#h2h-publish-rows", "b-dialogue-1")
    page.click("#h2h-publish")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-publish-message", "Published browser-v1: 1 scenarios")
    wait_for_text(page, "#h2h-versions", "from the browser test")
    page.click("#h2h-prepare-download")  # type: ignore[attr-defined]
    link = page.locator("#h2h-version-file").first  # type: ignore[attr-defined]  # a button naming the file
    link.wait_for(timeout=UI_WAIT_MS)
    with page.expect_download(timeout=UI_WAIT_MS) as info:  # type: ignore[attr-defined]
        link.click()
    rows = list(csv.DictReader(io.StringIO(Path(info.value.path()).read_text(encoding="utf-8-sig"))))
    assert [row["id"] for row in rows] == ["b-dialogue-1"]
    assert [row.name for row in read_store(curation, select(DatasetVersion))] == ["browser-v1"]
    page.screenshot(path="/tmp/h2h-curate-versions.png", full_page=True)  # type: ignore[attr-defined]


def open_a_flagged_response(page: object) -> None:
    """Responses flagged for adjudication; selecting one opens its scenario."""
    page.get_by_role("tab", name="Responses").click()  # type: ignore[attr-defined]
    choose(page, "h2h-flagged", "yes")
    page.click("#h2h-response-search")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-response-summary", "1 match")
    responses = page.locator("#h2h-responses")  # type: ignore[attr-defined]
    assert "b-itinerary-1" in responses.inner_text() and "b-risk-1" not in responses.inner_text()
    responses.get_by_text("b-itinerary-1", exact=True).locator("visible=true").first.click()
    wait_for_text(page, "#h2h-detail-item", "West Lake")
    assert page.locator("#h2h-detail-item").is_visible()  # type: ignore[attr-defined]  # back on Scenarios


def test_an_annotator_sees_neither_tab_and_is_refused_by_their_handlers(curation: Studio, page: object) -> None:
    sign_in(page, curation, "annotator01")
    page.wait_for_selector("#h2h-tab-annotate", state="attached", timeout=UI_WAIT_MS)  # type: ignore[attr-defined]
    tabs = page.get_by_role("tab").all_inner_texts()  # type: ignore[attr-defined]
    assert "Annotate" in tabs and "Curate" not in tabs and "Research" not in tabs
    assert not page.locator("#h2h-leaderboard").is_visible()  # type: ignore[attr-defined]

    before = read_store(curation, select(AuditLog.id))
    with httpx.Client(base_url=curation.base_url, timeout=30) as client:
        assert client.post("/login", data={"username": "annotator01", "password": PASSWORD}).status_code == 303
        session_hash = uuid.uuid4().hex
        calls = [
            ("h2h-search", ["", "", "", "", "", "", "id", 25, 1]),
            ("h2h-open", ["b-dialogue-2"]),
            ("h2h-publish-preview", []),
            ("h2h-publish", ["annotator-version", "", "0" * 64]),
            ("h2h-versions-refresh", []),
            ("h2h-prepare-download", [None, "csv"]),
            ("h2h-aggregate", [None]),
            ("h2h-audit-refresh", []),
        ]  # the Research tab's handlers: tests/browser/test_research_page.py; h2h-decide: test_curate_decisions.py
        for elem_id, data in calls:
            result = call_gradio_event(client, session_hash, elem_id, "click", data)
            assert result["success"] is False, elem_id
            assert "role: 'annotator' may not do this" in result["output"]["error"], elem_id
            assert not result["output"].get("data"), elem_id
    assert read_store(curation, select(AuditLog.id)) == before
    assert read_store(curation, select(ScenarioStatus).where(ScenarioStatus.scenario_id == "b-dialogue-2")) == []
    assert [row.name for row in read_store(curation, select(DatasetVersion))] in ([], ["browser-v1"])
