"""Simulated users for live sessions (``h2h simulate-sessions``; ARCHITECTURE.md "Live sessions").

A user model plays the scenario's person against the campaign's blinded companion, so a team can screen models
before spending people's time. Each session is an ordinary :class:`~studio.models.LiveSession` marked ``simulated``
(no person, no lease, ``user_model`` set), with a variant balanced among the item's simulated sessions; its turns go
through :func:`studio.services.live_turns.begin_turn` / ``finish_turn`` exactly as people's do (the same guards but
the per-person rate limit, the same tripwire, the same companion prompts, the reply streamed as for a rater). The
first message is the scenario's opening line as written (as a rater may send it); every later one is the user model's
answer to the conversation so far, asked with roles swapped (the companion's replies as ``user``, the person's own
messages as ``assistant``). At the end the user model rates the conversation as the person; the rating is stored in
``simulated_rating`` — never an :class:`~studio.models.Answer`, so the human queue and tables never see it. A rating
the workflow does not accept is stored as ``{"unparsed": text, "error": why}``, never guessed.

Everything is stored as it happens, so a killed run resumes: a pending reply is asked again, a missing user message
is asked of the user model given the stored transcript, an unrated session is rated.
"""

from __future__ import annotations

import json
import logging
import secrets
import string
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import Engine, select
from sqlmodel import Session, col
from tqdm import tqdm

from pipeline.live.companion import CompanionEndpoint, CompanionError, Reply, complete_reply, stream_reply
from pipeline.paths import prompts_dir
from pipeline.records import Scenario
from studio.db import read_session, write_session
from studio.errors import CompanionUnavailable, InvalidInput
from studio.models import Campaign, Item, LiveSession, LiveTurn, ScenarioRow, utc_now
from studio.services import live_turns
from studio.services.curation_decisions import scenario_record
from studio.services.live_sessions import balanced_variant, live_spec, replies_done, session_turns
from studio.services.queue import campaign_state, require_open
from studio.workflows import AnswerValidationError, WorkflowSchema

logger = logging.getLogger(__name__)

USER_PROMPT = "live_user.md"
RATING_PROMPT = "live_user_rating.md"
#: The first swapped message: chat templates want a ``user`` message before the model's first ``assistant`` one.
KICKOFF = "(The chat is open. Write your next message to the companion.)"
#: Tries per model call before the run stops (a rerun resumes where it stopped).
ATTEMPTS = 3
#: Seconds before the second try (twice that before the third).
BACKOFF_S = 0.5
_LANGUAGES = {"zh": "Chinese (Simplified)", "en": "English", "mixed": "the same mix of Chinese and English as before"}
T = TypeVar("T")


class SimulationSummary(BaseModel):
    """What a run left in the store for (campaign, user model): sessions and replies stored, what this run added or
    resumed, ratings stored and unparsed, sessions flagged for review, sessions per variant."""

    campaign: str
    user_model: str
    sessions: int
    added: int
    resumed: int
    turns: int
    rated: int
    unparsed: int
    needs_review: int
    variants: dict[str, int]


def simulated_sessions(session: Session, *, campaign_id: int, user_model: str) -> list[LiveSession]:
    """The campaign's simulated sessions played by ``user_model``, oldest first (the order they were added)."""
    query = select(LiveSession).where(
        col(LiveSession.campaign_id) == campaign_id,
        col(LiveSession.simulated).is_(True),
        col(LiveSession.user_model) == user_model,
    )
    return list(session.execute(query.order_by(col(LiveSession.created_at), col(LiveSession.id))).scalars())


def campaign_items(session: Session, campaign_id: int) -> list[int]:
    """The campaign's item ids in item order (``position``)."""
    query = select(col(Item.id)).where(col(Item.campaign_id) == campaign_id).order_by(col(Item.position))
    return [int(item_id) for item_id in session.execute(query).scalars()]


def open_simulated_session(session: Session, *, campaign: str, item_id: int, user_model: str) -> LiveSession:
    """A new simulated session on ``item_id`` of ``campaign``: no person, no lease, a variant drawn among those the
    item's simulated sessions have had least. ``InvalidInput`` for an item of another campaign."""
    found = campaign_state(session, campaign)
    spec = live_spec(found)
    require_open(found)
    item = session.get(Item, item_id)
    if item is None or item.campaign_id != found.id:
        raise InvalidInput(f"item_id: {item_id} is not an item of campaign {campaign!r}")
    now = utc_now()
    live = LiveSession(
        id=secrets.token_urlsafe(16),
        campaign_id=found.id,
        item_id=item_id,
        variant=balanced_variant(
            session, item_id=item_id, variants=list(spec.variants), simulated=True, user_model=user_model
        ),
        simulated=True,
        user_model=user_model,
        created_at=now,
        updated_at=now,
    )
    session.add(live)
    session.flush()
    return live


