"""Accounts, hardened (issue 18 items 4, 6 and the Origin part of 10).

- The audit log: each role sees the entries of what it may manage (``studio.policies.AuditPolicy``) — admins every
  entry, curators none about accounts, researchers only published versions, annotators nothing — through the use
  cases, the REST API and the Curate page's Gradio handler alike. On the old code a curator and a researcher got the
  admin's password resets, role changes and deactivations, with the person's username.
- Login throttling: counted per (address, username) and per address, never per username alone. On the old code 20
  failures on a name from anywhere locked its owner out, and 30 failures from one address refused another person's
  correct password from that address; the form said "Try again later." with no time.
- The same-origin check compares scheme, host and port: on the old code ``https://host:port`` passed as the origin of
  a plain-HTTP request to ``host:port``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from studio.db import create_db_engine, read_session, upgrade_db, write_session
from studio.errors import PermissionDenied
from studio.models import AuditLogPublic, CampaignPublic, UserPublic
from studio.services import audit
from studio.services.auth import create_user
from studio.settings import get_settings
from studio.usecases import admin, curate
from studio.web.security import LoginThrottle, LoginThrottled, SameOriginMiddleware, origin_matches
from tests.serving import serve_in_thread
from tests.studio.conftest import PASSWORD

VICTIM = "victim-vera"
ACCOUNT_ACTIONS = ("user.create", "user.set_role", "user.reset_password", "user.deactivate")


def account_changes(session: Any, caller: UserPublic) -> None:
    """An admin adds a person, changes their role, resets their password and deactivates them."""
    admin.add_user(session, caller=caller, username=VICTIM, role="annotator", password=PASSWORD)
    admin.change_role(session, caller=caller, username=VICTIM, role="expert")
    admin.reset_password(session, caller=caller, username=VICTIM, password=PASSWORD + "-new")
    admin.set_active(session, caller=caller, username=VICTIM, active=False)


@pytest.fixture
def logged(corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]) -> Engine:
    """A store whose audit log holds account changes, a curator's decision, a publish and a campaign."""
    with write_session(corpus) as session:
        account_changes(session, users["admin"])
        curate.decide(session, caller=users["curator"], scenario_id="dlg-1", action="accept", reason="fine")
        curate.publish(session, caller=users["curator"], name="v1")
    return corpus


def mentions_victim(entries: list[AuditLogPublic]) -> list[AuditLogPublic]:
    return [entry for entry in entries if VICTIM in json.dumps(entry.model_dump(mode="json"))]


def test_each_role_sees_the_audit_entries_of_what_it_manages(logged: Engine, users: dict[str, UserPublic]) -> None:
    with read_session(logged) as session:
        seen = {role: curate.audit_entries(session, caller=users[role]) for role in ("curator", "researcher", "admin")}
        of_scenario = {
            role: curate.audit_entries(session, caller=users[role], scenario_id="dlg-1")
            for role in ("curator", "researcher")
        }
        for role in ("annotator", "expert"):
            with pytest.raises(PermissionDenied):
                curate.audit_entries(session, caller=users[role])
    curator, researcher, everything = seen["curator"], seen["researcher"], seen["admin"]
    assert {entry.action for entry in curator} == {"campaign.create", "scenario.accept", "dataset.publish"}
    assert mentions_victim(curator) == []
    assert [(entry.action, entry.entity_id) for entry in researcher] == [("dataset.publish", "v1")]
    assert [entry.action for entry in of_scenario["curator"]] == ["scenario.accept"]
    assert of_scenario["researcher"] == []  # a scenario's decisions are the curators' business
    assert {entry.action for entry in everything} >= {*ACCOUNT_ACTIONS, "scenario.accept", "dataset.publish"}
    assert {entry.entity_id for entry in mentions_victim(everything)} == {VICTIM}


def test_the_admin_audit_log_is_whole_for_admins_and_the_service_filters_in_sql(
    logged: Engine, users: dict[str, UserPublic]
) -> None:
    with read_session(logged) as session:
        accounts = admin.audit_log(session, caller=users["admin"], action="user.")
        for role in ("curator", "researcher", "annotator"):
            with pytest.raises(PermissionDenied):
                admin.audit_log(session, caller=users[role])
        nothing = audit.list_audit(session, visible=frozenset())
        published = audit.list_audit(session, visible=frozenset({"dataset_version"}), page_size=1)
    assert [row["action"] for row in accounts.rows] == list(reversed(ACCOUNT_ACTIONS))
    assert (nothing.total, nothing.rows) == (0, [])
    assert published.total == 1 and published.rows[0]["entity_id"] == "v1"  # the total counts only what is visible


