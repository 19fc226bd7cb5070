"""Gradio's sessions and files, tied to the person they belong to.

Gradio itself only checks that *someone* is signed in: any signed-in person who learns a page's ``session_hash`` can
read that page's event results from ``queue/data`` (or cancel its events), and anyone signed in may fetch any file
under its cache by URL (a researcher's export, by an annotator). :class:`GradioGate` sits in front of the mounted UI:

- **sessions**: the first signed-in person to use a ``session_hash`` (its ``queue/join``, ``queue/data``,
  ``heartbeat``, ``cancel``, and the direct ``run/``, ``api/`` and ``call/`` routes ...) owns it; the same hash from
  anyone else is refused (403) before Gradio sees it;
- **inputs**: an event whose inputs hold what the store cannot take (a NUL character, a lone surrogate, a number past
  the store's ids) is refused 422, naming the input, as the REST API refuses them — not a driver error deep inside;
- **sessions ended meanwhile**: a page whose sign-in an admin ended (deactivated, password reset, sessions revoked)
  or that expired would meet Gradio's own sign-in check at its next event, which answers 401 and covers every
  output of the event with a bare "Error" badge (the form hidden, what was typed out of reach). The event routes of
  a page (``queue/join``, ``queue/data``, ``heartbeat``) sent with the very token that page used while signed in are
  let through to the handlers as the page's owner *for Gradio's check only*; every handler resolves its caller from
  the token again, is refused (``NotAuthenticated``), and the page says "You were signed out — sign in again" with the
  answer kept (:mod:`studio.ui.annotate`). Nothing is read or written on that pass; another token, or none, is still
  refused, and every other route (the page, its config, files, uploads) still answers 401;
- **files**: a file under the studio's Gradio cache is served only to the people it was handed to — the paths in the
  results ``queue/data`` streams to a session are recorded for that session's owner, an upload's paths for its
  uploader — and answered 404 for anyone else (as if it did not exist). Every other ``file=`` path is 404 too.

The studio keeps Gradio's cache in a directory of its own (``Studio work directory``, see ``studio.web.app``), never
the machine's shared ``/tmp/gradio``, so files other Gradio apps left there are not served either. Both records live
in the process (bounded, least recently used dropped first): one studio process serves one Gradio queue anyway.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from fastapi import Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from studio.services.text import unstorable
from studio.web.deps import token_from_request
from studio.web.middleware import UI_PATH

GRADIO_API = f"{UI_PATH}/gradio_api/"
FILE_PREFIXES = tuple(f"{UI_PATH}{api}{route}" for api in ("/gradio_api", "") for route in ("/file=", "/file/"))
HEARTBEAT = f"{GRADIO_API}heartbeat/"
#: The routes of a page's events: with a session that ended meanwhile they still reach the handlers, which say so.
EVENT_ROUTES = (f"{GRADIO_API}queue/join", f"{GRADIO_API}queue/data", HEARTBEAT)
#: Where the gate leaves the username it resolved for a request (``request.state``), for Gradio's sign-in check.
RESOLVED_CALLER = "h2h_caller_name"
#: Resolves the username of a request (``None``: not signed in); runs in a worker thread.
CallerName = Callable[[Request], str | None]


class Owners:
    """Keys (session hashes, file paths) → the usernames they belong to; at most ``size`` keys, LRU dropped."""

    def __init__(self, size: int = 100_000) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._owners: OrderedDict[str, set[str]] = OrderedDict()

    def claim(self, key: str, username: str) -> bool:
        """Record ``username`` as the owner of ``key`` unless someone else already is; whether ``username`` owns it."""
        with self._lock:
            owners = self._owners.setdefault(key, {username})
            self._owners.move_to_end(key)
            self._trim()
            return username in owners

    def grant(self, key: str, username: str) -> None:
        """``username`` may use ``key`` too (a file handed to a second person with the same content)."""
        with self._lock:
            self._owners.setdefault(key, set()).add(username)
            self._owners.move_to_end(key)
            self._trim()

    def owns(self, key: str, username: str) -> bool:
        with self._lock:
            return username in self._owners.get(key, ())

    def holders(self, key: str) -> set[str]:
        with self._lock:
            return set(self._owners.get(key, ()))

    def _trim(self) -> None:
        while len(self._owners) > self.size:
            self._owners.popitem(last=False)


def token_digest(scope: Scope) -> str | None:
    """A digest of the request's session token (tokens are not kept in memory as such); None without one."""
    token = token_from_request(Request(scope))
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest() if token else None


def names_session_in_body(scope: Scope) -> bool:
    """Whether the request's body may name the session it acts for: every POST to Gradio's API but an upload.

    Not only ``queue/join``, ``cancel`` and ``component_server``: ``run/…``, ``api/…`` and ``call/…`` take a
    ``session_hash`` in their JSON body too and act on that session's state. (The body is already bounded by
    ``RequestGate``; an upload's multipart body is the upload gate's and names no session.)
    """
    return scope.get("method") == "POST" and not scope["path"].endswith("/upload")


