"""Live companion sessions over REST (ARCHITECTURE.md "Live sessions"): open or resume a conversation, send messages
(a JSON answer, or the reply streamed as Server-Sent Events), retry a reply, rate the conversation, read a session.

- ``POST /v1/campaigns/{name}/sessions``: 201 with a new session, 200 with the caller's open one (resumed), 204
  when nothing is left for the caller (as ``GET /v1/campaigns/{name}/next`` says it).
- ``POST /v1/sessions/{session_id}/messages`` ``{"text"}`` and ``POST .../retry``: 200 ``{"reply", "turn"}``; with
  ``Accept: text/event-stream`` the reply streams instead: ``event: delta`` / ``data: {"text"}`` per piece, then
  ``event: turn`` / ``data: {"number", "role", "text"}`` (the stored reply). Refusals before the companion is asked
  (401, 403, 404, 409, 422, 429 with ``Retry-After``) answer as HTTP errors in both modes; a companion failure
  answers 502 in JSON mode and ``event: error`` / ``data: {"detail", "status": 502}`` in SSE mode. Either way the
  message stays stored (``GET`` shows ``reply_pending``) and ``.../retry`` asks again.
- ``POST /v1/sessions/{session_id}/rating``: 201 stored, 200 on a resend of the same submission, 409 otherwise.
- ``GET /v1/sessions/{session_id}``: its rater gets the rater's view (never the model or the variant); researchers,
  curators and admins the whole :class:`~studio.usecases.live.Transcript`; anyone else 403.
"""

# No `from __future__ import annotations`: FastAPI reads the dependency types of the signatures as objects.
import json
from collections.abc import Callable, Iterator
from typing import Any

from fastapi import APIRouter, Request, Response, status
from fastapi.responses import StreamingResponse
from pydantic import RootModel

from studio.errors import CompanionUnavailable, ServiceError
from studio.services.text import safe_text
from studio.usecases import live
from studio.web.deps import CallerDep, LimitsDep
from studio.web.schemas import AnswerOut, MessageIn, MessageOut, json_model, no_content

router = APIRouter(prefix="/v1", tags=["live"])

SSE = "text/event-stream"
#: What a reply stream yields: text pieces, then the stored turn.
Pieces = Iterator[str | live.LiveTurnView]
_STREAMED: dict[int | str, dict[str, Any]] = {
    200: {"content": {SSE: {}}, "description": "with Accept: text/event-stream: the reply as SSE"}
}


@router.post(
    "/campaigns/{name}/sessions",
    response_model=live.LiveSessionView,
    status_code=status.HTTP_201_CREATED,
    responses={
        200: {"model": live.LiveSessionView, "description": "the caller's open session, resumed"},
        204: {"description": "nothing left for the caller"},
    },
)
def start(name: str, caller: CallerDep, limits: LimitsDep) -> Response:
    """Open a conversation on the caller's next scenario (201), or resume their open one (200); 204 when none is
    left."""
    with caller.writing() as (session, user):
        opened = live.start_session(session, caller=user, campaign=name, lease_seconds=limits.lease_seconds)
    if opened is None:
        return no_content()
    view, created = opened
    return json_model(view, status.HTTP_201_CREATED if created else status.HTTP_200_OK)


def _event(name: str, payload: dict[str, Any]) -> str:
    # json.dumps escapes newlines, so each payload is one `data:` line.
    return f"event: {name}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n"


def _drained(pieces: Pieces) -> Iterator[str | live.LiveTurnView]:
    """``pieces`` with the stored turn held back until the stream is exhausted: the use case stores the reply in a
    transaction that ends only when its generator resumes after yielding the turn, so the turn is passed on once it
    is committed (a client that hangs up on the turn event must not roll it back)."""
    turn: live.LiveTurnView | None = None
    for piece in pieces:
        if isinstance(piece, live.LiveTurnView):
            turn = piece
        else:
            yield piece
    if turn is not None:
        yield turn


def _collected(pieces: Pieces) -> MessageOut:
    """The whole reply of a stream and its turn number (the JSON mode)."""
    turns = [piece for piece in _drained(pieces) if isinstance(piece, live.LiveTurnView)]
    if not turns:  # the use case always ends with the turn; a stream without one stored nothing
        raise CompanionUnavailable("companion: the reply was not stored; press Retry to ask again")
    return MessageOut(reply=turns[-1].text, turn=turns[-1].number)


def _error_event(error: ServiceError) -> str:
    return _event("error", {"detail": safe_text(error.detail), "status": error.status_code})


