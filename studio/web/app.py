"""The studio web application: the REST API at ``/api``, the login and logout pages, and the Gradio UI at ``/ui``.

Authentication is one opaque token from :func:`studio.usecases.account.sign_in`, carried either in the
``h2h_session`` cookie (browsers; HttpOnly, SameSite=Lax) or an ``Authorization: Bearer`` header (scripts). Every
Gradio route answers 401 without a valid token; a browser asking for the UI page without one is sent to ``/login``.
Both front doors resolve the caller the same way (``studio.web.deps``) and call the same use cases.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from fastapi import FastAPI, Request
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from studio.db import create_db_engine, read_session
from studio.security import LoginThrottle, SameOriginMiddleware, SecurityHeadersMiddleware, security_headers
from studio.services.campaigns import schema_snapshots
from studio.services.errors import ServiceError
from studio.settings import Settings
from studio.usecases.annotate import AnswerLimits
from studio.web import pages, static
from studio.web.api import create_api, share_state
from studio.web.deps import request_context
from studio.web.middleware import UI_PATH, LoginRedirectMiddleware
from studio.web.uploads import UploadGate


def caller_name(engine: Engine, request: Any) -> str | None:
    """The username of the request's live session (one read session), or None."""
    try:
        with request_context(engine, request).reading() as (_session, caller):
            return caller.username
    except ServiceError:
        return None


def _ui_blocks(engine: Engine, settings: Settings) -> Any:
    """The Gradio UI over ``engine``: a form for every bundled workflow and every campaign's schema snapshot."""
    from studio.ui.app import build_ui, form_schemas

    with read_session(engine) as session:
        snapshots = schema_snapshots(session)
    return build_ui(
        open_context=partial(request_context, engine),
        schemas=form_schemas(snapshots),
        limits=AnswerLimits.from_settings(settings),
        upload_limit_bytes=settings.max_upload_bytes,
    )


def create_app(settings: Settings) -> FastAPI:
    """Assemble the studio: REST API under ``/api/v1``, login pages, and the Gradio UI at ``/ui``."""
    import gradio as gr

    from studio.ui.app import UI_CSS, UI_HEAD

    engine = create_db_engine(settings.database_url, busy_timeout_ms=settings.sqlite_busy_timeout_ms)
    app = FastAPI(title="H2HTalk Studio", docs_url=None, redoc_url=None, openapi_url=None)
    throttle = LoginThrottle()  # one per app: the form and the REST login count failures together
    share_state(app, engine=engine, settings=settings, throttle=throttle)
    app.add_middleware(SameOriginMiddleware)  # Gradio's event routes take no CSRF token of their own
    app.add_middleware(LoginRedirectMiddleware, engine=engine)
    app.add_middleware(UploadGate, engine=engine, limit=settings.max_upload_bytes)  # the admin page's import only
    # Added last, so outermost: a 403 from the same-origin check and the redirect carry the headers too.
    app.add_middleware(SecurityHeadersMiddleware, headers=security_headers(hsts=settings.cookie_secure is True))
    if settings.forwarded_allow_ips:  # outermost: every layer sees the client (and scheme) a trusted proxy names
        from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

        app.add_middleware(ProxyHeadersMiddleware, trusted_hosts=settings.forwarded_allow_ips)
    app.mount("/api", create_api(settings, engine=engine, throttle=throttle))
    app.include_router(pages.router)
    app.include_router(static.router)  # /favicon.ico, for everyone

    async def gradio_user(request: Request) -> str | None:
        return await run_in_threadpool(caller_name, engine, request)

    mounted: FastAPI = gr.mount_gradio_app(
        app,
        _ui_blocks(engine, settings),
        path=UI_PATH,
        auth_dependency=gradio_user,
        footer_links=[],
        run_history=False,
        # Refusals are gr.Error (always shown); any other exception's text (SQL, paths) stays in the server log.
        show_error=False,
        # The one upload the UI takes is the admin page's scenario import (UploadGate lets only those who may import
        # reach Gradio's upload routes, and bounds the whole request).
        max_file_size=settings.max_upload_bytes,
        ssr_mode=False,
        mcp_server=False,
        css=UI_CSS,
        head=UI_HEAD,
    )
    return mounted
