"""Gradio's sessions and files, tied to the person they belong to.

Gradio itself only checks that *someone* is signed in: any signed-in person who learns a page's ``session_hash`` can
read that page's event results from ``queue/data`` (or cancel its events), and anyone signed in may fetch any file
under its cache by URL (a researcher's export, by an annotator). :class:`GradioGate` sits in front of the mounted UI:

- **sessions**: the first signed-in person to use a ``session_hash`` (its ``queue/join``, ``queue/data``,
  ``heartbeat``, ``stream/``, ``cancel``, and the direct ``run/``, ``api/`` and ``call/`` routes ...) owns it; the same
  hash from anyone else is refused (403) before Gradio sees it. A request naming a session must name exactly one: the
  gate and Gradio read different places (Gradio takes the *last* query value, and the body over the query), so a
  request naming the session more than once — twice in the query, or in the query and the body, or in the path and
  anywhere else — is refused 400 whatever the values. A request naming a session without a live sign-in is refused
  401 before any stream is opened (Gradio's ``heartbeat`` and ``cancel`` routes have no sign-in check of their own);
- **files sent back**: Gradio reads any ``{"path": ...}`` object in an event (a ``gradio.FileData``) as a file on the
  server, and for a mounted app it checks nothing (its own check waits for ``launch()``): a forged path would make
  the import page read any file. Every such object anywhere in a request's JSON body must name a file this caller
  uploaded (an upload's paths are recorded for its uploader) inside the studio's Gradio cache; anything else is
  refused 403 before Gradio sees it. A multipart body is taken only by Gradio's upload routes (415 elsewhere);
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
in the store (``ui_grant``, :mod:`studio.web.grants`), cached in the process: several studio processes on one
database refuse a stranger's session hash or file alike. The files themselves, and each page's event queue, stay in
the process that made them — a reverse proxy with sticky routing keeps a page on its process.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

from fastapi import Request
from fastapi.responses import JSONResponse
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from studio.services.text import unstorable
from studio.web.deps import token_from_request
from studio.web.grants import SharedOwners
from studio.web.middleware import UI_PATH
from studio.web.uploads import UPLOAD_ROUTES

GRADIO_API = f"{UI_PATH}/gradio_api/"
FILE_PREFIXES = tuple(f"{UI_PATH}{api}{route}" for api in ("/gradio_api", "") for route in ("/file=", "/file/"))
HEARTBEAT = f"{GRADIO_API}heartbeat/"
#: Routes whose path names a page session (``heartbeat/{hash}``, ``stream/{hash}/{run}/...``).
SESSION_PATHS = (HEARTBEAT, f"{GRADIO_API}stream/")
NOT_YOUR_FILE = "file: not an upload of yours; upload the file again"
MORE_THAN_ONE_SESSION = "session: the request names more than one page session"
#: The routes of a page's events: with a session that ended meanwhile they still reach the handlers, which say so.
EVENT_ROUTES = (f"{GRADIO_API}queue/join", f"{GRADIO_API}queue/data", HEARTBEAT)
#: Where the gate leaves the username it resolved for a request (``request.state``), for Gradio's sign-in check.
RESOLVED_CALLER = "h2h_caller_name"
#: Resolves the username of a request (``None``: not signed in); runs in a worker thread.
CallerName = Callable[[Request], str | None]


def token_digest(scope: Scope) -> str | None:
    """A digest of the request's session token (tokens are not kept in memory as such); None without one."""
    token = token_from_request(Request(scope))
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest() if token else None


def is_multipart(scope: Scope) -> bool:
    """Whether the request's body is a form (``multipart/…``): only Gradio's upload routes take one."""
    return Headers(scope=scope).get("content-type", "").lower().startswith("multipart/")


