"""The turns of a live session (ARCHITECTURE.md "Live sessions"): the rater's message is stored before the
companion is called, the reply after it, each in its own short transaction — the model call holds no transaction, and
a reply that fails loses nothing (the message stays, its reply is retried).

Each message passes the guards first (length, the rater's messages per minute, the campaign's token budget, the turn
limit), then the crisis tripwire (``pipeline.live.tripwire``): a flagged message marks the session for expert review
and its reply is checked for the SAP behaviours (empathy, a risk check, resources; not dismissal, not a change of
topic). Prompts are built as ``h2h generate`` builds them (``pipeline.live.companion.live_messages``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col

from pipeline.live.companion import CompanionEndpoint, Reply, live_messages
from pipeline.live.tripwire import ClassifierEndpoint, check_sap_reply, tripwire
from pipeline.records import Scenario
from studio.db import lock_item
from studio.errors import Conflict, InvalidInput, PermissionDenied, TooManyRequests
from studio.models import Campaign, LiveSession, LiveTurn, UserPublic, utc_now
from studio.services.curation_decisions import scenario_record
from studio.services.live_endpoint import (
    LiveEndpointConfig,
    classifier_endpoint,
    companion_endpoint,
    endpoint_config,
)
from studio.services.live_sessions import (
    LiveTurnView,
    campaign_of,
    get_session,
    live_spec,
    renew_lease,
    replies_done,
    scenario_row_of,
    session_turns,
)
from studio.services.queue import DEFAULT_LEASE_SECONDS, require_open
from studio.services.text import unstorable
from studio.workflow_live import LiveSpec

logger = logging.getLogger(__name__)
#: What no store can hold in a text column: NUL (PostgreSQL) and lone surrogates (not Unicode).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


@dataclass(frozen=True)
class PendingReply:
    """A stored message waiting for its reply: what the companion call needs (never sent to a rater)."""

    session_id: str
    campaign_id: int
    number: int
    endpoint: CompanionEndpoint
    messages: list[dict[str, str]]
    #: The message carried a crisis signal: the reply gets the SAP check.
    crisis: bool
    max_turns: int


def _session_for_turn(session: Session, *, session_id: str, user: UserPublic | None) -> LiveSession:
    """The session, locked for this turn: the caller's own (or a simulated one when ``user`` is None), still open."""
    live = get_session(session, session_id)
    lock_item(session, live.item_id)  # PostgreSQL: one turn of a session at a time (SQLite: the write lock)
    session.refresh(live)
    owner = None if user is None else user.id
    if live.user_id != owner or (user is None) != live.simulated:
        raise PermissionDenied("session_id: this session belongs to someone else")
    if live.status != "open":
        raise Conflict(f"session: the conversation has ended ({live.status}); rate it or start the next one")
    return live


def _check_rate(session: Session, *, user: UserPublic | None, spec: LiveSpec, now: datetime) -> None:
    """At most ``messages_per_minute`` messages of one rater in the last minute, over all their sessions."""
    if user is None:
        return
    query = (
        select(func.count())
        .select_from(LiveTurn)
        .join(LiveSession, col(LiveSession.id) == col(LiveTurn.session_id))
        .where(
            col(LiveSession.user_id) == user.id,
            col(LiveTurn.role) == "user",
            col(LiveTurn.created_at) > now - timedelta(minutes=1),
        )
    )
    if int(session.execute(query).scalar() or 0) >= spec.messages_per_minute:
        raise TooManyRequests(
            f"text: at most {spec.messages_per_minute} messages a minute; wait a moment and send it again",
            retry_after_seconds=60,
        )


def tokens_spent(session: Session, campaign_id: int) -> int:
    """Tokens the campaign's companion has used so far (prompt + reply, every stored reply)."""
    query = select(
        func.coalesce(func.sum(col(LiveTurn.prompt_tokens)), 0),
        func.coalesce(func.sum(col(LiveTurn.completion_tokens)), 0),
    ).where(col(LiveTurn.campaign_id) == campaign_id, col(LiveTurn.role) == "assistant")
    prompt, completion = session.execute(query).one()
    return int(prompt) + int(completion)


