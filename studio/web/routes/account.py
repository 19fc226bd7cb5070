"""``/v1/login``, ``/v1/logout``, ``/v1/me``: signing in for a token, revoking it, who the token belongs to."""

# No `from __future__ import annotations`: FastAPI reads the dependency types of the signatures as objects.
from typing import Any

from fastapi import APIRouter, Request, Response, status
from fastapi.responses import JSONResponse

from studio.errors import NotAuthenticated
from studio.models import UserPublic
from studio.usecases import account
from studio.web.deps import CallerDep, SettingsDep
from studio.web.schemas import LoginIn, TokenOut, no_content
from studio.web.security import LoginThrottled, client_address

router = APIRouter(prefix="/v1", tags=["auth"])


@router.post("/login", response_model=TokenOut, responses={429: {"description": "too many failed sign-ins"}})
def login(body: LoginIn, request: Request, settings: SettingsDep) -> Any:
    """A session token for a username and password (failed attempts are throttled; see Retry-After)."""
    engine = request.app.state.engine

    def sign_in() -> str:
        return account.sign_in(
            engine, username=body.username, password=body.password, ttl_seconds=settings.token_ttl_seconds
        )

    try:
        token = request.app.state.throttle.attempt(
            username=body.username, address=client_address(request), sign_in=sign_in, failures=(NotAuthenticated,)
        )
    except LoginThrottled as error:
        return JSONResponse(
            {"detail": f"login: {error}"},
            status_code=status.HTTP_429_TOO_MANY_REQUESTS,
            headers={"Retry-After": str(error.retry_after)},
        )
    return TokenOut(token=token)


@router.post("/logout", status_code=status.HTTP_204_NO_CONTENT)
def logout(caller: CallerDep) -> Response:
    """Revoke the caller's token."""
    with caller.writing() as (session, user):
        account.sign_out(session, caller=user, token=str(caller.token))
    return no_content()


@router.get("/me", response_model=UserPublic)
def me(caller: CallerDep) -> UserPublic:
    """The caller's account."""
    with caller.reading() as (_session, user):
        return account.me(caller=user)
