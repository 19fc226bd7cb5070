"""People and login: argon2 password hashes (pwdlib), opaque tokens stored as sha256 with an expiry; and the
account changes an admin makes (role, deactivate / reactivate, password reset, revoking sessions), each audit-logged.

Usernames go through :func:`studio.services.usernames.normalise_username` when an account is created and when
someone signs in. A deactivated person's tokens stop working at once (:func:`user_for_token` checks ``is_active``)
and are revoked too, so reactivating them brings back no old session. The store always keeps one active person with
a role of :data:`studio.policies.ADMINS`: deactivating or demoting the last one is refused (``Conflict``).
"""

from __future__ import annotations

import hashlib
import secrets
import unicodedata
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from sqlalchemy import Select, bindparam, func, update
from sqlalchemy import select as core_select
from sqlmodel import Session, col, select

from studio.db import core_connection
from studio.errors import Conflict, InvalidInput, NotAuthenticated, NotFound
from studio.models import AuditLog, AuthToken, User, UserPublic, utc_now
from studio.models.types import UTCDateTime, stored_id
from studio.policies import ADMINS, ROLES, is_admin_role
from studio.services.text import is_unicode
from studio.services.usernames import check_new_username, normalise_username

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


def check_password(password: str) -> str:
    if not isinstance(password, str) or not password:
        raise InvalidInput("password: must not be empty")
    if not is_unicode(password) or len(password) > 1024:
        raise InvalidInput("password: must be valid text of at most 1024 characters")
    return password


def create_user(session: Session, *, username: str, password: str, role: str, actor: str = "system") -> UserPublic:
    """Add a person; ``Conflict`` when the name is taken or looks like a taken one, ``InvalidInput`` for a bad name
    (mixed scripts included: :func:`check_new_username`) or role or an empty password. The name is stored in its
    canonical form (:func:`normalise_username`)."""
    check_role(role)
    username = normalise_username(username)
    check_password(password)
    if session.exec(select(col(User.id)).where(col(User.username) == username)).first() is not None:
        raise Conflict(f"username: {username!r} already exists")
    check_new_username(username, session.exec(select(col(User.username))).all())  # no look-alike of another
    user = User(username=username, role=role, password_hash=hash_password(password))
    session.add(user)
    session.flush()
    session.add(AuditLog(actor=actor, action="user.create", entity="user", entity_id=username, detail={"role": role}))
    return UserPublic.model_validate(user)


def find_user(session: Session, username: str) -> User:
    """The person named ``username`` (as stored, else in canonical form); ``NotFound`` naming the field.

    Not refused for hidden characters: an admin must be able to reach an account named before the rule existed.
    """
    user = session.exec(select(User).where(col(User.username) == username)).first()
    if user is None and is_unicode(username):
        canonical = unicodedata.normalize("NFKC", username).strip(" ")
        user = session.exec(select(User).where(col(User.username) == canonical)).first()
    if user is None:
        raise NotFound(f"username: no user {username!r}")
    return user


def _audit(session: Session, *, actor: str, action: str, user: User, detail: dict[str, Any]) -> None:
    session.add(AuditLog(actor=actor, action=action, entity="user", entity_id=user.username, detail=detail))


def _keep_an_admin(session: Session, user: User, *, change: str) -> None:
    """Refuse ``change`` when ``user`` is the last active person with an admin role (nobody could undo it)."""
    if not is_admin_role(user.role) or not user.is_active:
        return
    # FOR UPDATE (PostgreSQL; SQLite's write transaction holds the whole store): two admins deactivating each other
    # at once are serialised, and the second sees the first's change, so one of them always stays.
    active_admins = session.execute(
        core_select(col(User.id)).where(col(User.role).in_(ADMINS), col(User.is_active).is_(True)).with_for_update()
    ).scalars()
    if not any(admin_id != user.id for admin_id in active_admins):
        raise Conflict(f"username: {user.username!r} is the last active admin; {change} would lock everyone out")


def set_role(session: Session, *, username: str, role: str, actor: str = "system") -> UserPublic:
    """Change a person's role (audit-logged); the last active admin keeps theirs."""
    check_role(role)
    user = find_user(session, username)
    if not is_admin_role(role):
        _keep_an_admin(session, user, change="changing their role")
    old_role, user.role = user.role, role
    _audit(session, actor=actor, action="user.set_role", user=user, detail={"from": old_role, "to": role})
    session.flush()
    return UserPublic.model_validate(user)


