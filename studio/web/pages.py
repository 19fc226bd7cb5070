"""The browser's way in and out: ``/`` (to the UI or the login page), ``/login`` (the form), ``POST /logout``, and
``GET /ui/logout`` (Gradio's own sign-out link, which otherwise would end only Gradio's session).

Signing in sets the ``h2h_session`` cookie (HttpOnly, SameSite=Lax; Secure per ``Settings.cookie_secure``). Both
forms refuse a POST from another site's page (login CSRF; an ``<img src=/logout>`` signs nobody out), and failed
sign-ins count against the application's :class:`studio.web.security.LoginThrottle`, shared with ``POST /api/v1/login``.
Signing out — either way — revokes the session's token in the store and drops the cookie.
"""

from __future__ import annotations

import html

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from studio.db import write_session
from studio.errors import InvalidInput, ServiceError
from studio.usecases import account
from studio.web.deps import SESSION_COOKIE
from studio.web.middleware import UI_PATH, has_live_session
from studio.web.security import LoginThrottled, client_address, origin_matches

router = APIRouter(include_in_schema=False)

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


def login_page(error: str | None = None, status_code: int = 200) -> HTMLResponse:
    message = f'<p class="error" id="login-error">{html.escape(error)}</p>' if error else ""
    return HTMLResponse(LOGIN_PAGE.format(error=message), status_code=status_code)


def same_origin(request: Request) -> bool:
    """A form POST from another site carries its own Origin; refuse it (login CSRF). One rule with the middleware
    (:func:`studio.web.security.origin_matches`: scheme, host and port)."""
    origin = request.headers.get("origin")
    return origin_matches(origin, scheme=request.url.scheme, host=request.headers.get("host", ""))


@router.get("/")
async def root(request: Request) -> RedirectResponse:
    known = await run_in_threadpool(has_live_session, request.app.state.engine, request)
    return RedirectResponse(UI_PATH + "/" if known else "/login", status_code=303)


@router.get("/login")
async def login_form() -> HTMLResponse:
    return login_page()


@router.post("/login")
async def login_submit(request: Request, username: str = Form(...), password: str = Form(...)) -> Response:
    if not same_origin(request):
        return login_page("This sign-in came from another site and was refused.", status_code=403)
    state = request.app.state

    def attempt() -> str:
        return account.sign_in(
            state.engine, username=username, password=password, ttl_seconds=state.settings.token_ttl_seconds
        )

    try:
        token = await run_in_threadpool(
            state.throttle.attempt,
            username=username,
            address=client_address(request),
            sign_in=attempt,
            failures=(ServiceError,),
        )
    except LoginThrottled as error:
        page = login_page(
            f"Too many failed sign-ins for this username from this address. Try again in {error.retry_after} s.",
            status_code=429,
        )
        page.headers["Retry-After"] = str(error.retry_after)
        return page
    except InvalidInput as error:  # a name no account can have (an invisible character): say what is wrong with it
        return login_page(str(error), status_code=422)
    except ServiceError:
        return login_page("Wrong username or password.", status_code=401)
    response = RedirectResponse(UI_PATH + "/", status_code=303)
    secure = request.url.scheme == "https" if state.settings.cookie_secure is None else state.settings.cookie_secure
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=state.settings.token_ttl_seconds,
        httponly=True,
        samesite="lax",
        path="/",
        secure=secure,
    )
    return response


async def sign_out(request: Request) -> Response:
    """Revoke the cookie's session token in the store (when there is one), drop the cookie, go to the login page."""
    token = request.cookies.get(SESSION_COOKIE)
    if token:

        def revoke() -> None:
            with write_session(request.app.state.engine) as session:
                account.revoke(session, token=token)

        await run_in_threadpool(revoke)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    """Revoke the cookie's session token in the store and drop the cookie (POST only, from this site only)."""
    if not same_origin(request):
        return HTMLResponse("This sign-out came from another site and was refused.", status_code=403)
    return await sign_out(request)


@router.get(UI_PATH + "/logout")
async def ui_logout(request: Request) -> Response:
    """Gradio's sign-out link ends the studio session as ``POST /logout`` does. A GET another site's page started
    (``Sec-Fetch-Site``: ``cross-site`` or ``same-site``) signs nobody out."""
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        return HTMLResponse("This sign-out came from another site and was refused.", status_code=403)
    return await sign_out(request)
