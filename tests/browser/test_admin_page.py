"""The Admin tab in a real browser (issue 11 item 7, issue 9 item 9): what the admin sees and does — the users
table's cells, adding a person with a generated password, deactivating one (then refused at sign-in in the browser
and over REST), resetting a password (the old one refused, the new one works), the audit log showing each action, a
campaign created from the page with its progress, an import with bad lines listing every ``file:line: field:
problem`` and storing nothing, a good import storing its scenarios — and for an annotator the tab hidden AND every
handler and endpoint refused when called directly (a hidden tab is not a permission).

The module has its own studio and store (it changes accounts and campaigns the other browser tests rely on).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import select

from studio.db import create_db_engine, read_session, write_session
from studio.models import AuditLog, ScenarioRow
from tests.browser.a11y import unlabelled_controls
from tests.browser.artifacts import save_screenshot
from tests.browser.conftest import UI_WAIT_MS, Studio, sign_in
from tests.browser.store_fixture import PASSWORD, build_store
from tests.browser.test_studio_ui import call_gradio_event
from tests.serving import serve_in_thread

pytestmark = pytest.mark.browser

ROWS_JS = """(id) => Array.from(document.querySelectorAll(`#${id} [role=row]`))
  .map((row) => Array.from(row.querySelectorAll('[role=cell], [role=gridcell], td')).map((c) => c.innerText.trim()))
  .filter((cells) => cells.length > 0)"""


@pytest.fixture(scope="module")
def admin_studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    """A studio of its own: the browser store plus an admin and a curator."""
    from studio.services.auth import create_user
    from studio.settings import get_settings
    from studio.web.app import create_app

    store = build_store(Path(tmp_path_factory.mktemp("admin-store")), annotators=4)
    engine = create_db_engine(store.database_url)
    with write_session(engine) as session:
        create_user(session, username="admin01", password=PASSWORD, role="admin")
        create_user(session, username="curator01", password=PASSWORD, role="curator")
    engine.dispose()
    with serve_in_thread(create_app(get_settings(database_url=store.database_url))) as url:
        yield Studio(url, store)


def shot(page: Any, name: str) -> None:
    """Save a screenshot once no part of the page is still waiting on the server (Gradio fades pending parts)."""
    page.wait_for_function(
        "() => !document.querySelector('.gradio-container .pending, .gradio-container .generating')",
        timeout=UI_WAIT_MS,
    )
    save_screenshot(page, name)


def read_store(studio: Studio, query: Any) -> list[Any]:
    engine = create_db_engine(studio.store.database_url)
    try:
        with read_session(engine) as session:
            return list(session.exec(query).all())
    finally:
        engine.dispose()


def rows_of(page: Any, elem_id: str) -> dict[str, list[str]]:
    """A table's rows as shown, by their first cell."""
    return {cells[0]: cells for cells in page.evaluate(ROWS_JS, elem_id)}


def wait_for_row(page: Any, elem_id: str, first: str, column: int, text: str) -> list[str]:
    page.wait_for_function(
        f"""([id, first, column, text]) => ({ROWS_JS})(id).some((cells) => cells[0] === first &&
              (cells[column] || '').includes(text))""",
        arg=[elem_id, first, column, text],
        timeout=UI_WAIT_MS,
    )
    return rows_of(page, elem_id)[first]


def wait_for_text(page: Any, selector: str, text: str) -> None:
    page.wait_for_function(
        "([selector, text]) => (document.querySelector(selector) || {innerText: ''}).innerText.includes(text)",
        arg=[selector, text],
        timeout=UI_WAIT_MS,
    )


def fill(page: Any, elem_id: str, text: str) -> None:
    page.locator(f"#{elem_id} textarea, #{elem_id} input").first.fill(text)


def choose(page: Any, elem_id: str, option: str) -> None:
    page.click(f"#{elem_id} input")
    page.get_by_role("option", name=option, exact=True).first.click()
    page.keyboard.press("Escape")