def _fill(name: str, **values: str) -> str:
    return string.Template((prompts_dir() / name).read_text(encoding="utf-8").strip()).substitute(values)


def user_system_prompt(scenario: Scenario) -> str:
    """``live_user.md`` filled in: the person derived from the scenario (feeling, risk, history, opening line)."""
    speaker = {"user": "You", "assistant": "Companion"}
    history = "\n".join(f"{speaker.get(turn.role, turn.role)}: {turn.content}" for turn in scenario.history)
    return _fill(
        USER_PROMPT,
        emotion=scenario.tags.emotion or "not stated; take it from the opening line",
        risk_kind=(scenario.tags.risk_kind or "not stated; take it from the opening line").replace("_", " "),
        companion=scenario.persona or "an AI companion",
        history=history or "(nothing: this is the first conversation)",
        opening_line=scenario.user_input or "(none: write it yourself)",
        language=_LANGUAGES.get(scenario.tags.language, "the language of the opening line"),
    )


def user_messages(*, scenario: Scenario, turns: list[LiveTurn]) -> list[dict[str, str]]:
    """The user model's prompt for the next message: the system prompt, then the conversation with roles swapped
    (the companion's replies as ``user``, the person's own messages as ``assistant``), ending on a ``user`` one."""
    messages = [{"role": "system", "content": user_system_prompt(scenario)}, {"role": "user", "content": KICKOFF}]
    for turn in turns:
        messages.append({"role": "assistant" if turn.role == "user" else "user", "content": turn.text})
    return messages


def rating_messages(*, scenario: Scenario, turns: list[LiveTurn], schema: WorkflowSchema) -> list[dict[str, str]]:
    """The user model's prompt for the rating: the person's system prompt, then ``live_user_rating.md`` holding the
    transcript (replies numbered as the rating's turn marks number them)."""
    lines = [f"You: {t.text}" if t.role == "user" else f"Companion (reply {t.number}): {t.text}" for t in turns]
    kinds = schema.questions_by_id.get("violation_kind")
    options = [str(option.value) for option in getattr(kinds, "options", None) or []]
    rating = _fill(
        RATING_PROMPT,
        transcript="\n\n".join(lines),
        violation_kinds=", ".join(f'"{value}"' for value in options) or '"other"',
        replies=str(replies_done(turns)),
    )
    return [{"role": "system", "content": user_system_prompt(scenario)}, {"role": "user", "content": rating}]


def parse_rating(raw: str, *, schema: WorkflowSchema, turn_marks: str | None, replies: int) -> dict[str, Any]:
    """The rating in ``raw`` (a JSON object, fenced or not) as the workflow's ``validate_answers`` accepts it, turn
    marks naming replies of this conversation; otherwise ``{"unparsed": raw, "error": why}`` (never guessed)."""
    start, end = raw.find("{"), raw.rfind("}")
    try:
        values = json.loads(raw[start : end + 1]) if 0 <= start < end else None
        if not isinstance(values, dict):
            raise ValueError("no JSON object in the answer")
        if turn_marks and isinstance(values.get(turn_marks), list):
            # JSON numbers for reply numbers are the same marks ("2" and 2), not a guess
            values[turn_marks] = [str(mark) for mark in values[turn_marks]]
        clean = schema.validate_answers(values)
        beyond = [m for m in clean.get(turn_marks or "", []) or [] if not 1 <= int(m) <= replies]
        if beyond:
            raise ValueError(f"{turn_marks}: {beyond} name no reply of this conversation (1-{replies})")
    except (ValueError, AnswerValidationError) as error:
        return {"unparsed": raw, "error": str(error)}
    return clean


