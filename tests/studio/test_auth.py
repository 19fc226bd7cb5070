"""People and tokens: argon2 hashes, sha256-stored tokens with expiry, logout, roles."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import Engine, select, update

from studio.db import read_session, write_session
from studio.models import AuditLog, AuthToken, User, UserPublic, utc_now
from studio.policies import CurationPolicy, authorize
from studio.services.auth import (
    create_user,
    hash_token,
    list_users,
    login,
    logout,
    set_role,
    user_for_token,
)
from studio.services.errors import Conflict, InvalidInput, NotAuthenticated, NotFound, PermissionDenied
from tests.studio.conftest import PASSWORD


def test_create_user_hashes_with_argon2_and_refuses_duplicates_and_bad_roles(engine: Engine) -> None:
    with write_session(engine) as session:
        created = create_user(session, username="李雷", password="secret", role="annotator")
    with read_session(engine) as session:
        row = session.get(User, created.id)
    assert row.password_hash.startswith("$argon2") and "secret" not in row.password_hash
    with pytest.raises(Conflict, match="already exists"), write_session(engine) as session:
        create_user(session, username="李雷", password="x", role="annotator")
    with pytest.raises(InvalidInput, match="role"), write_session(engine) as session:
        create_user(session, username="x", password="x", role="overlord")
    with read_session(engine) as session:
        assert [user.username for user in list_users(session)] == ["李雷"]


def test_login_token_is_stored_hashed_and_resolves_until_logout(engine: Engine, users: dict[str, UserPublic]) -> None:
    with write_session(engine) as session:
        token = login(session, username="expert", password=PASSWORD)
    with read_session(engine) as session:
        stored = session.execute(select(AuthToken.token_hash)).scalars().all()
        assert stored == [hash_token(token)] and token not in stored
        assert user_for_token(session, token=token).username == "expert"
        assert user_for_token(session, token=token + "x") is None
    with write_session(engine) as session:
        assert logout(session, token=token) is True
        assert logout(session, token=token) is False
    with read_session(engine) as session:
        assert user_for_token(session, token=token) is None


def test_wrong_password_unknown_user_and_expired_token_are_refused(
    engine: Engine, users: dict[str, UserPublic]
) -> None:
    for name, password in (("expert", "wrong"), ("nobody", PASSWORD)):
        with pytest.raises(NotAuthenticated), write_session(engine) as session:
            login(session, username=name, password=password)
    with write_session(engine) as session:
        token = login(session, username="annotator", password=PASSWORD)
        session.execute(update(AuthToken).values(expires_at=utc_now() - timedelta(seconds=1)))
    with read_session(engine) as session:
        assert user_for_token(session, token=token) is None


def test_roles_are_checked_and_changes_audit_logged(engine: Engine, users: dict[str, UserPublic]) -> None:
    authorize(users["admin"], CurationPolicy.decide())
    with pytest.raises(PermissionDenied, match="annotator"):
        authorize(users["annotator"], CurationPolicy.decide())
    with pytest.raises(NotAuthenticated):
        authorize(None, CurationPolicy.decide())
    with write_session(engine) as session:
        assert set_role(session, username="annotator", role="expert", actor="admin").role == "expert"
    with pytest.raises(NotFound), write_session(engine) as session:
        set_role(session, username="ghost", role="expert")
    with read_session(engine) as session:
        log = session.execute(select(AuditLog).where(AuditLog.action == "user.set_role")).scalars().one()
    assert log.detail == {"from": "annotator", "to": "expert"} and log.actor == "admin"
