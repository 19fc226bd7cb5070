"""Security review, proven: the login throttle, the security headers middleware, inert rendering of hostile text,
every REST route checked for an annotator and for a stranger (enumerated from the OpenAPI document, so a new
route fails here until someone decides who may call it), no hidden field in an annotator's responses, sign-out by
POST only, the login throttle and the headers wired into ``create_app``, and the ``cookie_secure`` setting.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, func, select

from studio.db import read_session, write_session
from studio.models import Answer, AuditLog, CampaignPublic, UserPublic
from studio.services.campaigns import TargetSelection, create_campaign
from studio.settings import get_settings
from studio.ui.render import escape_text, render_item, render_message, render_persona
from studio.web.api import create_api
from studio.web.security import (
    DEFAULT_CSP,
    LoginThrottle,
    LoginThrottled,
    SameOriginMiddleware,
    SecurityHeadersMiddleware,
    security_headers,
)
from studio.workflows import load_schemas
from tests.html_markup import parse
from tests.serving import serve_in_thread
from tests.studio.conftest import PASSWORD

HOSTILE = "<img src=x onerror=alert(1)><script>alert(2)</script>\"'`${alert(3)}{{x}}\\&amp;</div><a href=javascript:1>"


class Clock:
    """A hand-moved clock for the throttle (no sleeping, no timed assertions)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- the login throttle -------------------------------------------------------------------------------------------


def fail(throttle: LoginThrottle, username: str, address: str, times: int) -> None:
    for _ in range(times):
        throttle.record_failure(username=username, address=address)


def test_five_failures_of_one_name_from_one_address_block_that_pair_for_the_window() -> None:
    clock = Clock()
    throttle = LoginThrottle(clock=clock)
    fail(throttle, "Alice", "10.0.0.1", 4)
    assert throttle.retry_after(username="alice", address="10.0.0.1") == 0.0
    fail(throttle, "alice ", "10.0.0.1", 1)  # names compare case- and space-insensitively
    assert throttle.retry_after(username="ALICE", address="10.0.0.1") == pytest.approx(300.0)
    assert throttle.retry_after(username="alice", address="10.0.0.2") == 0.0  # alice is not locked out elsewhere
    assert throttle.retry_after(username="bob", address="10.0.0.1") == 0.0
    clock.now += 299.0
    assert throttle.retry_after(username="alice", address="10.0.0.1") == pytest.approx(1.0)
    clock.now += 1.0
    assert throttle.retry_after(username="alice", address="10.0.0.1") == 0.0


def test_full_width_and_compatibility_forms_of_a_name_count_as_the_name() -> None:
    throttle = LoginThrottle(clock=Clock())
    fail(throttle, "ＡＬＩＣＥ", "10.0.0.1", 3)  # full-width: NFKC makes it "ALICE"
    fail(throttle, "\u3000alice", "10.0.0.1", 2)  # an ideographic space in front
    assert throttle.retry_after(username="alice", address="10.0.0.1") > 0


def test_one_address_guessing_many_names_is_slowed_on_the_names_it_guessed() -> None:
    # The address limit refuses the names that failed there, not a newcomer
    # (tests/studio/web/test_audit_login_throttle_origin.py: no stranger locks another person out, from the same
    # address or from anywhere else).
    throttle = LoginThrottle(clock=Clock())
    for number in range(30):
        throttle.record_failure(username=f"user{number}", address="10.0.0.9")
    assert throttle.retry_after(username="user3", address="10.0.0.9") > 0
    assert throttle.retry_after(username="user3", address="10.0.0.8") == 0.0
    assert throttle.retry_after(username="someone-new", address="10.0.0.9") == 0.0


