"""Live sessions (``studio.services.live_sessions`` through ``studio.usecases.live``): open and resume with a lease,
the hidden balanced variant, the rating as an ordinary answer, the transcript's readers and the API key's path.
The companion is a real OpenAI-compatible server (the stand-in) on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlmodel import col

from pipeline.live.standin import StandinCompanion
from studio.db import read_session, write_session
from studio.errors import CompanionUnavailable, Conflict, InvalidInput, PermissionDenied
from studio.models import Answer, Campaign, Item, Lease, LiveSession, UserPublic, utc_now
from studio.services import answers, live_sessions
from studio.services.answer_values import AnswerLimits, Submission
from studio.services.answers import SubmitResult
from studio.services.queue import next_item
from studio.usecases import live
from tests.studio.helpers import add_people
from tests.studio.live_helpers import ONE_SCENARIO, context_of, live_campaign, say, start, view

SECRET_MODEL = "secret-companion-7b"
RATING = {"safety": 4, "violation": "no"}


@pytest.fixture
def standin() -> Iterator[StandinCompanion]:
    with StandinCompanion(token_delay_s=0.0, model=SECRET_MODEL) as companion:
        yield companion


def _rate(
    engine: Engine, user: UserPublic, session_id: str, values: dict[str, Any], submission_id: str = "s-1"
) -> SubmitResult:
    rating = live.Rating(submission_id=submission_id, answers=values, seconds_spent=30.0)
    with context_of(engine, user).writing() as (session, caller):
        return live.rate(session, caller=caller, session_id=session_id, rating=rating, limits=AnswerLimits())


def _talk(engine: Engine, user: UserPublic, session_id: str, turns: int) -> None:
    context = context_of(engine, user)
    for number in range(1, turns + 1):
        say(context, session_id, f"Message number {number} about my week.")


def test_a_session_opens_on_the_next_item_with_a_lease_and_resumes(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    (rater, _other) = live_campaign(engine, password_hash, base_url=standin.base_url, model=SECRET_MODEL)
    first = start(engine, rater)
    assert first.status == "open" and first.turns == [] and not first.reply_pending and not first.can_rate
    assert first.content["opening_line"] and "user_input" not in first.content
    with read_session(engine) as session:
        row = session.get(LiveSession, first.session_id)
        assert row is not None and row.user_id == rater.id and row.variant in ("with_sap", "without_sap")
        lease = session.get(Lease, row.lease_id)
        assert lease is not None and lease.item_id == first.item_id and lease.released_at is None
        expires = lease.expires_at
    later = utc_now() + timedelta(seconds=5000)
    with write_session(engine) as session:
        resumed = live_sessions.open_session(session, campaign="live", user=rater, lease_seconds=900, now=later)
    assert resumed is not None and resumed[1] is False and resumed[0].session_id == first.session_id
    with read_session(engine) as session:
        renewed = session.get(Lease, row.lease_id)
        assert renewed is not None and renewed.expires_at > expires
        assert len(session.execute(select(LiveSession)).scalars().all()) == 1


def test_two_variants_four_raters_one_scenario_split_two_and_two(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    raters = live_campaign(
        engine,
        password_hash,
        base_url=standin.base_url,
        model=SECRET_MODEL,
        raters=4,
        people_per_item=4,
        selection=ONE_SCENARIO,
    )
    items = {start(engine, rater).item_id for rater in raters}
    assert len(items) == 1
    with read_session(engine) as session:
        variants = sorted(session.execute(select(col(LiveSession.variant))).scalars())
    assert variants == ["with_sap", "with_sap", "without_sap", "without_sap"]


def test_the_raters_view_names_neither_model_nor_variant(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    (rater, _other) = live_campaign(engine, password_hash, base_url=standin.base_url, model=SECRET_MODEL)
    opened = start(engine, rater)
    _talk(engine, rater, opened.session_id, 1)
    text = view(context_of(engine, rater), opened.session_id).model_dump_json()
    assert len(json.loads(text)["turns"]) == 2
    for secret in (SECRET_MODEL, "with_sap", "without_sap", "variant", standin.base_url):
        assert secret not in text


def test_rating_waits_for_min_turns_and_is_an_ordinary_answer(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    (rater, _other) = live_campaign(
        engine, password_hash, base_url=standin.base_url, model=SECRET_MODEL, min_turns=2, max_turns=3
    )
    opened = start(engine, rater)
    _talk(engine, rater, opened.session_id, 1)
    with pytest.raises(Conflict, match="at least 2 replies"):
        _rate(engine, rater, opened.session_id, RATING)
    _talk(engine, rater, opened.session_id, 1)
    with pytest.raises(InvalidInput, match="harmful_turns"):
        _rate(engine, rater, opened.session_id, {**RATING, "harmful_turns": ["3"]})
    with pytest.raises(InvalidInput, match="harmful_turns"):
        _rate(engine, rater, opened.session_id, {**RATING, "harmful_turns": 2})
    stored = _rate(engine, rater, opened.session_id, RATING)
    assert stored.created and stored.answer.values == RATING  # the optional harmful_turns is absent, not []
    again = _rate(engine, rater, opened.session_id, RATING)
    assert again.created is False and again.answer.id == stored.answer.id
    with pytest.raises(Conflict):
        _rate(engine, rater, opened.session_id, {"safety": 1, "violation": "no"})
    with read_session(engine) as session:
        row = session.get(LiveSession, opened.session_id)
        assert row is not None and row.status == "rated" and row.answer_id == stored.answer.id
        lease = session.get(Lease, row.lease_id)
        assert lease is not None and lease.released_at is not None and lease.outcome == "answered"
        item = session.get(Item, row.item_id)
        assert item is not None and item.answer_count == 1
        assert len(session.execute(select(Answer)).scalars().all()) == 1
    assert view(context_of(engine, rater), opened.session_id).rating == RATING
    following = start(engine, rater)
    assert following.session_id != opened.session_id and following.item_id != opened.item_id


def test_rating_is_refused_while_a_reply_is_pending(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    (rater, _other) = live_campaign(
        engine, password_hash, base_url=standin.base_url, model=SECRET_MODEL, min_turns=1, max_turns=3
    )
    opened = start(engine, rater)
    _talk(engine, rater, opened.session_id, 1)
    standin.fail_next = [500]
    with pytest.raises(CompanionUnavailable):
        say(context_of(engine, rater), opened.session_id, "And another thing.")
    with pytest.raises(Conflict, match="last message has its reply"):
        _rate(engine, rater, opened.session_id, RATING)


def test_transcripts_are_for_staff_and_the_rater_reads_their_view(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    (rater, other) = live_campaign(engine, password_hash, base_url=standin.base_url, model=SECRET_MODEL)
    opened = start(engine, rater)
    _talk(engine, rater, opened.session_id, 1)
    staff = [add_people(engine, password_hash, [role], role)[0] for role in ("researcher", "curator", "admin")]
    for person in staff:
        with context_of(engine, person).reading() as (session, caller):
            record = live.transcript(session, caller=caller, session_id=opened.session_id)
        assert record.model == SECRET_MODEL and record.variant in ("with_sap", "without_sap")
        assert record.rater == rater.username and [turn.role for turn in record.turns] == ["user", "assistant"]
    for person, words in ((rater, "without its model and variant"), (other, "only its rater")):
        with context_of(engine, person).reading() as (session, caller), pytest.raises(PermissionDenied, match=words):
            live.transcript(session, caller=caller, session_id=opened.session_id)
    with context_of(engine, other).reading() as (session, caller), pytest.raises(PermissionDenied):
        live.view_session(session, caller=caller, session_id=opened.session_id)


def test_the_api_key_is_read_from_the_environment_and_never_stored_or_shown(
    engine: Engine, password_hash: str, standin: StandinCompanion, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-live-test-0123456789abcdef"
    monkeypatch.setenv("H2H_TEST_COMPANION_KEY", key)
    standin.api_key = key
    (rater, _other) = live_campaign(
        engine, password_hash, base_url=standin.base_url, model=SECRET_MODEL, api_key_env="H2H_TEST_COMPANION_KEY"
    )
    opened = start(engine, rater)
    _talk(engine, rater, opened.session_id, 1)
    assert standin.authorizations[-1] == f"Bearer {key}"
    admin = add_people(engine, password_hash, ["admin"], "admin")[0]
    with context_of(engine, admin).reading() as (session, caller):
        record = live.transcript(session, caller=caller, session_id=opened.session_id).model_dump_json()
        stored = session.execute(select(Campaign)).scalars().one()
        row_text = json.dumps(stored.model_dump(mode="json"))
    assert "H2H_TEST_COMPANION_KEY" in row_text and key not in row_text
    assert key not in record and key not in view(context_of(engine, rater), opened.session_id).model_dump_json()


def test_variants_stay_balanced_when_raters_open_at_once(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    raters = live_campaign(
        engine,
        password_hash,
        base_url=standin.base_url,
        model=SECRET_MODEL,
        raters=4,
        people_per_item=4,
        selection=ONE_SCENARIO,
    )
    barrier = threading.Barrier(len(raters))

    def open_one(rater: UserPublic) -> int:
        context = context_of(engine, rater)
        barrier.wait()
        with context.writing() as (session, caller):
            opened = live.start_session(session, caller=caller, campaign="live", lease_seconds=600)
        assert opened is not None
        return opened[0].item_id

    with ThreadPoolExecutor(max_workers=len(raters)) as pool:
        assert len(set(pool.map(open_one, raters))) == 1
    with read_session(engine) as session:
        variants = sorted(session.execute(select(col(LiveSession.variant))).scalars())
    assert variants == ["with_sap", "with_sap", "without_sap", "without_sap"]


def test_the_plain_queue_takes_no_rating_of_a_live_campaign(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    """A live rating is given after a conversation (rate_session's min_turns); the annotate queue must not take one
    without any."""
    (rater, _other) = live_campaign(engine, password_hash, base_url=standin.base_url, model=SECRET_MODEL)
    with write_session(engine) as session, pytest.raises((Conflict, InvalidInput)):
        handed = next_item(session, campaign="live", user=rater)
        assert handed is not None
        submission = Submission(item_id=handed.item_id, lease_id=handed.lease_id, submission_id="q-1", answers=RATING)
        answers.submit(session, campaign="live", user=rater, submission=submission)
