"""Decision-preserving stopping over the REST API (issue 21; ARCHITECTURE.md "Crowd decisions"), on a real uvicorn
server on 127.0.0.1 over SQLite and PostgreSQL: with ``stopping: {rule: curtail}`` an item stops once its lopsided
votes cannot be overturned; a lease taken before the stop still submits (201) with the values given and is counted;
a new person's ``next`` skips the stopped item; the progress endpoints say ``stopped_early``; each stop is stored
once (``ItemStop``) with the votes at the stop."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, select
from sqlmodel import col

from studio.db import read_session, write_session
from studio.models import Answer, Item, UserPublic
from studio.models.campaigns import ItemStop
from studio.services.campaigns import create_campaign
from studio.settings import get_settings
from studio.web.api import create_api
from studio.workflows import WorkflowSchema, load_schemas
from tests.serving import serve_in_thread
from tests.studio.conftest import add_people
from tests.studio.web.test_api import client_for

KEEP = {"verdict": "keep", "subtask_label": "dialogue_base"}
CROWD = [f"crowd{n}" for n in range(6)]
#: The one contested item's votes, person by person: no two votes to come can settle it before the quota.
CONTESTED = ("keep", "discard", "revise", "keep", "discard")


@pytest.fixture
def stop_api(corpus: Engine, users: dict[str, UserPublic], db_url: str, password_hash: str) -> Iterator[str]:
    """Campaign ``stop``: the bundled crowd vote with ``stopping: {rule: curtail}``, quota 5, over the six
    scenarios; six annotators ``crowd0``..``crowd5``; the API served by uvicorn in a thread."""
    data = load_schemas()["crowd_vote"].model_dump(mode="json")
    schema = WorkflowSchema.model_validate({**data, "stopping": {"rule": "curtail"}})
    with write_session(corpus) as session:
        create_campaign(session, name="stop", schema=schema, people_per_item=5, actor="admin")
    add_people(corpus, password_hash, CROWD, "annotator")
    app = FastAPI()
    app.mount("/api", create_api(get_settings(database_url=db_url), engine=corpus))
    with serve_in_thread(app) as url:
        yield f"{url}/api/v1"


def submit(client: httpx.Client, item: dict[str, Any], answers: dict[str, str]) -> httpx.Response:
    body = {"item_id": item["item_id"], "lease_id": item["lease_id"], "submission_id": f"s-{item['lease_id']}"}
    return client.post("/campaigns/stop/answers", json=body | {"answers": answers})


def next_of(client: httpx.Client) -> dict[str, Any] | None:
    response = client.get("/campaigns/stop/next")
    assert response.status_code in (200, 204), response.text
    return None if response.status_code == 204 else dict(response.json())


def stored_stops(engine: Engine) -> list[tuple[int, int, str, float]]:
    with read_session(engine) as session:
        rows = session.execute(select(ItemStop).order_by(col(ItemStop.item_id))).scalars().all()
        return [(row.item_id, row.votes_at_stop, row.rule, row.probability) for row in rows]


def overall(client: httpx.Client) -> dict[str, int]:
    return dict(client.get("/me/progress", params={"campaign": "stop"}).json()["overall"])


def test_a_lease_taken_before_the_stop_still_submits_and_counts_and_a_new_person_skips_the_item(
    stop_api: str, corpus: Engine
) -> None:
    clients = [client_for(stop_api, name) for name in CROWD[:5]]
    try:
        items = [next_of(client) for client in clients[:4]]  # fill order: four leases on one item
        assert all(item is not None for item in items) and len({item["item_id"] for item in items if item}) == 1
        first = items[0]
        assert first is not None
        for client, item in zip(clients[:3], items[:3], strict=True):
            assert item is not None and submit(client, item, KEEP).status_code == 201
        # keep 3 of 5: the two votes to come (one of them the open lease) cannot change the verdict or the label.
        assert stored_stops(corpus) == [(first["item_id"], 3, "curtail", 1.0)]
        assert overall(clients[0]) == {"answers": 3, "items": 6, "complete_items": 1, "stopped_early": 1}
        # Without the stop the fifth person would be handed the item's last free slot (3 answers + 1 lease < 5).
        fifth = next_of(clients[4])
        assert fifth is not None and fifth["item_id"] != first["item_id"]
        late = items[3]
        assert late is not None
        again = next_of(clients[3])  # the lease's holder gets it back, and may still submit
        assert again is not None and (again["item_id"], again["lease_id"]) == (late["item_id"], late["lease_id"])
        discard = {"verdict": "discard", "subtask_label": "dialogue_emotion"}
        stored = submit(clients[3], late, discard)
        assert stored.status_code == 201, stored.text
        assert stored.json()["values"] == discard  # stored as given, after the stop
        assert overall(clients[3]) == {"answers": 4, "items": 6, "complete_items": 1, "stopped_early": 1}
        [listed] = clients[3].get("/campaigns").json()
        assert listed["complete"] == "1 / 6 complete (stopped early: 1)"
        assert stored_stops(corpus) == [(first["item_id"], 3, "curtail", 1.0)]  # once, the votes at the stop kept
        with read_session(corpus) as session:
            row = session.get(Item, first["item_id"])
            assert row is not None and row.answer_count == 4 and row.stopped_at is not None
            votes = session.execute(select(col(Answer.values)).where(col(Answer.item_id) == row.id)).scalars()
            assert sorted(value["verdict"] for value in votes) == ["discard", "keep", "keep", "keep"]
        after = next_of(clients[3])
        assert after is not None and after["item_id"] != first["item_id"]
    finally:
        for client in clients:
            client.close()


def drain(stop_api: str) -> tuple[int, list[list[int]]]:
    """Five people answer until the queue says 204 (the contested item by :data:`CONTESTED`, every other "keep");
    the contested item's id and the items handed to each person, in order."""
    contested: int | None = None
    handed: list[list[int]] = []
    for number, name in enumerate(CROWD[:5]):
        handed.append([])
        with client_for(stop_api, name) as client:
            while (item := next_of(client)) is not None:
                contested = item["item_id"] if contested is None else contested
                verdict = CONTESTED[number] if item["item_id"] == contested else "keep"
                assert submit(client, item, KEEP | {"verdict": verdict}).status_code == 201
                handed[-1].append(item["item_id"])
    assert contested is not None
    return contested, handed


