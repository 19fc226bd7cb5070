"""Security of the served studio, attacked the way a stranger would: over HTTP and in Chromium.

The studio here is ``create_app`` as served (it adds :class:`studio.web.security.SecurityHeadersMiddleware`
and :class:`studio.web.security.SameOriginMiddleware` itself). The store adds a model whose *name* and a scenario
whose *id* are hostile markup, since both come from
data files, not from trusted YAML.

What is proven: the UI works in Chromium under the Content-Security-Policy with no violation; another
site cannot frame it; an annotator calling every Gradio handler outside the Annotate tab (enumerated
from the Blocks config, not listed by hand) is refused with nothing stored; the config, the API info
and the annotate handlers' outputs carry no model name, variant or score; hostile model names and ids
stay text in tables and dropdowns; a UI event or sign-in posted from another origin is refused; a
client-forged item on screen is refused; Gradio's file route serves no path outside its cache; sign-in never
redirects off the site.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import select

from pipeline.jsonl import write_records
from pipeline.records import Response, Scenario, Score
from studio.db import create_db_engine, read_session
from studio.models import Answer, AuditLog, Lease, Skip
from tests.browser.conftest import UI_WAIT_MS, Studio, choose_campaign, sign_in
from tests.browser.store_fixture import PASSWORD, SIGNATURE, build_store
from tests.serving import serve_in_thread

pytestmark = pytest.mark.browser

HOSTILE_MODEL = "<img src=x onerror=\"window.__pwned='model'\">${window.__pwned='tpl'}"
HOSTILE_ID = "<svg onload=\"window.__pwned='id'\">"
HOSTILE_CAMPAIGN = "<img src=y onerror=\"window.__pwned='campaign'\">"
#: Text only the server may know: none of it may reach an annotator.
HIDDEN_FROM_ANNOTATORS = ("demo-alpha", "with_sap", "without_sap", "0.257", "__pwned='model'")
#: Handlers an annotator may call: the page load and the Annotate tab (refresh, choose, submit, skip).
ANNOTATOR_HANDLERS = (
    "on_load",
    "load_campaigns",
    "choose",
    "on_submit",
    "on_skip",
    "visibility",  # a conditional question shown or hidden
    "list_answers",  # go back: my answers
    "open_answer",  # go back: one of them, to revise
    "show_all",  # a text cut for display, whole
    "live_campaigns_refresh",  # the Live sessions tab: annotators and experts talk there
    "live_start",
    "live_send",
    "live_retry",
    "live_rate",
)
REAL_SCENARIO_ID = "b-dialogue-1"
RECORD_CSP_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation',
  (event) => window.__csp.push(event.violatedDirective + ' ' + event.blockedURI));
"""


def _add_hostile_run(database_url: str, folder: Path) -> None:
    """Ingest one scenario with a hostile id and a response of a model with a hostile name (with a score)."""
    from studio.services.ingest import ingest_run

    folder.mkdir(parents=True)
    scenario = Scenario(id=HOSTILE_ID, subtask="dialogue_base", persona="p", user_input="hi", reference="hello")
    response = Response(
        scenario_id=HOSTILE_ID,
        model=HOSTILE_MODEL,
        variant="with_sap",
        text="hello there",
        backend="fixture",
        prompt_version="fixture",
    )
    score = Score(
        scenario_id=HOSTILE_ID,
        model=HOSTILE_MODEL,
        variant="with_sap",
        subtask="dialogue_base",
        bleu1=0.5,
        bleu2=0.4,
        bleu3=0.3,
        bleu4=0.2,
        rouge1=0.5,
        rougeL=0.5,
        ss=0.7,
        S=0.443,
        signature=SIGNATURE,
    )
    write_records(folder / "scenarios.jsonl", [scenario])
    write_records(folder / "responses.jsonl", [response])
    write_records(folder / "scores.jsonl", [score])
    engine = create_db_engine(database_url)
    try:
        ingest_run(engine, folder)
    finally:
        engine.dispose()