def _revoke_all(session: Session, user_id: int) -> int:
    result = session.exec(
        update(AuthToken)
        .where(col(AuthToken.user_id) == user_id, col(AuthToken.revoked_at).is_(None))
        .values(revoked_at=utc_now())
    )
    return int(result.rowcount or 0)


def revoke_sessions(session: Session, *, username: str, actor: str = "system") -> int:
    """Revoke every live token of the person (signed out everywhere at once); return how many (audit-logged)."""
    user = find_user(session, username)
    revoked = _revoke_all(session, stored_id(user.id))
    _audit(session, actor=actor, action="user.revoke_sessions", user=user, detail={"sessions_revoked": revoked})
    session.flush()
    return revoked


def set_active(session: Session, *, username: str, active: bool, actor: str = "system") -> UserPublic:
    """Deactivate (every session revoked; no sign-in) or reactivate a person (audit-logged); the last active admin
    stays active."""
    user = find_user(session, username)
    detail: dict[str, Any] = {"was_active": user.is_active}
    if not active:
        _keep_an_admin(session, user, change="deactivating them")
        detail["sessions_revoked"] = _revoke_all(session, stored_id(user.id))
    user.is_active = active
    _audit(session, actor=actor, action="user.activate" if active else "user.deactivate", user=user, detail=detail)
    session.flush()
    return UserPublic.model_validate(user)


def reset_password(session: Session, *, username: str, password: str, actor: str = "system") -> UserPublic:
    """Give the person a new password and revoke their sessions (audit-logged; the password is not logged)."""
    check_password(password)
    user = find_user(session, username)
    user.password_hash = hash_password(password)
    revoked = _revoke_all(session, stored_id(user.id))
    _audit(session, actor=actor, action="user.reset_password", user=user, detail={"sessions_revoked": revoked})
    session.flush()
    return UserPublic.model_validate(user)


def generate_password() -> str:
    """A new random password to hand to a person once (16 URL-safe characters, 96 bits)."""
    return secrets.token_urlsafe(12)


def last_logins(session: Session) -> dict[int, datetime]:
    """When each person last signed in (their newest token's creation), by user id."""
    rows = session.execute(
        core_select(col(AuthToken.user_id), func.max(col(AuthToken.created_at))).group_by(col(AuthToken.user_id))
    ).all()
    return {int(user_id): at for user_id, at in rows if at is not None}  # max() keeps the column's UTC type


def list_users(session: Session) -> list[UserPublic]:
    """Every person, by name."""
    users = session.exec(select(User).order_by(col(User.username))).all()
    return [UserPublic.model_validate(user) for user in users]


def check_credentials(session: Session, *, username: str, password: str) -> int:
    """The id of the active person with this name and password; ``NotAuthenticated`` when either is wrong.

    Only reads: run it in a read session, so the argon2 work (deliberately slow) holds no write lock.
    """
    if not is_unicode(password):
        raise NotAuthenticated("username or password is wrong")
    username = normalise_username(username)  # a name with a hidden character is refused, never matched to another
    user = session.exec(select(User).where(col(User.username) == username)).first()
    if user is None:
        verify_password(password, _dummy_hash())  # same work as a real check: no timing hint that the name exists
        raise NotAuthenticated("username or password is wrong")
    if not verify_password(password, user.password_hash) or not user.is_active:
        raise NotAuthenticated("username or password is wrong")
    return stored_id(user.id)


def issue_token(session: Session, *, user_id: int, ttl_seconds: int = DEFAULT_TOKEN_TTL_SECONDS) -> str:
    """A new opaque token for ``user_id`` (write session); ``NotAuthenticated`` when the person was deactivated
    since their password was checked (the check and this write are two transactions)."""
    user = session.get(User, user_id)
    if user is None or not user.is_active:
        raise NotAuthenticated("username or password is wrong")
    token = secrets.token_urlsafe(32)
    session.add(
        AuthToken(user_id=user_id, token_hash=hash_token(token), expires_at=utc_now() + timedelta(seconds=ttl_seconds))
    )
    session.flush()
    return token


def login(session: Session, *, username: str, password: str, ttl_seconds: int = DEFAULT_TOKEN_TTL_SECONDS) -> str:
    """Check the password and return a new opaque token, in one session (a write session); ``NotAuthenticated`` on
    a wrong name or password. The studio's front doors use :func:`check_credentials` then :func:`issue_token`."""
    user_id = check_credentials(session, username=username, password=password)
    return issue_token(session, user_id=user_id, ttl_seconds=ttl_seconds)


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
