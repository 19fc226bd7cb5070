"""The answer path's fast paths keep every guarantee: retries read off the write lock, the campaign read once per
session, the rows read and written in SQL Core equal to the ORM's, the login redirect as plain ASGI middleware, a
request body limit, the pool and the cached token query.

Real stores (SQLite file and PostgreSQL via ``db_url``) and real uvicorn servers on 127.0.0.1.
"""

from __future__ import annotations

import secrets
import sqlite3
import uuid
from collections.abc import Iterator
from datetime import timedelta

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse
from sqlalchemy import Engine, func, select
from sqlalchemy.engine import make_url

from studio.db import (
    POOL_MAX_OVERFLOW,
    POOL_SIZE,
    create_db_engine,
    lock_campaign,
    lock_item,
    read_session,
    write_session,
)
from studio.errors import Conflict, PermissionDenied
from studio.models import (
    Answer,
    AuthToken,
    CampaignPublic,
    Item,
    Lease,
    ResponseRow,
    ScenarioRow,
    ScoreRow,
    UserPublic,
    utc_now,
)
from studio.services.answers import stored_submission, submit_answer
from studio.services.auth import hash_token, logout, user_for_token
from studio.services.campaigns import set_campaign_status
from studio.services.content import build_item_content
from studio.services.queue import ItemView, campaign_state, get_campaign, next_item, take_lease, view_of
from studio.settings import get_settings
from studio.web.api import create_api
from studio.web.deps import SESSION_COOKIE
from studio.web.middleware import LoginRedirectMiddleware
from studio.web.schemas import AnswerOut
from tests.serving import serve_in_thread
from tests.studio.helpers import add_people, counted_statements

VOTE = {"verdict": "keep", "subtask_label": "dialogue_base"}


def issue_token(engine: Engine, user: UserPublic, *, expires_in: timedelta = timedelta(hours=1)) -> str:
    """A token stored the way ``auth.login`` stores one, without argon2's deliberate cost."""
    token = secrets.token_urlsafe(32)
    with write_session(engine) as session:
        session.add(AuthToken(user_id=user.id, token_hash=hash_token(token), expires_at=utc_now() + expires_in))
    return token


def leased(engine: Engine, user: UserPublic) -> tuple[int, str]:
    with write_session(engine) as session:
        handout = take_lease(session, campaign="vote", user=user)
        assert handout is not None
        return handout.item_id, handout.lease_id


def submit(engine: Engine, user: UserPublic, item_id: int, lease_id: str, submission_id: str) -> Answer:
    with write_session(engine) as session:
        return submit_answer(
            session,
            campaign="vote",
            user=user,
            item_id=item_id,
            lease_id=lease_id,
            submission_id=submission_id,
            answers=VOTE,
            seconds_spent=1.0,
        ).answer


def stored(engine: Engine, user: UserPublic, item_id: int, lease_id: str, submission_id: str) -> object:
    with read_session(engine) as session:
        return stored_submission(
            session,
            campaign="vote",
            user=user,
            item_id=item_id,
            lease_id=lease_id,
            submission_id=submission_id,
            answers=VOTE,
            seconds_spent=1.0,
        )


def test_a_retry_is_read_without_the_write_lock_with_submit_answers_checks(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], password_hash: str
) -> None:
    annotator, other = users["annotator"], add_people(corpus, password_hash, ["annotator2"], "annotator")[0]
    item_id, lease_id = leased(corpus, annotator)
    submission_id = uuid.uuid4().hex
    assert stored(corpus, annotator, item_id, lease_id, submission_id) is None  # not stored yet: go to the lock
    first = submit(corpus, annotator, item_id, lease_id, submission_id)
    assert stored(corpus, annotator, item_id, lease_id, submission_id) == first
    with pytest.raises(Conflict, match="submission_id"):  # someone else's submission_id, as submit_answer says
        stored(corpus, other, item_id, lease_id, submission_id)
    with write_session(corpus) as session:
        set_campaign_status(session, name="vote", status="closed")
    with pytest.raises(PermissionDenied, match="closed"):
        stored(corpus, annotator, item_id, lease_id, submission_id)
    with pytest.raises(PermissionDenied, match="closed"):
        submit(corpus, annotator, item_id, lease_id, submission_id)
    with read_session(corpus) as session:
        assert session.execute(select(func.count(Answer.id))).scalar_one() == 1