def _add_staff_and_a_hostile_campaign(database_url: str) -> None:
    from studio.db import write_session
    from studio.services.auth import create_user
    from studio.services.campaigns import create_campaign
    from studio.workflows import load_schemas

    engine = create_db_engine(database_url)
    try:
        with write_session(engine) as session:
            for role in ("curator", "researcher"):
                create_user(session, username=f"sec-{role}", password=PASSWORD, role=role)
            create_campaign(session, name=HOSTILE_CAMPAIGN, schema=load_schemas()["crowd_vote"], actor="test")
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Studio]:
    """The studio behind the security headers middleware, over a store with hostile names, on 127.0.0.1."""

    from studio.settings import get_settings
    from studio.web.app import create_app

    folder = Path(tmp_path_factory.mktemp("security-store"))
    store = build_store(folder)
    _add_hostile_run(store.database_url, folder / "hostile-run")
    _add_staff_and_a_hostile_campaign(store.database_url)
    # create_app itself adds the security headers and the same-origin check.
    with serve_in_thread(create_app(get_settings(database_url=store.database_url))) as url:
        yield Studio(url, store)


@contextmanager
def signed_in_client(studio: Studio, username: str) -> Iterator[httpx.Client]:
    """An HTTP client holding ``username``'s session cookie, signed in through the login form."""
    with httpx.Client(base_url=studio.base_url, timeout=60) as client:
        assert client.post("/login", data={"username": username, "password": PASSWORD}).status_code == 303
        yield client


def default_inputs(config: dict[str, Any], dependency: dict[str, Any]) -> list[Any]:
    """Each input component's initial value, as the browser would send it on an untouched page."""
    values = {component["id"]: component.get("props", {}).get("value") for component in config["components"]}
    return [values.get(component_id) for component_id in dependency["inputs"]]


def call_dependency(
    client: httpx.Client, dependency: dict[str, Any], data: list[Any], session_hash: str | None = None
) -> dict[str, Any]:
    """Run one Gradio dependency through ``queue/join`` and return its ``process_completed`` message."""
    session_hash = session_hash or uuid.uuid4().hex
    target = dependency["targets"][0][0] if dependency["targets"] else None
    event_data = {"index": [0, 0], "value": "b-dialogue-1", "row_value": ["b-dialogue-1"], "selected": True}
    body = {
        "data": data,
        "fn_index": dependency["id"],
        "session_hash": session_hash,
        "trigger_id": target,
        "event_data": event_data,
    }
    joined = client.post("/ui/gradio_api/queue/join", json=body)
    # On a busy machine the events just answered may still count as pending for a moment (studio.web.queue_limit):
    # the server then says 429 with Retry-After, and this client waits as that header asks before it asks again.
    deadline = time.monotonic() + 60
    while joined.status_code == 429 and time.monotonic() < deadline:
        time.sleep(float(joined.headers.get("Retry-After", "1")))
        joined = client.post("/ui/gradio_api/queue/join", json=body)
    joined.raise_for_status()
    with client.stream("GET", "/ui/gradio_api/queue/data", params={"session_hash": session_hash}) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:") and "process_completed" in line:
                return json.loads(line[len("data:") :])
    raise AssertionError(f"{dependency['api_name']}: the event stream ended without a result")


def store_rows(studio: Studio) -> dict[str, list[Any]]:
    engine = create_db_engine(studio.store.database_url)
    try:
        with read_session(engine) as session:
            return {
                name: list(session.exec(select(model.id)).all())
                for name, model in (("answers", Answer), ("audit", AuditLog), ("leases", Lease), ("skips", Skip))
            }
    finally:
        engine.dispose()


def is_role_refusal(result: dict[str, Any]) -> bool:
    return result["success"] is False and "role: 'annotator' may not do this" in (result["output"].get("error") or "")


def is_annotator_handler(api_name: str) -> bool:
    base = api_name.rstrip("0123456789").rstrip("_")
    return base in ANNOTATOR_HANDLERS


def test_every_kind_of_response_carries_the_security_headers(guarded: Studio) -> None:
    with signed_in_client(guarded, "annotator01") as client:
        token = client.cookies["h2h_session"]
        responses = [
            client.get("/login"),
            client.get("/ui/", headers={"accept": "text/html"}),
            client.get("/ui/config"),
            client.get("/ui/gradio_api/info"),
            client.get("/no-such-page"),
            client.get("/api/v1/me", headers={"authorization": f"Bearer {token}"}),
            client.get("/api/v1/me"),
        ]
    for response in responses:
        where = f"{response.request.url.path} ({response.status_code})"
        assert response.headers["x-content-type-options"] == "nosniff", where
        assert response.headers["x-frame-options"] == "DENY", where
        assert response.headers["referrer-policy"] == "same-origin", where
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"], where
    assert [response.status_code for response in responses] == [200, 200, 200, 200, 404, 200, 401]