def token_budget(*, config: LiveEndpointConfig, spec: LiveSpec) -> int | None:
    """The campaign's token budget: the one it was created with, else its workflow's ``live.token_budget``."""
    return config.token_budget if config.token_budget is not None else spec.token_budget


def _check_budget(session: Session, *, campaign_id: int, budget: int | None) -> None:
    if budget is not None and tokens_spent(session, campaign_id) >= budget:
        raise Conflict(
            f"campaign: this campaign's token budget ({budget:,} tokens) is spent, so the companion cannot answer "
            "any more; ask the campaign's admin to raise it"
        )


def _check_text(text: str, *, spec: LiveSpec) -> str:
    if why := unstorable(text, "text"):  # a NUL (PostgreSQL's text cannot hold one) or a lone surrogate
        raise InvalidInput(why)
    if not text.strip():
        raise InvalidInput("text: write a message first")
    if len(text) > spec.max_message_chars:
        raise InvalidInput(f"text: at most {spec.max_message_chars} characters ({len(text)} given)")
    return text


def begin_turn(
    session: Session,
    *,
    session_id: str,
    user: UserPublic | None,
    text: str,
    lease_seconds: int = DEFAULT_LEASE_SECONDS,
    now: datetime | None = None,
    signals: list[dict[str, Any]] | None = None,
) -> PendingReply:
    """Store the user's next message (the caller's, or a simulated user's when ``user`` is None) and return what the
    companion call needs. ``Conflict`` when a reply is pending (retry it first), the turn limit is reached, the
    session has ended or the budget is spent; ``InvalidInput`` for an empty or over-long text; ``TooManyRequests``
    past the per-minute limit. ``signals``: the tripwire's signals computed beforehand, off the transaction
    (:func:`checked_message`, :func:`message_signals`); None runs the tripwire here."""
    now = now or utc_now()
    live = _session_for_turn(session, session_id=session_id, user=user)
    campaign = campaign_of(session, live)
    require_open(campaign)
    spec, config = live_spec(campaign), endpoint_config(_stored_endpoint(session, live))
    turns = session_turns(session, live.id)
    if turns and turns[-1].role == "user":
        raise Conflict("session: the last message has no reply yet; retry it before writing another")
    if replies_done(turns) >= spec.max_turns:
        raise Conflict(f"session: the conversation has its {spec.max_turns} turns; rate it now")
    _check_text(text, spec=spec)
    _check_rate(session, user=user, spec=spec, now=now)
    _check_budget(session, campaign_id=campaign.id, budget=token_budget(config=config, spec=spec))
    if signals is None:
        signals = message_signals(text, classifier=classifier_endpoint(config))
    number = replies_done(turns) + 1
    session.add(LiveTurn(session_id=live.id, campaign_id=campaign.id, number=number, role="user", text=text,
                         created_at=now, crisis=signals))  # fmt: skip
    if signals:
        live.needs_review = True
    live.updated_at = now
    session.add(live)
    renew_lease(session, lease_id=live.lease_id, now=now, seconds=lease_seconds)
    session.flush()
    return _pending(session, live=live, spec=spec, endpoint=companion_endpoint(config, spec=spec), crisis=bool(signals))


def message_signals(text: str, *, classifier: ClassifierEndpoint | None) -> list[dict[str, Any]]:
    """The crisis tripwire's signals on a user's message, as stored in ``LiveTurn.crisis`` (the lexicon's, then the
    classifier's; a failing classifier leaves the lexicon's)."""
    return [asdict(signal) for signal in tripwire(text, classifier=classifier)]


