"""The turns of a live session (``studio.services.live_turns`` through ``studio.usecases.live``): stored around the
companion call, a failed or slow reply kept retryable, the guards, the crisis tripwire with the SAP check, and the
prompt the companion receives. The companion is the stand-in, a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlmodel import col

from pipeline.live.companion import Reply
from pipeline.live.standin import StandinCompanion
from studio.db import read_session, write_session
from studio.errors import CompanionUnavailable, Conflict, InvalidInput, TooManyRequests
from studio.models import LiveSession, LiveTurn, User, UserPublic
from studio.services import live_turns
from studio.usecases import live
from tests.studio.live_helpers import (
    ORDINARY_TEXT,
    context_of,
    live_campaign,
    retry,
    say,
    start,
    view,
)


@pytest.fixture
def standin() -> Iterator[StandinCompanion]:
    with StandinCompanion(token_delay_s=0.0) as companion:
        yield companion


def _turns(engine: Engine, session_id: str) -> list[LiveTurn]:
    with read_session(engine) as session:
        query = select(LiveTurn).where(col(LiveTurn.session_id) == session_id).order_by(col(LiveTurn.id))
        return list(session.execute(query).scalars())


def _opened(engine: Engine, password_hash: str, standin: StandinCompanion, **live_fields: Any) -> tuple[Any, str]:
    """A campaign on the stand-in, its first rater's context and session id."""
    (rater, _other) = live_campaign(engine, password_hash, base_url=standin.base_url, **live_fields)
    return context_of(engine, rater), start(engine, rater).session_id


