"""Gradio's gate, second campaign (issue 18, items 1-3 and the heartbeat of 8): real people, a real server on 127.0.0.1.

- a forged ``gradio.FileData`` naming a server file (the bundled demo scenarios) is refused before the import page's
  check reads it; a genuine upload still is checked; another person's upload is refused too;
- a request naming a page session twice (two query values, or the query and the body, or the path and the query) is
  refused 400: the victim's output is not returned and nothing runs in the victim's session;
- one person's flood of ``queue/join`` is answered 429 past a few pending events, while another person's event is
  accepted and completes, and the flooder can act again once their events are done;
- a stranger's ``heartbeat/{hash}`` (no cookie, or a made-up one) is 401, no stream opened; deep JSON is 422, not 500.

Checked on the old code: the forged path answered "67 scenario(s) …"; ``queue/data?session_hash=MINE&session_hash=
VICTIM`` streamed the victim's result; a join with the victim's hash in its body ran in the victim's session; all 100
flood joins were accepted; the stranger's heartbeat stream opened (200); the deep body went on to Gradio (500).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from studio.db import create_db_engine, write_session
from studio.services.auth import create_user
from studio.settings import get_settings
from studio.web.app import create_app
from studio.web.queue_limit import PER_USER
from studio.web.sessions import MORE_THAN_ONE_SESSION, NOT_YOUR_FILE, Refused, json_body
from tests.browser.store_fixture import PASSWORD, build_store
from tests.repo import REPO_ROOT
from tests.serving import serve_in_thread
from tests.studio.web.test_gradio_sessions import signed_in

DEMO_SCENARIOS = REPO_ROOT / "data" / "demo" / "scenarios.jsonl"
JOIN = "/ui/gradio_api/queue/join"
DATA = "/ui/gradio_api/queue/data"


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = build_store(tmp_path_factory.mktemp("gradio-gate"))
    engine = create_db_engine(store.database_url)
    with write_session(engine) as session:
        for name in ("cora", "cody"):
            create_user(session, username=name, password=PASSWORD, role="curator")
    engine.dispose()
    with serve_in_thread(create_app(get_settings(database_url=store.database_url))) as base:
        yield base


def dependency(client: httpx.Client, elem_id: str, trigger: str) -> tuple[int, list[str | None]]:
    """The id of the event ``trigger`` of the component ``elem_id``, and its inputs' elem_ids."""
    config = client.get("/ui/config").json()
    ids = {entry["id"]: entry.get("props", {}).get("elem_id") for entry in config["components"]}
    [component] = [key for key, value in ids.items() if value == elem_id]
    [found] = [entry for entry in config["dependencies"] if [component, trigger] in entry["targets"]]
    return int(found["id"]), [ids[key] for key in found["inputs"]]


def event(fn_index: int, data: list[Any], session_hash: str) -> dict[str, Any]:
    return {"data": data, "fn_index": fn_index, "session_hash": session_hash, "event_data": None}


def refresh_event(client: httpx.Client, session_hash: str) -> dict[str, Any]:
    """The annotate page's "Refresh campaigns" click (harmless, any role)."""
    fn_index, inputs = dependency(client, "h2h-refresh", "click")
    return event(fn_index, [None] * len(inputs), session_hash)


def messages(client: httpx.Client, session_hash: str, until_event: str) -> list[dict[str, Any]]:
    """Every message ``queue/data`` streams for ``session_hash`` up to the completion of ``until_event``."""
    seen = []
    with client.stream("GET", DATA, params={"session_hash": session_hash}) as stream:
        assert stream.status_code == 200
        for line in stream.iter_lines():
            if line.startswith("data:"):
                message = json.loads(line[len("data:") :])
                seen.append(message)
                if message.get("msg") == "process_completed" and message.get("event_id") == until_event:
                    return seen
    raise AssertionError(f"the stream ended before {until_event} completed: {seen}")


def completed(client: httpx.Client, session_hash: str, event_id: str) -> dict[str, Any]:
    return messages(client, session_hash, event_id)[-1]


def file_data(path: str) -> dict[str, Any]:
    return {"path": path, "orig_name": Path(path).name, "meta": {"_type": "gradio.FileData"}}


def upload(client: httpx.Client, content: bytes, name: str = "scenarios.jsonl") -> str:
    reply = client.post("/ui/gradio_api/upload", files=[("files", (name, content))])
    assert reply.status_code == 200, reply.text
    [path] = reply.json()
    return str(path)


def check_import(client: httpx.Client, path: str, session_hash: str) -> httpx.Response:
    """The import page's check (the file input's upload event) over ``queue/join``, naming ``path``."""
    fn_index, _inputs = dependency(client, "h2h-import-files", "upload")
    return client.post(JOIN, json=event(fn_index, [[file_data(path)], None], session_hash))


# Item 1: forged file paths.