def test_a_retry_is_answered_while_another_process_holds_the_sqlite_write_lock(
    db_url: str, corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    if not db_url.startswith("sqlite"):
        pytest.skip("the SQLite write lock")
    annotator = users["annotator"]
    item_id, lease_id = leased(corpus, annotator)
    first = submit(corpus, annotator, item_id, lease_id, "once")
    holder = sqlite3.connect(make_url(db_url).database, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        assert stored(corpus, annotator, item_id, lease_id, "once") == first
    finally:
        holder.execute("ROLLBACK")
        holder.close()


@pytest.mark.parametrize("lookup", [get_campaign, campaign_state])
def test_the_campaign_is_read_once_per_session(corpus: Engine, campaign: CampaignPublic, lookup: object) -> None:
    with read_session(corpus) as session, counted_statements(corpus) as statements:
        first = lookup(session, "vote")
        reads = len(statements)
        assert lookup(session, "vote") is first and len(statements) == reads
    with read_session(corpus) as session, counted_statements(corpus) as statements:
        lookup(session, "vote")
        assert any("FROM campaign" in statement for statement in statements)


def test_the_campaign_state_matches_the_campaign_row(corpus: Engine, campaign: CampaignPublic) -> None:
    from studio.services.queue import campaign_schema

    with read_session(corpus) as session:
        row, state = get_campaign(session, "vote"), campaign_state(session, "vote")
        assert (
            state.id,
            state.name,
            state.status,
            list(state.eligible_roles),
            state.people_per_item,
            state.pair_seed,
        ) == (row.id, row.name, row.status, row.eligible_roles, row.people_per_item, row.pair_seed)
        assert state.schema == campaign_schema(row)


def test_lock_campaign_says_when_earlier_reads_may_be_stale(
    db_url: str, corpus: Engine, campaign: CampaignPublic
) -> None:
    with write_session(corpus) as session:
        assert lock_campaign(session, campaign.id) is db_url.startswith("postgresql")
        assert lock_item(session, 1) is db_url.startswith("postgresql")


def test_a_view_built_after_the_write_session_equals_the_one_next_item_builds(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    annotator = users["annotator"]
    with write_session(corpus) as session:
        handout = take_lease(session, campaign="vote", user=annotator)
        assert handout is not None
    with read_session(corpus) as session:
        handed_on = view_of(session, handout)
    with write_session(corpus) as session:  # the live lease comes back: the same item, read afresh
        fresh = next_item(session, campaign="vote", user=annotator)
    assert handed_on == fresh and fresh.item_id == handout.item_id
    with read_session(corpus) as session:
        stored = session.get(Lease, handout.lease_id)
        assert (stored.item_id, stored.user_id, stored.expires_at, stored.released_at) == (
            handout.item_id,
            annotator.id,
            handout.expires_at,
            None,
        )


def test_content_from_core_rows_equals_content_from_orm_rows(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    """The view reads scenario, response and score as Core rows: the whitelisted content is the same as from the
    ORM entities, with every field revealed so that any column read wrongly would show."""
    from studio.services.queue_rows import response_row, scenario_row, score_row

    reveal = ("reference", "subtask", "tags", "model", "variant", "auto_scores", "judge_score")
    with read_session(corpus) as session:
        responses = session.execute(select(ResponseRow)).scalars().all()
        assert responses
        for response in responses:
            scenario = session.get(ScenarioRow, response.scenario_id)
            score = session.execute(select(ScoreRow).where(ScoreRow.response_id == response.id)).scalars().first()
            assert score is not None
            orm = build_item_content(scenario=scenario, responses=[(response, score)], reveal=reveal)
            core = build_item_content(
                scenario=scenario_row(session, response.scenario_id),
                responses=[(response_row(session, response.id), score_row(session, response.id))],
                reveal=reveal,
            )
            assert core == orm


def test_a_stored_answer_reads_back_as_submit_returned_it(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    """submit_answer builds its reply from the values it inserted (no read back): equal to the row as stored."""
    from studio.models import AnswerPublic

    annotator = users["annotator"]
    item_id, lease_id = leased(corpus, annotator)
    returned = submit(corpus, annotator, item_id, lease_id, "s-read-back")
    with read_session(corpus) as session:
        row = session.execute(select(Answer).where(Answer.submission_id == "s-read-back")).scalars().one()
        assert AnswerPublic.model_validate(row) == returned
        assert session.get(Item, item_id).answer_count == 1
        lease = session.get(Lease, lease_id)
        assert (lease.outcome, lease.released_at) == ("answered", returned.created_at)


def test_the_pool_covers_the_worker_threads(db_url: str) -> None:
    engine = create_db_engine(db_url)
    try:
        assert engine.pool.size() == POOL_SIZE == 40 and POOL_MAX_OVERFLOW == 20
        assert get_settings().worker_threads <= POOL_SIZE  # every handler that may run at once has its connection
    finally:
        engine.dispose()


def test_the_cached_token_query_still_refuses_expired_and_revoked_tokens(
    engine: Engine, users: dict[str, UserPublic]
) -> None:
    annotator = users["annotator"]
    live, expired = issue_token(engine, annotator), issue_token(engine, annotator, expires_in=timedelta(seconds=-1))
    with read_session(engine) as session:
        assert user_for_token(session, token=live) == annotator
        assert user_for_token(session, token=expired) is None
    with write_session(engine) as session:
        assert logout(session, token=live)
    with read_session(engine) as session:
        assert user_for_token(session, token=live) is None


def test_a_body_over_the_limit_answers_413_and_stores_nothing(
    db_url: str, corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    app = FastAPI()
    app.mount("/api", create_api(get_settings(database_url=db_url, max_request_bytes=4000), engine=corpus))
    token = issue_token(corpus, users["annotator"])
    with (
        serve_in_thread(app) as base,
        httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {token}"}) as client,
    ):
        item = client.get("/campaigns/vote/next").json()
        body = {
            "item_id": item["item_id"],
            "lease_id": item["lease_id"],
            "submission_id": "s1",
            "answers": VOTE | {"comment": "x" * 5000},
        }
        declared = client.post("/campaigns/vote/answers", json=body)
        assert declared.status_code == 413
        assert declared.json() == {"detail": "body: the request body is larger than 4000 bytes"}

        def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams in
            yield b'{"item_id": 1, "answers": {"comment": "'
            yield from (b"y" * 1000 for _ in range(5))
            yield b'"}}'

        streamed = client.post(
            "/campaigns/vote/answers", content=chunks(), headers={"content-type": "application/json"}
        )
        assert streamed.status_code == 413 and streamed.json()["detail"].startswith("body:")
        with read_session(corpus) as session:
            assert session.execute(select(func.count(Answer.id))).scalar_one() == 0
        body["answers"] = VOTE
        assert client.post("/campaigns/vote/answers", json=body).status_code == 201


def test_the_login_redirect_only_touches_browser_gets_of_the_ui_page(
    engine: Engine, users: dict[str, UserPublic]
) -> None:
    app = FastAPI()

    @app.api_route("/ui/", methods=["GET", "POST"])
    @app.get("/ui")
    @app.get("/api/ping")
    def reached() -> PlainTextResponse:
        return PlainTextResponse("reached")

    app.add_middleware(LoginRedirectMiddleware, engine=engine)
    token = issue_token(engine, users["annotator"])
    html = {"accept": "text/html"}
    with serve_in_thread(app) as base, httpx.Client(base_url=base) as client:
        for path in ("/ui", "/ui/"):
            refused = client.get(path, headers=html)
            assert refused.status_code == 303 and refused.headers["location"] == "/login"
        assert client.get("/ui/", headers=html, cookies={SESSION_COOKIE: token}).text == "reached"
        assert client.get("/ui/", headers=html | {"authorization": f"Bearer {token}"}).text == "reached"
        assert client.get("/ui/", headers=html, cookies={SESSION_COOKIE: "forged"}).status_code == 303
        assert client.get("/ui/", headers={"accept": "application/json"}).text == "reached"
        assert client.post("/ui/", headers=html).text == "reached"
        assert client.get("/api/ping", headers=html).text == "reached"


def test_models_returned_as_json_keep_the_documented_shape_status_and_bytes(
    db_url: str, corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    """next/submit/retry/mine serialise their model once (``json_model``): same bytes pydantic writes for the
    documented response model, JSON content type, 201 then 200 for a retry, and OpenAPI still names the models."""
    app = FastAPI()
    app.mount("/api", create_api(get_settings(database_url=db_url), engine=corpus))
    token = issue_token(corpus, users["annotator"])
    with (
        serve_in_thread(app) as base,
        httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {token}"}) as client,
    ):
        shown = client.get("/campaigns/vote/next")
        assert shown.status_code == 200 and shown.headers["content-type"] == "application/json"
        assert shown.content == ItemView.model_validate_json(shown.content).model_dump_json().encode()
        item = shown.json()
        body = {"item_id": item["item_id"], "lease_id": item["lease_id"], "submission_id": "s1", "answers": VOTE}
        first, retry = (
            client.post("/campaigns/vote/answers", json=body),
            client.post("/campaigns/vote/answers", json=body),
        )
        mine = client.get(f"/campaigns/vote/answers/{item['item_id']}")
        assert (first.status_code, retry.status_code, mine.status_code) == (201, 200, 200)
        assert first.content == retry.content == mine.content
        assert first.content == AnswerOut.model_validate_json(first.content).model_dump_json().encode()
        with read_session(corpus) as session:
            stored_id = session.execute(select(Answer.id).where(Answer.submission_id == "s1")).scalar_one()
        assert first.json()["answer_id"] == stored_id and first.json()["values"] == VOTE
        paths = client.get("/openapi.json").json()["paths"]
    documented = {
        "/v1/campaigns/{name}/next": ("get", "200", "ItemView"),
        "/v1/campaigns/{name}/answers": ("post", "201", "AnswerOut"),
        "/v1/campaigns/{name}/answers/{item_id}": ("get", "200", "AnswerOut"),
    }
    for path, (method, code, model) in documented.items():
        schema = paths[path][method]["responses"][code]["content"]["application/json"]["schema"]
        assert schema["$ref"].endswith(f"/{model}")


def test_an_annotating_cycle_sends_the_statements_it_needs_and_no_more(
    db_url: str, corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    """next → submit → retry over HTTP, every statement listed: a new query on the hot path shows up here first.

    next: caller, campaign, [the person's lock], live lease, next item (PostgreSQL: locked, SKIP LOCKED), the lease
    claimed if the item still has a slot (INSERT ... SELECT), the scenario (one write session; the "vote" campaign's
    items are scenarios). submit on SQLite: caller, submission (read session: not a retry); campaign, item, earlier
    answers (by submission_id or to this item) with the lease beside them, then lease release + answer + item count in
    three statements (write session); retry: caller, submission, campaign, item (read session). On PostgreSQL one write
    session each: submit: caller, campaign with its item (the item's row locked as it is read, one statement), earlier
    answers with the lease, then one statement with data-modifying CTEs; retry: caller, campaign with its item
    (locked), earlier answers with the lease.
    """
    app = FastAPI()
    app.mount("/api", create_api(get_settings(database_url=db_url), engine=corpus))
    token = issue_token(corpus, users["annotator"])
    with (
        serve_in_thread(app) as base,
        httpx.Client(base_url=f"{base}/api/v1", headers={"Authorization": f"Bearer {token}"}) as client,
        counted_statements(corpus) as statements,
    ):
        item = client.get("/campaigns/vote/next").json()
        body = {"item_id": item["item_id"], "lease_id": item["lease_id"], "submission_id": "s1", "answers": VOTE}
        replies = [client.post("/campaigns/vote/answers", json=body) for _ in range(2)]
    assert [reply.status_code for reply in replies] == [201, 200]
    work = [
        statement.split()[0].upper()
        for statement in statements
        if not statement.lstrip().upper().startswith(("BEGIN", "SELECT 1", "SELECT PG_ADVISORY"))
    ]
    postgres = db_url.startswith("postgresql")
    expected = (
        {"SELECT": 5 + 3 + 3, "INSERT": 1, "UPDATE": 0, "WITH": 1}
        if postgres
        else {"SELECT": 5 + 5 + 4, "INSERT": 2, "UPDATE": 2, "WITH": 0}
    )
    assert {kind: work.count(kind) for kind in expected} == expected, statements
    assert len(work) == sum(expected.values()), statements
    if postgres:
        locked = [statement for statement in statements if "FOR NO KEY UPDATE" in statement]
        assert len(locked) == 3 and "SKIP LOCKED" in locked[0], locked  # next's candidate; the item, twice
        assert all("FROM campaign LEFT OUTER JOIN LATERAL" in statement for statement in locked[1:]), locked
        assert not any("SKIP LOCKED" in statement for statement in locked[1:]), locked
    if db_url.startswith("sqlite"):  # a transaction per request; a first submit: the retry check, then the write
        begins = [statement.strip() for statement in statements if statement.lstrip().upper().startswith("BEGIN")]
        assert begins == ["BEGIN IMMEDIATE", "BEGIN DEFERRED", "BEGIN IMMEDIATE", "BEGIN DEFERRED"], begins
    locks = [statement for statement in statements if "pg_advisory_xact_lock" in statement]
    assert len(locks) == (1 if postgres else 0)  # next: the person's (no campaign-wide lock; submit: the item's row)
