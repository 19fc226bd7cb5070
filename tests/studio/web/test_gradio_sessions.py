"""Gradio's files and sessions belong to the person they were made for (two real people, a real server on 127.0.0.1).

A researcher's export is served to that researcher and answered 404 for an annotator holding its URL; a file another
Gradio app left in the machine's shared ``/tmp/gradio`` is not served (the studio keeps its own cache directory); and
an annotator naming the researcher's page session (``session_hash``) to Gradio's queue is refused 403 — they neither
join events to it nor read its results. Checked on the old code: the annotator downloaded the researcher's export
(200), ``/tmp/gradio`` files were served, and the annotator's ``queue/data`` on the researcher's session was 200.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from studio.db import create_db_engine, write_session
from studio.services.auth import create_user
from studio.settings import get_settings
from studio.web.app import create_app
from tests.browser.store_fixture import PASSWORD, build_store
from tests.browser.test_research_page import HANDLER_INPUTS
from tests.serving import serve_in_thread


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = build_store(tmp_path_factory.mktemp("sessions"))
    engine = create_db_engine(store.database_url)
    with write_session(engine) as session:
        create_user(session, username="rita", password=PASSWORD, role="researcher")
    engine.dispose()
    with serve_in_thread(create_app(get_settings(database_url=store.database_url))) as base:
        yield base


@contextmanager
def signed_in(base: str, username: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base, timeout=60) as client:
        assert client.post("/login", data={"username": username, "password": PASSWORD}).status_code == 303
        yield client


def join(client: httpx.Client, session_hash: str, elem_id: str) -> httpx.Response:
    config = client.get("/ui/config").json()
    ids = {entry["id"]: entry.get("props", {}).get("elem_id") for entry in config["components"]}
    [component] = [key for key, value in ids.items() if value == elem_id]
    [dependency] = [entry for entry in config["dependencies"] if [component, "click"] in entry["targets"]]
    data = [HANDLER_INPUTS.get(ids[key], "csv") for key in dependency["inputs"]]  # the rest: the download's format
    body = {"data": data, "fn_index": dependency["id"], "session_hash": session_hash, "trigger_id": component}
    return client.post("/ui/gradio_api/queue/join", json=body | {"event_data": None})


def result(client: httpx.Client, session_hash: str) -> dict[str, Any]:
    with client.stream("GET", "/ui/gradio_api/queue/data", params={"session_hash": session_hash}) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:") and "process_completed" in line:
                return dict(json.loads(line[len("data:") :]))
    raise AssertionError("the event stream ended without a result")


def exported(client: httpx.Client, session_hash: str) -> str:
    """The path of the researcher's leaderboard export, as the page receives it."""
    assert join(client, session_hash, "h2h-export-leaderboard").status_code == 200
    done = result(client, session_hash)
    assert done["success"] is True, done
    shown = done["output"]["data"][0]  # the download button, shown with the file as its value
    return str(shown.get("value", shown)["path"])


def test_an_export_is_served_to_the_researcher_who_made_it_and_to_no_one_else(studio: str) -> None:
    with signed_in(studio, "rita") as researcher, signed_in(studio, "annotator01") as annotator:
        path = exported(researcher, uuid.uuid4().hex)
        assert not path.startswith("/tmp/gradio/"), path  # the studio's own cache, not the machine's shared one
        mine = researcher.get(f"/ui/gradio_api/file={path}")
        assert mine.status_code == 200 and "model" in mine.content.decode("utf-8-sig")
        for route in ("/ui/gradio_api/file=", "/ui/gradio_api/file/", "/ui/file="):
            theirs = annotator.get(f"{route}{path}")
            assert theirs.status_code == 404, (route, theirs.status_code)
            assert theirs.content != mine.content
        assert httpx.get(f"{studio}/ui/gradio_api/file={path}").status_code == 401


def test_files_other_gradio_apps_left_in_the_shared_temp_directory_are_not_served(studio: str) -> None:
    left = Path("/tmp/gradio") / uuid.uuid4().hex / "other-app-secret.txt"
    left.parent.mkdir(parents=True, exist_ok=True)
    left.write_text("another app's file")
    try:
        with signed_in(studio, "rita") as researcher:
            reply = researcher.get(f"/ui/gradio_api/file={left}")
            assert reply.status_code == 404 and "another app" not in reply.text
    finally:
        left.unlink()
        left.parent.rmdir()


def test_a_page_session_belongs_to_the_person_who_opened_it(studio: str) -> None:
    with signed_in(studio, "rita") as researcher, signed_in(studio, "annotator01") as annotator:
        session_hash = uuid.uuid4().hex
        exported(researcher, session_hash)  # the researcher's page session, in use
        assert join(annotator, session_hash, "h2h-refresh").status_code == 403
        with annotator.stream("GET", "/ui/gradio_api/queue/data", params={"session_hash": session_hash}) as stream:
            assert stream.status_code == 403
        assert annotator.get(f"/ui/gradio_api/heartbeat/{session_hash}").status_code == 403
        cancel = annotator.post(
            "/ui/gradio_api/cancel", json={"session_hash": session_hash, "fn_index": 0, "event_id": "x"}
        )
        assert cancel.status_code == 403
        assert join(annotator, uuid.uuid4().hex, "h2h-refresh").status_code == 200  # their own session works
        exported(researcher, session_hash)  # and the researcher's still does


def test_the_direct_routes_are_refused_a_session_that_is_not_yours_too(studio: str) -> None:
    """Gradio's run/, api/ and call/ routes take a session_hash in their body as queue/join does (seen on the first
    version of the gate: an annotator's run/predict in the researcher's session answered 200)."""
    with signed_in(studio, "rita") as researcher, signed_in(studio, "annotator01") as annotator:
        session_hash = uuid.uuid4().hex
        exported(researcher, session_hash)
        fn_index = 0
        for route in ("run/predict", "api/predict", "call/predict", "call/v2/predict", "reset"):
            body = {"data": [], "fn_index": fn_index, "session_hash": session_hash, "event_data": None}
            reply = annotator.post(f"/ui/gradio_api/{route}", json=body)
            assert reply.status_code == 403, (route, reply.status_code, reply.text[:200])
            assert "another sign-in" in reply.json()["detail"]
        exported(researcher, session_hash)  # the researcher's page still works


def test_inputs_the_store_cannot_take_are_refused_naming_the_input(studio: str) -> None:
    """A NUL, a lone surrogate or an id past the store's range in a page's inputs is a 422 naming the input, as on the
    REST API (seen before: the Curate page's 'open scenario' on PostgreSQL raised DataError / UnicodeEncodeError)."""
    with signed_in(studio, "rita") as researcher:
        session_hash = uuid.uuid4().hex
        forged = {
            '"sc\\u0000-1"': "input 2: text contains a NUL character (U+0000)",
            '"sc\\ud800-1"': "input 2: text is not valid Unicode (a lone surrogate)",
            str(2**70): f"input 2: {2**70} is out of range",
        }
        for value, detail in forged.items():
            for route in ("queue/join", "run/predict"):
                body = f'{{"data": ["ok", {value}], "fn_index": 0, "session_hash": "{session_hash}"}}'
                reply = researcher.post(
                    f"/ui/gradio_api/{route}", content=body, headers={"content-type": "application/json"}
                )
                assert reply.status_code == 422, (route, value, reply.status_code)
                assert reply.json()["detail"].startswith(detail), reply.text
        exported(researcher, session_hash)  # the page itself goes on working
