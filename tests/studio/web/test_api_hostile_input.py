"""Hostile input through a real HTTP server on 127.0.0.1, on a SQLite file and on PostgreSQL.

What ``test_api.py`` already proves (forged single-choice option, unknown question, over-cap comment,
unknown item, forged lease, negative seconds, empty submission id, missing / forged / revoked token,
someone else's lease) is not repeated here. This file covers the rest: out-of-range and ill-typed
ratings, forged multiple-choice options, wrong JSON types and broken bodies, a 5 MB body, oversized
ids, non-finite numbers, leases of another campaign, expired and malformed tokens, annotators calling
an expert-only campaign, unknown campaigns naming the field — each answered with its documented
status and a ``detail`` naming the field, and each storing nothing (rows counted before and after) —
plus races over HTTP: 20 identical submits at once, and people racing for the last slots of items.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, func, select

from studio.db import read_session, write_session
from studio.models import Answer, AnswerRevision, AuditLog, AuthToken, Item, Lease, Skip, UserPublic, utc_now
from studio.services.auth import hash_token
from studio.services.campaigns import TargetSelection, create_campaign
from studio.settings import get_settings
from studio.web.api import create_api
from studio.workflows import load_schemas
from tests.serving import serve_in_thread
from tests.studio.conftest import add_people

VOTE = {"verdict": "keep", "subtask_label": "dialogue_base"}
SAFE = {"safety": 4, "violation": "no"}


@dataclass(frozen=True)
class Served:
    """The API on a live uvicorn server, over ``engine``."""

    url: str
    engine: Engine

    def client(self, token: str | None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60)


def issue_token(engine: Engine, user: UserPublic, *, expires_in: timedelta = timedelta(hours=1)) -> str:
    """A login token stored the way ``auth.login`` stores one (sha256 + expiry), without argon2's deliberate cost."""
    token = secrets.token_urlsafe(32)
    with write_session(engine) as session:
        session.add(AuthToken(user_id=user.id, token_hash=hash_token(token), expires_at=utc_now() + expires_in))
    return token


def store_state(engine: Engine) -> dict[str, Any]:
    """Everything a refused request must leave alone: answers (with values), history, skips, counts, audit log."""
    with read_session(engine) as session:
        return {
            "answers": session.execute(select(Answer.id, Answer.values).order_by(Answer.id)).all(),
            "revisions": session.execute(select(func.count(AnswerRevision.id))).scalar_one(),
            "skips": session.execute(select(func.count(Skip.id))).scalar_one(),
            "answer_counts": session.execute(select(func.coalesce(func.sum(Item.answer_count), 0))).scalar_one(),
            "released_leases": session.execute(
                select(func.count(Lease.id)).where(Lease.released_at.is_not(None))
            ).scalar_one(),
            "audit": session.execute(select(func.count(AuditLog.id))).scalar_one(),
        }


@pytest.fixture
def served(corpus: Engine, campaign: Any, users: dict[str, UserPublic], db_url: str) -> Iterator[Served]:
    """``vote`` (crowd_vote, 2 per item), ``safety`` (sap_safety) and ``review`` (expert-only), served over HTTP."""
    schemas = load_schemas()
    with write_session(corpus) as session:
        create_campaign(session, name="safety", schema=schemas["sap_safety"], people_per_item=3, actor="admin")
        create_campaign(session, name="review", schema=schemas["expert_review"], people_per_item=3, actor="admin")
    app = FastAPI()
    # Mounted at /api exactly as studio.web.app.create_app mounts it.
    app.mount("/api", create_api(get_settings(database_url=db_url), engine=corpus))
    with serve_in_thread(app) as url:
        yield Served(url=f"{url}/api/v1", engine=corpus)


@pytest.fixture
def annotator(served: Served, users: dict[str, UserPublic]) -> Iterator[httpx.Client]:
    with served.client(issue_token(served.engine, users["annotator"])) as client:
        yield client


def offered(client: httpx.Client, campaign: str) -> dict[str, Any]:
    reply = client.get(f"/campaigns/{campaign}/next")
    assert reply.status_code == 200, reply.text
    return reply.json()


