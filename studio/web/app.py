"""The studio web application: the REST API at ``/api``, the login and logout pages, and the Gradio UI at ``/ui``.

Authentication is one opaque token from :func:`studio.usecases.account.sign_in`, carried either in the
``h2h_session`` cookie (browsers; HttpOnly, SameSite=Lax) or an ``Authorization: Bearer`` header (scripts). Every
Gradio route answers 401 without a valid token; a browser asking for the UI page without one is sent to ``/login``.
Both front doors resolve the caller the same way (``studio.web.deps``) and call the same use cases.

Every request passes :class:`studio.web.gate.RequestGate` first (bodies bounded, strangers refused before their body
is read), and a store that cannot serve is answered in words (``studio.web.faults``), never as a plain-text 500.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio.to_thread
from fastapi import FastAPI, Request
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from studio.db import read_session
from studio.errors import ServiceError, StoreUnavailable
from studio.services.campaigns import schema_snapshots
from studio.settings import Settings
from studio.usecases.annotate import AnswerLimits
from studio.web import pages, static
from studio.web.api import create_api, share_state, store_engine
from studio.web.deps import RecentCallers, request_context
from studio.web.faults import GRADIO_STATUS, StoreFaultGuard, add_store_fault_handlers
from studio.web.gate import RequestGate
from studio.web.middleware import UI_PATH, LoginRedirectMiddleware
from studio.web.queue_limit import QUEUE_SIZE, QueueLimit
from studio.web.security import SameOriginMiddleware, SecurityHeadersMiddleware, StoreLoginThrottle, security_headers
from studio.web.sessions import RESOLVED_CALLER, GradioGate
from studio.web.uploads import MULTIPART_OVERHEAD, UploadGate


def caller_name(engine: Engine, request: Any, recent: RecentCallers | None = None) -> str | None:
    """The username of the request's live session (one read session), or None.

    When the store cannot say: the username ``recent`` confirmed the token for lately (see :class:`RecentCallers`),
    else ``StoreUnavailable`` (Gradio's route then answers with the reason, not "not authenticated").
    """
    context = request_context(engine, request)
    try:
        with context.reading() as (_session, caller):
            username = caller.username
    except StoreUnavailable:
        believed = recent.recent(context.token) if recent is not None and context.token else None
        if believed is None:
            raise
        return believed
    except ServiceError:
        if recent is not None and context.token:
            recent.forget(context.token)
        return None
    if recent is not None and context.token:
        recent.confirmed(context.token, username)
    return username


def _ui_blocks(engine: Engine, settings: Settings) -> Any:
    """The Gradio UI over ``engine``: a form for every bundled workflow and every campaign's schema snapshot; its
    queue bounded (:data:`studio.web.queue_limit.QUEUE_SIZE` events) and the only way in for its events."""
    from studio.ui.app import build_ui, form_schemas

    with read_session(engine) as session:
        snapshots = schema_snapshots(session)
    blocks = build_ui(
        open_context=partial(request_context, engine),
        schemas=form_schemas(snapshots),
        limits=AnswerLimits.from_settings(settings),
        upload_limit_bytes=settings.max_upload_bytes,
    )
    # A bounded queue (studio.web.queue_limit), and no direct run/ or api/ calls that would skip it.
    return blocks.queue(api_open=False, max_size=QUEUE_SIZE)


#: How often Gradio's cache is swept, and the age past which its files (downloads, uploads) are removed (seconds).
CACHE_SWEEP = (3600, 3600)


@contextmanager
def gradio_temp_dir(folder: Path) -> Iterator[None]:
    """``GRADIO_TEMP_DIR`` set to ``folder`` while the block is built (Gradio reads it in each component's and its
    app's constructor), then as it was: each studio of a process keeps its own."""
    before = os.environ.get("GRADIO_TEMP_DIR")
    os.environ["GRADIO_TEMP_DIR"] = str(folder)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("GRADIO_TEMP_DIR", None)
        else:
            os.environ["GRADIO_TEMP_DIR"] = before


def work_directory(app: FastAPI) -> Path:
    """A private temporary directory for this studio (Gradio's cache under it), removed when ``app`` is, when the
    process exits, or by :func:`remove_work_directory` (``h2h studio`` on its way out, SIGTERM included)."""
    folder = Path(tempfile.mkdtemp(prefix="h2h-studio-"))
    app.state.work_directory = folder
    app.state.remove_work_directory = weakref.finalize(app, shutil.rmtree, folder, ignore_errors=True)
    return folder


def remove_work_directory(app: FastAPI) -> None:
    """Remove ``app``'s :func:`work_directory` now (once; nothing when it has none)."""
    remove = getattr(app.state, "remove_work_directory", None)
    if remove is not None:
        remove()


def create_app(settings: Settings) -> FastAPI:
    """Assemble the studio: REST API under ``/api/v1``, login pages, and the Gradio UI at ``/ui``."""
    engine = store_engine(settings)
    app = FastAPI(title="H2HTalk Studio", docs_url=None, redoc_url=None, openapi_url=None)
    # One per app (the form and the REST login count failures together), its counts in the store (every process's).
    throttle = StoreLoginThrottle(engine=engine)
    share_state(app, engine=engine, settings=settings, throttle=throttle)
    recent = RecentCallers()
    cache = work_directory(app) / "gradio"  # never the machine's shared /tmp/gradio: other apps' files live there
    app.add_middleware(
        GradioGate, caller_name=partial(caller_name, engine, recent=recent), cache_dir=str(cache), engine=engine
    )
    app.add_middleware(SameOriginMiddleware)  # Gradio's event routes take no CSRF token of their own
    app.add_middleware(LoginRedirectMiddleware, engine=engine)
    idle = settings.body_timeout_seconds  # the longest pause between two pieces of a body
    app.add_middleware(UploadGate, engine=engine, limit=settings.max_upload_bytes, idle_seconds=idle)  # imports only
    app.add_middleware(RequestGate, engine=engine, limit=settings.max_request_bytes, idle_seconds=idle)
    app.add_middleware(StoreFaultGuard)  # outside every layer that reads the store
    # Added last, so outermost: a 403 from the same-origin check and the redirect carry the headers too.
    app.add_middleware(SecurityHeadersMiddleware, headers=security_headers(hsts=settings.cookie_secure is True))
    if settings.forwarded_allow_ips:  # outermost: every layer sees the client (and scheme) a trusted proxy names
        from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.forwarded_allow_ips)
    app.mount("/api", create_api(settings, engine=engine, throttle=throttle))
    app.include_router(pages.router)
    app.include_router(static.router)  # /favicon.ico, for everyone
    with gradio_temp_dir(cache):  # read by every component as it is built, and by the mounted app
        blocks = _ui_blocks(engine, settings)
        blocks.delete_cache = CACHE_SWEEP
        mounted = mount_ui(app, blocks, engine=engine, settings=settings, recent=recent)
    add_store_fault_handlers(gradio_app(mounted), status_code=GRADIO_STATUS)
    limit_worker_threads(mounted, threads=settings.worker_threads)
    return mounted


def limit_worker_threads(app: FastAPI, *, threads: int) -> None:
    """Run at most ``threads`` handlers at once in ``app``'s worker threads (anyio's default limiter, which FastAPI's
    sync routes and Gradio's handlers share), set as the app starts in the event loop that serves it.

    Why not anyio's 40: a handler spends most of its time in the store's driver, handing Python's interpreter lock
    back and forth; with 40 threads contending for it, each hand-over cost more (``Settings.worker_threads``)."""
    serve = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(served: Any) -> AsyncIterator[Any]:
        anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        async with serve(served) as state:
            yield state

    app.router.lifespan_context = lifespan


def mount_ui(app: FastAPI, blocks: Any, *, engine: Engine, settings: Settings, recent: RecentCallers) -> FastAPI:
    """``blocks`` mounted at ``/ui`` in ``app``, Gradio's sign-in check resolving the caller in the store, each
    person's pending events bounded (:class:`studio.web.queue_limit.QueueLimit`)."""
    import gradio as gr

    from studio.ui.app import UI_CSS, UI_HEAD

    async def gradio_user(request: Request) -> str | None:
        # The gate in front (studio.web.sessions) resolved the caller of every request naming a page session (each
        # event's queue/join and queue/data): one store lookup per request, not two.
        if hasattr(request.state, RESOLVED_CALLER):
            resolved: str | None = getattr(request.state, RESOLVED_CALLER)
            return resolved
        return await run_in_threadpool(caller_name, engine, request, recent)

    mounted: FastAPI = gr.mount_gradio_app(
        app,
        blocks,
        path=UI_PATH,
        auth_dependency=gradio_user,
        footer_links=[],
        run_history=False,
        # Refusals are gr.Error (always shown); any other exception's text (SQL, paths) stays in the server log.
        show_error=False,
        # The one upload the UI takes is the admin page's scenario import (UploadGate lets only those who may import
        # reach Gradio's upload routes, and bounds the whole request). Gradio's own per-file bound is set just above
        # UploadGate's (a request is never smaller than its files), so UploadGate always refuses first, with one
        # message naming H2H_MAX_UPLOAD_BYTES; before, whichever of the two read the oversized chunk first answered.
        max_file_size=settings.max_upload_bytes + MULTIPART_OVERHEAD + 1,
        ssr_mode=False,
        mcp_server=False,
        css=UI_CSS,
        head=UI_HEAD,
    )
    # Inside Gradio's app, after the gate: one person's pending events are bounded (studio.web.queue_limit).
    gradio_app(mounted).add_middleware(
        QueueLimit, queue_of=lambda: blocks._queue, caller_name=partial(caller_name, engine, recent=recent)
    )
    return mounted


def gradio_app(app: FastAPI) -> FastAPI:
    """The Gradio application mounted at ``/ui`` in ``app``."""
    from starlette.routing import Mount

    for route in app.routes:
        if isinstance(route, Mount) and route.path == UI_PATH and isinstance(route.app, FastAPI):
            return route.app
    raise LookupError(f"no Gradio application mounted at {UI_PATH}")