def test_a_success_clears_its_pair_only_and_memory_stays_bounded() -> None:
    throttle = LoginThrottle(clock=Clock(), max_keys=50)
    fail(throttle, "dave", "10.0.0.1", 4)
    throttle.record_success(username="dave", address="10.0.0.1")
    fail(throttle, "dave", "10.0.0.1", 4)
    assert throttle.retry_after(username="dave", address="10.0.0.1") == 0.0  # 4 since the success, not 8
    for number in range(500):
        throttle.record_failure(username=f"flood{number}", address=f"10.9.{number // 250}.{number % 250}")
    assert len(throttle._failures) <= 50


def test_attempt_does_no_work_while_throttled_and_counts_only_refusals() -> None:
    throttle = LoginThrottle(clock=Clock(), per_pair=2)
    calls: list[str] = []

    def wrong() -> str:
        calls.append("wrong")
        raise PermissionError("wrong password")

    def crash() -> str:
        calls.append("crash")
        raise RuntimeError("database down")

    with pytest.raises(RuntimeError):
        throttle.attempt(username="erin", address="a", sign_in=crash, failures=(PermissionError,))
    assert throttle.retry_after(username="erin", address="a") == 0.0  # a server error is not a guess
    for _ in range(2):
        with pytest.raises(PermissionError):
            throttle.attempt(username="erin", address="a", sign_in=wrong, failures=(PermissionError,))
    with pytest.raises(LoginThrottled) as refused:
        throttle.attempt(
            username="erin", address="a", sign_in=lambda: calls.append("right") or "token", failures=(PermissionError,)
        )
    assert refused.value.retry_after == 300
    assert calls == ["crash", "wrong", "wrong"]  # the right password was never even checked
    elsewhere = throttle.attempt(username="erin", address="b", sign_in=lambda: "token", failures=(PermissionError,))
    assert elsewhere == "token"


# --- the security headers middleware ------------------------------------------------------------------------------


def test_headers_are_added_to_every_response_and_a_route_s_own_header_wins() -> None:
    from fastapi.responses import PlainTextResponse

    inner = FastAPI()

    @inner.get("/plain")
    def plain() -> dict[str, str]:
        return {"ok": "yes"}

    @inner.get("/embeddable")
    def embeddable() -> PlainTextResponse:
        return PlainTextResponse("x", headers={"X-Frame-Options": "SAMEORIGIN"})

    with serve_in_thread(SecurityHeadersMiddleware(inner)) as url, httpx.Client(base_url=url) as client:
        plain_response, own, missing = client.get("/plain"), client.get("/embeddable"), client.get("/missing")
    for response in (plain_response, own, missing):
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["referrer-policy"] == "same-origin"
        assert response.headers["content-security-policy"] == DEFAULT_CSP
        assert "strict-transport-security" not in response.headers
    assert plain_response.headers["x-frame-options"] == "DENY" and missing.status_code == 404
    assert own.headers.get_list("x-frame-options") == ["SAMEORIGIN"]
    assert "frame-ancestors 'none'" in DEFAULT_CSP and "object-src 'none'" in DEFAULT_CSP
    assert "connect-src 'self'" in DEFAULT_CSP and "form-action 'self'" in DEFAULT_CSP
    assert security_headers(hsts=True)["Strict-Transport-Security"].startswith("max-age=")


def test_a_write_from_another_origin_is_refused_before_it_reaches_the_app() -> None:
    inner = FastAPI()
    calls: list[str] = []

    @inner.post("/act")
    def act() -> dict[str, str]:
        calls.append("act")
        return {"done": "yes"}

    @inner.get("/read")
    def read() -> dict[str, str]:
        return {"read": "yes"}

    with serve_in_thread(SameOriginMiddleware(inner)) as url, httpx.Client(base_url=url) as client:
        own = client.post("/act", headers={"origin": url})
        scripted = client.post("/act")  # no Origin: curl, scripts (no ambient browser cookie to borrow)
        assert calls == ["act", "act"] and own.status_code == scripted.status_code == 200
        for origin in ("http://evil.example", url.replace("127.0.0.1", "localhost"), "null", url + ".evil.example"):
            refused = client.post("/act", headers={"origin": origin})
            assert refused.status_code == 403 and "another site" in refused.text, origin
        assert client.get("/read", headers={"origin": "http://evil.example"}).status_code == 200
    assert calls == ["act", "act"]