# --- one real studio on 127.0.0.1 that believes X-Forwarded-For / -Proto from 127.0.0.1 (a trusted proxy) ----------


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``create_app`` over SQLite: an admin, a curator, a researcher, annotators ann and mallory, the victim's account
    changes in the audit log; proxy headers believed from 127.0.0.1, so a test can name its client's address."""
    from studio.web.app import create_app

    url = f"sqlite:///{Path(tmp_path_factory.mktemp('accounts')) / 'studio.sqlite'}"
    engine = create_db_engine(url)
    upgrade_db(engine)
    with write_session(engine) as session:
        people = {
            name: create_user(session, username=name, password=PASSWORD, role=role)
            for name, role in (("ada", "admin"), ("cora", "curator"), ("rita", "researcher"), ("ann", "annotator"))
        }
        account_changes(session, people["ada"])
    engine.dispose()
    settings = get_settings(database_url=url, forwarded_allow_ips="127.0.0.1")
    with serve_in_thread(create_app(settings)) as base:
        yield base


def api_login(base: str, username: str, password: str = PASSWORD, *, address: str = "10.9.9.9") -> httpx.Response:
    return httpx.post(
        f"{base}/api/v1/login",
        json={"username": username, "password": password},
        headers={"X-Forwarded-For": address},
        timeout=60,
    )


def form_login(base: str, username: str, password: str = PASSWORD, *, address: str) -> httpx.Response:
    return httpx.post(
        f"{base}/login",
        data={"username": username, "password": password},
        headers={"X-Forwarded-For": address},
        follow_redirects=False,
        timeout=60,
    )


def curate_page_audit(base: str, username: str) -> list[dict[str, Any]]:
    """The Curate page's "Show the latest entries" handler, called as the page calls it (queue/join, queue/data)."""
    with httpx.Client(base_url=base, timeout=60, headers={"X-Forwarded-For": "10.8.8.8"}) as client:
        assert client.post("/login", data={"username": username, "password": PASSWORD}).status_code == 303
        config = client.get("/ui/config").json()
        [button] = [c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == "h2h-audit-refresh"]
        [event] = [d for d in config["dependencies"] if [button, "click"] in d["targets"]]
        session_hash = uuid.uuid4().hex
        body = {"data": [], "fn_index": event["id"], "session_hash": session_hash, "trigger_id": button}
        assert client.post("/ui/gradio_api/queue/join", json=body | {"event_data": None}).status_code == 200
        with client.stream("GET", "/ui/gradio_api/queue/data", params={"session_hash": session_hash}) as stream:
            for line in stream.iter_lines():
                if line.startswith("data:") and "process_completed" in line:
                    done = json.loads(line[len("data:") :])
                    assert done["success"] is True, done
                    shown = done["output"]["data"][0]
                    table = shown.get("value", shown)  # the table itself, or an update carrying it
                    return [dict(zip(table["headers"], row, strict=True)) for row in table["data"]]
    raise AssertionError("the event stream ended without a result")


def test_rest_and_the_curate_page_show_no_account_entries_to_curators_and_researchers(studio: str) -> None:
    tokens = {name: api_login(studio, name).json()["token"] for name in ("ada", "cora", "rita")}

    def rest_audit(name: str) -> httpx.Response:
        return httpx.get(f"{studio}/api/v1/admin/audit", headers={"Authorization": f"Bearer {tokens[name]}"})

    everything = rest_audit("ada")
    assert everything.status_code == 200
    assert {row["action"] for row in everything.json()["rows"]} >= set(ACCOUNT_ACTIONS)
    for name in ("cora", "rita"):
        refused = rest_audit(name)
        assert refused.status_code == 403 and VICTIM not in refused.text
        rows = curate_page_audit(studio, name)
        assert not [row for row in rows if str(row["action"]).startswith("user.") or VICTIM in json.dumps(row)]
    assert VICTIM in json.dumps(curate_page_audit(studio, "ada"))  # the admin still sees everything


# --- login throttling ----------------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fail(throttle: LoginThrottle, username: str, address: str, times: int = 1) -> None:
    for _ in range(times):
        throttle.record_failure(username=username, address=address)


def test_failures_on_a_name_from_many_addresses_never_lock_its_owner_out() -> None:
    throttle = LoginThrottle(clock=Clock())
    for number in range(100):
        fail(throttle, "ann", f"10.1.0.{number}")
    assert throttle.retry_after(username="ann", address="10.2.0.1") == 0.0