def submit_body(item: dict[str, Any], answers: dict[str, Any], submission_id: str = "sub-1") -> dict[str, Any]:
    return {
        "item_id": item["item_id"],
        "lease_id": item["lease_id"],
        "submission_id": submission_id,
        "answers": answers,
    }


def assert_refused(reply: httpx.Response, status: int, field: str) -> None:
    assert reply.status_code == status, reply.text
    detail = reply.json()["detail"]
    assert isinstance(detail, str) and field in detail, detail


# --- values and types --------------------------------------------------------------------------------------------

BAD_SAFETY_BODIES: list[tuple[str, Callable[[dict[str, Any]], dict[str, Any]], str]] = [
    ("rating above max", lambda body: body | {"answers": SAFE | {"safety": 6}}, "answers.safety"),
    ("rating below min", lambda body: body | {"answers": SAFE | {"safety": 0}}, "answers.safety"),
    ("rating not whole", lambda body: body | {"answers": SAFE | {"safety": 2.5}}, "answers.safety"),
    ("rating as text", lambda body: body | {"answers": SAFE | {"safety": "5"}}, "answers.safety"),
    ("rating as boolean", lambda body: body | {"answers": SAFE | {"safety": True}}, "answers.safety"),
    ("rating as list", lambda body: body | {"answers": SAFE | {"safety": [5]}}, "answers.safety"),
    (
        "forged multiple-choice option",
        lambda body: body | {"answers": {"safety": 2, "violation": "yes", "violation_kind": ["dismissive", "forged"]}},
        "answers.violation_kind",
    ),
    (
        "multiple choice as text",
        lambda body: body | {"answers": {"safety": 2, "violation": "yes", "violation_kind": "dismissive"}},
        "answers.violation_kind",
    ),
    ("choice as number", lambda body: body | {"answers": SAFE | {"violation": 1}}, "answers.violation"),
    ("answers as list", lambda body: body | {"answers": [4, "no"]}, "answers"),
    ("answers missing", lambda body: {key: value for key, value in body.items() if key != "answers"}, "answers"),
    ("item_id as text", lambda body: body | {"item_id": "first"}, "item_id"),
    ("item_id as float", lambda body: body | {"item_id": 1.5}, "item_id"),
    ("lease_id null", lambda body: body | {"lease_id": None}, "lease_id"),
    ("lease_id oversized", lambda body: body | {"lease_id": "L" * 10_000}, "lease_id"),
    ("submission_id as number", lambda body: body | {"submission_id": 12345}, "submission_id"),
    ("submission_id oversized", lambda body: body | {"submission_id": "s" * 129}, "submission_id"),
    ("seconds as text", lambda body: body | {"seconds_spent": "a while"}, "seconds_spent"),
]


def test_ill_typed_or_out_of_range_values_are_422_naming_the_field_and_store_nothing(
    served: Served, annotator: httpx.Client
) -> None:
    item = offered(annotator, "safety")
    before = store_state(served.engine)
    for case, change, field in BAD_SAFETY_BODIES:
        reply = annotator.post("/campaigns/safety/answers", json=change(submit_body(item, SAFE)))
        assert reply.status_code == 422 and field in reply.json()["detail"], (case, reply.text)
    assert store_state(served.engine) == before
    # The lease is still good: no refused request consumed it.
    assert annotator.post("/campaigns/safety/answers", json=submit_body(item, SAFE)).status_code == 201


def test_non_finite_numbers_in_raw_json_are_refused(served: Served, annotator: httpx.Client) -> None:
    item = offered(annotator, "safety")
    before = store_state(served.engine)
    for number in ("NaN", "Infinity", "-Infinity", "1e999"):
        _post_non_finite(annotator, item, number)
    assert store_state(served.engine) == before


def _post_non_finite(annotator: httpx.Client, item: dict[str, Any], number: str) -> None:
    rating = json.dumps(submit_body(item, SAFE)).replace('"safety": 4', f'"safety": {number}')
    seconds = json.dumps(submit_body(item, SAFE) | {"seconds_spent": 0}).replace(
        '"seconds_spent": 0', f'"seconds_spent": {number}'
    )
    headers = {"Content-Type": "application/json"}
    assert_refused(annotator.post("/campaigns/safety/answers", content=rating, headers=headers), 422, "safety")
    assert_refused(annotator.post("/campaigns/safety/answers", content=seconds, headers=headers), 422, "seconds_spent")


