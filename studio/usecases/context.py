"""The unit of work of one front-door request: one session, and the caller resolved inside it.

Both front doors — the REST routes (``studio.web.deps.CallerDep``) and the Gradio handlers
(``studio.web.deps.request_context``) — hand a use case its ``(session, caller)`` through a
:class:`RequestContext`::

    with context.writing() as (session, caller):
        view = annotate.next_item(session, caller=caller, campaign=name, lease_seconds=600)

Opening it starts *one* session (a read session, or a write transaction: ``BEGIN IMMEDIATE`` on SQLite) and
resolves the caller from the request's token with one indexed query in that same session; a dead or missing token
raises ``NotAuthenticated`` before anything else runs. A request whose work continues in a second session (the REST
submit answers retries from a read session, off the write lock, and stores new answers in a write session) opens the
context twice: the caller is resolved in the first session and carried on.

A store that cannot serve the request (down, unreachable, locked, read-only, full) raises ``StoreUnavailable``
(a ``ServiceError``, 503) from either block, whatever the work was: the transaction is rolled back, nothing is written,
and both front doors tell the person so in the same words.

The context is entered inside the worker thread that runs the request's work, never across threads: a SQLite write
lock or a pooled connection held while waiting for another worker thread could leave every worker waiting (see
``studio.web.deps``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine
from sqlmodel import Session

from studio.db import is_sqlite, is_store_fault, read_session, write_session
from studio.errors import STORE_UNAVAILABLE, NotAuthenticated, StoreUnavailable
from studio.models import UserPublic
from studio.services.auth import signed_in


@contextmanager
def store_faults_as_unavailable() -> Iterator[None]:
    """Turn the store's "cannot serve now" errors (:func:`studio.db.is_store_fault`) into ``StoreUnavailable``."""
    try:
        yield
    except Exception as error:
        if is_store_fault(error):
            raise StoreUnavailable(STORE_UNAVAILABLE) from error
        raise


class RequestContext:
    """One request's caller (resolved once, from ``token``) and the session(s) its work runs in."""

    __slots__ = ("_caller", "engine", "token")

    def __init__(self, engine: Engine, token: str | None) -> None:
        self.engine = engine
        self.token = token
        self._caller: UserPublic | None = None

    @property
    def single_writer(self) -> bool:
        """Whether a write session holds the whole store's write lock (SQLite): work that may end up only reading
        (a retry) is then better tried in a read session first. PostgreSQL locks rows, not the store."""
        return is_sqlite(self.engine)

    def _token(self) -> str:
        """The token to resolve; ``NotAuthenticated`` before any session opens when the request sent none."""
        if not self.token:
            raise NotAuthenticated("authorization: sign in first (the request carries no session token)")
        return self.token

    def _resolve(self, session: Session, token: str) -> UserPublic:
        if self._caller is None:
            self._caller = signed_in(session, token=token)
        return self._caller

    @contextmanager
    def reading(self) -> Iterator[tuple[Session, UserPublic]]:
        """A read session (nothing is committed) and the caller, resolved in it."""
        token = self._token()
        with store_faults_as_unavailable(), read_session(self.engine) as session:
            yield session, self._resolve(session, token)

    @contextmanager
    def writing(self) -> Iterator[tuple[Session, UserPublic]]:
        """One write transaction (committed when the block ends, rolled back on any error) and the caller."""
        token = self._token()
        with store_faults_as_unavailable(), write_session(self.engine) as session:
            yield session, self._resolve(session, token)