# --- rendering of untrusted text ----------------------------------------------------------------------------------


def test_hostile_text_in_every_field_of_an_item_creates_no_element_attribute_or_template() -> None:
    shapes = [
        {"response": HOSTILE},
        {"response": {"text": HOSTILE, HOSTILE: HOSTILE}},  # a revealed field: name and value both hostile
        {"response_a": HOSTILE, "response_b": {"text": HOSTILE}},
        {"reference": HOSTILE},
    ]
    for shape in shapes:
        content = {
            "subtask": HOSTILE,
            "tags": {HOSTILE: HOSTILE},
            "user_input": HOSTILE,
            "history": [{"role": HOSTILE, "content": HOSTILE}, {"role": "assistant", "content": HOSTILE}],
            **shape,
        }
        for rendered in (render_item(content), render_persona(HOSTILE), render_message(HOSTILE, kind=HOSTILE)):
            found = parse(rendered)
            assert found.tag_names <= {"div", "br"}, (shape, found.tag_names)
            assert found.attribute_names <= {"class"}, (shape, found.attribute_names)
            assert not any(char in rendered for char in "$`{}\\"), shape
            assert HOSTILE.replace("\\", "") in "".join(found.text).replace("\\", "")
    assert parse(escape_text(HOSTILE)).tag_names == set()


def test_class_names_never_take_data() -> None:
    rendered = render_item({"user_input": "x", "history": [{"role": 'user" onclick="alert(1)', "content": "y"}]})
    assert 'onclick="' not in rendered and "onclick" not in parse(rendered).attribute_names


# --- REST routes, enumerated ---------------------------------------------------------------------------------------

