"""The store's faults as people and scripts see them: "the database is unavailable, nothing was saved, retry".

When the store cannot serve a request — PostgreSQL restarting or unreachable, SQLite locked past its busy timeout,
read-only or full — the request did nothing (its transaction is rolled back). Every front door says so in the same
words (:data:`studio.errors.STORE_UNAVAILABLE`) instead of a plain-text 500:

- the REST API answers ``503 {"detail": "database: ..."}`` with ``Retry-After``;
- Gradio's routes answer ``500 {"detail": "database: ..."}`` with ``Retry-After``: Gradio's page shows a JSON
  ``detail`` of any status as the event's error, but replaces a 503's with its own "This application is currently
  busy"; its event handlers show the same text (``studio.ui.calls``);
- the login and logout pages, the redirect of the UI page and the middlewares answer ``503``, as a short HTML page
  for a browser navigating and as JSON otherwise (:class:`StoreFaultGuard`).
"""

from __future__ import annotations

import html
import logging

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from studio.db import is_store_fault
from studio.errors import STORE_UNAVAILABLE, StoreUnavailable
from studio.web.middleware import ResponseStarted

logger = logging.getLogger(__name__)

RETRY_AFTER = {"Retry-After": str(StoreUnavailable.retry_after_seconds)}
#: Gradio's page turns a 503 into its own "busy" text; any other status shows the JSON ``detail``.
GRADIO_STATUS = 500
GRADIO_ROUTES = ("/ui/gradio_api/",)

UNAVAILABLE_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>H2HTalk Studio — database unavailable</title></head>
<body style="font-family: system-ui, sans-serif; margin: 12vh auto; max-width: 36em;">
<h1>The database is unavailable</h1>
<p id="store-unavailable">{text}</p>
<p><a href="/">Reload</a> in a few seconds.</p>
</body></html>
"""


def unavailable_json(status_code: int = StoreUnavailable.status_code) -> JSONResponse:
    return JSONResponse({"detail": STORE_UNAVAILABLE}, status_code=status_code, headers=RETRY_AFTER)


def unavailable_response(scope: Scope) -> Response:
    """503 for the request of ``scope``: an HTML page when a browser navigates to it, else JSON (for Gradio's routes
    with :data:`GRADIO_STATUS`, whose detail Gradio's page shows)."""
    if scope["path"].startswith(GRADIO_ROUTES):
        return unavailable_json(GRADIO_STATUS)
    if "text/html" in Headers(scope=scope).get("accept", ""):
        page = UNAVAILABLE_PAGE.format(text=html.escape(STORE_UNAVAILABLE))
        return HTMLResponse(page, status_code=StoreUnavailable.status_code, headers=RETRY_AFTER)
    return unavailable_json()


def add_store_fault_handlers(app: FastAPI, *, status_code: int = StoreUnavailable.status_code) -> None:
    """Answer a store fault raised in ``app``'s routes or dependencies with :func:`unavailable_json` (``status_code``).

    For a mounted sub-application (the API, Gradio's app): its own error middleware would otherwise send a plain-text
    500 before any middleware outside it sees the exception.
    """

    async def store_fault(_request: Request, error: Exception) -> Response:
        if not isinstance(error, StoreUnavailable) and not is_store_fault(error):
            raise error
        logger.warning("store unavailable: %s", error.__cause__ or error)
        return unavailable_json(status_code)

    from sqlalchemy import exc

    from studio.db import StoreBusy

    for kind in (StoreUnavailable, StoreBusy, exc.OperationalError, exc.InterfaceError, exc.TimeoutError):
        app.add_exception_handler(kind, store_fault)


class StoreFaultGuard:
    """ASGI middleware: a store fault escaping the layers inside it, before a response started, answers 503
    (:func:`unavailable_response`) instead of Starlette's plain-text 500; any other exception passes on untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        response = ResponseStarted(send)
        try:
            await self.app(scope, receive, response.send)
        except Exception as error:
            if response.started or not (isinstance(error, StoreUnavailable) or is_store_fault(error)):
                raise
            logger.warning("store unavailable: %s", error.__cause__ or error)
            await unavailable_response(scope)(scope, receive, send)