def names_session_in_body(scope: Scope) -> bool:
    """Whether the request's body may name the session it acts for: every POST to Gradio's API but an upload.

    Not only ``queue/join``, ``cancel`` and ``component_server``: ``run/…``, ``api/…`` and ``call/…`` take a
    ``session_hash`` in their JSON body too and act on that session's state. (The body is already bounded by
    ``RequestGate``; an upload's multipart body is the upload gate's and names no session.)
    """
    return scope.get("method") == "POST" and not scope["path"].endswith("/upload")


class Refused(Exception):
    """A request the gate answers itself: ``status`` and a ``detail`` saying what to do."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def _one_session_key(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object; refused when it names ``session_hash`` twice (the gate and Gradio would each read one)."""
    if sum(1 for key, _value in pairs if key == "session_hash") > 1:
        raise Refused(400, MORE_THAN_ONE_SESSION)
    return dict(pairs)


def json_body(body: bytes | None) -> dict[str, Any] | None:
    """The request's body as a JSON object (a Gradio event), parsed once for the checks below; None when it is none.

    Raises :class:`Refused`: 422 for JSON nested too deeply for the parser (``RecursionError``, which Gradio's own
    parsing would turn into a 500), 400 for an object naming ``session_hash`` twice."""
    if not body:
        return None
    try:
        parsed = json.loads(body, object_pairs_hook=_one_session_key)
    except RecursionError:
        raise Refused(422, "body: the JSON is nested too deeply; send the event as the page does") from None
    except ValueError:
        return None  # not a Gradio event: Gradio's own validation answers it
    return parsed if isinstance(parsed, dict) else None


def session_hash_of(scope: Scope, event: dict[str, Any] | None) -> str | None:
    """The one ``session_hash`` a Gradio request names — in its path (``heartbeat/``, ``stream/``), its query (every
    value), or its JSON body — or None (an empty one names none). :class:`Refused` (400) when it names more than one,
    equal or not: Gradio reads the last query value and the body, an earlier gate read the first."""
    named = []
    for prefix in SESSION_PATHS:
        if scope["path"].startswith(prefix):
            named.append(scope["path"][len(prefix) :].split("/", 1)[0])
    # As Starlette parses a query (latin-1, blanks kept): the gate sees every value Gradio could pick.
    query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    named += [value for key, value in query if key == "session_hash"]
    if event is not None and event.get("session_hash") is not None:
        named.append(str(event["session_hash"]))
    if len(named) > 1:
        raise Refused(400, MORE_THAN_ONE_SESSION)
    return (named[0] or None) if named else None


def file_paths(event: dict[str, Any] | None) -> list[str]:
    """Every ``path`` of a file object (a dict with a string ``path``: how Gradio recognises a ``FileData``) anywhere
    in a request's JSON body, in order; walked without recursion (the body may be deep)."""
    found: list[str] = []
    pending: list[Any] = [event]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            if isinstance(value.get("path"), str):
                found.append(value["path"])
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return found


