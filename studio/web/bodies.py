"""A request body read under guard: bounded in size, in JSON depth and in the time between its pieces.

:class:`GuardedBody` wraps the ``receive`` and ``send`` of one request (used by :class:`studio.web.gate.RequestGate`
for every body, and by :class:`studio.web.uploads.UploadGate` for uploads). While the body arrives it refuses:

- a body past ``limit`` bytes (413), counted as it arrives: a declared length is refused before the gate calls it;
- JSON nested deeper than :data:`MAX_JSON_DEPTH` (422), found by :class:`JsonDepth`, a linear scan of the bytes as
  they arrive (strings skipped, nothing parsed): Python's ``json`` module, and so every route, raises
  ``RecursionError`` — a 500 with a traceback — on a few thousand ``[``;
- a body whose next piece does not come within ``idle_seconds`` (408): a client dribbling its body holds a
  connection and a worker otherwise forever.

The refusal is raised into whatever reads the body, as :class:`BodyRefused` — an ``HTTPException`` (FastAPI passes
one on as-is) that is also Starlette's ``MultiPartException``, so Gradio's upload parser deletes the partial files
it wrote before passing it on (a refused upload leaves nothing in the cache). A client that goes away mid-body is
treated the same way (its partial files go too). Whatever the route then answers, the client gets the refusal:
``{"detail": ...}`` with its status and ``Connection: close`` (the unread rest of the body cannot be skipped).
"""

from __future__ import annotations

import asyncio
import logging
import re
from itertools import accumulate

from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.formparsers import MultiPartException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

logger = logging.getLogger(__name__)

#: The deepest JSON nesting any route takes: far above any form or import the studio knows, far below the ~1,000
#: where Python's parser runs out of stack.
MAX_JSON_DEPTH = 64
#: Statuses a guarded body is refused with.
TOO_LARGE, TOO_DEEP, TOO_SLOW, GONE = 413, 422, 408, 499

_OPENERS = frozenset(b"[{")
_DELTA = [1 if byte in _OPENERS else -1 if byte in b"]}" else 0 for byte in range(256)]
_NOT_BRACKETS = bytes(byte for byte in range(256) if byte not in b"[]{}")
#: A piece of JSON text as a whole: text outside strings and whole strings, then maybe a string it ends inside of
#: (``tail``; ``escaped``: ending on a backslash that escapes the next piece's first byte). Possessive throughout, so
#: the match is one linear pass with no backtracking (and, a piece always matching, no retries).
_PIECE = re.compile(rb'(?:[^"]++|"(?:[^"\\]++|\\.)*+")*+(?P<tail>"(?:[^"\\]++|\\.)*+(?P<escaped>\\?))?', re.DOTALL)
#: A whole JSON string; applied only where no string is left unfinished (see ``_PIECE``), so every match succeeds.
_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
#: The rest of a string begun in an earlier piece, up to its closing quote.
_STRING_REST = re.compile(rb'(?:[^"\\]++|\\.)*+"', re.DOTALL)


def depth_detail(limit: int = MAX_JSON_DEPTH) -> str:
    return f"body: JSON nested deeper than {limit} levels"


