"""The caller's own account: signing in (no caller yet), signing out, who they are."""

from __future__ import annotations

from sqlalchemy import Engine
from sqlmodel import Session

from studio.db import read_session, write_session
from studio.models import UserPublic
from studio.policies import AccountPolicy, authorize
from studio.services import auth


def sign_in(engine: Engine, *, username: str, password: str, ttl_seconds: int) -> str:
    """A new session token for the person with this name and password; ``NotAuthenticated`` when either is wrong.

    Two transactions on purpose: the password (argon2, slow by design) is checked in a read session and only the
    token is written in a write transaction, so sign-ins never hold SQLite's write lock while hashing (30 people
    signing in at once would otherwise queue every answer behind them). The front doors count failed attempts
    (``studio.web.security.LoginThrottle``) around it.
    """
    with read_session(engine) as session:
        user_id = auth.check_credentials(session, username=username, password=password)
    with write_session(engine) as session:
        return auth.issue_token(session, user_id=user_id, ttl_seconds=ttl_seconds)


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