def test_a_forged_file_path_to_a_server_file_is_refused_and_nothing_is_read(studio: str) -> None:
    with signed_in(studio, "cora") as curator:
        session_hash = uuid.uuid4().hex
        forged = check_import(curator, str(DEMO_SCENARIOS), session_hash)
        assert forged.status_code == 403, forged.text
        assert forged.json()["detail"] == NOT_YOUR_FILE
        # Anywhere in the body (Gradio looks for {"path": ...} objects everywhere), with or without FileData's meta.
        fn_index, _inputs = dependency(curator, "h2h-import-files", "upload")
        for data in ([[{"path": str(DEMO_SCENARIOS)}], None], [[], {"nested": [file_data("/etc/passwd")]}]):
            reply = curator.post(JOIN, json=event(fn_index, data, session_hash))
            assert reply.status_code == 403 and reply.json()["detail"] == NOT_YOUR_FILE, reply.text
        # The page session itself goes on working: a genuine upload of the very same content is checked.
        path = upload(curator, DEMO_SCENARIOS.read_bytes())
        joined = check_import(curator, path, session_hash)
        assert joined.status_code == 200, joined.text
        done = completed(curator, session_hash, joined.json()["event_id"])
        assert done["success"] is True, done
        assert "67 scenario(s) in 1 file(s)" in json.dumps(done["output"])


def test_another_persons_upload_is_refused(studio: str) -> None:
    with signed_in(studio, "cora") as cora, signed_in(studio, "cody") as cody:
        theirs = upload(cody, DEMO_SCENARIOS.read_bytes()[:2000].rsplit(b"\n", 1)[0] + b"\n", name="cody.jsonl")
        reply = check_import(cora, theirs, uuid.uuid4().hex)
        assert reply.status_code == 403 and reply.json()["detail"] == NOT_YOUR_FILE
        mine = check_import(cody, theirs, session_hash := uuid.uuid4().hex)  # the uploader may
        assert mine.status_code == 200
        assert completed(cody, session_hash, mine.json()["event_id"])["success"] is True


def test_the_import_handler_reads_only_files_in_the_upload_folder(tmp_path: Path) -> None:
    """Defence in depth behind the gate: the check handler refuses a path outside the studio's upload folder (and
    the folder itself, and a link out of it) before reading anything."""
    import gradio as gr

    from studio.ui.admin_imports import uploads_only

    folder = tmp_path / "gradio"
    (folder / "abc").mkdir(parents=True)
    genuine = folder / "abc" / "s.jsonl"
    genuine.write_text("{}\n")
    (folder / "abc" / "link.jsonl").symlink_to(DEMO_SCENARIOS)
    assert uploads_only([str(genuine)], folder) == [str(genuine)]
    for forged in (str(DEMO_SCENARIOS), str(folder), str(folder / "abc" / "link.jsonl"), f"{folder}/../x", "a\0b"):
        with pytest.raises(gr.Error, match="not an upload of yours"):
            uploads_only([str(genuine), forged], folder)


# Item 2: one page session per request.


def test_a_second_session_hash_in_the_query_does_not_read_the_victims_output(studio: str) -> None:
    with signed_in(studio, "annotator01") as victim, signed_in(studio, "annotator02") as attacker:
        victims, mine = uuid.uuid4().hex, uuid.uuid4().hex
        joined = victim.post(JOIN, json=refresh_event(victim, victims))
        assert joined.status_code == 200
        assert attacker.post(JOIN, json=refresh_event(attacker, mine)).status_code == 200  # MINE is the attacker's
        for query in ([mine, victims], [victims, victims], [mine, mine]):
            with attacker.stream("GET", DATA, params={"session_hash": query}) as stream:
                stream.read()
                assert stream.status_code == 400, (query, stream.status_code)
                assert stream.json()["detail"] == MORE_THAN_ONE_SESSION
        reply = attacker.get(f"/ui/gradio_api/heartbeat/{mine}", params={"session_hash": victims})
        assert reply.status_code == 400
        # The victim's result was not taken: it is still there for the victim.
        assert completed(victim, victims, joined.json()["event_id"])["success"] is True


def test_a_session_hash_in_the_query_and_another_in_the_body_runs_nothing_in_the_victims_session(studio: str) -> None:
    with signed_in(studio, "annotator01") as victim, signed_in(studio, "annotator02") as attacker:
        victims, mine = uuid.uuid4().hex, uuid.uuid4().hex
        first = victim.post(JOIN, json=refresh_event(victim, victims))
        assert completed(victim, victims, first.json()["event_id"])["success"] is True
        assert attacker.post(JOIN, json=refresh_event(attacker, mine)).status_code == 200
        forged = refresh_event(attacker, victims)
        reply = attacker.post(JOIN, params={"session_hash": mine}, json=forged)
        assert reply.status_code == 400 and reply.json()["detail"] == MORE_THAN_ONE_SESSION
        twice = '{"session_hash": "%s", "data": [null], "fn_index": %d, "session_hash": "%s"}'
        raw = twice % (mine, forged["fn_index"], victims)
        reply = attacker.post(JOIN, content=raw, headers={"content-type": "application/json"})
        assert reply.status_code == 400 and reply.json()["detail"] == MORE_THAN_ONE_SESSION
        # The victim's next event is the only one their session sees.
        second = victim.post(JOIN, json=refresh_event(victim, victims)).json()["event_id"]
        seen = {message["event_id"] for message in messages(victim, victims, second) if message.get("event_id")}
        assert seen == {second}