def checked_message(
    session: Session, *, session_id: str, user: UserPublic | None, text: str
) -> ClassifierEndpoint | None:
    """Check ``text`` against the session's limits before anything is stored (``InvalidInput`` as
    :func:`begin_turn`) and return the campaign's crisis classifier, if any. The classifier is an HTTP call (up to
    its timeout), so the caller asks it with no transaction open and passes the signals to :func:`begin_turn`."""
    live = get_session(session, session_id)
    owner = None if user is None else user.id
    if live.user_id != owner:
        raise PermissionDenied("session_id: this session belongs to someone else")
    _check_text(text, spec=live_spec(campaign_of(session, live)))
    return classifier_endpoint(endpoint_config(_stored_endpoint(session, live)))


def _stored_endpoint(session: Session, live: LiveSession) -> dict[str, Any] | None:
    campaign = session.get(Campaign, live.campaign_id)
    return campaign.live_endpoint if campaign is not None else None


def _scenario(session: Session, live: LiveSession) -> Scenario:
    """The session's scenario as the pipeline's record, the prompt's input."""
    return Scenario.model_validate(scenario_record(scenario_row_of(session, live)))


def _pending(
    session: Session, *, live: LiveSession, spec: LiveSpec, endpoint: CompanionEndpoint, crisis: bool
) -> PendingReply:
    turns = session_turns(session, live.id)
    conversation = [(turn.role, turn.text) for turn in turns]
    messages = live_messages(scenario=_scenario(session, live), variant=live.variant, turns=conversation)  # type: ignore[arg-type]
    return PendingReply(
        session_id=live.id,
        campaign_id=live.campaign_id,
        number=turns[-1].number,
        endpoint=endpoint,
        messages=messages,
        crisis=crisis,
        max_turns=spec.max_turns,
    )


def pending_retry(session: Session, *, session_id: str, user: UserPublic | None) -> PendingReply:
    """The last message again, for a retry of its reply; ``Conflict`` when every message has its reply."""
    live = _session_for_turn(session, session_id=session_id, user=user)
    campaign = campaign_of(session, live)
    require_open(campaign)
    spec, config = live_spec(campaign), endpoint_config(_stored_endpoint(session, live))
    turns = session_turns(session, live.id)
    if not turns or turns[-1].role != "user":
        raise Conflict("session: every message has its reply; there is nothing to retry")
    _check_budget(session, campaign_id=campaign.id, budget=token_budget(config=config, spec=spec))
    crisis = bool(turns[-1].crisis)
    return _pending(session, live=live, spec=spec, endpoint=companion_endpoint(config, spec=spec), crisis=crisis)


def storable_reply(text: str) -> str:
    """The model's text as it can be stored on both stores: a NUL or a lone surrogate (model output is untrusted;
    PostgreSQL's text holds neither, no driver encodes the latter) becomes U+FFFD."""
    return _UNSTORABLE.sub("\ufffd", text)


def finish_turn(session: Session, *, pending: PendingReply, reply: Reply, now: datetime | None = None) -> LiveTurnView:
    """Store the companion's reply to message ``pending.number`` (with its latency and tokens, and the SAP check
    where the message was flagged); the conversation ends at ``max_turns``. ``Conflict`` when that message already
    has a reply (the same retry finished in another tab)."""
    now = now or utc_now()
    live = get_session(session, pending.session_id)
    sap = None
    if pending.crisis:
        check = check_sap_reply(reply.text)
        sap = {**asdict(check), "passed": check.passed, "missing": check.missing()}
    turn = LiveTurn(session_id=live.id, campaign_id=pending.campaign_id, number=pending.number, role="assistant",
                    text=storable_reply(reply.text), created_at=now, sap_check=sap, latency_ms=reply.latency_ms,
                    first_token_ms=reply.first_token_ms, prompt_tokens=reply.prompt_tokens,
                    completion_tokens=reply.completion_tokens, usage_estimated=reply.usage_estimated)  # fmt: skip
    try:
        with session.begin_nested():
            session.add(turn)
            session.flush()
    except IntegrityError:
        raise Conflict("session: this message already has its reply (answered in another tab?)") from None
    if pending.number >= pending.max_turns:
        live.status, live.ended_at = "ended", now
    live.updated_at = now
    session.add(live)
    session.flush()
    return LiveTurnView(number=turn.number, role=turn.role, text=turn.text)