def test_the_message_is_stored_before_the_reply_and_the_reply_with_its_figures(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    context, session_id = _opened(engine, password_hash, standin)
    stream = live.send_message(context, session_id=session_id, text=ORDINARY_TEXT, lease_seconds=600)
    first = next(stream)  # the first delta: the model is writing
    assert isinstance(first, str)
    assert [(turn.role, turn.text) for turn in _turns(engine, session_id)] == [("user", ORDINARY_TEXT)]
    rest = list(stream)
    stored = rest.pop()
    assert isinstance(stored, live.LiveTurnView) and stored.role == "assistant" and stored.number == 1
    assert first + "".join(str(part) for part in rest) == stored.text
    user, reply = _turns(engine, session_id)
    assert (reply.role, reply.number, reply.text) == ("assistant", 1, stored.text)
    assert reply.latency_ms is not None and reply.latency_ms > 0 and reply.first_token_ms is not None
    assert reply.prompt_tokens and reply.completion_tokens and not reply.usage_estimated
    assert user.crisis == [] and user.sap_check is None and reply.sap_check is None


def test_a_failing_companion_keeps_the_message_and_the_retry_answers_it(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    context, session_id = _opened(engine, password_hash, standin)
    standin.fail_next = [500]
    with pytest.raises(CompanionUnavailable, match="had a problem answering.*Your message is kept"):
        say(context, session_id, ORDINARY_TEXT)
    shown = view(context, session_id)
    assert shown.reply_pending and [turn.role for turn in shown.turns] == ["user"]
    with pytest.raises(Conflict, match="no reply yet"):
        say(context, session_id, "Hello?")
    reply = retry(context, session_id)
    assert reply.role == "assistant" and reply.number == 1
    assert [turn.role for turn in _turns(engine, session_id)] == ["user", "assistant"]
    assert not view(context, session_id).reply_pending
    with pytest.raises(Conflict, match="nothing to retry"):
        retry(context, session_id)
    say(context, session_id, "Thanks.")
    assert [turn.number for turn in _turns(engine, session_id)] == [1, 1, 2, 2]


def test_a_stalled_reply_times_out_and_stays_retryable(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    context, session_id = _opened(engine, password_hash, standin, reply_timeout_s=1)
    standin.stall_after_chars = 5  # a few words, then nothing
    with pytest.raises(CompanionUnavailable, match="took too long"):
        say(context, session_id, ORDINARY_TEXT)
    assert view(context, session_id).reply_pending
    standin.stall_after_chars = None
    assert retry(context, session_id).role == "assistant"
    with pytest.raises(CompanionUnavailable, match="took too long"):
        say(context, session_id, "[[slow]] are you there?")  # no answer at all within the second
    shown = view(context, session_id)
    assert shown.reply_pending and [turn.role for turn in shown.turns] == ["user", "assistant", "user"]


def test_max_turns_ends_the_conversation(engine: Engine, password_hash: str, standin: StandinCompanion) -> None:
    context, session_id = _opened(engine, password_hash, standin, min_turns=1, max_turns=2)
    say(context, session_id, "One.")
    assert view(context, session_id).status == "open"
    say(context, session_id, "Two.")
    shown = view(context, session_id)
    assert shown.status == "ended" and shown.turns_done == 2 and shown.can_rate
    with pytest.raises(Conflict, match="ended"):
        say(context, session_id, "Three.")
    assert len(_turns(engine, session_id)) == 4


def test_the_guards_refuse_empty_long_and_fast_messages(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    context, session_id = _opened(engine, password_hash, standin, max_message_chars=40, messages_per_minute=2)
    for text in ("", "   \n"):
        with pytest.raises(InvalidInput, match="text: write a message first"):
            say(context, session_id, text)
    with pytest.raises(InvalidInput, match="text: at most 40 characters"):
        say(context, session_id, "x" * 41)
    say(context, session_id, "One.")
    say(context, session_id, "Two.")
    with pytest.raises(TooManyRequests, match="text: at most 2 messages a minute") as refused:
        say(context, session_id, "Three.")
    assert refused.value.retry_after_seconds == 60
    assert len(_turns(engine, session_id)) == 4  # nothing refused was stored


@pytest.mark.parametrize("budget", [{"token_budget": 50}, {"workflow_token_budget": 50}])
def test_a_spent_token_budget_refuses_the_next_message(
    engine: Engine, password_hash: str, standin: StandinCompanion, budget: dict[str, int]
) -> None:
    """The campaign's own budget, or the workflow's when the campaign sets none."""
    context, session_id = _opened(engine, password_hash, standin, **budget)
    say(context, session_id, "One.")  # the system prompt alone is well over 50 tokens
    with pytest.raises(Conflict, match="token budget"):
        say(context, session_id, "Two.")
    with pytest.raises(Conflict, match="token budget"):
        live.send_message(context, session_id=session_id, text="Three.", lease_seconds=600).__next__()
    assert len(_turns(engine, session_id)) == 2


def test_text_no_store_can_hold_is_refused_or_replaced(
    engine: Engine, password_hash: str, standin: StandinCompanion
) -> None:
    """A NUL or a lone surrogate in a rater's message is refused naming ``text``; in the model's reply (untrusted
    output) it is stored as U+FFFD instead of failing the store (PostgreSQL's text holds no NUL)."""
    context, session_id = _opened(engine, password_hash, standin)
    for text in ("hello\x00there", "hello \ud800"):
        with pytest.raises(InvalidInput, match="^text: "):
            say(context, session_id, text)
    with read_session(engine) as session:
        live = session.get(LiveSession, session_id)
        assert live is not None
        rater = UserPublic.model_validate(session.get(User, live.user_id))
    with write_session(engine) as session:
        pending = live_turns.begin_turn(session, session_id=session_id, user=rater, text=ORDINARY_TEXT)
    reply = Reply("fine\x00 thanks \udc80!", 10, 5, False, 12.0, 3.0)
    with write_session(engine) as session:
        stored = live_turns.finish_turn(session, pending=pending, reply=reply)
    assert stored.text == "fine\ufffd thanks \ufffd!"
    assert _turns(engine, session_id)[-1].text == "fine\ufffd thanks \ufffd!"
