"""The studio web application: REST API, login/logout pages and the Gradio UI at ``/ui``.

Authentication is one opaque token from :func:`studio.services.auth.login`, carried either in the
``h2h_session`` cookie (browsers; HttpOnly, SameSite=Lax) or an ``Authorization: Bearer`` header
(scripts). Every Gradio route answers 401 without a valid token; a browser asking for the UI page
without one is sent to ``/login`` instead.
"""

from __future__ import annotations

import html
import logging
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from studio.security import (
    LoginThrottle,
    LoginThrottled,
    SameOriginMiddleware,
    SecurityHeadersMiddleware,
    client_address,
    security_headers,
)
from studio.settings import Settings

logger = logging.getLogger(__name__)

SESSION_COOKIE = "h2h_session"
UI_PATH = "/ui"

LOGIN_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>H2HTalk Studio — sign in</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body {{ font-family: system-ui, sans-serif; background: #f8fafc; display: flex; justify-content: center; }}
form {{ margin-top: 12vh; background: white; padding: 2em; border-radius: 12px; box-shadow: 0 2px 12px #0002;
        display: flex; flex-direction: column; gap: 0.8em; min-width: 18em; }}
input {{ padding: 0.5em; font-size: 1em; }} button {{ padding: 0.6em; font-size: 1em; cursor: pointer; }}
.error {{ color: #b91c1c; }}
</style></head>
<body><form method="post" action="/login">
<h1>H2HTalk Studio</h1>
{error}
<label>Username <input name="username" id="username" autocomplete="username" required autofocus></label>
<label>Password <input name="password" id="password" type="password" autocomplete="current-password" required>
</label>
<button type="submit" id="login-button">Sign in</button>
</form></body></html>
"""


def token_from_request(request: Any) -> str | None:
    """Return the session token of a request: the ``h2h_session`` cookie, else a Bearer header, else None."""
    token = request.cookies.get(SESSION_COOKIE)
    if token:
        return token
    authorization = request.headers.get("authorization", "")
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() == "bearer" and credentials.strip():
        return credentials.strip()
    return None


def resolve_user(engine: Engine, token: str | None) -> Any:
    """Return the ``UserPublic`` a token belongs to (re-read from the store), or None."""
    from studio.db import read_session
    from studio.services.auth import user_for_token

    if not token:
        return None
    with read_session(engine) as session:
        return user_for_token(session, token=token)


def _login_page(error: str | None = None, status_code: int = 200) -> HTMLResponse:
    message = f'<p class="error" id="login-error">{html.escape(error)}</p>' if error else ""
    return HTMLResponse(LOGIN_PAGE.format(error=message), status_code=status_code)


def _same_origin(request: Request) -> bool:
    """A form POST from another site carries its own Origin; refuse it (login CSRF)."""
    origin = request.headers.get("origin")
    if not origin or origin == "null":
        return origin is None
    return urlsplit(origin).netloc == request.headers.get("host", "")


def add_login_routes(
    app: FastAPI, engine: Engine, *, token_ttl_seconds: int, throttle: LoginThrottle, cookie_secure: bool | None = None
) -> None:
    """Add ``/`` (to the UI or the login page) and ``/login`` (GET the form, POST the credentials) to ``app``.

    Failed sign-ins count against ``throttle``; while it refuses, the form answers 429 without checking the
    password. ``cookie_secure`` None marks the cookie Secure only on an https request.
    """
    from studio.db import write_session
    from studio.services.auth import login
    from studio.services.errors import ServiceError

    @app.get("/", include_in_schema=False)
    async def root(request: Request) -> RedirectResponse:
        user = await run_in_threadpool(resolve_user, engine, token_from_request(request))
        return RedirectResponse(UI_PATH + "/" if user else "/login", status_code=303)

    @app.get("/login", include_in_schema=False)
    async def login_form() -> HTMLResponse:
        return _login_page()

    @app.post("/login", include_in_schema=False)
    async def login_submit(request: Request, username: str = Form(...), password: str = Form(...)) -> Response:
        if not _same_origin(request):
            return _login_page("This sign-in came from another site and was refused.", status_code=403)

        def attempt() -> str:
            with write_session(engine) as session:
                return login(session, username=username, password=password, ttl_seconds=token_ttl_seconds)

        try:
            token = await run_in_threadpool(
                throttle.attempt,
                username=username,
                address=client_address(request),
                sign_in=attempt,
                failures=(ServiceError,),
            )
        except LoginThrottled as error:
            page = _login_page("Too many failed sign-ins. Try again later.", status_code=429)
            page.headers["Retry-After"] = str(error.retry_after)
            return page
        except ServiceError:
            return _login_page("Wrong username or password.", status_code=401)
        response = RedirectResponse(UI_PATH + "/", status_code=303)
        secure = request.url.scheme == "https" if cookie_secure is None else cookie_secure
        response.set_cookie(
            SESSION_COOKIE, token, max_age=token_ttl_seconds, httponly=True, samesite="lax", path="/", secure=secure
        )
        return response


def add_logout_route(app: FastAPI, engine: Engine) -> None:
    """Add ``POST /logout``: revoke the session token in the store and drop the cookie.

    POST only, and refused from another site's page: a link or an ``<img src=/logout>`` signs nobody out.
    """
    from studio.db import write_session
    from studio.services.auth import logout

    @app.post("/logout", include_in_schema=False)
    async def logout_route(request: Request) -> Response:
        if not _same_origin(request):
            return HTMLResponse("This sign-out came from another site and was refused.", status_code=403)
        token = request.cookies.get(SESSION_COOKIE)
        if token:

            def revoke() -> None:
                with write_session(engine) as session:
                    logout(session, token=token)

            await run_in_threadpool(revoke)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response


class LoginRedirectMiddleware:
    """Plain ASGI middleware: a browser GET of the UI page (``/ui`` or ``/ui/``) without a valid session goes to
    ``/login``; every other request passes straight through, untouched and unbuffered.

    Not ``@app.middleware("http")``: Starlette's ``BaseHTTPMiddleware`` wraps *every* request (API calls
    included) in a task group and memory streams, which cost about 8 % of the server's CPU under load.
    """

    def __init__(self, app: ASGIApp, engine: Engine) -> None:
        self.app = app
        self.engine = engine

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"] in (UI_PATH, UI_PATH + "/"):
            request = Request(scope)
            if "text/html" in request.headers.get("accept", ""):
                user = await run_in_threadpool(resolve_user, self.engine, token_from_request(request))
                if user is None:
                    await RedirectResponse("/login", status_code=303)(scope, receive, send)
                    return
        await self.app(scope, receive, send)


def add_ui_redirect(app: FastAPI, engine: Engine) -> None:
    """Send a browser that asks for the UI page without a valid session to ``/login``."""
    app.add_middleware(LoginRedirectMiddleware, engine=engine)


def create_app(settings: Settings) -> FastAPI:
    """Assemble the studio: REST API under ``/api/v1``, login pages, and the Gradio UI at ``/ui``."""
    import gradio as gr

    from studio.api import create_api
    from studio.db import create_db_engine
    from studio.ui.app import UI_CSS, UI_HEAD, build_ui
    from studio.ui.flow import QueueLimits

    engine = create_db_engine(settings.database_url, busy_timeout_ms=settings.sqlite_busy_timeout_ms)
    app = FastAPI(title="H2HTalk Studio", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(SameOriginMiddleware)  # Gradio's event routes take no CSRF token of their own
    # Added last, so outermost: a 403 from the same-origin check carries the headers too.
    app.add_middleware(SecurityHeadersMiddleware, headers=security_headers(hsts=settings.cookie_secure is True))
    throttle = LoginThrottle()  # one per app: the form and the REST login count failures together
    api = create_api(settings, engine=engine, throttle=throttle)
    if isinstance(api, FastAPI):
        app.mount("/api", api)
    else:
        app.include_router(api)
    add_login_routes(
        app,
        engine,
        token_ttl_seconds=settings.token_ttl_seconds,
        throttle=throttle,
        cookie_secure=settings.cookie_secure,
    )
    add_logout_route(app, engine)
    add_ui_redirect(app, engine)

    async def gradio_user(request: Request) -> str | None:
        user = await run_in_threadpool(resolve_user, engine, token_from_request(request))
        return None if user is None else user.username

    limits = QueueLimits(lease_seconds=settings.lease_seconds, max_seconds_spent=settings.max_seconds_spent)
    blocks = build_ui(engine, limits=limits)
    return gr.mount_gradio_app(
        app,
        blocks,
        path=UI_PATH,
        auth_dependency=gradio_user,
        footer_links=[],
        run_history=False,
        # Refusals are gr.Error (always shown); any other exception's text (SQL, paths) stays in the server log.
        show_error=False,
        max_file_size=1,  # the UI takes no uploads: Gradio's upload route must not take files of any size
        ssr_mode=False,
        mcp_server=False,
        css=UI_CSS,
        head=UI_HEAD,
    )
