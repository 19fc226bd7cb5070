"""The studio's front gate: every request body is bounded, and strangers are refused before their body is read.

:class:`RequestGate` sits in front of every route of the studio (the API, the pages and Gradio's routes alike):

- a body declared (``Content-Length``) over ``Settings.max_request_bytes`` answers 413 before a byte of it is read; a
  body sent without a length (chunked) is counted as it arrives and cut with 413 once it passes the limit. Uploads
  (Gradio's upload routes, any multipart POST under ``/ui``) pass on to :class:`studio.web.uploads.UploadGate`, which
  does the same for them with the admin page's import limit (``Settings.max_upload_bytes``) and lets only those who
  may import send one;
- a request with a body to any route but the sign-in and sign-out forms must carry a session token (the API: a
  Bearer header; the pages and Gradio: the ``h2h_session`` cookie or a Bearer header), else 401 before its body is
  read. A body larger than :data:`SMALL_BODY`, or of unknown length, is read only once the token is found live in
  the store (one read); a small one goes on to its route, which resolves the caller anyway (so the answering hot
  path costs no extra query).

Uvicorn reads a body only as the application asks for it (pausing the socket past 64 KiB), so a refused body never
reaches memory. The refusal closes the connection (the unread body cannot be skipped).
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import JSONResponse
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from studio.web.deps import token_from_request
from studio.web.middleware import ResponseStarted, has_live_session, limited_receive, too_large_detail
from studio.web.uploads import is_upload

#: Routes anyone may send a body to: the sign-in forms, and the sign-out form (which only drops a cookie without one).
PUBLIC_BODY_ROUTES = frozenset({"/login", "/logout", "/api/v1/login"})
API_PATH = "/api/"
#: A body up to this size, with a token, goes on to its route unchecked: the route resolves its caller anyway.
SMALL_BODY = 64 * 1024


def declared_length(headers: Headers) -> int | None:
    """The body's declared length; None when it has none (chunked, or no header at all)."""
    declared = headers.get("content-length", "")
    return int(declared) if declared.isdigit() else None


def has_body(headers: Headers) -> bool:
    """Whether the request sends a body: a non-zero length, or a transfer coding (chunked)."""
    return bool(declared_length(headers)) or "transfer-encoding" in headers


def carries_token(scope: Scope) -> bool:
    """Whether the request names a session token the way its route reads one (the API: Bearer only)."""
    request = Request(scope)
    if scope["path"].startswith(API_PATH):
        return request.headers.get("authorization", "").lower().startswith("bearer ")
    return token_from_request(request) is not None


class RequestGate:
    """ASGI middleware: see the module docstring. ``limit`` bounds every body but an upload's."""

    def __init__(self, app: ASGIApp, *, engine: Engine, limit: int) -> None:
        self.app = app
        self.engine = engine
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not has_body(Headers(scope=scope)) or is_upload(scope):
            await self.app(scope, receive, send)  # the lifespan scope too: it has no headers
            return
        limit = self.limit
        declared = declared_length(Headers(scope=scope))
        if declared is not None and declared > limit:
            await self._refuse(413, too_large_detail(limit), scope, receive, send)
            return
        if scope["path"] not in PUBLIC_BODY_ROUTES and not await self._known(scope, declared):
            await self._refuse(
                401, "authorization: sign in first (the request carries no live session)", scope, receive, send
            )
            return
        await self._bounded(scope, limited_receive(receive, limit, too_large_detail(limit)), send)

    async def _bounded(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The request with its body bounded: a 413 raised where no application turns it into a response (a
        middleware reading the body) is answered here, unless an answer has started."""
        response = ResponseStarted(send)
        try:
            await self.app(scope, receive, response.send)
        except StarletteHTTPException as error:
            if response.started or error.status_code != 413:
                raise
            await self._refuse(413, str(error.detail), scope, receive, send)

    async def _known(self, scope: Scope, declared: int | None) -> bool:
        """Whether the caller may send this body: a token at all, and a live one for a large or unbounded body."""
        if not carries_token(scope):
            return False
        if declared is not None and declared <= SMALL_BODY:
            return True
        return await run_in_threadpool(has_live_session, self.engine, Request(scope))

    @staticmethod
    async def _refuse(status: int, detail: str, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {"Connection": "close"}
        if status == 401 and scope["path"].startswith(API_PATH):
            headers["WWW-Authenticate"] = "Bearer"
        await JSONResponse({"detail": detail}, status_code=status, headers=headers)(scope, receive, send)