def json_body(body: bytes | None) -> dict[str, Any] | None:
    """The request's body as a JSON object (a Gradio event), parsed once for the checks below; None when it is none."""
    if not body:
        return None
    try:
        parsed = json.loads(body)
    except ValueError:
        return None  # not a Gradio event: Gradio's own validation answers it
    return parsed if isinstance(parsed, dict) else None


def session_hash_of(scope: Scope, event: dict[str, Any] | None) -> str | None:
    """The ``session_hash`` a Gradio request names: in its query, its heartbeat path, or its JSON body."""
    if scope["path"].startswith(HEARTBEAT):
        return str(scope["path"][len(HEARTBEAT) :]) or None
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if query.get("session_hash"):
        return str(query["session_hash"][0])
    named = (event or {}).get("session_hash")
    return str(named) if named else None


def unstorable_input(event: dict[str, Any] | None) -> str | None:
    """Why the inputs a page sent (a Gradio event's ``data`` list) cannot reach the store (a NUL character, a lone
    surrogate, a whole number past the store's ids), naming the input by its place; None when they can. The REST API
    refuses the same values (``studio.web.deps.refuse_unstorable_input``); nobody types them into a page."""
    data = (event or {}).get("data")
    if not isinstance(data, list):
        return None
    return next((why for index, value in enumerate(data) if (why := unstorable(value, f"input {index + 1}"))), None)


async def read_body(receive: Receive) -> tuple[bytes, Receive]:
    """The whole body (already bounded by ``RequestGate``), and a ``receive`` that hands it on again."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if message["type"] != "http.request" or not message.get("more_body", False):
            break
    body = b"".join(chunks)
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return body, replay


class GradioGate:
    """ASGI middleware in front of the mounted UI: see the module docstring."""

    def __init__(self, app: ASGIApp, *, caller_name: CallerName, cache_dir: str) -> None:
        self.app = app
        self.caller_name = caller_name
        self.cache_dir = os.path.realpath(cache_dir)
        self.sessions = Owners()
        self.tokens = Owners()  # session hash -> digests of the tokens its page was signed in with
        self.files = Owners()
        self._cached_path = re.compile(re.escape(self.cache_dir).encode() + rb"/[^\"\\/]+/[^\"\\]+")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"] if scope["type"] == "http" else ""
        if path.startswith(FILE_PREFIXES):
            await self._file(scope, receive, send)
            return
        if not path.startswith(GRADIO_API):
            await self.app(scope, receive, send)
            return
        event = None
        if names_session_in_body(scope):
            body, receive = await read_body(receive)
            event = json_body(body)
        refused = unstorable_input(event)
        if refused:
            await JSONResponse({"detail": refused}, status_code=422)(scope, receive, send)
            return
        session_hash = session_hash_of(scope, event)
        username = None
        if session_hash or path.endswith("/upload"):
            username = await run_in_threadpool(self.caller_name, Request(scope))
            if username is None and session_hash:
                username = self._signed_out_owner(scope, session_hash)
            # Gradio's own sign-in check of this request reads it here instead of asking the store again.
            scope.setdefault("state", {})[RESOLVED_CALLER] = username
        if session_hash and username and not self.sessions.claim(session_hash, username):
            detail = "session: this page belongs to another sign-in; reload the page"
            await JSONResponse({"detail": detail}, status_code=403)(scope, receive, send)
            return
        if session_hash and username and (digest := token_digest(scope)):
            self.tokens.grant(session_hash, digest)
        if username and (path == f"{GRADIO_API}queue/data" or path.endswith("/upload")):
            # Read as sent: Gradio compresses what a client accepts compressed (Brotli), which would hide the paths.
            scope = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k != b"accept-encoding"]}
            send = self._recording(send, username)
        await self.app(scope, receive, send)

    def _signed_out_owner(self, scope: Scope, session_hash: str) -> str | None:
        """The owner of a page whose sign-in ended, for an event of that page sent with the token it was signed in
        with (see the module docstring); None for anything else."""
        if not scope["path"].startswith(EVENT_ROUTES):
            return None
        digest = token_digest(scope)
        owners = self.sessions.holders(session_hash)
        if digest is None or len(owners) != 1 or not self.tokens.owns(session_hash, digest):
            return None
        return next(iter(owners))

    def _recording(self, send: Send, username: str) -> Send:
        """``send`` that grants ``username`` every cached file path the response names."""

        async def recording_send(message: Message) -> None:
            if message["type"] == "http.response.body":
                for found in self._cached_path.findall(message.get("body", b"")):
                    self.files.grant(os.path.realpath(found.decode("utf-8", "replace")), username)
            await send(message)

        return recording_send

    async def _file(self, scope: Scope, receive: Receive, send: Send) -> None:
        asked = scope["path"]
        for prefix in FILE_PREFIXES:
            if asked.startswith(prefix):
                asked = asked[len(prefix) :]
                break
        username = await run_in_threadpool(self.caller_name, Request(scope))
        if username is None:
            await JSONResponse({"detail": "authorization: sign in first"}, status_code=401)(scope, receive, send)
            return
        if not self.files.owns(os.path.realpath(asked), username):
            await JSONResponse({"detail": "file: no such file"}, status_code=404)(scope, receive, send)
            return
        await self.app(scope, receive, send)