def test_lopsided_items_stop_at_three_votes_and_are_never_handed_out_again(stop_api: str, corpus: Engine) -> None:
    """Five lopsided items stop at 3 of 5 votes; the last two people are handed only the contested item, which
    takes its whole quota of five."""
    contested, handed = drain(stop_api)
    assert [len(items) for items in handed] == [6, 6, 6, 1, 1]
    assert handed[3] == handed[4] == [contested]
    early = [stop for stop in stored_stops(corpus) if stop[0] != contested]
    assert len(early) == 5 and {stop[1:] for stop in early} == {(3, "curtail", 1.0)}
    with read_session(corpus) as session:
        counts = dict(session.execute(select(col(Item.id), col(Item.answer_count))).tuples().all())
    assert counts == {item: 5 if item == contested else 3 for item in counts}
    with client_for(stop_api, "admin") as admin:
        quota = admin.get("/admin/campaigns/stop/quota").json()
    assert (quota["items"], quota["at_quota"], quota["below_quota"], quota["unanswered"]) == (6, 6, 0, 0)
    with client_for(stop_api, "curator") as curator:  # what curators read over REST is what is stored
        report = curator.get("/curation/campaigns/stop/stops").json()
    assert report["statement"].startswith("Stopping (curtail): an item stops being handed out")
    listed = {(s["item"], s["votes_at_stop"], s["rule"], s["probability"]) for s in report["stops"]}
    assert set(stored_stops(corpus)) == listed and set(early) <= listed


def test_an_item_answered_by_its_whole_quota_is_not_stopped_early(stop_api: str, corpus: Engine) -> None:
    contested, _ = drain(stop_api)
    assert contested not in {stop[0] for stop in stored_stops(corpus)}
    with client_for(stop_api, CROWD[0]) as client:
        assert overall(client) == {"answers": 20, "items": 6, "complete_items": 6, "stopped_early": 5}
    with client_for(stop_api, "admin") as admin:
        rows = {row["name"]: row for row in admin.get("/admin/campaigns").json()}
        assert rows["stop"]["complete"] == "6 / 6 complete (stopped early: 5)"
        assert admin.get("/admin/campaigns/stop/quota").json()["stopped_early"] == 5