def open_admin(page: Any, studio: Studio, part: str) -> None:
    sign_in(page, studio, "admin01")
    page.get_by_role("tab", name="Admin").click()
    page.get_by_role("tab", name=part, exact=True).click()


def browser_sign_in_error(browser: Any, studio: Studio, username: str, password: str) -> str:
    """Sign in through the login page in a fresh context; the error it shows ('' when the studio greets them)."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        page.goto(f"{studio.base_url}/login")
        page.fill("#username", username)
        page.fill("#password", password)
        page.click("#login-button")
        page.wait_for_selector("#login-error, #h2h-username", timeout=UI_WAIT_MS)
        error = page.locator("#login-error")
        shown = error.inner_text() if error.count() else ""
        shot(page, f"admin-{username}-sign-in-{'refused' if shown else 'ok'}")
        return shown
    finally:
        context.close()


def rest_login(studio: Studio, username: str, password: str) -> int:
    body = {"username": username, "password": password}
    return httpx.post(f"{studio.base_url}/api/v1/login", json=body, timeout=60).status_code


def test_the_admin_manages_accounts_and_reads_the_audit_log(admin_studio: Studio, page: Any, browser: Any) -> None:
    open_admin(page, admin_studio, "Users")
    first = wait_for_row(page, "h2h-users", "annotator01", 2, "yes")
    assert first == ["annotator01", "annotator", "yes", "never", first[4]] and first[4].endswith("UTC")
    assert rows_of(page, "h2h-users")["admin01"][3].endswith("UTC")  # the admin signed in just now
    assert unlabelled_controls(page, within="#h2h-admin-users") == []
    shot(page, "admin-admin-users")
    page.locator("#h2h-users").get_by_text("annotator04", exact=True).locator("visible=true").first.click()
    page.wait_for_function(  # selecting a row fills in its name
        "() => (document.querySelector('#h2h-account-username input, #h2h-account-username textarea') || {}).value"
        " === 'annotator04'",
        timeout=UI_WAIT_MS,
    )

    fill(page, "h2h-new-username", "newbie")
    page.click("#h2h-add-user")
    wait_for_text(page, "#h2h-add-message", "Added newbie (annotator)")
    generated = page.input_value("#h2h-one-time-password textarea, #h2h-one-time-password input")
    assert len(generated) >= 16
    wait_for_row(page, "h2h-users", "newbie", 1, "annotator")
    shot(page, "admin-admin-user-added-one-time-password")
    assert browser_sign_in_error(browser, admin_studio, "newbie", generated) == ""

    fill(page, "h2h-account-username", "annotator02")
    page.click("#h2h-deactivate")
    wait_for_text(page, "#h2h-users-message", "annotator02 is deactivated")
    assert wait_for_row(page, "h2h-users", "annotator02", 2, "no")[2] == "no"
    shot(page, "admin-admin-user-deactivated")
    assert browser_sign_in_error(browser, admin_studio, "annotator02", PASSWORD) == "Wrong username or password."
    assert rest_login(admin_studio, "annotator02", PASSWORD) == 401

    fill(page, "h2h-account-username", "annotator03")
    fill(page, "h2h-reset-text", "a brand new password")
    page.click("#h2h-reset-password")
    wait_for_text(page, "#h2h-users-message", "New password set for annotator03")
    assert not page.locator("#h2h-reset-one-time-password").is_visible()  # typed, so not shown back
    assert not page.locator("#h2h-one-time-password").is_visible()  # and the one shown when adding is gone
    assert browser_sign_in_error(browser, admin_studio, "annotator03", PASSWORD) == "Wrong username or password."
    assert browser_sign_in_error(browser, admin_studio, "annotator03", "a brand new password") == ""
    assert rest_login(admin_studio, "annotator03", "a brand new password") == 200

    page.get_by_role("tab", name="Audit log").click()
    fill(page, "h2h-audit-actor", "admin01")
    fill(page, "h2h-audit-action", "user.")
    page.click("#h2h-audit-search")
    wait_for_text(page, "#h2h-audit-summary", "3 match")
    shown = [(cells[1], cells[2], cells[4]) for cells in page.evaluate(ROWS_JS, "h2h-admin-audit-log")]
    assert shown == [
        ("admin01", "user.reset_password", "annotator03"),
        ("admin01", "user.deactivate", "annotator02"),
        ("admin01", "user.create", "newbie"),
    ]
    shot(page, "admin-admin-audit-log")


def test_a_campaign_created_on_the_page_appears_with_its_progress(admin_studio: Studio, page: Any) -> None:
    open_admin(page, admin_studio, "Campaigns")
    wait_for_row(page, "h2h-campaigns", "test-crowd_vote", 2, "open")
    fill(page, "h2h-campaign-name", "browser-dialogue")
    choose(page, "h2h-campaign-schema", "crowd_vote")
    fill(page, "h2h-campaign-people", "2")
    choose(page, "h2h-subtasks", "dialogue_base")
    shot(page, "admin-admin-campaign-form")
    page.click("#h2h-create-campaign")
    wait_for_text(page, "#h2h-campaigns-message", "Created browser-dialogue (crowd_vote, 2 per item, queue: fill)")
    row = wait_for_row(page, "h2h-campaigns", "browser-dialogue", 2, "open")
    # people per item, the answers that complete an item (the threshold used), the queue's order, then progress
    assert row == [
        "browser-dialogue",
        "crowd_vote",
        "open",
        "annotator",
        "2",
        "2",
        "fill",
        "4",
        "0",
        "0 / 4 complete",
        "0",
    ]

    token = httpx.post(
        f"{admin_studio.base_url}/api/v1/login", json={"username": "annotator04", "password": PASSWORD}
    ).json()["token"]
    with httpx.Client(base_url=f"{admin_studio.base_url}/api/v1", headers={"Authorization": f"Bearer {token}"}) as api:
        item = api.get("/campaigns/browser-dialogue/next").json()
        answer = {"verdict": "keep", "subtask_label": "dialogue_base"}
        body = {"item_id": item["item_id"], "lease_id": item["lease_id"], "submission_id": uuid.uuid4().hex}
        assert api.post("/campaigns/browser-dialogue/answers", json={**body, "answers": answer}).status_code == 201
    page.click("#h2h-campaigns-refresh")
    assert wait_for_row(page, "h2h-campaigns", "browser-dialogue", 8, "1")[7:] == ["4", "1", "0 / 4 complete", "1"]

    choose(page, "h2h-managed-campaign", "browser-dialogue")
    # Before closing, the page says what closing does to the item with one vote of its two (issue 16 item 5).
    wait_for_text(page, "#h2h-closing-quota", "1 of 4 item(s) are answered but below their quota of 2")
    shot(page, "admin-admin-closing-preview")
    page.click("#h2h-close-campaign")
    wait_for_text(page, "#h2h-campaigns-message", "browser-dialogue is closed")
    wait_for_text(page, "#h2h-campaigns-message", "The 1 below quota stay undecided")
    wait_for_row(page, "h2h-campaigns", "browser-dialogue", 2, "closed")
    shot(page, "admin-admin-campaigns-progress")
    [closed] = read_store(admin_studio, select(AuditLog).where(AuditLog.action == "campaign.closed"))
    assert (closed.detail["decide_below_quota"], closed.detail["below_quota"]) == (False, 1)


BAD_LINES = "\n".join(
    [
        json.dumps({"id": "up-1", "subtask": "dialogue_base", "user_input": "hi", "reference": "hello"}),
        json.dumps({"id": "up-2", "subtask": "dialogue_nonsense", "reference": "x"}),
        "{torn",
        json.dumps({"id": "up-3", "subtask": "dialogue_base", "reference": "   "}),
    ]
)
GOOD_LINES = "\n".join(
    json.dumps({"id": f"up-{n}", "subtask": "dialogue_base", "user_input": "下雨了", "reference": f"带伞 {n}"})
    for n in (1, 2)
)


def test_an_import_lists_every_bad_line_and_stores_nothing_then_a_good_one_is_stored(
    admin_studio: Studio, page: Any, tmp_path: Path
) -> None:
    bad, good = tmp_path / "bad.jsonl", tmp_path / "good.jsonl"
    bad.write_text(BAD_LINES + "\n", encoding="utf-8")
    good.write_text(GOOD_LINES + "\n", encoding="utf-8")
    open_admin(page, admin_studio, "Import scenarios")
    page.set_input_files("#h2h-import-files input[type=file]", str(bad))
    wait_for_text(page, "#h2h-import-problems", "nothing was stored")
    problems = page.locator("#h2h-import-problems li").all_inner_texts()
    assert problems[0].startswith("bad.jsonl:2: subtask: ") and problems[1].startswith("bad.jsonl:3: (line): ")
    assert "bad.jsonl:4: reference: reference is blank" in problems and len(problems) == 3
    assert page.locator("#h2h-import-confirm").is_disabled()
    assert read_store(admin_studio, select(ScenarioRow.id).where(ScenarioRow.id.like("up-%"))) == []
    shot(page, "admin-admin-import-problems")

    page.set_input_files("#h2h-import-files input[type=file]", str(good))
    wait_for_text(page, "#h2h-import-summary", "2 scenario(s) in 1 file(s): 2 new")
    assert page.inner_text("#h2h-import-problems") == ""
    assert page.locator("#h2h-import-confirm").is_enabled()
    shot(page, "admin-admin-import-checked")
    page.click("#h2h-import-confirm")
    wait_for_text(page, "#h2h-import-summary", "Imported: 2 scenario(s) added, 0 updated.")
    page.wait_for_selector("#h2h-import-confirm:disabled", timeout=UI_WAIT_MS)  # nothing left to import
    stored = read_store(admin_studio, select(ScenarioRow).where(ScenarioRow.id.like("up-%")))
    assert sorted((row.id, row.reference) for row in stored) == [("up-1", "带伞 1"), ("up-2", "带伞 2")]
    shot(page, "admin-admin-import-stored")


ADMIN_EVENTS = [
    ("h2h-users-refresh", "click", []),
    ("h2h-add-user", "click", ["crafted", "admin", "crafted-password"]),
    ("h2h-change-role", "click", ["annotator01", "admin"]),
    ("h2h-deactivate", "click", ["admin01", None]),
    ("h2h-activate", "click", ["annotator02", None]),
    ("h2h-reset-password", "click", ["admin01", "crafted-password"]),
    ("h2h-revoke-sessions", "click", ["admin01", None]),
    ("h2h-audit-search", "click", ["", "", "", "", 1]),
    ("h2h-campaigns-refresh", "click", []),
    # The pickers' choices are filled per session for admins only; values outside them Gradio refuses by itself,
    # so these send none — the handlers refuse the caller before they look at any value.
    ("h2h-create-campaign", "click", ["crafted", None, 1, [], [], [], [], False, False, ["annotator"], "fill"]),
    ("h2h-close-campaign", "click", [None, True]),
    ("h2h-open-campaign", "click", [None, False]),
    ("h2h-assign", "click", [None, ["annotator"]]),
    ("h2h-managed-campaign", "change", [None]),
    ("h2h-import-confirm", "click", [None]),
    ("h2h-import-cancel", "click", [None]),
]
ADMIN_ROUTES = [
    ("GET", "/admin/users", None),
    ("POST", "/admin/users", {"username": "crafted", "role": "admin", "password": "crafted-password"}),
    ("POST", "/admin/users/admin01/deactivate", None),
    ("POST", "/admin/users/admin01/password", {"password": "crafted-password"}),
    ("GET", "/admin/audit", None),
    ("POST", "/admin/campaigns", {"name": "crafted", "schema": "crowd_vote"}),
    ("PUT", "/admin/campaigns/test-adjudication/roles", {"roles": ["annotator"]}),
]


def test_an_annotator_does_not_see_the_tab_and_is_refused_by_every_handler_and_endpoint(
    admin_studio: Studio, page: Any
) -> None:
    sign_in(page, admin_studio, "annotator01")
    page.wait_for_selector("#h2h-tab-annotate", state="attached", timeout=UI_WAIT_MS)
    assert "Admin" not in page.get_by_role("tab").all_inner_texts()
    assert not page.locator("#h2h-users").is_visible()
    shot(page, "admin-annotator-no-admin-tab")

    before = read_store(admin_studio, select(AuditLog.id))
    with httpx.Client(base_url=admin_studio.base_url, timeout=60) as client:
        assert client.post("/login", data={"username": "annotator01", "password": PASSWORD}).status_code == 303
        session_hash = uuid.uuid4().hex
        for elem_id, event, data in ADMIN_EVENTS:
            result = call_gradio_event(client, session_hash, elem_id, event, data)
            assert result["success"] is False, elem_id
            assert "role: 'annotator' may not do this" in result["output"]["error"], elem_id
        refused = client.post("/ui/gradio_api/upload", files=[("files", ("x.jsonl", b"{}\n"))])
        assert refused.status_code == 403
        token = client.post("/api/v1/login", json={"username": "annotator01", "password": PASSWORD}).json()["token"]
        for method, path, body in ADMIN_ROUTES:
            response = client.request(method, f"/api/v1{path}", json=body, headers={"Authorization": f"Bearer {token}"})
            assert response.status_code == 403, (path, response.text)
            assert "role: 'annotator' may not do this" in response.json()["detail"]
    assert read_store(admin_studio, select(AuditLog.id)) == before


def test_a_curator_sees_only_the_import(admin_studio: Studio, page: Any) -> None:
    sign_in(page, admin_studio, "curator01")
    page.get_by_role("tab", name="Admin").click()
    page.wait_for_selector("#h2h-import-files", timeout=UI_WAIT_MS)
    tabs = page.get_by_role("tab").all_inner_texts()
    assert "Import scenarios" in tabs and not {"Users", "Audit log", "Campaigns"} & set(tabs)
    shot(page, "admin-curator-import-only")


def test_refusals_are_said_beside_the_form_which_stays_usable(admin_studio: Studio, page: Any) -> None:
    """A refused admin action says why in the part's message line, in words, and leaves the tables and what was typed
    as they were (before: a toast in a corner and red "Error" boxes over the tables and the message line). A campaign
    created with the form as it loads takes the workflow's people per item (before: the field started at 0 and every
    such campaign was refused with "people_per_item: must be 1 or more")."""
    open_admin(page, admin_studio, "Campaigns")
    wait_for_row(page, "h2h-campaigns", "test-crowd_vote", 2, "open")
    fill(page, "h2h-campaign-name", "as-loaded")
    page.click("#h2h-create-campaign")
    wait_for_text(page, "#h2h-campaigns-message", "Created as-loaded (")
    wait_for_row(page, "h2h-campaigns", "as-loaded", 2, "open")

    page.click("#h2h-create-campaign")  # the same name again
    wait_for_text(page, "#h2h-campaigns-message", "as-loaded")
    page.wait_for_selector("#h2h-campaigns-message .h2h-error", timeout=UI_WAIT_MS)
    assert "already" in page.inner_text("#h2h-campaigns-message")
    assert "as-loaded" in rows_of(page, "h2h-campaigns") and "test-crowd_vote" in rows_of(page, "h2h-campaigns")
    fill(page, "h2h-campaign-name", "typed-people")
    fill(page, "h2h-campaign-people", "two")
    page.click("#h2h-create-campaign")
    wait_for_text(page, "#h2h-campaigns-message", "people_per_item: 'two' is not a whole number")
    assert page.input_value("#h2h-campaign-people input, #h2h-campaign-people textarea") == "two"
    assert "typed-people" not in rows_of(page, "h2h-campaigns")
    shot(page, "admin-admin-campaign-refused")

    page.get_by_role("tab", name="Users").click()
    wait_for_row(page, "h2h-users", "annotator01", 1, "annotator")
    fill(page, "h2h-new-username", "annotator01")  # taken
    page.click("#h2h-add-user")
    page.wait_for_selector("#h2h-add-message .h2h-error", timeout=UI_WAIT_MS)  # said under the form that was used
    assert "annotator01" in page.inner_text("#h2h-add-message")
    assert "annotator01" in rows_of(page, "h2h-users")  # the table is still there
    fill(page, "h2h-account-username", "annotator04")
    fill(page, "h2h-reset-text", "another brand new password")
    page.click("#h2h-reset-password")
    wait_for_text(page, "#h2h-users-message", "New password set for annotator04")
    assert page.input_value("#h2h-reset-text input, #h2h-reset-text textarea") == ""  # not left for the next person
    shot(page, "admin-admin-user-refused-then-reset")


#: Where ``#id``'s box is on the screen: [top, bottom, the viewport's height, the page's scroll offset].
SCREEN_BOX_JS = """(id) => { const box = document.querySelector('#' + id).getBoundingClientRect();
  return [box.top, box.bottom, window.innerHeight, window.scrollY]; }"""


def generated_password_in_view(page: Any, button: str, shown: str) -> str:
    """Click ``#button`` and wait for the generated password in ``#shown``; it must be on the screen as the click
    left it (no scrolling since) and near the button. The password."""
    page.locator(f"#{button}").scroll_into_view_if_needed()
    scrolled = page.evaluate("window.scrollY")
    page.click(f"#{button}")
    page.wait_for_function(
        "(id) => ((document.querySelector('#' + id + ' input, #' + id + ' textarea') || {}).value || '').length >= 16",
        arg=shown,
        timeout=UI_WAIT_MS,
    )
    page.wait_for_timeout(300)  # the table above redraws with the new row
    top, bottom, height, now = page.evaluate(SCREEN_BOX_JS, shown)
    button_top, button_bottom, _height, _now = page.evaluate(SCREEN_BOX_JS, button)
    assert now == scrolled, (scrolled, now)  # nobody scrolled
    assert top >= 0 and bottom <= height, (top, bottom, height)  # the whole box on the screen
    assert top - button_bottom <= 160, (button_top, button_bottom, top)  # right under the form that made it
    return str(page.input_value(f"#{shown} input, #{shown} textarea"))


def test_a_generated_password_shows_where_the_admin_is_looking(admin_studio: Studio, browser: Any) -> None:
    """On a 1400 × 1000 screen, with the people's table above the forms, adding a person and resetting a password
    without typing one show the generated password right under the button pressed, on the screen as it was."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        open_admin(page, admin_studio, "Users")
        wait_for_row(page, "h2h-users", "annotator01", 1, "annotator")
        fill(page, "h2h-new-username", "shown-where-added")
        added = generated_password_in_view(page, "h2h-add-user", "h2h-one-time-password")
        shot(page, "admin-admin-generated-password-beside-add")
        assert rest_login(admin_studio, "shown-where-added", added) == 200
        fill(page, "h2h-account-username", "shown-where-added")
        reset = generated_password_in_view(page, "h2h-reset-password", "h2h-reset-one-time-password")
        shot(page, "admin-admin-generated-password-beside-reset")
        assert reset != added and rest_login(admin_studio, "shown-where-added", reset) == 200
        assert rest_login(admin_studio, "shown-where-added", added) == 401
    finally:
        context.close()
