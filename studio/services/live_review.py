"""The expert review of live sessions the crisis tripwire marked (ARCHITECTURE.md "Live sessions"): the sessions of
a campaign waiting for review, with what the tripwire saw, and the review itself (who, when, a note) — which clears
the mark and is audit-logged. The transcript a reviewer reads: :mod:`studio.services.live_transcripts`."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlmodel import Session, col

from studio.errors import Conflict
from studio.models import AuditLog, Item, LiveSession, LiveTurn, utc_now
from studio.services.live_sessions import get_session
from studio.services.queue import get_campaign
from studio.services.text import require_unicode

#: The longest review note, in characters.
MAX_NOTE_CHARS = 4000


class ReviewEntry(BaseModel):
    """A session waiting for review: which, on what scenario, how many of the user's messages were flagged and how
    many replies to them missed a SAP behaviour (each missing behaviour named once)."""

    session_id: str
    scenario_id: str
    simulated: bool
    status: str
    created_at: datetime
    flagged_messages: int
    failed_replies: int
    missing: list[str]


class ReviewIn(BaseModel):
    """A reviewer's note on a marked session (what they found, what was done)."""

    note: str = Field(min_length=1, max_length=MAX_NOTE_CHARS)


def _entry(session: Session, live: LiveSession, scenario_id: str) -> ReviewEntry:
    turns = list(session.execute(select(LiveTurn).where(col(LiveTurn.session_id) == live.id)).scalars())
    checks = [turn.sap_check for turn in turns if turn.sap_check]
    missing = sorted({word for check in checks if not check.get("passed") for word in check.get("missing", [])})
    return ReviewEntry(
        session_id=live.id,
        scenario_id=scenario_id,
        simulated=live.simulated,
        status=live.status,
        created_at=live.created_at,
        flagged_messages=sum(1 for turn in turns if turn.role == "user" and turn.crisis),
        failed_replies=sum(1 for check in checks if not check.get("passed")),
        missing=missing,
    )


def sessions_for_review(session: Session, *, campaign: str) -> list[ReviewEntry]:
    """The campaign's sessions marked for review and not yet reviewed, oldest first."""
    found = get_campaign(session, campaign)
    query = (
        select(LiveSession, col(Item.scenario_id))
        .join(Item, col(Item.id) == col(LiveSession.item_id))
        .where(col(LiveSession.campaign_id) == found.id, col(LiveSession.needs_review).is_(True))
        .order_by(col(LiveSession.created_at), col(LiveSession.id))
    )
    return [_entry(session, live, scenario_id) for live, scenario_id in session.execute(query)]


def record_review(
    session: Session, *, session_id: str, reviewer: str, note: str, now: datetime | None = None
) -> LiveSession:
    """Record ``reviewer``'s review of a marked session: the mark is cleared, who, when and the note are kept on
    the session and in the audit log. ``Conflict`` for a session that is not marked (never flagged, or reviewed)."""
    require_unicode(note, "note")
    live = get_session(session, session_id)
    if not live.needs_review:
        reviewed = f" (reviewed by {live.reviewed_by})" if live.reviewed_by else ""
        raise Conflict(f"session_id: this session is not waiting for review{reviewed}")
    now = now or utc_now()
    live.needs_review, live.reviewed_by, live.reviewed_at, live.review_note = False, reviewer, now, note
    session.add(live)
    detail = {"campaign_id": live.campaign_id, "note_chars": len(note)}
    session.add(AuditLog(actor=reviewer, action="live.review", entity="live_session", entity_id=live.id, detail=detail))
    session.flush()
    return live