class JsonDepth:
    """How deep the brackets of a JSON text nest, fed piece by piece; brackets inside strings do not count.

    Linear and in C for the most part (regular expressions and ``bytes`` methods): strings are cut out, and a stretch
    of text is walked bracket by bracket only when its ``[`` and ``{`` could take it past the limit at all. Not a
    validator: text that is not JSON is left for the route's parser to refuse.
    """

    def __init__(self, limit: int = MAX_JSON_DEPTH) -> None:
        self.limit = limit
        self.depth = 0
        self.in_string = False
        self.escaped = False  # inside a string, the piece ended on a backslash that escapes the next piece's first byte

    def feed(self, piece: bytes) -> bool:
        """Take the next piece; False once the text has nested deeper than ``limit``."""
        start = self._finish_string(piece) if self.in_string else 0
        if start is None:
            return True
        piece = piece[start:]
        whole = _PIECE.fullmatch(piece)
        end = len(piece)
        if whole is not None and whole.group("tail") is not None:  # a string begins and runs past this piece
            self.in_string, self.escaped = True, bool(whole.group("escaped"))
            end = whole.start("tail")
        outside = _STRING.sub(b"", piece[:end])
        return self._brackets(outside.translate(None, _NOT_BRACKETS))

    def _finish_string(self, piece: bytes) -> int | None:
        """Where the string this piece began inside ends (just past its quote); None when it goes on past it."""
        start = 1 if self.escaped else 0
        if start > len(piece):
            return None
        found = _STRING_REST.match(piece, start)
        if found is None:
            self.escaped = _ends_escaped(piece[start:])
            return None
        self.in_string, self.escaped = False, False
        return found.end()

    def _brackets(self, brackets: bytes) -> bool:
        closed = brackets.count(b"]") + brackets.count(b"}")
        opened = len(brackets) - closed
        if self.depth + opened > self.limit:  # it could go past the limit: walk the brackets to see
            deepest = max(accumulate((_DELTA[byte] for byte in brackets), initial=self.depth))
            if deepest > self.limit:
                return False
        self.depth += opened - closed
        return True


def _ends_escaped(text: bytes) -> bool:
    """Whether string content ``text`` ends on a backslash escaping what follows (an odd run of them)."""
    return (len(text) - len(text.rstrip(b"\\"))) % 2 == 1


class BodyRefused(StarletteHTTPException, MultiPartException):
    """A body refused while it was read: see the module docstring."""

    def __init__(self, status_code: int, detail: str) -> None:
        StarletteHTTPException.__init__(self, status_code=status_code, detail=detail)
        self.message = detail


class GuardedBody:
    """One request's body under guard: :meth:`run` the application with it (see the module docstring)."""

    def __init__(
        self, *, limit: int, too_large: str, json_depth: int | None = MAX_JSON_DEPTH, idle_seconds: float | None = None
    ) -> None:
        self.limit = limit
        self.too_large = too_large
        self.depth = JsonDepth(json_depth) if json_depth is not None else None
        self.idle_seconds = idle_seconds
        self.received = 0
        self.complete = False
        self.refusal: BodyRefused | None = None
        self.started = False  # the application's answer started before any refusal: it stands

    async def run(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        """``app`` on the request, its body guarded; a refusal answered in place of whatever the app answers."""

        async def guarded_receive() -> Message:
            return await self._receive(receive)

        async def guarded_send(message: Message) -> None:
            if self.refusal is None:
                self.started = self.started or message["type"] == "http.response.start"
                await send(message)

        try:
            await app(scope, guarded_receive, guarded_send)
        except Exception:
            if self.refusal is None or self.started:
                raise
            logger.debug("the body was refused while it was read; the route's own error is not shown", exc_info=True)
        if self.refusal is not None and not self.started and self.refusal.status_code != GONE:
            headers = {"Connection": "close"}
            body = {"detail": self.refusal.detail}
            await JSONResponse(body, status_code=self.refusal.status_code, headers=headers)(scope, receive, send)

    async def _receive(self, receive: Receive) -> Message:
        if self.refusal is not None:
            raise self.refusal
        if self.complete or self.idle_seconds is None:
            message = await receive()
        else:
            try:
                message = await asyncio.wait_for(receive(), self.idle_seconds)
            except TimeoutError:
                raise self._refuse(
                    TOO_SLOW, f"body: its next part did not arrive within {self.idle_seconds:g} s; send it again"
                ) from None
        if message["type"] == "http.disconnect" and not self.complete:
            raise self._refuse(GONE, "body: the client went away before sending all of it")
        if message["type"] == "http.request":
            self._check(message.get("body", b""))
            self.complete = not message.get("more_body", False)
        return message

    def _check(self, piece: bytes) -> None:
        self.received += len(piece)
        if self.received > self.limit:
            raise self._refuse(TOO_LARGE, self.too_large)
        if self.depth is not None and not self.depth.feed(piece):
            raise self._refuse(TOO_DEEP, depth_detail(self.depth.limit))

    def _refuse(self, status: int, detail: str) -> BodyRefused:
        self.refusal = BodyRefused(status, detail)
        return self.refusal
