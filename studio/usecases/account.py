"""The caller's own account: signing in (no caller yet), signing out, who they are."""

from __future__ import annotations

from sqlmodel import Session

from studio.models import UserPublic
from studio.policies import AccountPolicy, authorize
from studio.services import auth


def sign_in(session: Session, *, username: str, password: str, ttl_seconds: int) -> str:
    """A new session token for the person with this name and password; ``NotAuthenticated`` when either is wrong.

    Run it in a write session. The front doors count failed attempts (``studio.security.LoginThrottle``) around it.
    """
    return auth.login(session, username=username, password=password, ttl_seconds=ttl_seconds)


def sign_out(session: Session, *, caller: UserPublic, token: str) -> bool:
    """Revoke the caller's session ``token``; True when a live token was revoked."""
    authorize(caller, AccountPolicy.own())
    return auth.logout(session, token=token)


def revoke(session: Session, *, token: str) -> bool:
    """Revoke ``token`` whoever holds it (the sign-out page: a dead or unknown token is simply gone already)."""
    return auth.logout(session, token=token)


def me(*, caller: UserPublic) -> UserPublic:
    """The caller, as the store knows them now."""
    authorize(caller, AccountPolicy.own())
    return caller
