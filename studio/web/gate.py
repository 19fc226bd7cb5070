"""The studio's front gate: every request body is bounded, and strangers are refused before their body is read.

:class:`RequestGate` sits in front of every route of the studio (the API, the pages and Gradio's routes alike):

- a request with a body to any route but the sign-in and sign-out forms must carry a *live* session token (the API:
  a Bearer header; the pages and Gradio: the ``h2h_session`` cookie or a Bearer header), else 401 before a byte of its
  body is read, whatever its size. A made-up token costs one store lookup; a token the store confirmed live within
  :data:`LIVE_SECONDS` is believed without one (a :class:`studio.web.deps.RecentCallers` record of the gate's own),
  so the answering hot path costs no extra query
  — and the route resolves its caller again anyway, so a token revoked meanwhile is still refused there;
- a body declared (``Content-Length``) over ``Settings.max_request_bytes`` answers 413 before a byte of it is read;
  every body is then read under guard (:class:`studio.web.bodies.GuardedBody`): cut with 413 once it passes the
  limit (a chunked one), 422 once its JSON nests deeper than :data:`studio.web.bodies.MAX_JSON_DEPTH` levels, 408
  when its next piece does not come within ``Settings.body_timeout_seconds`` — answered ``{"detail": ...}`` whatever
  the route would have said. Uploads (Gradio's upload routes, any multipart POST under ``/ui``) pass on to
  :class:`studio.web.uploads.UploadGate`, which does the same for them with the admin page's import limit
  (``Settings.max_upload_bytes``) and lets only those who may import send one.

Uvicorn reads a body only as the application asks for it (pausing the socket past 64 KiB), so a refused body never
reaches memory. The refusal closes the connection (the unread body cannot be skipped).
"""

from __future__ import annotations

import math

from fastapi import Request
from fastapi.responses import JSONResponse
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from studio.errors import StoreUnavailable
from studio.web.bodies import MAX_JSON_DEPTH, GuardedBody
from studio.web.deps import RecentCallers, token_from_request
from studio.web.middleware import live_username, too_large_detail
from studio.web.sessions import EVENT_ROUTES
from studio.web.uploads import is_upload

#: Routes anyone may send a body to: the sign-in forms, and the sign-out form (which only drops a cookie without one).
PUBLIC_BODY_ROUTES = frozenset({"/login", "/logout", "/api/v1/login"})
API_PATH = "/api/"
#: How long a token the store confirmed live is believed by the gate without asking again (seconds).
LIVE_SECONDS = 60.0
#: While the store cannot be asked, a token it confirmed within this long is still believed by the gate (seconds):
#: the route then says "the database is unavailable ... retry" in its own words (``studio.web.faults``).
OUTAGE_SECONDS = 300.0
#: The largest event body a page whose sign-in ended may still send (its click, to be told it was signed out).
SIGNED_OUT_EVENT_BYTES = 64 * 1024
#: Bodies that are not JSON to any route (forms): their depth is not scanned.
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/")


def declared_length(headers: Headers) -> int | None:
    """The body's declared length; None when it has none (chunked, or no header at all)."""
    declared = headers.get("content-length", "")
    return int(declared) if declared.isdigit() else None


def has_body(headers: Headers) -> bool:
    """Whether the request sends a body: a non-zero length, or a transfer coding (chunked)."""
    return bool(declared_length(headers)) or "transfer-encoding" in headers


def session_token(scope: Scope) -> str | None:
    """The session token the request's route reads (the API: a Bearer header only; else cookie, then Bearer)."""
    request = Request(scope)
    if scope["path"].startswith(API_PATH):
        scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
        token = credentials.strip() if scheme.lower() == "bearer" else ""
        return token or None
    return token_from_request(request)


class RequestGate:
    """ASGI middleware: see the module docstring. ``limit`` bounds every body but an upload's; ``idle_seconds`` (None:
    no bound) is the longest wait for the next piece of a body."""

    def __init__(self, app: ASGIApp, *, engine: Engine, limit: int, idle_seconds: float | None = None) -> None:
        self.app = app
        self.engine = engine
        self.limit = limit
        self.idle_seconds = idle_seconds
        # The gate's own record of tokens the store confirmed (the kind Gradio's sign-in check keeps for outages).
        self.recent = RecentCallers(grace_seconds=OUTAGE_SECONDS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not has_body(Headers(scope=scope)) or is_upload(scope):
            await self.app(scope, receive, send)  # the lifespan scope too: it has no headers
            return
        headers = Headers(scope=scope)
        declared = declared_length(headers)
        if declared is not None and declared > self.limit:
            await self._refuse(413, too_large_detail(self.limit), scope, receive, send)
            return
        if scope["path"] not in PUBLIC_BODY_ROUTES and not await self._live(scope):
            await self._refuse(
                401, "authorization: sign in first (the request carries no live session)", scope, receive, send
            )
            return
        is_form = headers.get("content-type", "").lower().startswith(FORM_TYPES)
        guard = GuardedBody(
            limit=self.limit,
            too_large=too_large_detail(self.limit),
            json_depth=None if is_form else MAX_JSON_DEPTH,
            idle_seconds=self.idle_seconds,
        )
        await guard.run(self.app, scope, receive, send)

    async def _live(self, scope: Scope) -> bool:
        """Whether the request carries a live session token: confirmed lately (``recent``), else one lookup."""
        token = session_token(scope)
        if token is None:
            return False
        if self.recent.recent(token, within=LIVE_SECONDS) is not None:
            return True
        try:
            username = await run_in_threadpool(live_username, self.engine, token)
        except StoreUnavailable:
            if self.recent.recent(token, within=OUTAGE_SECONDS) is not None:
                return True  # the route says the store is unavailable, in its words
            raise  # studio.web.faults answers it
        if username is None:
            return self._signed_out_page_event(scope, token)
        self.recent.confirmed(token, username)
        return True

    def _signed_out_page_event(self, scope: Scope, token: str) -> bool:
        """Whether a request whose token is no longer live may still send its body: an event of a page (its
        ``queue/join``) sent with a token this gate once confirmed, with a declared body of at most
        :data:`SIGNED_OUT_EVENT_BYTES`. Such a page's sign-in was ended meanwhile (deactivated, password reset,
        sessions revoked, expired); :class:`studio.web.sessions.GradioGate` lets the event through to the handlers
        only for the page that token signed in, and every handler refuses it and says "You were signed out" — a 401
        here would cover the form with bare "Error" badges instead. A token never confirmed is refused unread."""
        declared = declared_length(Headers(scope=scope))
        return (
            scope["path"].startswith(EVENT_ROUTES)
            and declared is not None
            and declared <= SIGNED_OUT_EVENT_BYTES
            and self.recent.recent(token, within=math.inf) is not None
        )

    @staticmethod
    async def _refuse(status: int, detail: str, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {"Connection": "close"}
        if status == 401 and scope["path"].startswith(API_PATH):
            headers["WWW-Authenticate"] = "Bearer"
        await JSONResponse({"detail": detail}, status_code=status, headers=headers)(scope, receive, send)