def test_the_ui_works_under_the_csp_with_no_violation(guarded: Studio, page: Any) -> None:
    page.add_init_script(RECORD_CSP_VIOLATIONS)
    console: list[str] = []
    page.on("console", lambda message: console.append(message.text))
    sign_in(page, guarded, "annotator01")
    choose_campaign(page, "test-crowd_vote")
    form = page.locator("#h2h-form-crowd_vote")
    form.locator("#q-crowd_vote-verdict").get_by_text("Keep", exact=True).click()
    form.locator("#q-crowd_vote-subtask_label").get_by_text("Dialogue — everyday chat", exact=True).click()
    form.get_by_role("button", name="Submit (Enter)").click()
    page.wait_for_function(
        "() => ((document.querySelector('#h2h-progress .h2h-mine') || {}).textContent || '')"
        ".startsWith('You answered 1 item(s).')",
        timeout=UI_WAIT_MS,
    )
    assert page.evaluate("window.__csp") == []
    assert [text for text in console if "Content Security Policy" in text] == []


def test_another_site_cannot_frame_the_studio(guarded: Studio, page: Any) -> None:
    page.set_content(f'<iframe id="victim" src="{guarded.base_url}/login" width="600" height="400"></iframe>')
    page.wait_for_timeout(1000)  # the frame's navigation either lands or is blocked; both finish in this time
    [frame] = [frame for frame in page.frames if frame != page.main_frame]
    assert frame.query_selector("#username") is None
    assert not frame.url.startswith(guarded.base_url)


def test_an_annotator_is_refused_by_every_handler_outside_the_annotate_tab(guarded: Studio) -> None:
    with signed_in_client(guarded, "annotator02") as client:
        config = client.get("/ui/config").json()
        handlers = [entry for entry in config["dependencies"] if entry.get("backend_fn")]
        staff_handlers = [entry for entry in handlers if not is_annotator_handler(entry["api_name"])]
        assert len(staff_handlers) >= 30, [entry["api_name"] for entry in handlers]
        before = store_rows(guarded)
        for dependency in staff_handlers:
            inputs = default_inputs(config, dependency)
            result = call_dependency(client, dependency, inputs)
            if not is_role_refusal(result):  # refused for an empty field first: name a real scenario and retry
                named = [REAL_SCENARIO_ID if value in (None, "") else value for value in inputs]
                result = call_dependency(client, dependency, named)
            assert is_role_refusal(result), (dependency["api_name"], result["output"])
            assert not result["output"].get("data"), dependency["api_name"]
        assert store_rows(guarded) == before


def test_an_annotator_sees_no_model_variant_or_score_in_config_info_or_handler_output(guarded: Studio) -> None:
    with signed_in_client(guarded, "annotator03") as client:
        config = client.get("/ui/config")
        info = client.get("/ui/gradio_api/info")
        assert info.json() == {"named_endpoints": {}, "unnamed_endpoints": {}}
        dependencies = config.json()["dependencies"]
        [choose] = [entry for entry in dependencies if entry["api_name"] == "choose"]
        [on_load] = [entry for entry in dependencies if entry["api_name"] == "on_load"]
        session_hash = uuid.uuid4().hex  # the page load fills the campaign picker of this page session
        loaded = call_dependency(client, on_load, [], session_hash)
        shown = call_dependency(client, choose, ["test-sap_safety"], session_hash)
    assert loaded["success"] is True and shown["success"] is True
    chat = shown["output"]["data"][1]
    assert "hello" in chat or "I hear you" in chat  # a response item really was shown
    for text in (config.text, info.text, json.dumps(loaded["output"]), json.dumps(shown["output"])):
        assert [word for word in HIDDEN_FROM_ANNOTATORS if word in text] == []
    for output in (loaded["output"], shown["output"]):  # judge scores: column names are in the static layout only
        assert "J_judge" not in json.dumps(output) and "J_final" not in json.dumps(output)


def test_hostile_model_names_and_ids_stay_text_in_tables_and_dropdowns(guarded: Studio, page: Any) -> None:
    sign_in(page, guarded, "sec-curator")
    page.get_by_role("tab", name="Research").click()
    page.click("#h2h-leaderboard-button")
    page.wait_for_function(
        "text => (document.querySelector('#h2h-leaderboard') || {innerText: ''}).innerText.includes(text)",
        arg="window.__pwned='model'",
        timeout=UI_WAIT_MS,
    )
    page.get_by_role("tab", name="Curate").click()
    page.click("#h2h-search")
    page.wait_for_function(
        "text => (document.querySelector('#h2h-scenarios') || {innerText: ''}).innerText.includes(text)",
        arg="<svg onload",
        timeout=UI_WAIT_MS,
    )
    page.wait_for_timeout(300)  # let an onerror/onload handler fire, if one were live
    assert page.evaluate("window.__pwned") is None
    assert page.locator("[onerror], [onload]").count() == 0  # no element came from the hostile markup