def _sse_events(first: str | live.LiveTurnView | None, rest: Iterator[str | live.LiveTurnView]) -> Iterator[str]:
    """The SSE events of a reply whose first piece (None: there was none) was already read. Once the response has
    started, any refusal — the companion failing (502), the store failing as the reply is stored (503) — can only
    be told as an ``error`` event with its status."""
    try:
        if first is not None:
            yield _piece_event(first)
        for piece in rest:
            yield _piece_event(piece)
    except ServiceError as error:
        yield _error_event(error)


def _piece_event(piece: str | live.LiveTurnView) -> str:
    if isinstance(piece, live.LiveTurnView):
        return _event("turn", piece.model_dump())
    return _event("delta", {"text": piece})


def _answer(request: Request, ask: Callable[[], Pieces]) -> Response:
    """The reply of ``ask()`` as JSON, or streamed as SSE when the client accepts it.

    In SSE mode the first piece is read here, before the response starts: a refusal (the message not stored) is
    still an HTTP error; a companion failure from then on is an ``error`` event."""
    if SSE not in request.headers.get("accept", ""):
        return json_model(_collected(ask()))
    pieces = _drained(ask())
    try:
        first: str | live.LiveTurnView | None = next(pieces, None)
    except CompanionUnavailable as error:
        return StreamingResponse(iter([_error_event(error)]), media_type=SSE, headers=_NO_BUFFERING)
    return StreamingResponse(_sse_events(first, pieces), media_type=SSE, headers=_NO_BUFFERING)


#: Proxies (nginx) would otherwise hold the deltas back until the reply ends.
_NO_BUFFERING = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


@router.post("/sessions/{session_id}/messages", response_model=MessageOut, responses=_STREAMED)
def message(session_id: str, body: MessageIn, request: Request, caller: CallerDep, limits: LimitsDep) -> Response:
    """Send a message in the caller's conversation; the companion's reply and its turn number (or SSE)."""
    return _answer(
        request,
        lambda: live.send_message(caller, session_id=session_id, text=body.text, lease_seconds=limits.lease_seconds),
    )


@router.post("/sessions/{session_id}/retry", response_model=MessageOut, responses=_STREAMED)
def retry(session_id: str, request: Request, caller: CallerDep) -> Response:
    """Ask the companion again for the reply to the caller's last message (after a 502 or a closed page)."""
    return _answer(request, lambda: live.retry_reply(caller, session_id=session_id))


@router.post(
    "/sessions/{session_id}/rating",
    response_model=AnswerOut,
    status_code=status.HTTP_201_CREATED,
    responses={200: {"model": AnswerOut, "description": "a resend: the rating stored before"}},
)
def rating(session_id: str, body: live.Rating, caller: CallerDep, limits: LimitsDep) -> Response:
    """Rate the caller's conversation: 201, 200 with the stored rating on a resend, 409 for other values."""
    with caller.writing() as (session, user):
        result = live.rate(session, caller=user, session_id=session_id, rating=body, limits=limits)
    code = status.HTTP_201_CREATED if result.created else status.HTTP_200_OK
    return json_model(AnswerOut.of(result.answer, dict(result.answer.values)), code)


@router.get("/sessions/{session_id}", response_model=live.LiveSessionView | live.Transcript)
def read(session_id: str, caller: CallerDep) -> Response:
    """The session: to its rater as they see it (no model, no variant); to staff the whole transcript."""
    with caller.reading() as (session, user):
        return json_model(live.read_session(session, caller=user, session_id=session_id))


class ReviewList(RootModel[list[live.ReviewEntry]]):
    """The sessions waiting for review, as a JSON list."""


@router.get("/campaigns/{name}/sessions/review", response_model=list[live.ReviewEntry])
def sessions_for_review(name: str, caller: CallerDep) -> Response:
    """The campaign's sessions the crisis tripwire marked for review, not yet reviewed (experts and staff)."""
    with caller.reading() as (session, user):
        entries = live.sessions_for_review(session, caller=user, campaign=name)
    return json_model(ReviewList(root=entries))


@router.post("/sessions/{session_id}/review", response_model=live.Transcript)
def review(session_id: str, body: live.ReviewIn, caller: CallerDep) -> Response:
    """Record the caller's review of a marked session: the mark cleared, the note kept (audit-logged)."""
    with caller.writing() as (session, user):
        return json_model(live.review_session(session, caller=user, session_id=session_id, review=body))
