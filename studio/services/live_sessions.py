"""Live companion sessions: open (or resume) a rater's conversation, show it, end it and rate it
(ARCHITECTURE.md "Live sessions"). The turns themselves: :mod:`studio.services.live_turns`.

A session is opened on the item the queue hands the rater (a lease holds the item's slot, renewed on every turn), with
a variant drawn at random among the variants this scenario has had least (balanced per scenario). What a rater is
sent (:class:`LiveSessionView`) never names the model or the variant; staff read the whole record
(:class:`Transcript`). The rating is an ordinary answer on the item (:func:`studio.services.answers.submit`), so it
is written once, with the values given, and a resend is idempotent.
"""

from __future__ import annotations

import random
import secrets
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel
from sqlalchemy import func, select, update
from sqlmodel import Session, col

from studio.errors import Conflict, InvalidInput, NotFound, PermissionDenied
from studio.models import Answer, Campaign, Item, Lease, LiveSession, LiveTurn, ScenarioRow, UserPublic, utc_now
from studio.services import answers
from studio.services.answer_values import AnswerLimits, Submission
from studio.services.content import build_item_content
from studio.services.queue import DEFAULT_LEASE_SECONDS, campaign_state, require_open, take_lease
from studio.services.queue_rows import CampaignState
from studio.workflow_live import LiveSpec

#: Shown to every rater beside the conversation: they read distressing text.
RATER_CARE_NOTE = (
    "This conversation may be distressing to read. You can stop at any time. If it brings up something hard for "
    "you, please talk to someone you trust or a support line: in the US call or text 988; in China 400-161-9995 "
    "or 12356; elsewhere findahelpline.com lists free services."
)
_RANDOM = random.SystemRandom()


class LiveTurnView(BaseModel):
    """One message as its rater sees it: number, who wrote it (user | assistant), the text."""

    number: int
    role: str
    text: str


class LiveSessionView(BaseModel):
    """A session as its rater sees it: the scenario (persona, history, context, the opening line), the turns so far,
    the limits and what is open now. Never the model, never the variant."""

    session_id: str
    item_id: int
    status: str
    title: str
    instructions: str
    guidelines: str
    content: dict[str, Any]
    questions: list[dict[str, Any]]
    turns: list[LiveTurnView]
    min_turns: int
    max_turns: int
    #: The companion's replies so far (exchanges done).
    turns_done: int
    #: The last message has no reply yet (the companion failed or the page was closed): retry it.
    reply_pending: bool
    #: The rater may end the conversation and rate (``min_turns`` exchanges done).
    can_rate: bool
    max_message_chars: int
    #: The rater's stored rating (values as stored), once rated.
    rating: dict[str, Any] | None = None
    care_note: str = RATER_CARE_NOTE


def live_spec(campaign: CampaignState) -> LiveSpec:
    """The campaign's ``live:`` section; ``InvalidInput`` for a campaign whose target is not ``live_session``."""
    spec = campaign.schema.live
    if spec is None:
        raise InvalidInput(f"campaign: {campaign.name!r} is not a live_session campaign")
    return spec


def balanced_variant(
    session: Session, *, item_id: int, variants: list[str], simulated: bool, user_model: str | None = None
) -> str:
    """A variant drawn at random among those this item's sessions have had least: people's sessions, or the
    simulated ones of ``user_model`` (each user model is balanced on its own)."""
    counts = dict.fromkeys(variants, 0)
    query = (
        select(col(LiveSession.variant), func.count())
        .where(col(LiveSession.item_id) == item_id, col(LiveSession.simulated).is_(simulated))
        .group_by(col(LiveSession.variant))
    )
    if simulated and user_model is not None:
        query = query.where(col(LiveSession.user_model) == user_model)
    for variant, count in session.execute(query):
        if variant in counts:
            counts[variant] = int(count)
    fewest = min(counts.values())
    return _RANDOM.choice([variant for variant in variants if counts[variant] == fewest])