def test_a_hostile_campaign_name_stays_text_in_the_campaign_picker(guarded: Studio, page: Any) -> None:
    sign_in(page, guarded, "annotator03")
    page.click("#h2h-campaign input")
    option = page.get_by_role("option", name=HOSTILE_CAMPAIGN, exact=False).first
    option.wait_for(timeout=UI_WAIT_MS)
    assert HOSTILE_CAMPAIGN in option.inner_text()
    option.click()
    page.wait_for_selector("#h2h-chat .h2h-input", timeout=UI_WAIT_MS)
    page.wait_for_timeout(300)  # let an onerror handler fire, if one were live
    assert page.evaluate("window.__pwned") is None
    assert page.locator("[onerror], [onload]").count() == 0


def test_gradio_file_route_serves_nothing_outside_its_cache(guarded: Studio) -> None:
    database = guarded.store.database_url.removeprefix("sqlite:///")
    with signed_in_client(guarded, "annotator01") as client:
        for path in (
            "/etc/passwd",
            "../../../../etc/passwd",
            "..%2F..%2F..%2Fetc%2Fpasswd",
            database,
            str(Path(__file__).resolve()),
        ):
            response = client.get(f"/ui/gradio_api/file={path}")
            assert response.status_code in (403, 404), path
            assert "root:" not in response.text and "SQLite format" not in response.text


def test_the_sign_out_button_posts_and_revokes_the_session(guarded: Studio, page: Any) -> None:
    sign_in(page, guarded, "annotator02")
    token = next(cookie["value"] for cookie in page.context.cookies() if cookie["name"] == "h2h_session")
    page.click("#h2h-logout")
    page.wait_for_selector("#login-button", timeout=UI_WAIT_MS)
    assert page.url == f"{guarded.base_url}/login"
    assert httpx.get(f"{guarded.base_url}/ui/config", cookies={"h2h_session": token}).status_code == 401
    assert httpx.get(f"{guarded.base_url}/logout").status_code == 405


def test_an_annotator_cannot_upload_files_through_gradio(guarded: Studio) -> None:
    """Gradio's upload route takes any size from anyone signed in; the studio's one upload (the admin page's scenario
    import) is open only to those who may import (``studio.web.uploads``), so an annotator is refused unread."""
    with signed_in_client(guarded, "annotator01") as client:
        upload = client.post("/ui/gradio_api/upload", files={"files": ("big.html", b"<b>x</b>" * 4096, "text/html")})
    assert upload.status_code == 403


def test_a_shown_item_forged_by_the_client_is_refused_and_stores_nothing(guarded: Studio) -> None:
    """The page names the item it shows (a hidden field, see ``studio.ui.shown``); the server trusts none of it: a
    crafted submit naming an expert campaign's item, or a lease that is not the caller's, is refused."""
    from studio.db import write_session
    from studio.services.auth import create_user

    engine = create_db_engine(guarded.store.database_url)
    try:
        with write_session(engine) as session:  # someone who has answered nothing yet
            create_user(session, username="sec-forger", password=PASSWORD, role="annotator")
    finally:
        engine.dispose()
    before = store_rows(guarded)
    with signed_in_client(guarded, "sec-forger") as client:
        config = client.get("/ui/config").json()
        ids = {c.get("props", {}).get("elem_id"): c["id"] for c in config["components"]}
        [submit] = [
            entry
            for entry in config["dependencies"]
            if entry["api_name"].startswith("on_submit") and ids["q-crowd_vote-verdict"] in entry["inputs"]
        ]
        values = {
            ids["q-crowd_vote-verdict"]: "keep",
            ids["q-crowd_vote-subtask_label"]: "dialogue_base",
        }
        forged = {"item_id": 1, "lease_id": "x", "submission_id": "forged", "shown_at": 0.0}
        results = []
        for campaign in ("test-adjudication", "test-crowd_vote"):
            values[ids["h2h-shown-item"]] = json.dumps(forged | {"campaign": campaign})
            results.append(call_dependency(client, submit, [values.get(i) for i in submit["inputs"]]))
    refusals = [json.dumps(result["output"]["data"]) for result in results]
    assert all(result["success"] is True for result in results)
    assert "not open to role" in refusals[0] and "no lease" in refusals[1], refusals
    assert store_rows(guarded) == before