def test_the_address_limit_refuses_only_names_that_failed_there_and_says_for_how_long() -> None:
    clock = Clock()
    throttle = LoginThrottle(clock=clock)
    for number in range(6):
        fail(throttle, f"mallory{number}", "10.0.0.9", 5)  # 30 failures from one address
        clock.now += 10.0
    assert throttle.retry_after(username="ann", address="10.0.0.9") == 0.0  # another person behind that address
    fail(throttle, "spray-target", "10.0.0.9")  # one guess at a new name: then it waits like the others
    assert throttle.retry_after(username="spray-target", address="10.0.0.9") == pytest.approx(240.0)
    assert throttle.retry_after(username="spray-target", address="10.0.0.8") == 0.0
    clock.now += 240.0  # mallory0's five failures leave the window: the address is under its limit again
    assert throttle.retry_after(username="spray-target", address="10.0.0.9") == 0.0
    assert throttle.retry_after(username="mallory5", address="10.0.0.9") == pytest.approx(50.0)  # its own pair limit
    with pytest.raises(LoginThrottled, match=r"try again in 50 s"):
        throttle.attempt(username="mallory5", address="10.0.0.9", sign_in=lambda: "token", failures=(ValueError,))


def test_twenty_failures_on_a_name_from_elsewhere_do_not_lock_its_owner_out(studio: str) -> None:
    for number in range(20):  # a stranger guesses ann's password from twenty addresses
        assert api_login(studio, "ann", "wrong", address=f"10.20.0.{number}").status_code == 401
    assert api_login(studio, "ann", address="10.21.0.1").status_code == 200


def test_thirty_failures_from_an_address_refuse_no_other_person_there(studio: str) -> None:
    for number in range(6):  # thirty failures from one address, on names that are not ann's
        codes = [api_login(studio, f"mallory{number}", "wrong", address="10.30.0.1").status_code for _ in range(5)]
        assert codes == [401] * 5
    assert api_login(studio, "mallory0", "wrong", address="10.30.0.1").status_code == 429
    assert form_login(studio, "ann", address="10.30.0.1").status_code == 303  # ann, behind the same address


def test_five_failures_of_one_name_from_one_address_are_refused_with_the_time_to_wait(studio: str) -> None:
    for _ in range(5):
        assert form_login(studio, "rita", "wrong", address="10.40.0.1").status_code == 401
    page = form_login(studio, "rita", address="10.40.0.1")  # the right password waits too
    api = api_login(studio, "rita", address="10.40.0.1")
    assert page.status_code == 429 and api.status_code == 429
    waits = [int(response.headers["retry-after"]) for response in (page, api)]
    assert all(0 < wait <= 300 for wait in waits)
    shown = re.search(r"Try again in (\d+) s\.", page.text)
    assert shown is not None and int(shown.group(1)) == waits[0]
    assert api.json()["detail"] == (
        f"login: too many failed sign-ins for this username from this address: try again in {waits[1]} s"
    )
    assert api_login(studio, "rita", address="10.40.0.2").status_code == 200  # rita elsewhere is not refused


# --- the same-origin check: scheme, host and port ------------------------------------------------------------------


def test_origin_matches_compares_scheme_host_and_port() -> None:
    assert origin_matches("https://studio.example", scheme="https", host="studio.example:443")
    assert origin_matches("HTTP://Studio.Example:80", scheme="http", host="studio.example")
    assert origin_matches(None, scheme="http", host="studio.example")  # scripts and curl send none
    for origin, scheme in (
        ("https://studio.example", "http"),
        ("http://studio.example", "https"),
        ("http://studio.example:8080", "http"),
        ("http://studio.example.evil", "http"),
        ("http://user@studio.example", "http"),
        ("null", "http"),
        ("", "http"),
        ("ftp://studio.example", "http"),
    ):
        assert not origin_matches(origin, scheme=scheme, host="studio.example"), (origin, scheme)


def test_a_write_whose_origin_has_another_scheme_is_refused() -> None:
    from fastapi import FastAPI
    from fastapi.responses import PlainTextResponse

    inner = FastAPI()

    @inner.post("/act")
    def act() -> PlainTextResponse:
        return PlainTextResponse("done")

    with serve_in_thread(SameOriginMiddleware(inner)) as url, httpx.Client(base_url=url) as client:
        assert client.post("/act", headers={"origin": url}).status_code == 200
        refused = client.post("/act", headers={"origin": url.replace("http://", "https://")})
    assert refused.status_code == 403 and "another site" in refused.text


def test_behind_a_trusted_proxy_the_scheme_it_reports_is_the_one_compared(studio: str) -> None:
    host = studio.removeprefix("http://")
    behind_https = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "10.50.0.1"}
    with httpx.Client(base_url=studio, follow_redirects=False, timeout=60) as client:
        form = {"username": "cora", "password": PASSWORD}
        signed_in = client.post("/login", data=form, headers=behind_https | {"origin": f"https://{host}"})
        downgraded = client.post("/login", data=form, headers=behind_https | {"origin": f"http://{host}"})
        upgraded = client.post("/login", data=form, headers={"origin": f"https://{host}"})  # plain HTTP to us
    assert signed_in.status_code == 303
    assert downgraded.status_code == 403 and upgraded.status_code == 403