def renew_lease(session: Session, *, lease_id: str | None, now: datetime, seconds: int) -> None:
    """Keep the session's item slot while the rater talks (an open lease only)."""
    if lease_id is None:
        return
    session.execute(
        update(Lease)
        .where(col(Lease.id) == lease_id, col(Lease.released_at).is_(None))
        .values(expires_at=now + timedelta(seconds=seconds))
    )


def _open_session_of(session: Session, *, campaign_id: int, user_id: int) -> LiveSession | None:
    query = select(LiveSession).where(
        col(LiveSession.campaign_id) == campaign_id,
        col(LiveSession.user_id) == user_id,
        col(LiveSession.status).in_(["open", "ended"]),
    )
    return session.execute(query.order_by(col(LiveSession.created_at))).scalars().first()


def open_session(
    session: Session,
    *,
    campaign: str,
    user: UserPublic,
    lease_seconds: int = DEFAULT_LEASE_SECONDS,
    now: datetime | None = None,
) -> tuple[LiveSessionView, bool] | None:
    """The caller's open session in the campaign (resumed, its lease renewed), or a new one on their next item;
    ``(view, created)``, or None when no item is left for them."""
    now = now or utc_now()
    found = campaign_state(session, campaign)
    spec = live_spec(found)
    require_open(found)
    existing = _open_session_of(session, campaign_id=found.id, user_id=user.id)
    if existing is not None:
        renew_lease(session, lease_id=existing.lease_id, now=now, seconds=lease_seconds)
        return session_view(session, live=existing, campaign=found), False
    handout = take_lease(
        session, campaign=campaign, user=user, lease_seconds=lease_seconds, now=now, whole_campaign=True
    )
    if handout is None:
        return None
    # take_lease holds the campaign's queue lock until this transaction ends (SQLite: the write lock), so two raters
    # opening sessions at once draw one after the other and each counts the other's variant.
    variant = balanced_variant(session, item_id=handout.item_id, variants=list(spec.variants), simulated=False)
    live = LiveSession(
        id=secrets.token_urlsafe(16),
        campaign_id=found.id,
        item_id=handout.item_id,
        user_id=user.id,
        lease_id=handout.lease_id,
        variant=variant,
        created_at=now,
        updated_at=now,
    )
    session.add(live)
    session.flush()
    return session_view(session, live=live, campaign=found), True


def session_turns(session: Session, session_id: str) -> list[LiveTurn]:
    """The session's messages in order (each user message before its reply)."""
    query = select(LiveTurn).where(col(LiveTurn.session_id) == session_id)
    turns = list(session.execute(query).scalars())
    return sorted(turns, key=lambda turn: (turn.number, turn.role != "user"))


def replies_done(turns: list[LiveTurn]) -> int:
    return sum(1 for turn in turns if turn.role == "assistant")


def _rater_content(session: Session, *, live: LiveSession, campaign: CampaignState) -> dict[str, Any]:
    scenario = scenario_row_of(session, live)
    content = build_item_content(scenario=scenario, responses=[], reveal=list(campaign.schema.reveal))
    content["opening_line"] = content.pop("user_input")
    return content


def scenario_row_of(session: Session, live: LiveSession) -> ScenarioRow:
    """The scenario the session's item points at; ``NotFound`` when the item or the scenario is gone."""
    item = session.get(Item, live.item_id)
    scenario = session.get(ScenarioRow, item.scenario_id) if item is not None else None
    if scenario is None:
        raise NotFound(f"session: the scenario of session {live.id!r} is gone")
    return scenario


