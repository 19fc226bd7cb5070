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

import hashlib
import threading
import time
from collections import OrderedDict
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy import Engine

from studio.errors import NotAuthenticated
from studio.services.text import unstorable
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


class RecentCallers:
    """Who each session token belonged to when the store last said so, for Gradio's sign-in check during an outage.

    Gradio checks the caller of every one of its requests (the event queue, its stream, files) before any handler
    runs; if that check failed whenever the store is briefly unavailable, the page would cover every field of the
    event with an "Error" box instead of showing the handler's "the database is unavailable ... retry". A token the
    store confirmed within ``grace_seconds`` is therefore still believed *by that check* while the store cannot be
    asked. Nothing is read or written on that belief: every handler resolves its caller in the store again (and, the
    store being down, says so). Tokens are kept hashed; at most ``size`` of them, least recently confirmed dropped.
    """

    def __init__(self, *, grace_seconds: float = 300.0, size: int = 10_000) -> None:
        self.grace_seconds = grace_seconds
        self.size = size
        self._lock = threading.Lock()
        self._confirmed: OrderedDict[bytes, tuple[str, float]] = OrderedDict()

    @staticmethod
    def _key(token: str) -> bytes:
        return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()

    def confirmed(self, token: str, username: str) -> None:
        """The store just said ``token`` is ``username``'s live session."""
        with self._lock:
            self._confirmed[self._key(token)] = (username, time.monotonic())
            self._confirmed.move_to_end(self._key(token))
            while len(self._confirmed) > self.size:
                self._confirmed.popitem(last=False)

    def forget(self, token: str) -> None:
        with self._lock:
            self._confirmed.pop(self._key(token), None)

    def recent(self, token: str, *, within: float | None = None) -> str | None:
        """The username the store confirmed ``token`` for within ``within`` seconds (default: the grace period),
        else None."""
        with self._lock:
            known = self._confirmed.get(self._key(token))
        limit = self.grace_seconds if within is None else within
        if known is None or time.monotonic() - known[1] > limit:
            return None
        return known[0]


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


def _whole_number_params(route: Any) -> frozenset[str]:
    """The path and query parameters a route declares as whole numbers (``int`` or ``int | None``)."""
    import typing

    names = set()
    for field in (*route.dependant.path_params, *route.dependant.query_params):
        annotation = field.field_info.annotation
        if annotation is int or int in typing.get_args(annotation):
            names.add(field.alias)
    return frozenset(names)


def _params_problem(request: Request) -> str | None:
    route = request.scope.get("route")
    whole = _whole_number_params(route) if route is not None and hasattr(route, "dependant") else frozenset()
    for name, value in (*request.path_params.items(), *request.query_params.multi_items()):
        if name in whole and value.strip().lstrip("+-").isdigit():
            why = unstorable(int(value), name)
        else:
            why = unstorable(value, name)
        if why:
            return why
    return None


async def refuse_unstorable_input(request: Request) -> None:
    """Dependency of every API route: 422 naming the field for a path, query or JSON body value the store cannot take
    (:func:`unstorable`). No I/O: the JSON body is the one FastAPI has already parsed for the route."""
    from studio.errors import InvalidInput

    why = _params_problem(request)
    if why is None and "json" in request.headers.get("content-type", ""):
        try:
            body = await request.json()  # parsed once: Starlette keeps it for the route
        except ValueError:
            body = None  # malformed: the route's own validation says so
        why = _body_problem(body)
    if why:
        raise InvalidInput(why)


def _body_problem(body: Any) -> str | None:
    if isinstance(body, dict):
        return next((why for key, value in body.items() if (why := unstorable(value, str(key)))), None)
    return unstorable(body, "body") if body is not None else None
