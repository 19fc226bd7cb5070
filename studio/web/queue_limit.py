"""A bound on the events one person may have waiting in Gradio's queue, so one person cannot stall everyone's pages.

Gradio's queue is first come, first served, and each handler runs one event at a time (its default concurrency of
1): one annotator firing hundreds of ``queue/join`` calls put every other page's events behind theirs (500 joins in
6 s took another user's page load from 1.3 s to 33 s) and kept each event's body in memory until it ran.
:class:`QueueLimit` sits inside the mounted Gradio app, in front of the routes that start an event
(``queue/join``, ``call/…``, and the direct ``run/…`` and ``api/…``): a person who already has :data:`PER_USER`
events pending — joining, queued or running — is answered 429 ("too many requests: wait for your earlier actions to
finish"); nobody else is affected. The count is read from Gradio's own queue (:func:`unfinished`: an event is counted
from its join until it finishes, fails, is cancelled or is dropped because its page went away, whatever the client
does), plus the joins of that person still being answered (so a burst sent at once is counted before Gradio has
queued it).

The queue as a whole is bounded too (:data:`QUEUE_SIZE`, Gradio's ``max_size``: past it Gradio answers 503 "Queue is
full"), so memory stays bounded however many people press at once; and Gradio's direct routes (``run/``, ``api/``),
which would run a handler without queueing it, are closed for queued events (``api_open=False``): see
``studio.web.app._ui_blocks``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from studio.web.sessions import RESOLVED_CALLER, CallerName

#: Events one person may have pending at once (joining, queued or running). A page starts one or two at a time (a
#: click and what it chains); eight leave room for a few open tabs and a quick succession of clicks.
PER_USER = 8
#: Events Gradio's queue holds waiting, all people together (``Blocks.queue(max_size=...)``): with :data:`PER_USER`,
#: room for 64 people each at their limit; past it Gradio answers 503.
QUEUE_SIZE = 512
TOO_MANY = "too many requests: wait for your earlier actions to finish"
#: The routes that start an event, under the mount (Starlette keeps the full path in a mounted app's scope).
EVENT_STARTS = re.compile(r"/gradio_api/(queue/join|call/(v2/)?[^/]+|run/[^/]+|api/[^/]+)/?$")


class QueueLimit:
    """ASGI middleware of the mounted Gradio app: see the module docstring.

    ``queue_of`` returns Gradio's queue (``Blocks._queue``; read through a callable because ``Blocks.queue()``
    replaces it); ``caller_name`` resolves a request's username when :class:`studio.web.sessions.GradioGate` has not
    already (it has for every request naming a page session).
    """

    def __init__(
        self, app: ASGIApp, *, queue_of: Callable[[], Any], caller_name: CallerName, per_user: int = PER_USER
    ) -> None:
        self.app = app
        self.queue_of = queue_of
        self.caller_name = caller_name
        self.per_user = per_user
        self._joining: Counter[str] = Counter()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not EVENT_STARTS.search(scope["path"]):
            await self.app(scope, receive, send)
            return
        username = await self._caller(scope)
        if username is None:  # Gradio's own sign-in check answers it
            await self.app(scope, receive, send)
            return
        if self.pending(username) >= self.per_user:
            await JSONResponse({"detail": TOO_MANY}, status_code=429, headers={"Retry-After": "1"})(
                scope, receive, send
            )
            return
        self._joining[username] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._joining[username] -= 1
            if self._joining[username] <= 0:
                del self._joining[username]

    def pending(self, username: str) -> int:
        """How many events ``username`` has pending: joins being answered, and events waiting or running."""
        return self._joining[username] + sum(1 for event in unfinished(self.queue_of()) if event.username == username)

    async def _caller(self, scope: Scope) -> str | None:
        state = scope.setdefault("state", {})
        if RESOLVED_CALLER not in state:
            # Left for Gradio's sign-in check too, which then does not ask the store again.
            state[RESOLVED_CALLER] = await run_in_threadpool(self.caller_name, Request(scope))
        resolved: str | None = state[RESOLVED_CALLER]
        return resolved


def unfinished(queue: Any) -> list[Any]:
    """The events of Gradio's ``queue`` not finished yet: waiting in a handler's queue, or running (its workers).

    Not ``Queue.event_ids_to_events``: an event stays there a while after it finished (Gradio drops it only after
    recomputing its analytics in a thread), so a person clicking quickly on a loaded server would be counted events
    they no longer have. Gradio changes these lists only on the event loop, which this runs on: the snapshot is
    consistent.
    """
    waiting = [event for line in list(queue.event_queue_per_concurrency_id.values()) for event in list(line.queue)]
    running = [event for job in list(queue.active_jobs) if job is not None for event in job]
    return waiting + running