def session_view(session: Session, *, live: LiveSession, campaign: CampaignState) -> LiveSessionView:
    """What the rater of ``live`` sees now."""
    spec = live_spec(campaign)
    turns = session_turns(session, live.id)
    done = replies_done(turns)
    pending = bool(turns) and turns[-1].role == "user"
    rating = None
    if live.answer_id is not None:
        stored = session.get(Answer, live.answer_id)
        rating = dict(stored.values) if stored is not None else None
    return LiveSessionView(
        session_id=live.id,
        item_id=live.item_id,
        status=live.status,
        title=campaign.schema.title,
        instructions=campaign.schema.instructions,
        guidelines=campaign.schema.guidelines,
        content=_rater_content(session, live=live, campaign=campaign),
        questions=campaign.schema.public_questions(),
        turns=[LiveTurnView(number=turn.number, role=turn.role, text=turn.text) for turn in turns],
        min_turns=spec.min_turns,
        max_turns=spec.max_turns,
        turns_done=done,
        reply_pending=pending,
        can_rate=done >= spec.min_turns and not pending and live.status != "rated",
        max_message_chars=spec.max_message_chars,
        rating=rating,
    )


def get_session(session: Session, session_id: str) -> LiveSession:
    """The session row; ``NotFound`` when there is none."""
    live = session.get(LiveSession, session_id)
    if live is None:
        raise NotFound(f"session_id: no live session {session_id!r}")
    return live


def own_session(session: Session, *, session_id: str, user: UserPublic) -> LiveSession:
    """The caller's own session; ``PermissionDenied`` for someone else's (or a simulated one)."""
    live = get_session(session, session_id)
    if live.user_id != user.id:
        raise PermissionDenied("session_id: this session belongs to someone else")
    return live


def campaign_of(session: Session, live: LiveSession) -> CampaignState:
    campaign = session.get(Campaign, live.campaign_id)
    if campaign is None:
        raise NotFound(f"session: the campaign of session {live.id!r} is gone")
    return campaign_state(session, campaign.name)


def rate_session(
    session: Session,
    *,
    session_id: str,
    user: UserPublic,
    submission_id: str,
    values: dict[str, Any],
    seconds_spent: float | None = None,
    limits: AnswerLimits = AnswerLimits(),
    now: datetime | None = None,
) -> answers.SubmitResult:
    """Store the rater's rating of their conversation as their answer on the item (idempotent on ``submission_id``).

    Refused (``Conflict``) before ``min_turns`` exchanges or while a reply is pending; a turn mark must name a reply
    the companion gave (``InvalidInput``). The session is then ``rated`` and its lease closed by the submit.
    """
    now = now or utc_now()
    live = own_session(session, session_id=session_id, user=user)
    campaign = campaign_of(session, live)
    spec = live_spec(campaign)
    if live.status != "rated":  # a rated session's resend goes straight to the submit (idempotent or Conflict)
        _check_can_rate(session, live=live, spec=spec, values=values)
    submission = Submission(
        item_id=live.item_id,
        lease_id=live.lease_id or "-",
        submission_id=submission_id,
        answers=values,
        seconds_spent=seconds_spent,
    )
    result = answers.submit(
        session, campaign=campaign.name, user=user, submission=submission, limits=limits, live_rating=True
    )
    if result.created:
        live.status, live.answer_id, live.ended_at, live.updated_at = "rated", result.answer.id, now, now
        session.add(live)
        session.flush()
    return result


def _check_can_rate(session: Session, *, live: LiveSession, spec: LiveSpec, values: dict[str, Any]) -> None:
    """``Conflict`` before ``min_turns`` replies or while a reply is pending; ``InvalidInput`` for a turn mark that
    names no reply."""
    turns = session_turns(session, live.id)
    done = replies_done(turns)
    if done < spec.min_turns or (turns and turns[-1].role == "user"):
        raise Conflict(
            f"session: rate after at least {spec.min_turns} replies and once the last message has its reply "
            f"({done} so far)"
        )
    _check_marks(values, spec=spec, replies=done)


def _check_marks(values: dict[str, Any], *, spec: LiveSpec, replies: int) -> None:
    if spec.turn_marks is None:
        return
    marks = values.get(spec.turn_marks)
    if not isinstance(marks, list):
        return  # absent, or not a list: the schema's validation (answers.submit) says what is wrong
    beyond = [mark for mark in marks if not str(mark).isdigit() or not 1 <= int(mark) <= replies]
    if beyond:
        raise InvalidInput(f"answers.{spec.turn_marks}: {beyond} name no reply of this conversation (1-{replies})")
