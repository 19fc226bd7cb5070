"""Live companion sessions (ARCHITECTURE.md "Live sessions"): one function per thing a rater or a researcher does.
The REST routes (``studio/web/routes/live.py``) and the Gradio live page call these same functions.

A message is two short transactions around the companion call (none is held while the model writes):
:func:`send_message` and :func:`retry_reply` take the request's :class:`RequestContext`, store the message, stream
the reply (yielding text deltas) and finally yield the stored :class:`LiveTurnView`. A failed call raises
:class:`CompanionUnavailable` with words for the rater; the message stays stored and :func:`retry_reply` asks again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel
from sqlmodel import Session

from pipeline.live.companion import CompanionError, stream_reply
from studio.errors import CompanionUnavailable
from studio.models import UserPublic
from studio.policies import LivePolicy, authorize
from studio.services import answers, live_review, live_sessions, live_transcripts, live_turns
from studio.services.answer_values import AnswerLimits
from studio.services.live_review import ReviewEntry, ReviewIn
from studio.services.live_sessions import LiveSessionView, LiveTurnView
from studio.services.live_transcripts import Transcript
from studio.services.queue import campaign_state
from studio.usecases.context import RequestContext

__all__ = [
    "LiveSessionView",
    "LiveTurnView",
    "Rating",
    "ReviewEntry",
    "ReviewIn",
    "Transcript",
    "rate",
    "read_session",
    "review_session",
    "sessions_for_review",
    "retry_reply",
    "send_message",
    "start_session",
    "transcript",
    "view_session",
]

logger = logging.getLogger(__name__)

#: What a rater is told when the companion does not answer, by ``CompanionError.kind``.
KIND_WORDS = {
    "timeout": "the companion took too long to answer",
    "unreachable": "the companion cannot be reached right now",
    "http_error": "the companion had a problem answering",
    "malformed": "the companion's answer came back garbled",
    "refused": "the companion refused the request",
}


class Rating(BaseModel):
    """A rater's rating of their conversation: an id that makes a resend safe, the answers to the questions."""

    submission_id: str
    answers: dict[str, Any]
    seconds_spent: float | None = None


def start_session(
    session: Session, *, caller: UserPublic, campaign: str, lease_seconds: int
) -> tuple[LiveSessionView, bool] | None:
    """The caller's open session in ``campaign`` (resumed) or a new one on their next scenario: ``(view,
    created)``; None when nothing is left for them."""
    authorize(caller, LivePolicy.talk(campaign_state(session, campaign)))
    return live_sessions.open_session(session, campaign=campaign, user=caller, lease_seconds=lease_seconds)


def _own(session: Session, *, caller: UserPublic, session_id: str) -> Any:
    live = live_sessions.own_session(session, session_id=session_id, user=caller)
    authorize(caller, LivePolicy.talk(live_sessions.campaign_of(session, live)))
    return live


def view_session(session: Session, *, caller: UserPublic, session_id: str) -> LiveSessionView:
    """The caller's own session as its rater sees it (no model, no variant)."""
    live = _own(session, caller=caller, session_id=session_id)
    return live_sessions.session_view(session, live=live, campaign=live_sessions.campaign_of(session, live))


def read_session(session: Session, *, caller: UserPublic, session_id: str) -> LiveSessionView | Transcript:
    """A session as the caller may see it: its rater (whatever their role) the rater's view, no model and no
    variant; anyone else the whole transcript, which only researchers, curators and admins may read."""
    if live_sessions.get_session(session, session_id).user_id == caller.id:
        return view_session(session, caller=caller, session_id=session_id)
    return transcript(session, caller=caller, session_id=session_id)


def transcript(session: Session, *, caller: UserPublic, session_id: str) -> Transcript:
    """A session's whole record, for researchers, curators and admins."""
    live = live_sessions.get_session(session, session_id)
    policy = LivePolicy.read_transcript(owner_id=live.user_id, caller_id=caller.id, needs_review=live.needs_review)
    authorize(caller, policy)
    return live_transcripts.transcript(session, live=live)


def sessions_for_review(session: Session, *, caller: UserPublic, campaign: str) -> list[ReviewEntry]:
    """The campaign's sessions the crisis tripwire marked and nobody has reviewed yet (experts and staff)."""
    authorize(caller, LivePolicy.review())
    return live_review.sessions_for_review(session, campaign=campaign)


def review_session(session: Session, *, caller: UserPublic, session_id: str, review: ReviewIn) -> Transcript:
    """Record the caller's review of a marked session (the mark cleared, the note kept and audit-logged)."""
    authorize(caller, LivePolicy.review())
    live = live_review.record_review(session, session_id=session_id, reviewer=caller.username, note=review.note)
    return live_transcripts.transcript(session, live=live)


def _streamed(context: RequestContext, pending: live_turns.PendingReply) -> Iterator[str | LiveTurnView]:
    stream = stream_reply(endpoint=pending.endpoint, messages=pending.messages)
    try:
        # The same text the turn will store: untrusted output, a NUL or a lone surrogate replaced.
        yield from (live_turns.storable_reply(delta) for delta in stream)
    except CompanionError as error:
        logger.warning("live session %s: the companion failed: %s", pending.session_id, error)
        words = KIND_WORDS.get(error.kind, "the companion could not answer")
        raise CompanionUnavailable(
            f"companion: {words}. Your message is kept; press Retry to ask again (nothing was lost)."
        ) from None
    finally:
        stream.close()
    with context.writing() as (session, _caller):
        turn = live_turns.finish_turn(session, pending=pending, reply=stream.reply)
    yield turn  # after the commit: a consumer that stops here has the reply stored, and no lock waits on it


def send_message(
    context: RequestContext, *, session_id: str, text: str, lease_seconds: int
) -> Iterator[str | LiveTurnView]:
    """Store the caller's message, then yield the reply's text as it arrives and finally its stored turn."""
    with context.reading() as (session, caller):
        _own(session, caller=caller, session_id=session_id)
        classifier = live_turns.checked_message(session, session_id=session_id, user=caller, text=text)
    # The crisis classifier is an HTTP call: asked here, off the write transaction (SQLite's one write lock).
    signals = live_turns.message_signals(text, classifier=classifier) if classifier is not None else None
    with context.writing() as (session, caller):
        pending = live_turns.begin_turn(
            session, session_id=session_id, user=caller, text=text, lease_seconds=lease_seconds, signals=signals
        )
    yield from _streamed(context, pending)


def retry_reply(context: RequestContext, *, session_id: str) -> Iterator[str | LiveTurnView]:
    """Ask the companion again for the reply to the caller's last message (after a failure or a closed page)."""
    with context.writing() as (session, caller):
        _own(session, caller=caller, session_id=session_id)
        pending = live_turns.pending_retry(session, session_id=session_id, user=caller)
    yield from _streamed(context, pending)


def rate(
    session: Session, *, caller: UserPublic, session_id: str, rating: Rating, limits: AnswerLimits
) -> answers.SubmitResult:
    """Store the caller's rating of their conversation (idempotent on ``submission_id``)."""
    _own(session, caller=caller, session_id=session_id)
    return live_sessions.rate_session(
        session,
        session_id=session_id,
        user=caller,
        submission_id=rating.submission_id,
        values=rating.answers,
        seconds_spent=rating.seconds_spent,
        limits=limits,
    )