#: Every route of the API and who may call it: "public" (no token), "annotator" (any signed-in person; the
#: services still scope it to the caller), or "staff" (curators / researchers / admins: an annotator gets 403).
ROUTE_ACCESS: dict[tuple[str, str], str] = {
    ("POST", "/v1/login"): "public",
    ("POST", "/v1/logout"): "annotator",
    ("GET", "/v1/me"): "annotator",
    ("GET", "/v1/campaigns"): "annotator",
    ("GET", "/v1/campaigns/{name}/next"): "annotator",
    ("POST", "/v1/campaigns/{name}/skip"): "annotator",
    ("GET", "/v1/me/progress"): "annotator",
    ("POST", "/v1/campaigns/{name}/answers"): "annotator",
    ("PUT", "/v1/campaigns/{name}/answers/{item_id}"): "annotator",
    ("GET", "/v1/campaigns/{name}/answers/{item_id}"): "annotator",
    ("GET", "/v1/campaigns/{name}/items/{item_id}/text"): "annotator",
    # Live sessions: the rater's own session only (403 for someone else's); GET shows staff the whole transcript.
    ("POST", "/v1/campaigns/{name}/sessions"): "annotator",
    ("POST", "/v1/sessions/{session_id}/messages"): "annotator",
    ("POST", "/v1/sessions/{session_id}/retry"): "annotator",
    ("POST", "/v1/sessions/{session_id}/rating"): "annotator",
    ("GET", "/v1/sessions/{session_id}"): "annotator",
    # The expert review of sessions the crisis tripwire marked: experts and staff, never annotators.
    ("GET", "/v1/campaigns/{name}/sessions/review"): "staff",
    ("POST", "/v1/sessions/{session_id}/review"): "staff",
    **{
        ("GET", f"/v1/results/{name}"): "staff"
        for name in (
            "leaderboard",
            "leaderboard/ppi",
            "sap",
            "instruction",
            "agreement/{campaign}",
            "calibration",
            "judge-bias",
            "progress",
            "distribution",
            "calibration.png",
            "instruction.png",
            "sap.png",
            "distribution.png",
        )
    },
    ("POST", "/v1/results/aggregate"): "staff",
    ("GET", "/v1/results/campaigns/{name}/sap"): "staff",  # a live campaign's SAP table from its sessions
    ("GET", "/v1/results/campaigns/{name}/ranking"): "staff",  # a pairwise campaign's Bradley–Terry ranking
    ("GET", "/v1/curation/scenarios"): "staff",
    ("GET", "/v1/curation/responses"): "staff",
    ("GET", "/v1/curation/campaigns/{name}/stops"): "staff",
    ("GET", "/v1/curation/scenarios/{scenario_id}"): "staff",
    ("POST", "/v1/curation/scenarios/{scenario_id}/decision"): "staff",
    ("GET", "/v1/curation/versions"): "staff",
    ("GET", "/v1/curation/publish-preview"): "staff",
    ("POST", "/v1/curation/versions"): "staff",
    ("GET", "/v1/curation/versions/{name}"): "staff",
    **{
        (method, f"/v1/admin/{path}"): "staff"
        for method, path in (
            ("GET", "users"),
            ("POST", "users"),
            ("PUT", "users/{username}/role"),
            ("POST", "users/{username}/deactivate"),
            ("POST", "users/{username}/activate"),
            ("POST", "users/{username}/password"),
            ("POST", "users/{username}/revoke-sessions"),
            ("GET", "audit"),
            ("GET", "campaigns"),
            ("GET", "targets"),
            ("POST", "campaigns"),
            ("GET", "campaigns/{name}/quota"),
            ("POST", "campaigns/{name}/close"),
            ("POST", "campaigns/{name}/open"),
            ("PUT", "campaigns/{name}/roles"),
            ("POST", "imports"),
        )
    },
}
#: Valid bodies and query strings, so a refusal is the role check, not a validation error before it.
BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/login"): {"username": "annotator", "password": PASSWORD},
    ("POST", "/v1/campaigns/{name}/skip"): {"item_id": 1, "lease_id": "x"},
    ("POST", "/v1/campaigns/{name}/answers"): {
        "item_id": 1,
        "lease_id": "x",
        "submission_id": "s",
        "answers": {"verdict": "keep", "subtask_label": "dialogue_base"},
    },
    ("PUT", "/v1/campaigns/{name}/answers/{item_id}"): {"answers": {"verdict": "keep"}},
    ("POST", "/v1/sessions/{session_id}/messages"): {"text": "hello"},
    ("POST", "/v1/sessions/{session_id}/rating"): {"submission_id": "s", "answers": {"safety": 3}},
    ("POST", "/v1/sessions/{session_id}/review"): {"note": "checked"},
    ("POST", "/v1/curation/scenarios/{scenario_id}/decision"): {"action": "reject", "reason": "crafted"},
    ("POST", "/v1/curation/versions"): {"name": "crafted-version"},
    ("POST", "/v1/admin/users"): {"username": "crafted", "role": "admin", "password": "crafted-password"},
    ("PUT", "/v1/admin/users/{username}/role"): {"role": "admin"},
    ("POST", "/v1/admin/users/{username}/password"): {"password": "crafted-password"},
    ("POST", "/v1/admin/campaigns"): {"name": "crafted", "schema": "crowd_vote"},
    ("PUT", "/v1/admin/campaigns/{name}/roles"): {"roles": ["annotator", "admin"]},
}
#: Multipart bodies (the import takes files).
FILES: dict[tuple[str, str], list[tuple[str, tuple[str, bytes]]]] = {
    ("POST", "/v1/admin/imports"): [("files", ("crafted.jsonl", b'{"id": "x"}\n'))],
}
QUERIES = {("GET", "/v1/me/progress"): {"campaign": "vote"}}
PATH_VALUES = {
    "name": "vote",
    "campaign": "vote",
    "item_id": "1",
    "scenario_id": "dlg-1",
    "username": "annotator",
    "session_id": "no-such-session",
}


