"""What several studio processes on one store must share lives in the store (``studio.models.grants``).

- The login throttle (``StoreLoginThrottle``): the rule of ``LoginThrottle`` over failures kept in ``login_failure``;
  failures counted by one instance (one process) refuse on another. On the old code each process counted its own, so
  five guesses on each of N processes went unrefused.
- Page sessions and files (``studio.web.grants.SharedOwners``): a session claimed or a file granted on one process is
  known on every other; on the old code a second process let a stranger claim a session hash the first had seen.
- Two apps (two ``create_app``, as two processes build them) on one store: a token from one works on the other,
  failed sign-ins on one refuse on the other, and a page session used on one is refused to a stranger on the other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import Engine

from studio.db import create_db_engine, write_session
from studio.services.auth import create_user
from studio.services.shared_state import count_failures, grant_holders
from studio.settings import get_settings
from studio.web.grants import SharedOwners
from studio.web.security import StoreLoginThrottle
from tests.serving import serve_in_thread
from tests.studio.conftest import PASSWORD


class Clock:
    """A hand-moved wall clock shared by the instances (no sleeping, no timed assertions)."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_failures_counted_by_one_process_refuse_on_another_by_the_same_rule(engine: Engine) -> None:
    clock = Clock()
    first, second = (StoreLoginThrottle(engine=engine, clock=clock) for _ in range(2))
    for _ in range(4):
        first.record_failure(username="Alice", address="10.0.0.1")
    assert second.retry_after(username="alice", address="10.0.0.1") == 0.0
    second.record_failure(username="alice ", address="10.0.0.1")  # names compare as the in-process throttle's do
    assert first.retry_after(username="ALICE", address="10.0.0.1") == pytest.approx(300.0)
    assert second.retry_after(username="alice", address="10.0.0.2") == 0.0  # alice is not locked out elsewhere
    clock.now += 299.0
    assert second.retry_after(username="alice", address="10.0.0.1") == pytest.approx(1.0)
    clock.now += 1.0
    assert first.retry_after(username="alice", address="10.0.0.1") == 0.0


def test_the_address_limit_and_a_success_are_seen_by_every_process(engine: Engine) -> None:
    clock = Clock()
    first, second = (StoreLoginThrottle(engine=engine, clock=clock) for _ in range(2))
    for number in range(30):
        (first if number % 2 else second).record_failure(username=f"user{number}", address="10.0.0.9")
    assert first.retry_after(username="user3", address="10.0.0.9") > 0
    assert second.retry_after(username="user4", address="10.0.0.9") > 0
    assert first.retry_after(username="someone-new", address="10.0.0.9") == 0.0  # a newcomer there is still checked
    for _ in range(4):
        first.record_failure(username="dave", address="10.0.0.1")
    second.record_success(username="dave", address="10.0.0.1")
    first.record_failure(username="dave", address="10.0.0.1")
    assert first.retry_after(username="dave", address="10.0.0.1") == 0.0  # 1 since the success, not 5


def test_failures_older_than_the_window_are_pruned(engine: Engine) -> None:
    clock = Clock()
    throttle = StoreLoginThrottle(engine=engine, clock=clock, prune_every=0.0)
    for _ in range(3):
        throttle.record_failure(username="erin", address="10.0.0.1")
    assert count_failures(engine) == 6  # the pair's and the address's
    clock.now += 301.0
    throttle.record_failure(username="erin", address="10.0.0.1")
    assert count_failures(engine) == 2


def test_a_session_or_file_granted_on_one_process_is_known_on_another(engine: Engine) -> None:
    async def check() -> None:
        here, there = SharedOwners("session", engine), SharedOwners("session", engine)
        assert await here.claim("hash-1", "rita") is True
        assert await there.claim("hash-1", "annotator01") is False  # refused on the other process too
        assert await there.claim("hash-1", "rita") is True
        assert await there.holders("hash-1") == {"rita"}
        files_here, files_there = SharedOwners("file", engine), SharedOwners("file", engine)
        await files_here.grant("/cache/a/export.csv", "rita")
        await files_here.grant("/cache/a/export.csv", "rita")  # once in the store
        assert await files_there.owns("/cache/a/export.csv", "rita") is True
        assert await files_there.owns("/cache/a/export.csv", "annotator01") is False
        assert await SharedOwners("upload", engine).owns("/cache/a/export.csv", "rita") is False  # kinds apart

    asyncio.run(check())
    assert grant_holders(engine, kind="file", key="/cache/a/export.csv") == ["rita"]


@pytest.fixture
def two_apps(db_url: str) -> Iterator[tuple[str, str]]:
    """Two studio apps (as two processes build them) on one store, proxy headers believed from 127.0.0.1."""
    from studio.web.app import create_app

    engine = create_db_engine(db_url)
    with write_session(engine) as session:
        create_user(session, username="ann", password=PASSWORD, role="annotator")
        create_user(session, username="bob", password=PASSWORD, role="annotator")
    engine.dispose()
    settings = get_settings(database_url=db_url, forwarded_allow_ips="127.0.0.1")
    with serve_in_thread(create_app(settings)) as first, serve_in_thread(create_app(settings)) as second:
        yield first, second


def login(base: str, password: str, address: str) -> httpx.Response:
    body = {"username": "ann", "password": password}
    return httpx.post(f"{base}/api/v1/login", json=body, headers={"X-Forwarded-For": address}, timeout=60)


def test_two_apps_on_one_store_share_tokens_and_failed_sign_ins(two_apps: tuple[str, str]) -> None:
    first, second = two_apps
    token = login(first, PASSWORD, "10.1.0.1").json()["token"]
    me = httpx.get(f"{second}/api/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=60)
    assert me.status_code == 200 and me.json()["username"] == "ann"
    assert [login(first, "wrong", "10.1.0.2").status_code for _ in range(5)] == [401] * 5
    refused = login(second, PASSWORD, "10.1.0.2")  # the right password, on the other app
    assert refused.status_code == 429, refused.text
    assert int(refused.headers["Retry-After"]) > 290
    assert login(second, PASSWORD, "10.1.0.3").status_code == 200  # ann elsewhere is not refused


def direct_event(base: str, username: str, session_hash: str) -> httpx.Response:
    """A Gradio event naming ``session_hash``, signed in as ``username``: the gate claims the session for them first
    (Gradio itself then answers 404: the studio's events go through the queue)."""
    with httpx.Client(base_url=base, timeout=60) as client:
        assert client.post("/login", data={"username": username, "password": PASSWORD}).status_code == 303
        body = {"data": [], "fn_index": 0, "session_hash": session_hash}
        return client.post("/ui/gradio_api/run/predict", json=body)


def test_a_page_session_used_on_one_app_is_refused_to_a_stranger_on_the_other(two_apps: tuple[str, str]) -> None:
    first, second = two_apps
    assert direct_event(first, "ann", "page-of-ann").status_code == 404  # past the gate
    stranger = direct_event(second, "bob", "page-of-ann")
    assert stranger.status_code == 403 and "belongs to another sign-in" in stranger.text
    assert direct_event(second, "ann", "page-of-ann").status_code == 404  # its owner, on the other process
