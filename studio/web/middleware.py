"""Plain ASGI middleware of the front doors: the API's body size limit, and the UI page's redirect to ``/login``.

Plain ASGI, not ``@app.middleware("http")``: Starlette's ``BaseHTTPMiddleware`` wraps *every* request (API calls
included) in a task group and memory streams, which cost about 8 % of the server's CPU under load. The security
headers and the same-origin check live in :mod:`studio.web.security`.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import JSONResponse, RedirectResponse
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from studio.errors import ServiceError, StoreUnavailable
from studio.usecases.context import RequestContext
from studio.web.bodies import GuardedBody
from studio.web.deps import request_context

UI_PATH = "/ui"


def too_large_detail(limit: int) -> str:
    return f"body: the request body is larger than {limit} bytes"


class ResponseStarted:
    """``send`` wrapped to remember whether the response has started: a middleware that answers for an exception
    raised below it may only do so while nothing has been sent yet."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False

    async def send(self, message: Message) -> None:
        self.started = self.started or message["type"] == "http.response.start"
        await self._send(message)


class BodySizeLimit:
    """A request body over ``limit`` bytes answers 413 ``{"detail": "body: ..."}``.

    A declared ``Content-Length`` over the limit is refused before a byte is read; a streamed
    (chunked) body is counted as it arrives and refused once it passes the limit (the gate's own
    :class:`studio.web.bodies.GuardedBody`, without its depth scan and timeout). Not FastAPI's
    ``max_body_size``: that answers a declared oversize body in plain text, not in the API's JSON shape.
    (The whole studio has its own gate, :class:`studio.web.gate.RequestGate`; this one bounds the API served alone.)
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.limit:
            await JSONResponse({"detail": too_large_detail(self.limit)}, status_code=413)(scope, receive, send)
            return
        guard = GuardedBody(limit=self.limit, too_large=too_large_detail(self.limit), json_depth=None)
        await guard.run(self.app, scope, receive, send)


def has_live_session(engine: Engine, request: Request) -> bool:
    """Whether the request carries a live session token (one read session)."""
    return live_username(engine, request_context(engine, request).token) is not None


def live_username(engine: Engine, token: str | None) -> str | None:
    """The username of ``token``'s live session (one read session), None when it has none; ``StoreUnavailable``
    when the store cannot say."""
    try:
        with RequestContext(engine, token).reading() as (_session, caller):
            return str(caller.username)
    except StoreUnavailable:
        raise  # not "signed out": the store cannot say (studio.web.faults answers it)
    except ServiceError:
        return None


class LoginRedirectMiddleware:
    """A browser GET of the UI page (``/ui`` or ``/ui/``) without a valid session goes to ``/login``; every other
    request passes straight through, untouched and unbuffered."""

    def __init__(self, app: ASGIApp, engine: Engine) -> None:
        self.app = app
        self.engine = engine

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"] in (UI_PATH, UI_PATH + "/"):
            request = Request(scope)
            if "text/html" in request.headers.get("accept", "") and not await run_in_threadpool(
                has_live_session, self.engine, request
            ):
                await RedirectResponse("/login", status_code=303)(scope, receive, send)
                return
        await self.app(scope, receive, send)
