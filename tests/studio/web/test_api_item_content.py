"""What ``/next`` sends of an item (issue 11 item 1, issue 9 item 6), over a real uvicorn server, on SQLite and
PostgreSQL: the scenario's context by subtask, long texts cut with a whole-text endpoint, bidi text kept as data —
and a person's progress ("left for you", median time) with "complete" counted by the aggregation's quota."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from pipeline.jsonl import write_records
from pipeline.records import Response, Scenario, ScenarioContext
from studio.db import write_session
from studio.services.campaigns import create_campaign
from studio.services.content import DISPLAY_CHARS
from studio.settings import get_settings
from studio.web.api import create_api
from studio.workflows import load_schemas
from tests.serving import serve_in_thread
from tests.studio.conftest import PASSWORD, add_people

GIANT = ("很长的回复。" * 2_000_000)[:10_485_760]  # 10 MB of characters
DECEPTIVE = "abc\u202eexe.txt"
CONTEXT = ScenarioContext(
    memories=["用户养了一只叫年糕的猫", "用户不吃辣"],
    schedule=["周六 14:00 开会"],
    hobbies=["摄影"],
    routine="每天早上跑步",
    feedback="上次的行程太赶了",
    date="2026-05-02",
    location="杭州",
)


def _scenarios() -> list[Scenario]:
    common = {"persona": "Mia", "user_input": DECEPTIVE, "reference": "ok", "context": CONTEXT}
    return [
        Scenario(id="recall", subtask="recollection_refinement", **common),
        Scenario(id="trip", subtask="itinerary_middle", **common),
        Scenario(id="chat", subtask="dialogue_base", **common),
    ]


@pytest.fixture
def base_url(engine: Engine, tmp_path: Path, password_hash: str, db_url: str) -> Iterator[str]:
    from studio.services.ingest import ingest_run

    run = tmp_path / "run"
    run.mkdir()
    write_records(run / "scenarios.jsonl", _scenarios())
    response = Response(scenario_id="trip", model="m", variant="with_sap", text=GIANT, backend="x", prompt_version="x")
    write_records(run / "responses.jsonl", [response])
    ingest_run(engine, run)
    add_people(engine, password_hash, ["rater", "other"], "annotator")
    schemas = load_schemas()
    with write_session(engine) as session:
        create_campaign(session, name="scenes", schema=schemas["crowd_vote"], people_per_item=3, actor="t")
        rated = schemas["instruction_following"].model_copy(
            update={"target_filter": schemas["crowd_vote"].target_filter}
        )
        create_campaign(session, name="replies", schema=rated, people_per_item=3, actor="t")
    app = FastAPI()
    app.mount("/api", create_api(get_settings(database_url=db_url), engine=engine))
    with serve_in_thread(app) as url:
        yield f"{url}/api/v1"


def client_for(base_url: str, username: str) -> httpx.Client:
    token = httpx.post(f"{base_url}/login", json={"username": username, "password": PASSWORD}).json()["token"]
    return httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def contexts_by_input(client: httpx.Client) -> dict[str, dict]:
    """Answer every item of ``scenes`` in turn (10, 20, 30 seconds); each item's context by its keys (the subtasks
    of the three scenarios show different fields)."""
    seen = []
    while (shown := client.get("/campaigns/scenes/next")).status_code == 200:
        item = shown.json()
        seen.append(item["content"].get("context", {}))
        body = {
            "item_id": item["item_id"],
            "lease_id": item["lease_id"],
            "submission_id": f"s-{item['item_id']}",
            "answers": {"verdict": "keep", "subtask_label": "dialogue_base"},
            "seconds_spent": 10.0 * len(seen),
        }
        assert client.post("/campaigns/scenes/answers", json=body).status_code == 201
    return {",".join(context): context for context in seen}


def test_next_shows_the_context_the_subtask_prompted_with(base_url: str) -> None:
    with client_for(base_url, "rater") as client:
        contexts = contexts_by_input(client)
        progress = client.get("/me/progress", params={"campaign": "scenes"}).json()
    assert set(contexts) == {"date,location,memories", "date,location,schedule,routine,hobbies", "date,location"}
    assert contexts["date,location,memories"]["memories"] == ["用户养了一只叫年糕的猫", "用户不吃辣"]
    assert contexts["date,location"] == {"date": "2026-05-02", "location": "杭州"}  # dialogue: when and where only
    assert contexts["date,location,schedule,routine,hobbies"] == {
        "date": "2026-05-02",
        "location": "杭州",
        "schedule": ["周六 14:00 开会"],
        "routine": "每天早上跑步",
        "hobbies": ["摄影"],
    }
    # My progress: all three answered, none left for me; the median of 10, 20 and 30 seconds (capped by the
    # server's clock, so at most what it measured plus its grace).
    assert progress["mine"]["answers"] == 3 and progress["mine"]["left"] == 0
    assert progress["mine"]["median_seconds"] is not None and progress["mine"]["median_seconds"] <= 20
    # crowd_vote decides by majority, so an item is complete at people_per_item (3) answers, not at the first.
    assert progress["overall"] == {"answers": 3, "items": 3, "complete_items": 0}


def test_a_giant_reply_is_cut_in_next_and_sent_whole_on_request(base_url: str, engine: Engine) -> None:
    with client_for(base_url, "rater") as client:
        shown = client.get("/campaigns/replies/next")
        item = shown.json()
        response = item["content"]["response"]["text"]
        assert len(shown.content) < 200_000, len(shown.content)  # not 10 MB
        assert response == GIANT[:DISPLAY_CHARS]
        assert item["content"]["cut"] == [
            {"field": "response.text", "shown_chars": DISPLAY_CHARS, "total_chars": len(GIANT)}
        ]
        assert item["content"]["user_input"] == DECEPTIVE  # data stays data; the page shows the control visibly
        whole = client.get(f"/campaigns/replies/items/{item['item_id']}/text", params={"field": "response.text"})
        assert whole.status_code == 200 and whole.json()["text"] == GIANT
        missing = client.get(f"/campaigns/replies/items/{item['item_id']}/text", params={"field": "response.model"})
        assert missing.status_code == 404 and "field" in missing.json()["detail"]
    with client_for(base_url, "other") as stranger:  # never handed this item: refused, nothing revealed
        refused = stranger.get(f"/campaigns/replies/items/{item['item_id']}/text", params={"field": "response.text"})
        assert refused.status_code == 404 and GIANT[:100] not in json.dumps(refused.json())


def test_the_whole_text_needs_a_signed_in_caller(base_url: str) -> None:
    with client_for(base_url, "rater") as client:
        item = client.get("/campaigns/replies/next").json()
    anonymous = httpx.get(f"{base_url}/campaigns/replies/items/{item['item_id']}/text?field=response.text")
    assert anonymous.status_code == 401