def _calling(what: str, call: Callable[[], T]) -> T:
    """``call()`` with up to :data:`ATTEMPTS` tries; then ``CompanionUnavailable`` (the stored turns stay)."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return call()
        except CompanionError as error:
            logger.warning("simulate-sessions: %s failed (try %d of %d): %s", what, attempt, ATTEMPTS, error)
            last = error
            if attempt < ATTEMPTS:
                time.sleep(BACKOFF_S * attempt)  # a busy or rate-limiting server gets a moment
    raise CompanionUnavailable(f"{what}: {last}; rerun the command to resume (nothing stored was lost)")


def _companion_reply(pending: live_turns.PendingReply) -> Reply:
    """The companion's reply, streamed as for a rater (so its first-token time is stored too)."""
    stream = stream_reply(endpoint=pending.endpoint, messages=pending.messages)
    try:
        for _delta in stream:
            pass
    finally:
        stream.close()
    return stream.reply


def _state(engine: Engine, session_id: str) -> tuple[LiveSession, list[LiveTurn], Scenario]:
    with read_session(engine) as session:
        live = session.get(LiveSession, session_id)
        assert live is not None, session_id
        item = session.get(Item, live.item_id)
        row = session.get(ScenarioRow, item.scenario_id) if item is not None else None
        if row is None:
            raise InvalidInput(f"session: the scenario of simulated session {session_id!r} is gone")
        return live, session_turns(session, session_id), Scenario.model_validate(scenario_record(row))


def _one_turn(
    engine: Engine, *, live: LiveSession, turns: list[LiveTurn], scenario: Scenario, user: CompanionEndpoint
) -> None:
    """Store the next exchange: ask the pending reply again, or write the next user message and get its reply."""
    if turns and turns[-1].role == "user":
        with write_session(engine) as session:
            pending = live_turns.pending_retry(session, session_id=live.id, user=None)
    else:
        if turns or not scenario.user_input.strip():
            messages = user_messages(scenario=scenario, turns=turns)
            text = _calling("the user model", lambda: complete_reply(endpoint=user, messages=messages)).text.strip()
        else:
            text = scenario.user_input
        pending = _begin(engine, live=live, text=text)
    reply = _calling("the companion", lambda: _companion_reply(pending))
    with write_session(engine) as session:
        live_turns.finish_turn(session, pending=pending, reply=reply)


def _begin(engine: Engine, *, live: LiveSession, text: str) -> live_turns.PendingReply:
    """Store the simulated user's message as a rater's is stored: the text checked and the crisis classifier (an
    HTTP call) asked with no transaction open, then :func:`live_turns.begin_turn`."""
    with read_session(engine) as session:
        limit = live_spec(campaign_state(session, _campaign_name(session, live))).max_message_chars
        if len(text) > limit:  # the guard would refuse it: a simulated user's rambling is cut, not the run stopped
            logger.warning("simulate-sessions: session %s: a user message cut to %d characters", live.id, limit)
            text = text[:limit]
        classifier = live_turns.checked_message(session, session_id=live.id, user=None, text=text)
    signals = live_turns.message_signals(text, classifier=classifier) if classifier is not None else None
    with write_session(engine) as session:
        return live_turns.begin_turn(session, session_id=live.id, user=None, text=text, signals=signals)


def _campaign_name(session: Session, live: LiveSession) -> str:
    campaign = session.get(Campaign, live.campaign_id)
    assert campaign is not None
    return campaign.name


def _rate(
    engine: Engine, *, live: LiveSession, turns: list[LiveTurn], scenario: Scenario, user: CompanionEndpoint
) -> None:
    """End the conversation (if ``turns`` ended it early) and store the user model's rating of it."""
    with read_session(engine) as session:
        found = campaign_state(session, _campaign_name(session, live))
    messages = rating_messages(scenario=scenario, turns=turns, schema=found.schema)
    raw = _calling("the user model's rating", lambda: complete_reply(endpoint=user, messages=messages)).text
    rating = parse_rating(raw, schema=found.schema, turn_marks=live_spec(found).turn_marks, replies=replies_done(turns))
    if "unparsed" in rating:
        logger.warning("simulate-sessions: session %s: rating not accepted: %s", live.id, rating["error"])
    with write_session(engine) as session:
        stored = session.get(LiveSession, live.id)
        assert stored is not None
        now = utc_now()
        stored.status, stored.simulated_rating, stored.updated_at = "rated", rating, now
        stored.ended_at = stored.ended_at or now
        session.add(stored)


