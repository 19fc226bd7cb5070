"""The store failing under a served studio, as its clients see it (a real server on 127.0.0.1, SQLite and PostgreSQL).

While the store cannot serve — SQLite locked past its busy timeout, turned read-only, or unreachable; PostgreSQL's
connections cut (a TCP proxy in front of it, as a restart does) or the database turned read-only — the REST API
answers ``503 {"detail": "database: the database is unavailable ... retry ..."}`` with ``Retry-After``, Gradio's routes
the same detail as JSON (which Gradio's page shows as the event's error), and a browser navigating gets a short page
saying so. Nothing is half-written (every row counted before and after), and once the store is back the very same
submit is stored once. Checked on the old code: there every one of these was a plain-text 500 ("Internal Server
Error"), which Gradio's page shows as "Could not parse server response".
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, event, func, select
from sqlalchemy.engine import make_url

from benchmarks.load_proxy import TcpProxy
from studio.db import read_session
from studio.errors import STORE_UNAVAILABLE
from studio.models import Answer, Lease, UserPublic
from studio.settings import get_settings
from studio.web.app import create_app
from tests.serving import serve_in_thread
from tests.studio.helpers import PASSWORD

Fault = Callable[[Engine, str], Any]


@dataclass(frozen=True)
class Served:
    base: str
    engine: Engine  # the studio's own engine (what a fault is done to)
    url: str  # the store's URL as the studio reaches it
    proxy: TcpProxy | None  # between the studio and PostgreSQL


@pytest.fixture
def served(corpus: Engine, campaign: Any, users: dict[str, UserPublic], db_url: str) -> Iterator[Served]:
    """The whole studio (``create_app``) over the corpus, SQLite's busy timeout short; PostgreSQL behind a proxy."""
    proxy = None
    url = db_url
    if make_url(db_url).get_backend_name() == "postgresql":
        proxy = TcpProxy("127.0.0.1", make_url(db_url).port or 5432)
        url = make_url(db_url).set(port=proxy.port).render_as_string(hide_password=False)
    app = create_app(get_settings(database_url=url, sqlite_busy_timeout_ms=300))
    try:
        with serve_in_thread(app) as base:
            yield Served(base=base, engine=app.state.engine, url=url, proxy=proxy)
    finally:
        app.state.engine.dispose()
        if proxy is not None:
            proxy.close()


def counts(engine: Engine) -> tuple[int, int]:
    """(answers, closed leases): what a refused submit must leave as it was."""
    with read_session(engine) as session:
        answers = session.execute(select(func.count(Answer.id))).scalar_one()
        closed = session.execute(select(func.count(Lease.id)).where(Lease.released_at.is_not(None))).scalar_one()
    return answers, closed


def api_client(base: str) -> httpx.Client:
    token = httpx.post(f"{base}/api/v1/login", json={"username": "annotator", "password": PASSWORD}).json()["token"]
    return httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {token}"}, timeout=60)


def a_submit(client: httpx.Client) -> dict[str, Any]:
    offered = client.get("/campaigns/vote/next").json()
    return {
        "item_id": offered["item_id"],
        "lease_id": offered["lease_id"],
        "submission_id": "fault-1",
        "answers": {"verdict": "keep", "subtask_label": "dialogue_base"},
    }


def assert_unavailable(reply: httpx.Response, status: int = 503) -> None:
    assert reply.status_code == status, reply.text
    assert reply.headers["content-type"].startswith("application/json"), reply.text
    assert reply.json() == {"detail": STORE_UNAVAILABLE}
    assert reply.headers["retry-after"] == "5"


# --- faults: each a context manager over the studio's engine ------------------------------------------------------


