"""Request dependencies of the front doors: the caller's context, the settings, the answering limits.

A REST route declares ``caller: CallerDep`` and runs its work in it::

    @router.get("/campaigns/{name}/next")
    def next_item(name: str, caller: CallerDep, limits: LimitsDep) -> Response:
        with caller.writing() as (session, user):
            view = annotate.next_item(session, caller=user, campaign=name, lease_seconds=limits.lease_seconds)

The dependency itself does no I/O (it is ``async``: no worker-thread hop): it reads the ``Authorization: Bearer``
header — a request without one is refused with 401 before anything else — and hands the route a
:class:`~studio.usecases.context.RequestContext`, which opens the request's one session and resolves the caller in
it, inside the route's own worker thread. Not a ``yield`` dependency holding the session: FastAPI enters and leaves
a synchronous ``yield`` dependency in worker threads of their own, so the session (and on SQLite the write lock its
``BEGIN IMMEDIATE`` takes, or a pooled connection) would be held while the request waits for another worker thread
— and with every worker of the pool waiting for that lock, the holder would wait for a worker forever.

The Gradio handlers get the same context from :func:`request_context` (the ``h2h_session`` cookie's token).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy import Engine

from studio.services.errors import NotAuthenticated
from studio.settings import Settings
from studio.usecases.annotate import AnswerLimits
from studio.usecases.context import RequestContext

SESSION_COOKIE = "h2h_session"


def token_from_request(request: Any) -> str | None:
    """The session token of a request (Starlette's or Gradio's): the ``h2h_session`` cookie, else a Bearer header."""
    token = request.cookies.get(SESSION_COOKIE)
    if token:
        return str(token)
    return _bearer(request.headers.get("authorization", ""))


def _bearer(authorization: str) -> str | None:
    scheme, _, credentials = authorization.partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" and credentials.strip() else None


def bearer_token(request: Request) -> str:
    """The token of an ``Authorization: Bearer`` header; ``NotAuthenticated`` when there is none."""
    token = _bearer(request.headers.get("authorization", ""))
    if token is None:
        raise NotAuthenticated("authorization: send 'Authorization: Bearer <token>' (POST /api/v1/login)")
    return token


def request_context(engine: Engine, request: Any) -> RequestContext:
    """The caller's context for any request (a Gradio event's ``gr.Request`` included): cookie, else Bearer token.

    No token at all is refused (``NotAuthenticated``) when the context is opened.
    """
    return RequestContext(engine, token_from_request(request))


async def caller_context(request: Request) -> RequestContext:
    """Dependency: the REST caller's context (401 at once without a Bearer token; the token is checked on opening)."""
    return RequestContext(request.app.state.engine, bearer_token(request))


async def app_settings(request: Request) -> Settings:
    """Dependency: the settings the application was built with."""
    settings: Settings = request.app.state.settings
    return settings


async def answer_limits(request: Request) -> AnswerLimits:
    """Dependency: the answering limits of the application's settings."""
    limits: AnswerLimits = request.app.state.limits
    return limits


#: The caller of a REST request: ``with caller.reading() as (session, user)`` / ``caller.writing()``.
CallerDep = Annotated[RequestContext, Depends(caller_context)]
SettingsDep = Annotated[Settings, Depends(app_settings)]
LimitsDep = Annotated[AnswerLimits, Depends(answer_limits)]
