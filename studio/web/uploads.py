"""The UI's one upload, opened exactly: Gradio's upload routes take files only from people who may import scenarios,
and never more than ``Settings.max_upload_bytes`` in one request.

Gradio has no per-component upload permission: its ``/gradio_api/upload`` route (and any multipart POST, which its
component server and recording route parse into memory) takes files from anyone signed in, up to its app-wide
``max_file_size`` per file. :class:`UploadGate` sits in front of the mounted UI: a multipart POST, or a POST to an
upload route, is refused — before a byte of its body is read — without a live session (401), for a caller whom
``AdminPolicy.import_scenarios`` refuses (403), or with a declared length over the limit (413), each answered
``{"detail": ...}``. The body is then read under guard (:class:`studio.web.bodies.GuardedBody`): a streamed one is
counted as it arrives and refused with 413 once it passes the limit, and one that stalls with 408. Such a refusal, or
a client going away mid-upload, reaches Gradio's upload parser as its own parse error, so it deletes the partial
files it wrote in the studio's cache: a refused upload leaves nothing behind. Every other request passes through
untouched.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import JSONResponse
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from studio.errors import ServiceError
from studio.policies import AdminPolicy, is_allowed
from studio.web.bodies import GuardedBody
from studio.web.deps import request_context
from studio.web.middleware import UI_PATH

#: Gradio's routes that write uploaded files (under the UI's mount path).
UPLOAD_ROUTES = frozenset({f"{UI_PATH}/gradio_api/upload", f"{UI_PATH}/gradio_api/process_recording"})
#: Room for the multipart framing (boundaries, part headers) of a request holding up to 50 files.
MULTIPART_OVERHEAD = 64 * 1024


def is_upload(scope: Scope) -> bool:
    """Whether the request writes files: a POST under the UI to an upload route, or with a multipart body."""
    if scope["type"] != "http" or scope["method"] != "POST" or not scope["path"].startswith(UI_PATH + "/"):
        return False
    content_type = Headers(scope=scope).get("content-type", "")
    return scope["path"] in UPLOAD_ROUTES or content_type.lower().startswith("multipart/")


def may_upload(engine: Engine, request: Request) -> int:
    """200 when the request's caller may import scenarios; else 401 (no live session) or 403 (one read session)."""
    try:
        with request_context(engine, request).reading() as (_session, caller):
            return 200 if is_allowed(caller, AdminPolicy.import_scenarios()) else 403
    except ServiceError as error:
        return error.status_code


class UploadGate:
    """ASGI middleware: see the module docstring. ``limit`` is the largest upload (all files of one request);
    ``idle_seconds`` (None: no bound) the longest wait for the next piece of it."""

    def __init__(self, app: ASGIApp, engine: Engine, limit: int, idle_seconds: float | None = None) -> None:
        self.app = app
        self.engine = engine
        self.limit = limit + MULTIPART_OVERHEAD
        self.idle_seconds = idle_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not is_upload(scope):
            await self.app(scope, receive, send)
            return
        status = await run_in_threadpool(may_upload, self.engine, Request(scope))
        declared = Headers(scope=scope).get("content-length", "")
        if status == 200 and declared.isdigit() and int(declared) > self.limit:
            status = 413
        if status != 200:
            await self._refuse(status, scope, receive, send)
            return
        guard = GuardedBody(
            limit=self.limit, too_large=self._too_large(), json_depth=None, idle_seconds=self.idle_seconds
        )
        await guard.run(self.app, scope, receive, send)

    def _too_large(self) -> str:
        return f"upload: larger than {self.limit - MULTIPART_OVERHEAD} bytes (H2H_MAX_UPLOAD_BYTES)"

    async def _refuse(self, status: int, scope: Scope, receive: Receive, send: Send) -> None:
        text = {
            401: "upload: sign in first",
            403: "upload: your role may not upload files (only scenario imports take files)",
            413: self._too_large(),
        }.get(status, "upload: refused")
        await JSONResponse({"detail": text}, status_code=status, headers={"Connection": "close"})(scope, receive, send)