def test_a_ui_event_posted_from_another_origin_with_the_cookie_is_refused(guarded: Studio) -> None:
    """SameSite=Lax does not stop a page on another port of the same host; the Origin check does."""
    before = store_rows(guarded)
    with signed_in_client(guarded, "annotator01") as client:
        config = client.get("/ui/config").json()
        [choose] = [entry for entry in config["dependencies"] if entry["api_name"] == "choose"]
        other_port = guarded.base_url.rsplit(":", 1)[0] + ":1"
        refused = client.post(
            "/ui/gradio_api/queue/join",
            headers={"origin": other_port},
            json={"data": ["test-crowd_vote"], "fn_index": choose["id"], "session_hash": uuid.uuid4().hex},
        )
        assert refused.status_code == 403
        assert (
            client.post(
                "/login", headers={"origin": other_port}, data={"username": "annotator01", "password": PASSWORD}
            ).status_code
            == 403
        )
    assert store_rows(guarded) == before


def test_an_unexpected_exception_s_text_stays_on_the_server(guarded: Studio) -> None:
    """A crafted value (text for a number field) is refused without Python's text or the value echoed back: by
    Gradio (a generic error) or by the page's own checks (the number field has no Gradio bounds any more)."""
    with signed_in_client(guarded, "annotator01") as client:
        config = client.get("/ui/config").json()
        [number] = [
            entry["id"]
            for entry in config["components"]
            # The rubric score's field (a text box read as a number since issue 16: gr.Number cannot start empty).
            if str(entry.get("props", {}).get("elem_id", "")).startswith("q-adjudication-")
            and str(entry.get("props", {}).get("elem_id", "")).endswith("-rubric_score")
        ]
        [submit] = [
            entry
            for entry in config["dependencies"]
            if number in entry["inputs"] and entry["api_name"].startswith("on_submit")
        ]
        data = ["not-a-number" if component == number else None for component in submit["inputs"]]
        result = call_dependency(client, submit, data)
    # Refused either by Gradio (a generic error) or by the form's own check (words under the field): never with
    # Python's text or the crafted value echoed back.
    shown = json.dumps(result["output"])
    assert result["success"] is False or "h2h-error" in shown
    assert "not-a-number" not in shown and "float" not in shown and "Traceback" not in shown


def test_sign_in_never_redirects_off_the_site(guarded: Studio) -> None:
    with httpx.Client(base_url=guarded.base_url, timeout=60, follow_redirects=False) as client:
        for query in ("?next=https://evil.example/", "?next=//evil.example", "?redirect=%2F%2Fevil.example"):
            response = client.post(f"/login{query}", data={"username": "annotator01", "password": PASSWORD})
            assert response.status_code == 303 and response.headers["location"] == "/ui/", query


#: Store text a handler would send only to someone signed in: scenario ids and texts, usernames, campaign names.
SIGNED_IN_ONLY = ("b-dialogue", "b-itinerary", "b-risk", "Work was long", "annotator0", "sec-curator", "test-crowd")


def test_a_page_whose_session_was_ended_gets_nothing_from_any_handler(guarded: Studio) -> None:
    """Issue 16 item 4 lets a page's events through Gradio's sign-in check with the token the page signed in with,
    once an admin ended that session, so the page can say "signed out" instead of bare error badges. Then every
    handler must still refuse: no store change, and no store text in any output (a staff page has the most)."""
    from studio.db import write_session
    from studio.services.auth import revoke_sessions

    with signed_in_client(guarded, "sec-curator") as client:
        config = client.get("/ui/config").json()
        handlers = [entry for entry in config["dependencies"] if entry.get("backend_fn")]
        session_hash = uuid.uuid4().hex
        [load] = [entry for entry in handlers if entry["targets"] and entry["targets"][0][1] == "load"]
        assert call_dependency(client, load, [], session_hash)["success"] is True  # the page, signed in
        engine = create_db_engine(guarded.store.database_url)
        try:
            with write_session(engine) as session:
                assert revoke_sessions(session, username="sec-curator", actor="test") >= 1
        finally:
            engine.dispose()
        before = store_rows(guarded)
        for dependency in handlers:
            result = call_dependency(client, dependency, default_inputs(config, dependency), session_hash)
            shown = json.dumps(result["output"], ensure_ascii=False)
            assert not any(text in shown for text in SIGNED_IN_ONLY), (dependency["api_name"], shown[:300])
    assert store_rows(guarded) == before