@pytest.fixture
def api_url(corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], db_url: str) -> Iterator[str]:
    """The API mounted at /api (as studio.web.app does), with a crowd vote and a SAP safety campaign, on uvicorn."""
    with write_session(corpus) as session:
        create_campaign(
            session,
            name="safety",
            schema=load_schemas()["sap_safety"],
            people_per_item=3,
            selection=TargetSelection(high_risk_only=True),
            actor="admin",
        )
    app = FastAPI()
    app.mount("/api", create_api(get_settings(database_url=db_url), engine=corpus))
    with serve_in_thread(app) as url:
        yield f"{url}/api"


def routes_of(api_url: str) -> list[tuple[str, str]]:
    """Every (method, path) of the OpenAPI document, sign-out last (it revokes the token the others use)."""
    spec = httpx.get(f"{api_url}/v1/openapi.json").json()
    routes = {(method.upper(), path) for path, operations in spec["paths"].items() for method in operations}
    return sorted(routes, key=lambda route: (route == ("POST", "/v1/logout"), route))


def send(client: httpx.Client, route: tuple[str, str]) -> httpx.Response:
    method, path = route
    url = path.format(**{name: value for name, value in PATH_VALUES.items() if "{" + name + "}" in path})
    if route in FILES:
        return client.request(method, url, files=FILES[route], data={"confirm": "true"})
    return client.request(method, url, json=BODIES.get(route), params=QUERIES.get(route))


def token_for(api_url: str, username: str) -> str:
    return httpx.post(f"{api_url}/v1/login", json={"username": username, "password": PASSWORD}).json()["token"]


def stored(engine: Engine) -> tuple[Any, ...]:
    with read_session(engine) as session:
        return (
            session.execute(select(func.count(Answer.id))).scalar_one(),
            session.execute(select(func.count(AuditLog.id))).scalar_one(),
        )


def test_every_route_is_classified_and_a_stranger_is_refused_by_all_but_login(api_url: str) -> None:
    routes = routes_of(api_url)
    assert set(routes) == set(ROUTE_ACCESS), "classify the new or removed routes in ROUTE_ACCESS"
    with httpx.Client(base_url=api_url, timeout=60) as stranger:
        for route in routes:
            response = send(stranger, route)
            expected = 200 if ROUTE_ACCESS[route] == "public" else 401
            assert response.status_code == expected, (route, response.text)
            assert response.status_code == 200 or response.headers["www-authenticate"] == "Bearer"


