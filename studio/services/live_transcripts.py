"""A live session's whole record, for researchers, curators and admins (never for its rater: it names the model and
the variant): every message with its tripwire signals, SAP check, latency and tokens, and the rating."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from sqlalchemy import select
from sqlmodel import Session, col

from studio.models import Answer, Campaign, Item, LiveSession, LiveTurn, User
from studio.services.live_sessions import session_turns


class TranscriptTurn(BaseModel):
    number: int
    role: str
    text: str
    created_at: datetime
    crisis: list[dict[str, Any]]
    sap_check: dict[str, Any] | None
    latency_ms: float | None
    first_token_ms: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    usage_estimated: bool


class Transcript(BaseModel):
    """One session as stored: who (or which user model) talked, to which companion, under which variant."""

    session_id: str
    campaign: str
    item_id: int
    scenario_id: str
    rater: str | None
    simulated: bool
    user_model: str | None
    model: str | None
    variant: str
    status: str
    needs_review: bool
    reviewed_by: str | None = None
    reviewed_at: datetime | None = None
    review_note: str | None = None
    created_at: datetime
    ended_at: datetime | None
    rating: dict[str, Any] | None
    turns: list[TranscriptTurn]


def _turn(turn: LiveTurn) -> TranscriptTurn:
    return TranscriptTurn.model_validate(turn, from_attributes=True)


def transcript(session: Session, *, live: LiveSession) -> Transcript:
    """The whole record of ``live``."""
    campaign = session.get(Campaign, live.campaign_id)
    item = session.get(Item, live.item_id)
    rater = session.get(User, live.user_id) if live.user_id is not None else None
    rating: dict[str, Any] | None = live.simulated_rating
    if live.answer_id is not None:
        answer = session.get(Answer, live.answer_id)
        rating = dict(answer.values) if answer is not None else None
    endpoint = (campaign.live_endpoint or {}) if campaign is not None else {}
    return Transcript(
        session_id=live.id,
        campaign=campaign.name if campaign is not None else "",
        item_id=live.item_id,
        scenario_id=item.scenario_id if item is not None else "",
        rater=rater.username if rater is not None else None,
        simulated=live.simulated,
        user_model=live.user_model,
        model=endpoint.get("model"),
        variant=live.variant,
        status=live.status,
        needs_review=live.needs_review,
        reviewed_by=live.reviewed_by,
        reviewed_at=live.reviewed_at,
        review_note=live.review_note,
        created_at=live.created_at,
        ended_at=live.ended_at,
        rating=rating,
        turns=[_turn(turn) for turn in session_turns(session, live.id)],
    )


def campaign_transcripts(session: Session, *, campaign_id: int) -> Iterator[Transcript]:
    """Every session of the campaign (people's and simulated ones, each marked), oldest first."""
    query = (
        select(LiveSession)
        .where(col(LiveSession.campaign_id) == campaign_id)
        .order_by(col(LiveSession.created_at), col(LiveSession.id))
    )
    for live in session.execute(query).scalars():
        yield transcript(session, live=live)
