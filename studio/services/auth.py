"""People and login: argon2 password hashes (pwdlib), opaque tokens stored as sha256 with an expiry."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from sqlalchemy import Select, bindparam, update
from sqlalchemy import select as core_select
from sqlmodel import Session, col, select

from studio.db import core_connection
from studio.models import AuditLog, AuthToken, User, UserPublic, utc_now
from studio.models.types import UTCDateTime, stored_id
from studio.policies import ROLES
from studio.services.errors import Conflict, InvalidInput, NotAuthenticated, NotFound
from studio.services.text import is_unicode

DEFAULT_TOKEN_TTL_SECONDS = 7 * 24 * 3600


@lru_cache(maxsize=1)
def _hasher() -> Any:
    """pwdlib's ``PasswordHash``, built once: its constructor is not free (pwdlib ships no type information)."""
    from pwdlib import PasswordHash

    return PasswordHash.recommended()


@lru_cache(maxsize=1)
def _dummy_hash() -> str:
    return str(_hasher().hash(secrets.token_hex(16)))


def hash_password(password: str) -> str:
    """Return the argon2 hash of ``password``."""
    return str(_hasher().hash(password))


def verify_password(password: str, password_hash: str) -> bool:
    return bool(_hasher().verify(password, password_hash))


def hash_token(token: str) -> str:
    """The stored form of a token: its sha256 (hex)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def check_role(role: str) -> str:
    if role not in ROLES:
        raise InvalidInput(f"role: {role!r} is not one of {', '.join(ROLES)}")
    return role


def create_user(session: Session, *, username: str, password: str, role: str, actor: str = "system") -> UserPublic:
    """Add a person; raises ``Conflict`` when the name is taken, ``InvalidInput`` for a bad role or empty password."""
    check_role(role)
    username = username.strip()
    if not username or len(username) > 64:
        raise InvalidInput("username: must be 1-64 characters")
    if not password:
        raise InvalidInput("password: must not be empty")
    if session.exec(select(col(User.id)).where(col(User.username) == username)).first() is not None:
        raise Conflict(f"username: {username!r} already exists")
    user = User(username=username, role=role, password_hash=hash_password(password))
    session.add(user)
    session.flush()
    session.add(AuditLog(actor=actor, action="user.create", entity="user", entity_id=username, detail={"role": role}))
    return UserPublic.model_validate(user)


def set_role(session: Session, *, username: str, role: str, actor: str = "system") -> UserPublic:
    """Change a person's role (audit-logged)."""
    check_role(role)
    user = session.exec(select(User).where(col(User.username) == username)).first()
    if user is None:
        raise NotFound(f"username: no user {username!r}")
    old_role, user.role = user.role, role
    session.add(
        AuditLog(
            actor=actor,
            action="user.set_role",
            entity="user",
            entity_id=username,
            detail={"from": old_role, "to": role},
        )
    )
    session.flush()
    return UserPublic.model_validate(user)


def list_users(session: Session) -> list[UserPublic]:
    """Every person, by name."""
    users = session.exec(select(User).order_by(col(User.username))).all()
    return [UserPublic.model_validate(user) for user in users]


def login(session: Session, *, username: str, password: str, ttl_seconds: int = DEFAULT_TOKEN_TTL_SECONDS) -> str:
    """Check the password and return a new opaque token; ``NotAuthenticated`` on a wrong name or password."""
    if not is_unicode(username) or not is_unicode(password):
        raise NotAuthenticated("username or password is wrong")
    user = session.exec(select(User).where(col(User.username) == username)).first()
    if user is None:
        verify_password(password, _dummy_hash())  # same work as a real check: no timing hint that the name exists
        raise NotAuthenticated("username or password is wrong")
    if not verify_password(password, user.password_hash) or not user.is_active:
        raise NotAuthenticated("username or password is wrong")
    token = secrets.token_urlsafe(32)
    session.add(
        AuthToken(
            user_id=stored_id(user.id),
            token_hash=hash_token(token),
            expires_at=utc_now() + timedelta(seconds=ttl_seconds),
        )
    )
    session.flush()
    return token


def logout(session: Session, *, token: str) -> bool:
    """Revoke ``token``; True when a live token was revoked."""
    result = session.exec(
        update(AuthToken)
        .where(col(AuthToken.token_hash) == hash_token(token), col(AuthToken.revoked_at).is_(None))
        .values(revoked_at=utc_now())
    )
    return result.rowcount > 0


@lru_cache(maxsize=1)
def _token_owner_query() -> Select[int | None, str, str, bool, datetime]:
    """The token lookup, built once per process: it runs on every request, and building a SELECT (and its
    cache key) costs more than running it. A Select is immutable; the token and the time are bound per call."""
    return (
        core_select(col(User.id), col(User.username), col(User.role), col(User.is_active), col(User.created_at))
        .join(AuthToken, col(AuthToken.user_id) == col(User.id))
        .where(
            col(AuthToken.token_hash) == bindparam("token_hash"),
            col(AuthToken.revoked_at).is_(None),
            col(AuthToken.expires_at) > bindparam("now", type_=UTCDateTime()),
            col(User.is_active).is_(True),
        )
    )


def user_for_token(session: Session, *, token: str) -> UserPublic | None:
    """The active person a live (unexpired, unrevoked) token belongs to, or None. One indexed query."""
    if not is_unicode(token):
        return None
    # Plain columns on the session's connection, not an ORM entity: this runs on every request.
    row = (
        core_connection(session)
        .execute(_token_owner_query(), {"token_hash": hash_token(token), "now": utc_now()})
        .first()
    )
    return None if row is None else UserPublic(**row._asdict())


def signed_in(session: Session, *, token: str) -> UserPublic:
    """The person a live ``token`` belongs to; ``NotAuthenticated`` when it is unknown, expired or revoked.

    Routes call it first thing in the first session they open (no separate authentication session); a
    route whose work continues in a second session (a write after a read) carries the person on.
    """
    user = user_for_token(session, token=token)
    if user is None:
        raise NotAuthenticated("authorization: the token is unknown, expired or revoked")
    return user