def _real(path: str) -> str | None:
    """``path`` with every link resolved; None for a string no file can have (a NUL, an unencodable character)."""
    try:
        return os.path.realpath(path)
    except (ValueError, OSError):
        return None


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

    def __init__(self, app: ASGIApp, *, caller_name: CallerName, cache_dir: str, engine: Engine | None = None) -> None:
        self.app = app
        self.caller_name = caller_name
        self.cache_dir = os.path.realpath(cache_dir)
        # In the store (``engine``; None: this process only), so every studio process on the database agrees.
        self.sessions = SharedOwners("session", engine)
        self.tokens = SharedOwners("token", engine)  # session hash -> digests of the tokens its page was signed in with
        self.files = SharedOwners("file", engine)  # every cached file handed to someone: what they may download
        self.uploads = SharedOwners("upload", engine)  # the files each person uploaded: what they may send back
        self._cached_path = re.compile(re.escape(self.cache_dir).encode() + rb"/[^\"\\/]+/[^\"\\]+")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"] if scope["type"] == "http" else ""
        if path.startswith(FILE_PREFIXES):
            await self._file(scope, receive, send)
            return
        if not path.startswith(GRADIO_API):
            await self.app(scope, receive, send)
            return
        try:
            scope, receive, send = await self._checked(scope, receive, send)
        except Refused as refused:
            await JSONResponse({"detail": refused.detail}, status_code=refused.status)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    async def _checked(self, scope: Scope, receive: Receive, send: Send) -> tuple[Scope, Receive, Send]:
        """The request as Gradio may see it (its body replayed, its answer recorded), or :class:`Refused`."""
        path = scope["path"]
        event = None
        if names_session_in_body(scope):
            if path not in UPLOAD_ROUTES and is_multipart(scope):
                raise Refused(415, "body: this route takes a JSON event, not a form")
            body, receive = await read_body(receive)
            event = json_body(body)
        refused = unstorable_input(event)
        if refused:
            raise Refused(422, refused)
        session_hash = session_hash_of(scope, event)
        sent_files = file_paths(event)
        username = None
        if session_hash or sent_files or path.endswith("/upload"):
            username = await self._caller(scope, session_hash)
            if username is None and (session_hash or sent_files):
                raise Refused(401, "authorization: sign in first (the request carries no live session)")
        if session_hash and username and not await self.sessions.claim(session_hash, username):
            raise Refused(403, "session: this page belongs to another sign-in; reload the page")
        if username and not all([await self._uploaded(sent, username) for sent in sent_files]):
            raise Refused(403, NOT_YOUR_FILE)
        if session_hash and username and (digest := token_digest(scope)):
            await self.tokens.grant(session_hash, digest)
        if username and (path == f"{GRADIO_API}queue/data" or path.endswith("/upload")):
            # Read as sent: Gradio compresses what a client accepts compressed (Brotli), which would hide the paths.
            scope = {**scope, "headers": [(k, v) for k, v in scope["headers"] if k != b"accept-encoding"]}
            send = self._recording(send, username, upload=path.endswith("/upload"))
        return scope, receive, send

    async def _caller(self, scope: Scope, session_hash: str | None) -> str | None:
        """The request's caller (or the owner of a page signed out meanwhile), left for Gradio's sign-in check."""
        username = await run_in_threadpool(self.caller_name, Request(scope))
        if username is None and session_hash:
            username = await self._signed_out_owner(scope, session_hash)
        # Gradio's own sign-in check of this request reads it here instead of asking the store again.
        scope.setdefault("state", {})[RESOLVED_CALLER] = username
        return username

    async def _uploaded(self, sent: str, username: str) -> bool:
        """Whether ``sent`` (a path an event names) is a file ``username`` uploaded, inside the studio's cache."""
        real = _real(sent)
        inside = real is not None and real.startswith(self.cache_dir + os.sep)
        return inside and real is not None and await self.uploads.owns(real, username)

    async def _signed_out_owner(self, scope: Scope, session_hash: str) -> str | None:
        """The owner of a page whose sign-in ended, for an event of that page sent with the token it was signed in
        with (see the module docstring); None for anything else."""
        if not scope["path"].startswith(EVENT_ROUTES):
            return None
        digest = token_digest(scope)
        owners = await self.sessions.holders(session_hash)
        if digest is None or len(owners) != 1 or not await self.tokens.owns(session_hash, digest):
            return None
        return next(iter(owners))

    def _recording(self, send: Send, username: str, *, upload: bool) -> Send:
        """``send`` that grants ``username`` every cached file path the response names (as uploads of theirs too,
        for an ``upload``: those they may send back in an event)."""
        records = (self.files, self.uploads) if upload else (self.files,)

        async def recording_send(message: Message) -> None:
            if message["type"] == "http.response.body":
                for found in self._cached_path.findall(message.get("body", b"")):
                    real = os.path.realpath(found.decode("utf-8", "replace"))
                    for record in records:
                        await record.grant(real, username)
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
        if not await self.files.owns(os.path.realpath(asked), username):
            await JSONResponse({"detail": "file: no such file"}, status_code=404)(scope, receive, send)
            return
        await self.app(scope, receive, send)
