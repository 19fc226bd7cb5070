"""The Curate page's decision in a real browser (issue 11 item 4): the decision lands on the scenario shown whatever
the id box says; a refused decision is a message and the form stays usable; the list shows the decision without a
new search; the edit form shows a field's error under that field and accepts the edited scenario in one step."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlmodel import select

from studio.db import create_db_engine, write_session
from studio.models import AuditLog
from studio.models.curation import ScenarioStatus
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import UI_WAIT_MS, Studio, sign_in
from tests.browser.store_fixture import PASSWORD, build_store
from tests.browser.test_curate_research_ui import choose, fill, read_store, wait_for_text
from tests.browser.test_studio_ui import call_gradio_event
from tests.serving import serve_in_thread

pytestmark = pytest.mark.browser
CURATOR = "curator-decide"


@pytest.fixture(scope="module")
def curating(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    """A studio of its own (its decisions must not change what the other modules' tests publish)."""
    from studio.services.auth import create_user
    from studio.settings import get_settings
    from studio.web.app import create_app

    store = build_store(Path(tmp_path_factory.mktemp("decisions")))
    engine = create_db_engine(store.database_url)
    with write_session(engine) as session:
        create_user(session, username=CURATOR, password=PASSWORD, role="curator")
    engine.dispose()
    with serve_in_thread(create_app(get_settings(database_url=store.database_url))) as url:
        yield Studio(url, store)


def status_of(studio: Studio, scenario_id: str) -> str | None:
    rows = read_store(studio, select(ScenarioStatus).where(ScenarioStatus.scenario_id == scenario_id))
    return rows[0].status if rows else None  # type: ignore[attr-defined]


def open_by_id(page: object, scenario_id: str, text: str) -> None:
    fill(page, "h2h-scenario-id", scenario_id)
    page.click("#h2h-open")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-detail-item", text)
    wait_for_text(page, "#h2h-decide-target", scenario_id)


def test_the_decision_lands_on_the_scenario_shown_and_the_list_follows(curating: Studio, page: object) -> None:
    sign_in(page, curating, CURATOR)
    page.get_by_role("tab", name="Curate").click()  # type: ignore[attr-defined]
    choose(page, "h2h-filter-subtask", "dialogue_base")
    page.click("#h2h-search")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-browse-summary", "4 match")
    assert "rejected" not in page.inner_text("#h2h-scenarios")  # type: ignore[attr-defined]
    open_by_id(page, "b-dialogue-3", "Work was long today (3).")
    # The id box now says another scenario; the page still shows b-dialogue-3.
    fill(page, "h2h-scenario-id", "b-dialogue-4")
    page.locator("#h2h-action").get_by_text("Reject", exact=True).click()  # type: ignore[attr-defined]
    page.click("#h2h-decide")  # type: ignore[attr-defined]  # no reason: refused, as a message
    wait_for_text(page, "#h2h-decision-message", "Not saved — reason: a reason is required")
    wait_for_text(page, "#h2h-reason-error", "a reason is required")
    assert status_of(curating, "b-dialogue-3") is None
    save_screenshot(page, "curate-decision-refused")
    # The form stays usable: the Reason box takes text and the same button saves.
    reason = page.locator("#h2h-reason textarea")  # type: ignore[attr-defined]
    assert reason.is_editable()
    reason.fill("Repeats b-dialogue-1.")
    page.click("#h2h-decide")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-decision-message", "b-dialogue-3: reject saved (status rejected)")
    assert (status_of(curating, "b-dialogue-3"), status_of(curating, "b-dialogue-4")) == ("rejected", None)
    assert read_store(curating, select(AuditLog).where(AuditLog.entity_id == "b-dialogue-4")) == []
    # The listing shows the new status without another search (before: every row of it pending).
    wait_for_text(page, "#h2h-scenarios", "rejected")
    wait_for_text(page, "#h2h-detail-status", "rejected")
    assert page.input_value("#h2h-reason textarea") == ""  # type: ignore[attr-defined]
    save_screenshot(page, "curate-decision-saved")
    # Opening another scenario clears the message about the last one (it stayed, beside the new scenario, before).
    open_by_id(page, "b-dialogue-4", "Work was long today (4).")
    assert page.inner_text("#h2h-decision-message").strip() == ""  # type: ignore[attr-defined]


def test_a_second_decision_from_a_stale_page_is_refused_and_shows_the_current_state(
    curating: Studio, page: object
) -> None:
    sign_in(page, curating, CURATOR)
    page.get_by_role("tab", name="Curate").click()  # type: ignore[attr-defined]
    open_by_id(page, "b-risk-1", "better off without me")
    stale = json.loads(page.input_value("#h2h-curate-shown textarea"))  # type: ignore[attr-defined]
    assert stale["scenario_id"] == "b-risk-1"
    with httpx.Client(base_url=curating.base_url, timeout=30) as client:  # another curator decides meanwhile
        token = client.post("/api/v1/login", json={"username": CURATOR, "password": PASSWORD}).json()["token"]
        client.headers["Authorization"] = f"Bearer {token}"
        decided = client.post(
            "/api/v1/curation/scenarios/b-risk-1/decision",
            json={"action": "accept", "reason": "safe reply is right", "revision": stale["revision"]},
        )
        assert decided.status_code == 200, decided.text
        again = client.post(
            "/api/v1/curation/scenarios/b-risk-1/decision",
            json={"action": "reject", "reason": "stale", "revision": stale["revision"]},
        )
        assert again.status_code == 409 and "changed since it was opened" in again.text
    page.locator("#h2h-action").get_by_text("Reject", exact=True).click()  # type: ignore[attr-defined]
    fill(page, "h2h-reason", "Not safe.")
    page.click("#h2h-decide")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-decision-message", "changed since it was opened")
    assert status_of(curating, "b-risk-1") == "accepted"
    wait_for_text(page, "#h2h-detail-status", "accepted")  # the page now shows the current state
    assert page.input_value("#h2h-reason textarea") == "Not safe."  # type: ignore[attr-defined]


def test_the_edit_form_errors_on_the_field_and_accepts_the_edit_in_one_step(curating: Studio, page: object) -> None:
    sign_in(page, curating, CURATOR)
    page.get_by_role("tab", name="Curate").click()  # type: ignore[attr-defined]
    open_by_id(page, "b-dialogue-4", "Work was long today (4).")
    page.locator("#h2h-action").get_by_text("Edit and accept", exact=True).click()  # type: ignore[attr-defined]
    reference = page.locator("#h2h-edit-reference textarea")  # type: ignore[attr-defined]
    reference.wait_for(timeout=UI_WAIT_MS)
    assert reference.input_value() == "Long days are tough. Rest well (4)."
    reference.fill("")
    fill(page, "h2h-reason", "Tighter reference.")
    page.click("#h2h-decide")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-edit-reference-error", "at least 1 character")
    assert page.inner_text("#h2h-edit-user-input-error").strip() == ""  # type: ignore[attr-defined]
    page.wait_for_function(  # type: ignore[attr-defined]
        "() => document.activeElement === document.querySelector('#h2h-edit-reference textarea')",
        timeout=UI_WAIT_MS,
    )
    assert status_of(curating, "b-dialogue-4") is None
    save_screenshot(page, "curate-edit-field-error")
    reference.fill("Long days are tough. Rest, and tell me tomorrow how it went.")
    page.locator("#h2h-edit-context-location textarea, #h2h-edit-context-location input").first.fill("Hangzhou")
    page.click("#h2h-decide")  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-decision-message", "b-dialogue-4: edit saved (status accepted)")
    assert status_of(curating, "b-dialogue-4") == "accepted"
    [row] = read_store(curating, select(ScenarioStatus).where(ScenarioStatus.scenario_id == "b-dialogue-4"))
    assert row.edits["reference"].startswith("Long days are tough. Rest, and")  # type: ignore[attr-defined]
    assert row.edits["context"]["location"] == "Hangzhou"  # type: ignore[attr-defined]
    wait_for_text(page, "#h2h-detail-item", "tell me tomorrow")
    assert page.inner_text("#h2h-edit-reference-error").strip() == ""  # type: ignore[attr-defined]
    save_screenshot(page, "curate-edit-saved")


def test_an_annotator_cannot_decide_through_the_page_handler(curating: Studio) -> None:
    before = read_store(curating, select(AuditLog.id))
    with httpx.Client(base_url=curating.base_url, timeout=30) as client:
        assert client.post("/login", data={"username": "annotator02", "password": PASSWORD}).status_code == 303
        config = client.get("/ui/config").json()
        [button] = [c for c in config["components"] if c.get("props", {}).get("elem_id") == "h2h-decide"]
        [dependency] = [d for d in config["dependencies"] if [button["id"], "click"] in d["targets"]]
        shown = json.dumps({"scenario_id": "b-dialogue-2", "revision": "0" * 16})
        by_id = {c["id"]: c.get("props", {}).get("elem_id") for c in config["components"]}
        data = [
            shown if by_id.get(i) == "h2h-curate-shown" else "reject" if by_id.get(i) == "h2h-action" else "crafted"
            for i in dependency["inputs"]
        ]
        result = call_gradio_event(client, uuid.uuid4().hex, "h2h-decide", "click", data)
    assert result["success"] is False
    assert "role: 'annotator' may not do this" in result["output"]["error"]
    assert read_store(curating, select(AuditLog.id)) == before