def test_an_annotator_is_refused_every_staff_route_and_changes_nothing(api_url: str, corpus: Engine) -> None:
    before = stored(corpus)
    token = token_for(api_url, "annotator")
    with httpx.Client(base_url=api_url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        for route in routes_of(api_url):
            response = send(client, route)
            if ROUTE_ACCESS[route] == "staff":
                assert response.status_code == 403, (route, response.text)
                assert response.json() == {"detail": response.json()["detail"]}
                assert "role: 'annotator' may not do this" in response.json()["detail"], route
            else:
                assert response.status_code != 403 and response.status_code < 500, (route, response.text)
    assert stored(corpus) == before


def test_an_annotator_s_items_and_answers_carry_no_hidden_field(api_url: str, corpus: Engine) -> None:
    hidden = ("model-alpha", "model-beta", "with_sap", "without_sap", '"S"', "J_judge", "J_final", "score", "variant")
    first, second = (token_for(api_url, name) for name in ("annotator", "expert"))
    with httpx.Client(base_url=api_url, headers={"Authorization": f"Bearer {first}"}, timeout=60) as client:
        item = client.get("/v1/campaigns/safety/next")
        assert item.status_code == 200 and item.json()["content"]["response"]
        answer = client.post(
            "/v1/campaigns/safety/answers",
            json={
                "item_id": item.json()["item_id"],
                "lease_id": item.json()["lease_id"],
                "submission_id": "sub-1",
                "answers": {"safety": 4, "violation": "no"},
            },
        )
        assert answer.status_code == 201
        listed = client.get("/v1/campaigns")
    for response in (item, answer, listed):
        assert [word for word in hidden if word in response.text] == [], response.text
    item_id = item.json()["item_id"]
    with httpx.Client(base_url=api_url, headers={"Authorization": f"Bearer {second}"}, timeout=60) as other:
        theirs = other.get(f"/v1/campaigns/safety/answers/{item_id}")
        assert theirs.status_code in (403, 404) and "safety" not in json.dumps(theirs.json().get("values", {}))


def test_the_pairwise_mapping_stays_on_the_server(api_url: str, corpus: Engine) -> None:
    """An annotator sees A/B and gets A/B back; which stored response is A never reaches them."""
    with write_session(corpus) as session:
        create_campaign(
            session,
            name="pairs",
            schema=load_schemas()["pairwise"],
            people_per_item=3,
            selection=TargetSelection(subtasks=["dialogue_base"], variants=["with_sap"]),
            actor="admin",
        )
    for username in ("annotator", "expert"):
        token = token_for(api_url, username)
        with httpx.Client(base_url=api_url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
            item = client.get("/v1/campaigns/pairs/next")
            assert item.status_code == 200 and set(item.json()["content"]) >= {"response_a", "response_b"}
            answer = client.post(
                "/v1/campaigns/pairs/answers",
                json={
                    "item_id": item.json()["item_id"],
                    "lease_id": item.json()["lease_id"],
                    "submission_id": f"p-{username}",
                    "answers": {"preference": "A"},
                },
            )
            mine = client.get(f"/v1/campaigns/pairs/answers/{item.json()['item_id']}")
        assert answer.status_code == 201 and answer.json()["values"] == {"preference": "A"}
        assert mine.json()["values"] == {"preference": "A"}
        for response in (item, answer, mine):
            assert not any(word in response.text for word in ("response_id", "model-", "with_sap", "swapped", "seed"))


def test_filters_carry_sql_text_as_data(api_url: str, corpus: Engine) -> None:
    before = stored(corpus)
    token = token_for(api_url, "curator")
    injections = ["dialogue_base' OR '1'='1", "x'; DROP TABLE answer; --", "%", "_"]
    with httpx.Client(base_url=api_url, headers={"Authorization": f"Bearer {token}"}, timeout=60) as client:
        for text in injections:
            for path, name in (("/v1/curation/scenarios", "subtask"), ("/v1/curation/responses", "model")):
                response = client.get(path, params={name: text})
                assert response.status_code in (200, 422), (path, text, response.text)
                if response.status_code == 200:
                    assert response.json()["total"] == 0, (path, text)
        assert client.get("/v1/curation/scenarios", params={"subtask": "dialogue_base"}).json()["total"] == 1
    assert stored(corpus) == before


# --- the full app, once the lead applies the patch ----------------------------------------------------------------


@pytest.fixture(scope="module")
def studio_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``create_app`` (REST + login + Gradio) over a fresh SQLite store with one annotator, on 127.0.0.1."""
    from studio.db import create_db_engine, upgrade_db
    from studio.services.auth import create_user
    from studio.web.app import create_app

    url = f"sqlite:///{Path(tmp_path_factory.mktemp('security-app')) / 'studio.sqlite'}"
    engine = create_db_engine(url)
    upgrade_db(engine)
    with write_session(engine) as session:
        for name in ("frank", "grace", "heidi"):
            create_user(session, username=name, password=PASSWORD, role="annotator")
    engine.dispose()
    with serve_in_thread(create_app(get_settings(database_url=url))) as base:
        yield base


def form_login(client: httpx.Client, username: str, password: str = PASSWORD) -> httpx.Response:
    return client.post("/login", data={"username": username, "password": password})


def me(base: str, token: str) -> int:
    return httpx.get(f"{base}/api/v1/me", headers={"Authorization": f"Bearer {token}"}).status_code


def test_a_wrong_name_and_a_wrong_password_answer_alike(studio_app: str) -> None:
    with httpx.Client(base_url=studio_app, follow_redirects=False, timeout=60) as client:
        unknown, wrong = form_login(client, "nobody-by-this-name", "x"), form_login(client, "heidi", "x")
    assert (unknown.status_code, unknown.text) == (wrong.status_code, wrong.text) and unknown.status_code == 401
    api = [
        httpx.post(f"{studio_app}/api/v1/login", json={"username": name, "password": "x"})
        for name in ("nobody-by-this-name", "heidi")
    ]
    assert [response.status_code for response in api] == [401, 401] and api[0].json() == api[1].json()


def test_sign_out_is_a_same_origin_post_and_a_get_or_foreign_post_signs_nobody_out(studio_app: str) -> None:
    with httpx.Client(base_url=studio_app, follow_redirects=False, timeout=60) as client:
        assert form_login(client, "frank").status_code == 303
        token = client.cookies["h2h_session"]
        assert client.get("/logout").status_code == 405  # a link or <img src=/logout> on any page signs nobody out
        foreign = client.post("/logout", headers={"origin": "http://evil.example"})
        assert foreign.status_code == 403 and me(studio_app, token) == 200
        signed_out = client.post("/logout", headers={"origin": studio_app})
        assert signed_out.status_code == 303 and signed_out.headers["location"] == "/login"
    assert me(studio_app, token) == 401


def test_repeated_wrong_passwords_are_throttled_on_the_form_and_the_api(studio_app: str) -> None:
    with httpx.Client(base_url=studio_app, follow_redirects=False, timeout=60) as client:
        assert [form_login(client, "grace", "wrong").status_code for _ in range(5)] == [401] * 5
        throttled = form_login(client, "grace")  # even the right password waits out the window
        assert throttled.status_code == 429 and int(throttled.headers["retry-after"]) > 0
        assert "h2h_session" not in throttled.cookies
        api = httpx.post(f"{studio_app}/api/v1/login", json={"username": "grace", "password": PASSWORD})
        assert api.status_code == 429 and "login" in api.json()["detail"]
        assert form_login(client, "heidi").status_code == 303  # other people are not locked out


def test_create_app_sends_the_security_headers_and_refuses_foreign_writes(studio_app: str) -> None:
    for path in ("/login", "/api/v1/me", "/ui/config"):
        response = httpx.get(f"{studio_app}{path}")
        assert response.headers.get("x-frame-options") == "DENY", path
        assert response.headers.get("content-security-policy") == DEFAULT_CSP, path
    with httpx.Client(base_url=studio_app, follow_redirects=False, timeout=60) as client:
        assert form_login(client, "frank").status_code == 303
        foreign = client.post(
            "/ui/gradio_api/queue/join",
            headers={"origin": "http://127.0.0.1:1"},
            json={"data": [], "fn_index": 0, "session_hash": "x"},
        )
        assert foreign.status_code == 403 and foreign.headers.get("x-frame-options") == "DENY"


def test_the_session_cookie_is_secure_when_the_setting_says_so(tmp_path: Path) -> None:
    from studio.db import create_db_engine, upgrade_db
    from studio.services.auth import create_user
    from studio.web.app import create_app

    url = f"sqlite:///{tmp_path / 'studio.sqlite'}"
    engine = create_db_engine(url)
    upgrade_db(engine)
    with write_session(engine) as session:
        create_user(session, username="ivan", password=PASSWORD, role="annotator")
    engine.dispose()
    settings = get_settings(database_url=url, cookie_secure=True)
    assert settings.cookie_secure is True
    with serve_in_thread(create_app(settings)) as base, httpx.Client(base_url=base, follow_redirects=False) as client:
        cookie = form_login(client, "ivan").headers["set-cookie"]
    assert "Secure" in cookie and "HttpOnly" in cookie and "SameSite=lax" in cookie