# Item 3: one person's flood.


async def _flood(base: str, cookies: httpx.Cookies, body: dict[str, Any], count: int) -> list[int]:
    async with httpx.AsyncClient(base_url=base, cookies=cookies, timeout=60) as client:
        replies = await asyncio.gather(*(client.post(JOIN, json=body) for _ in range(count)))
    return [reply.status_code for reply in replies]


def test_one_persons_flood_is_refused_to_them_only_and_drains(studio: str) -> None:
    with signed_in(studio, "annotator01") as flooder, signed_in(studio, "annotator02") as other:
        flooded, others = uuid.uuid4().hex, uuid.uuid4().hex
        flood_body = refresh_event(flooder, flooded)
        other_body = refresh_event(other, others)

        async def both() -> tuple[list[int], httpx.Response]:
            flood = asyncio.create_task(_flood(studio, flooder.cookies, flood_body, 100))
            await asyncio.sleep(0.05)
            async with httpx.AsyncClient(base_url=studio, cookies=other.cookies, timeout=60) as client:
                meanwhile = await client.post(JOIN, json=other_body)
            return await flood, meanwhile

        statuses, meanwhile = asyncio.run(both())
        assert set(statuses) <= {200, 429}, statuses
        assert statuses.count(429) >= 50, statuses
        assert 1 <= statuses.count(200) <= 100 - 50
        assert meanwhile.status_code == 200, meanwhile.text
        assert completed(other, others, meanwhile.json()["event_id"])["success"] is True
        refused = flooder.post(JOIN, json=flood_body)  # at the limit while the flood is pending, or after it
        assert refused.status_code in (200, 429)
        if refused.status_code == 429:
            assert refused.json()["detail"] == "too many requests: wait for your earlier actions to finish"
        # Once the flood has drained the flooder can act again.
        again = _join_when_drained(flooder, flood_body)
        assert completed(flooder, flooded, again)["success"] is True


def test_one_event_at_a_time_is_never_refused(studio: str) -> None:
    """A finished event no longer counts (Gradio keeps it in its event table a while after: a page acting in quick
    succession on a loaded server was refused 429 by a first version that counted that table)."""
    with signed_in(studio, "annotator03") as annotator:
        session_hash = uuid.uuid4().hex
        body = refresh_event(annotator, session_hash)
        for _ in range(3 * PER_USER):
            joined = annotator.post(JOIN, json=body)
            assert joined.status_code == 200, joined.text
            assert completed(annotator, session_hash, joined.json()["event_id"])["success"] is True


def test_the_direct_routes_cannot_skip_the_queue(studio: str) -> None:
    """Gradio's run/ and api/ routes ran a handler at once, outside the queue and its per-person bound (open by
    default off Hugging Face Spaces); the studio closes them for its queued events."""
    with signed_in(studio, "annotator01") as annotator:
        body = refresh_event(annotator, uuid.uuid4().hex)
        for route in ("run/predict", "api/predict"):
            reply = annotator.post(f"/ui/gradio_api/{route}", json=body)
            assert reply.status_code == 404, (route, reply.status_code, reply.text[:200])
            assert "join the queue" in reply.text


def _join_when_drained(client: httpx.Client, body: dict[str, Any], *, tries: int = 300) -> str:
    for _ in range(tries):
        reply = client.post(JOIN, json=body)
        if reply.status_code == 200:
            return str(reply.json()["event_id"])
        assert reply.status_code == 429
        time.sleep(0.1)
    raise AssertionError(f"still refused after the flood: more than {PER_USER} events pending")


# Item 8 (heartbeat) and deep JSON.


def test_a_strangers_heartbeat_is_refused_before_a_stream_opens(studio: str) -> None:
    session_hash = uuid.uuid4().hex
    for cookies in ({}, {"h2h_session": "x" * 43}):
        with (
            httpx.Client(base_url=studio, cookies=cookies, timeout=httpx.Timeout(5)) as stranger,
            stranger.stream("GET", f"/ui/gradio_api/heartbeat/{session_hash}") as stream,
        ):
            assert stream.status_code == 401, (cookies, stream.status_code)
            assert b"ALIVE" not in stream.read()


def test_deeply_nested_json_is_refused_not_a_server_error(studio: str) -> None:
    with signed_in(studio, "annotator01") as annotator:
        deep = b'{"data": ' + b"[" * 30_000 + b"]" * 30_000 + b', "fn_index": 0, "session_hash": "x"}'
        reply = annotator.post(JOIN, content=deep, headers={"content-type": "application/json"})
        assert reply.status_code == 422, reply.text[:200]
    # The gate's own parse, whatever stands in front of it: a refusal, not a RecursionError.
    with pytest.raises(Refused) as refused:
        json_body(deep)
    assert refused.value.status == 422 and "nested too deeply" in refused.value.detail