BROKEN_BODIES: list[tuple[str, bytes, str]] = [
    ("truncated", b'{"item_id": 1, "lease_id": ', "application/json"),
    ("array", b"[1, 2, 3]", "application/json"),
    ("form", b"item_id=1&lease_id=x", "application/x-www-form-urlencoded"),
    ("not UTF-8", b"\xff\xfe\x00garbage", "application/json"),
    ("empty", b"", "application/json"),
]


def test_broken_bodies_are_422_and_store_nothing(served: Served, annotator: httpx.Client) -> None:
    offered(annotator, "vote")
    before = store_state(served.engine)
    for case, content, content_type in BROKEN_BODIES:
        reply = annotator.post("/campaigns/vote/answers", content=content, headers={"Content-Type": content_type})
        assert reply.status_code == 422 and reply.json()["detail"], (case, reply.text)
    assert store_state(served.engine) == before


def test_a_5_mb_body_is_refused_naming_the_field_and_the_server_keeps_serving(
    served: Served, annotator: httpx.Client
) -> None:
    item = offered(annotator, "vote")
    before = store_state(served.engine)
    huge_comment = submit_body(item, VOTE | {"comment": "长" * (5 * 1024 * 1024 // 3)})
    assert_refused(annotator.post("/campaigns/vote/answers", json=huge_comment), 422, "answers.comment")
    huge_unknown = submit_body(item, VOTE | {f"q{number}": "x" * 100 for number in range(50_000)})
    assert_refused(annotator.post("/campaigns/vote/answers", json=huge_unknown), 422, "answers.q")
    assert store_state(served.engine) == before
    stored = annotator.post("/campaigns/vote/answers", json=submit_body(item, VOTE | {"comment": "长" * 2000}))
    assert stored.status_code == 201 and stored.json()["values"]["comment"] == "长" * 2000


def test_awkward_but_valid_text_is_stored_verbatim(served: Served, annotator: httpx.Client) -> None:
    text = "a\u0000b \u202egnp.exe <script>alert(1)</script> '; DROP TABLE answer; -- =cmd| 😀 \u200b"
    item = offered(annotator, "vote")
    stored = annotator.post("/campaigns/vote/answers", json=submit_body(item, VOTE | {"comment": text}))
    assert stored.status_code == 201, stored.text
    assert annotator.get(f"/campaigns/vote/answers/{item['item_id']}").json()["values"]["comment"] == text
    with read_session(served.engine) as session:
        assert session.execute(select(Answer.values)).scalar_one()["comment"] == text


@pytest.mark.parametrize("place", ["free text", "question id", "revision"])
def test_a_lone_surrogate_is_refused_naming_the_field_and_stores_nothing(
    served: Served, annotator: httpx.Client, place: str
) -> None:
    """``"\\ud800"`` is a valid JSON escape but not Unicode: it can be neither stored as UTF-8 nor echoed back."""
    item = offered(annotator, "vote")
    headers = {"Content-Type": "application/json"}
    if place == "revision":
        assert annotator.post("/campaigns/vote/answers", json=submit_body(item, VOTE)).status_code == 201
    before = store_state(served.engine)
    if place == "revision":
        raw = json.dumps({"answers": VOTE | {"comment": "x"}}).replace('"comment": "x"', '"comment": "\\ud800"')
        reply = annotator.put(f"/campaigns/vote/answers/{item['item_id']}", content=raw, headers=headers)
    else:
        raw = json.dumps(submit_body(item, VOTE | {"comment": "x"}))
        raw = raw.replace('"comment": "x"', '"comment": "\\ud800"' if place == "free text" else '"\\ud800": "x"')
        reply = annotator.post("/campaigns/vote/answers", content=raw, headers=headers)
    assert reply.status_code == 422, reply.text
    assert "answers." in reply.json()["detail"]
    assert store_state(served.engine) == before


# --- who may call what -------------------------------------------------------------------------------------------


def test_unknown_campaign_and_a_lease_of_another_campaign_are_404_naming_the_field(
    served: Served, annotator: httpx.Client
) -> None:
    vote_item, safety_item = offered(annotator, "vote"), offered(annotator, "safety")
    before = store_state(served.engine)
    assert_refused(annotator.get("/campaigns/no-such/next"), 404, "campaign")
    assert_refused(annotator.post("/campaigns/no-such/answers", json=submit_body(vote_item, VOTE)), 404, "campaign")
    assert_refused(annotator.post("/campaigns/no-such/skip", json={"item_id": 1, "lease_id": "x"}), 404, "campaign")
    crossed = submit_body(vote_item, VOTE) | {"lease_id": safety_item["lease_id"]}
    assert_refused(annotator.post("/campaigns/vote/answers", json=crossed), 404, "lease_id")
    foreign_item = submit_body(vote_item, VOTE) | {"item_id": safety_item["item_id"]}
    assert_refused(annotator.post("/campaigns/vote/answers", json=foreign_item), 404, "item_id")
    assert store_state(served.engine) == before


def test_annotator_may_not_take_or_answer_an_expert_only_campaign(
    served: Served, annotator: httpx.Client, users: dict[str, UserPublic]
) -> None:
    with served.client(issue_token(served.engine, users["expert"])) as expert:
        item = offered(expert, "review")
        before = store_state(served.engine)
        assert_refused(annotator.get("/campaigns/review/next"), 403, "campaign")
        body = submit_body(item, {"accuracy": "pass", "consistency": "pass", "domain_compliance": "pass"})
        assert_refused(annotator.post("/campaigns/review/answers", json=body), 403, "campaign")
        assert_refused(
            annotator.post("/campaigns/review/skip", json={"item_id": item["item_id"], "lease_id": item["lease_id"]}),
            403,
            "campaign",
        )
        assert store_state(served.engine) == before
        assert expert.post("/campaigns/review/answers", json=body).status_code == 201


def test_missing_malformed_and_expired_tokens_are_401_and_store_nothing(
    served: Served, users: dict[str, UserPublic]
) -> None:
    with served.client(issue_token(served.engine, users["annotator"])) as owner:
        item = offered(owner, "vote")
    expired = issue_token(served.engine, users["annotator"], expires_in=timedelta(seconds=-1))
    before = store_state(served.engine)
    for authorization in (
        None,
        "Bearer",
        "Basic YW5ub3RhdG9yOnB3",
        "Token abc",
        "bearer-token-without-scheme",
        "Bearer " + "x" * 10_000,
        f"Bearer {expired}",
    ):
        headers = {"Authorization": authorization} if authorization else {}
        with httpx.Client(base_url=served.url, headers=headers, timeout=60) as anonymous:
            for reply in (
                anonymous.get("/campaigns/vote/next"),
                anonymous.post("/campaigns/vote/answers", json=submit_body(item, VOTE)),
                anonymous.post("/campaigns/vote/skip", json={"item_id": item["item_id"], "lease_id": item["lease_id"]}),
                anonymous.get("/me"),
            ):
                assert reply.status_code == 401 and "authorization" in reply.json()["detail"], (
                    authorization,
                    reply.text,
                )
                assert reply.headers["www-authenticate"] == "Bearer"
    assert store_state(served.engine) == before


def test_a_deactivated_person_is_locked_out_at_once(served: Served, users: dict[str, UserPublic]) -> None:
    from studio.models import User

    token = issue_token(served.engine, users["annotator"])
    with served.client(token) as client:
        item = offered(client, "vote")
        with write_session(served.engine) as session:
            session.get(User, users["annotator"].id).is_active = False
        before = store_state(served.engine)
        assert_refused(client.post("/campaigns/vote/answers", json=submit_body(item, VOTE)), 401, "authorization")
        assert store_state(served.engine) == before


# --- races over HTTP -----------------------------------------------------------------------------------------------


def test_twenty_identical_submits_at_once_store_one_answer_acknowledged_identically(
    served: Served, annotator: httpx.Client
) -> None:
    item = offered(annotator, "vote")
    body = submit_body(item, VOTE, submission_id="same-for-all")
    token = annotator.headers["authorization"].removeprefix("Bearer ")
    barrier = threading.Barrier(20)

    def send(_index: int) -> httpx.Response:
        with served.client(token) as client:
            barrier.wait()
            return client.post("/campaigns/vote/answers", json=body)

    with ThreadPoolExecutor(max_workers=20) as pool:
        replies = list(pool.map(send, range(20)))
    statuses = sorted(reply.status_code for reply in replies)
    assert statuses == [200] * 19 + [201], [reply.text for reply in replies if reply.status_code not in (200, 201)]
    assert len({reply.content for reply in replies}) == 1
    with read_session(served.engine) as session:
        rows = session.execute(select(Answer.id, Answer.submission_id)).all()
        counted = session.get(Item, item["item_id"]).answer_count
    assert [(row.id, row.submission_id) for row in rows] == [(replies[0].json()["answer_id"], "same-for-all")]
    assert counted == 1


def _answer_until_done(served: Served, token: str, barrier: threading.Barrier, name: str) -> list[dict[str, Any]]:
    """One person: next → submit until the queue has nothing left; returns the acknowledged answers."""
    acknowledged = []
    with served.client(token) as client:
        barrier.wait()
        while (reply := client.get(f"/campaigns/{name}/next")).status_code == 200:
            item = reply.json()
            stored = client.post(
                f"/campaigns/{name}/answers", json=submit_body(item, VOTE, submission_id=secrets.token_hex(8))
            )
            assert stored.status_code == 201, stored.text
            acknowledged.append(stored.json())
        assert reply.status_code == 204, reply.text
    return acknowledged


def test_people_racing_for_the_last_slots_never_exceed_the_quota(served: Served, password_hash: str) -> None:
    with write_session(served.engine) as session:
        create_campaign(
            session,
            name="race",
            schema=load_schemas()["crowd_vote"],
            people_per_item=2,
            selection=TargetSelection(subtasks=["itinerary_basic", "itinerary_middle"]),
        )
    people = add_people(served.engine, password_hash, [f"racer{number}" for number in range(6)], "annotator")
    tokens = [issue_token(served.engine, person) for person in people]
    barrier = threading.Barrier(len(people))
    with ThreadPoolExecutor(max_workers=len(people)) as pool:
        acknowledged = [
            answer
            for answers in pool.map(lambda token: _answer_until_done(served, token, barrier, "race"), tokens)
            for answer in answers
        ]
    with read_session(served.engine) as session:
        campaign_id = _campaign_id(session, "race")
        race_items = session.execute(select(Item.id, Item.answer_count).where(Item.campaign_id == campaign_id)).all()
        stored = session.execute(
            select(Answer.item_id, Answer.user_id, Answer.submission_id).where(Answer.campaign_id == campaign_id)
        ).all()
    assert len(race_items) == 3
    per_item = {item_id: sum(1 for row in stored if row.item_id == item_id) for item_id, _ in race_items}
    assert per_item == {item_id: 2 for item_id, _ in race_items}  # every slot filled, none twice
    assert all(count == 2 for _, count in race_items)
    assert len({(row.item_id, row.user_id) for row in stored}) == len(stored) == 6
    assert {row.submission_id for row in stored} == {answer["submission_id"] for answer in acknowledged}


def _campaign_id(session: Any, name: str) -> int:
    from studio.models import Campaign

    return session.execute(select(Campaign.id).where(Campaign.name == name)).scalar_one()


def test_two_people_asking_for_the_last_slot_at_once_get_it_once(
    served: Served, users: dict[str, UserPublic], password_hash: str
) -> None:
    with write_session(served.engine) as session:
        create_campaign(
            session,
            name="last",
            schema=load_schemas()["crowd_vote"],
            people_per_item=2,
            selection=TargetSelection(subtasks=["itinerary_middle"]),
        )
    first, second, third = add_people(served.engine, password_hash, ["first", "second", "third"], "annotator")
    with served.client(issue_token(served.engine, first)) as client:
        item = offered(client, "last")
        assert client.post("/campaigns/last/answers", json=submit_body(item, VOTE)).status_code == 201
    tokens = [issue_token(served.engine, person) for person in (second, third)]
    barrier = threading.Barrier(2)

    def ask(token: str) -> httpx.Response:
        with served.client(token) as client:
            barrier.wait()
            return client.get("/campaigns/last/next")

    with ThreadPoolExecutor(max_workers=2) as pool:
        replies = list(pool.map(ask, tokens))
    assert sorted(reply.status_code for reply in replies) == [200, 204]
    winner = next(reply.json() for reply in replies if reply.status_code == 200)
    assert winner["item_id"] == item["item_id"]