@contextmanager
def sqlite_locked(served: Served) -> Iterator[bool]:
    """Another process holds SQLite's write lock (longer than the studio's busy timeout). Reads still work."""
    holder = sqlite3.connect(make_url(served.url).database, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield False
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@contextmanager
def connections_altered(engine: Engine, on_connect: Callable[[Any, Any], None], reads_fail: bool) -> Iterator[bool]:
    event.listen(engine, "connect", on_connect)
    engine.dispose()  # every connection from now on is a new one
    try:
        yield reads_fail
    finally:
        event.remove(engine, "connect", on_connect)
        engine.dispose()


def sqlite_read_only(served: Served) -> Any:
    """The file turns read-only while serving (``query_only``, as a remount read-only or lost permissions do)."""
    return connections_altered(served.engine, lambda dbapi, _record: dbapi.execute("PRAGMA query_only=ON"), False)


def sqlite_unreachable(served: Served) -> Any:
    """The file cannot be opened at all."""

    def refuse(_dbapi: Any, _record: Any) -> None:
        raise sqlite3.OperationalError("unable to open database file")

    return connections_altered(served.engine, refuse, True)


@contextmanager
def postgres_cut(served: Served) -> Iterator[bool]:
    """Every connection to PostgreSQL cut, new ones refused (as while it restarts)."""
    proxy = served.proxy
    assert proxy is not None
    proxy.cut()
    try:
        yield True
    finally:
        proxy.restore()


@contextmanager
def postgres_read_only(served: Served) -> Iterator[bool]:
    """The database turned read-only (``default_transaction_read_only``, as a failed-over standby is)."""
    import psycopg

    name = make_url(served.url).database
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
        served.engine.dispose()
        try:
            yield False
        finally:
            admin.execute(f'ALTER DATABASE "{name}" RESET default_transaction_read_only')
            served.engine.dispose()


FAULTS = {
    "sqlite": {"locked": sqlite_locked, "read-only": sqlite_read_only, "unreachable": sqlite_unreachable},
    "postgresql": {"cut": postgres_cut, "read-only": postgres_read_only},
}


def faults_of(served: Served) -> dict[str, Callable[[Served], Any]]:
    return FAULTS[make_url(served.url).get_backend_name()]


def test_a_submit_while_the_store_fails_is_503_in_words_stores_nothing_and_succeeds_once_it_is_back(
    served: Served,
) -> None:
    with api_client(served.base) as client:
        for name, fault in faults_of(served).items():
            body = a_submit(client) | {"submission_id": f"fault-{name}"}
            before = counts(served.engine)
            with fault(served) as reads_fail:
                assert_unavailable(client.post("/campaigns/vote/answers", json=body))
                if reads_fail:
                    assert_unavailable(client.get("/campaigns"))
            assert counts(served.engine) == before, name  # nothing half-written: no answer, no closed lease
            stored = client.post("/campaigns/vote/answers", json=body)
            assert stored.status_code == 201, (name, stored.text)
            assert counts(served.engine) == (before[0] + 1, before[1] + 1)
            assert client.post("/campaigns/vote/answers", json=body).status_code == 200  # the retry: no double


def test_the_pages_and_gradio_s_routes_say_the_database_is_unavailable_while_it_is(served: Served) -> None:
    with httpx.Client(base_url=served.base, timeout=60) as browser:
        signed_in = browser.post("/login", data={"username": "annotator", "password": PASSWORD})
        assert signed_in.status_code == 303
        unreachable = {"sqlite": sqlite_unreachable, "postgresql": postgres_cut}
        with unreachable[make_url(served.url).get_backend_name()](served):
            page = browser.get("/ui/", headers={"Accept": "text/html"})
            assert page.status_code == 503 and page.headers["retry-after"] == "5"
            assert "The database is unavailable" in page.text and "text/html" in page.headers["content-type"]
            join = browser.post(
                "/ui/gradio_api/queue/join",
                json={"data": [], "fn_index": 0, "session_hash": "abc123", "trigger_id": None, "event_data": None},
            )
            assert_unavailable(join, status=500)  # not 503: Gradio's page would put "busy" in place of the detail
            login = browser.post(
                "/login", data={"username": "annotator", "password": PASSWORD}, headers={"Accept": "text/html"}
            )
            assert login.status_code == 503 and "The database is unavailable" in login.text
        assert browser.get("/ui/", headers={"Accept": "text/html"}).status_code == 200