def play_session(engine: Engine, *, session_id: str, user: CompanionEndpoint, turns: int) -> None:
    """Bring simulated session ``session_id`` to ``turns`` replies (or the end the workflow sets) and rate it,
    from whatever is stored: a fresh session, one cut off mid-way, or an unrated one. A rated session is left."""
    while True:
        live, stored, scenario = _state(engine, session_id)
        if live.status == "rated":
            return
        pending = bool(stored) and stored[-1].role == "user"
        if live.status == "open" and (pending or replies_done(stored) < turns):
            _one_turn(engine, live=live, turns=stored, scenario=scenario, user=user)
            continue
        _rate(engine, live=live, turns=stored, scenario=scenario, user=user)
        return


def check_turns(turns: int | None, *, min_turns: int, max_turns: int) -> int:
    """``turns`` (default ``max_turns``); ``InvalidInput`` outside ``min_turns..max_turns``."""
    chosen = max_turns if turns is None else turns
    if not min_turns <= chosen <= max_turns:
        raise InvalidInput(
            f"turns: must lie within {min_turns}..{max_turns} (the workflow's min and max), not {chosen}"
        )
    return chosen


def simulate(
    engine: Engine,
    *,
    campaign: str,
    user: CompanionEndpoint,
    sessions: int,
    turns: int | None = None,
    progress: bool = False,
) -> SimulationSummary:
    """Bring the simulated sessions of (``campaign``, ``user.model``) to ``sessions`` in all, each ``turns`` replies
    long (default: the workflow's ``max_turns``) and rated. Stored sessions are finished first (a killed run
    resumes), then new ones are added, session k on the campaign's item k mod items (item order). With
    ``user.seed`` set, session k asks the user model with seed ``user.seed + k``. A resumed session is brought to
    this run's ``turns`` (rerun with the same ``turns``). A model call that fails :data:`ATTEMPTS` times stops the
    run with ``CompanionUnavailable``; everything stored stays and a rerun resumes. ``progress``: a bar on stderr
    counting the sessions this run finishes."""
    with read_session(engine) as session:
        found = campaign_state(session, campaign)
        spec = live_spec(found)
        require_open(found)
        items = campaign_items(session, found.id)
        lives = simulated_sessions(session, campaign_id=found.id, user_model=user.model)
        stored = [live.id for live in lives]
        unrated = {live.id for live in lives if live.status != "rated"}
    chosen = check_turns(turns, min_turns=spec.min_turns, max_turns=spec.max_turns)
    if not items:
        raise InvalidInput(f"campaign: {campaign!r} has no items to simulate sessions on")
    todo = [(index, session_id) for index, session_id in enumerate(stored) if session_id in unrated]
    with tqdm(
        total=len(todo) + max(sessions - len(stored), 0), desc="sessions", unit="session", disable=not progress
    ) as bar:
        for index, session_id in todo:
            play_session(engine, session_id=session_id, user=_seeded(user, index), turns=chosen)
            bar.update()
        for index in range(len(stored), sessions):
            with write_session(engine) as session:
                item_id = items[index % len(items)]
                live = open_simulated_session(session, campaign=campaign, item_id=item_id, user_model=user.model)
                session_id = live.id
            play_session(engine, session_id=session_id, user=_seeded(user, index), turns=chosen)
            bar.update()
    return summary(engine, campaign=campaign, user_model=user.model, added=max(sessions - len(stored), 0),
                   resumed=len(todo))  # fmt: skip


def _seeded(user: CompanionEndpoint, index: int) -> CompanionEndpoint:
    return user if user.seed is None else replace(user, seed=user.seed + index)


def summary(engine: Engine, *, campaign: str, user_model: str, added: int = 0, resumed: int = 0) -> SimulationSummary:
    """What the store holds for (``campaign``, ``user_model``)'s simulated sessions."""
    with read_session(engine) as session:
        found = campaign_state(session, campaign)
        lives = simulated_sessions(session, campaign_id=found.id, user_model=user_model)
        replies = sum(replies_done(session_turns(session, live.id)) for live in lives)
    variants: dict[str, int] = {str(variant): 0 for variant in live_spec(found).variants}
    for live in lives:
        variants[live.variant] = variants.get(live.variant, 0) + 1
    ratings = [live.simulated_rating for live in lives if live.status == "rated" and live.simulated_rating]
    return SimulationSummary(
        campaign=campaign,
        user_model=user_model,
        sessions=len(lives),
        added=added,
        resumed=resumed,
        turns=replies,
        rated=len(ratings),
        unparsed=sum(1 for rating in ratings if "unparsed" in rating),
        needs_review=sum(1 for live in lives if live.needs_review),
        variants=variants,
    )
