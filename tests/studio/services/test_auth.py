"""People and tokens: argon2 hashes, sha256-stored tokens with expiry, logout, roles; usernames in one canonical form
with nothing invisible; deactivating, reactivating, resetting a password and revoking sessions; the last admin stays."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import Engine, select, update

from studio.db import read_session, write_session
from studio.errors import Conflict, InvalidInput, NotAuthenticated, NotFound, PermissionDenied
from studio.models import AuditLog, AuthToken, User, UserPublic, utc_now
from studio.policies import CurationPolicy, authorize
from studio.services.auth import (
    create_user,
    generate_password,
    hash_token,
    list_users,
    login,
    logout,
    reset_password,
    revoke_sessions,
    set_active,
    set_role,
    user_for_token,
)
from studio.services.usernames import normalise_username, visible_username
from tests.studio.conftest import PASSWORD
from tests.studio.helpers import add_people


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


# --- usernames: one canonical form, nothing invisible (issue 9 item 9) ----------------------------------------------

HIDDEN_NAMES = {
    "zero-width space": ("annotator01\u200b", "U+200B ZERO WIDTH SPACE"),
    "right-to-left override": ("\u202eadmin", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    "bidi isolate": ("ad\u2066min", "U+2066 LEFT-TO-RIGHT ISOLATE"),
    "zero-width joiner": ("ann\u200dotator", "U+200D ZERO WIDTH JOINER"),
    "byte-order mark": ("\ufeffexpert", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
    "soft hyphen": ("cur\u00adator", "U+00AD SOFT HYPHEN"),
    "Hangul filler": ("x\u3164", "U+1160 HANGUL JUNGSEONG FILLER"),  # NFKC maps U+3164 to U+1160
    "variation selector": ("bob\ufe0f", "U+FE0F VARIATION SELECTOR-16"),
    "tab": ("a\tb", "U+0009"),
    "NUL": ("a\x00b", "U+0000"),
    "line separator": ("a\u2028b", "U+2028 LINE SEPARATOR"),
    "lone surrogate": ("a\udc80", "U+DC80"),
}


@pytest.mark.parametrize("case", sorted(HIDDEN_NAMES))
def test_a_username_with_an_invisible_or_control_character_is_refused(case: str) -> None:
    name, named = HIDDEN_NAMES[case]
    with pytest.raises(InvalidInput) as refused:
        normalise_username(name)
    assert str(refused.value).startswith("username: contains an invisible or control character (")
    assert named in str(refused.value)


def test_usernames_are_nfkc_normalised_and_shown_with_hidden_characters_written_out() -> None:
    assert normalise_username("ａｄｍｉｎ") == "admin"  # full-width letters
    assert normalise_username(" bob ") == "bob"
    assert normalise_username("li\u3000lei") == "li lei"  # the ideographic space is a space
    assert normalise_username("李雷") == "李雷" and normalise_username("ﬁona") == "fiona"
    for bad, problem in (("", "1-64"), ("a" * 65, "1-64"), ("a  b", "two spaces")):
        with pytest.raises(InvalidInput, match=problem):
            normalise_username(bad)
    assert visible_username("annotator01\u200b") == "annotator01⟨U+200B⟩"
    assert visible_username("李雷") == "李雷"


def test_an_invisible_character_is_refused_at_creation_and_login_and_matches_no_other_account(
    engine: Engine, users: dict[str, UserPublic]
) -> None:
    with pytest.raises(InvalidInput, match=r"^username: .*U\+200B"), write_session(engine) as session:
        create_user(session, username="annotator\u200b", password="x", role="annotator")
    for typed in ("annotator\u200b", "\u202eannotator", "annotator\x00"):  # NUL: a 422, not a 500 on PostgreSQL
        with pytest.raises(InvalidInput, match="^username: "), write_session(engine) as session:
            login(session, username=typed, password=PASSWORD)
    with write_session(engine) as session:
        token = login(session, username="ａｎｎｏｔａｔｏｒ", password=PASSWORD)  # the same name, full-width
        created = create_user(session, username="ｎｅｗ", password="x", role="expert")
    with read_session(engine) as session:
        assert user_for_token(session, token=token).username == "annotator"
        assert created.username == "new" and "ｎｅｗ" not in [user.username for user in list_users(session)]


# --- deactivate, reactivate, reset a password, revoke sessions --------------------------------------------------------


def live_token(engine: Engine, username: str, password: str = PASSWORD) -> str:
    with write_session(engine) as session:
        return login(session, username=username, password=password)


def owner(engine: Engine, token: str) -> str | None:
    with read_session(engine) as session:
        found = user_for_token(session, token=token)
    return None if found is None else found.username


def audit_actions(engine: Engine, username: str) -> list[tuple[str, str, dict[str, object]]]:
    with read_session(engine) as session:
        entries = session.execute(
            select(AuditLog).where(AuditLog.entity == "user", AuditLog.entity_id == username).order_by(AuditLog.id)
        ).scalars()
        return [(entry.actor, entry.action, entry.detail) for entry in entries]


def test_deactivating_ends_every_session_at_once_and_refuses_sign_in_until_reactivated(
    engine: Engine, users: dict[str, UserPublic]
) -> None:
    first, second = live_token(engine, "expert"), live_token(engine, "expert")
    with write_session(engine) as session:
        assert set_active(session, username="expert", active=False, actor="admin").is_active is False
    assert owner(engine, first) is None and owner(engine, second) is None
    with pytest.raises(NotAuthenticated), write_session(engine) as session:
        login(session, username="expert", password=PASSWORD)
    with write_session(engine) as session:
        set_active(session, username="expert", active=True, actor="admin")
    assert owner(engine, first) is None  # reactivating brings back no old session
    assert owner(engine, live_token(engine, "expert")) == "expert"
    assert audit_actions(engine, "expert") == [
        ("admin", "user.deactivate", {"was_active": True, "sessions_revoked": 2}),
        ("admin", "user.activate", {"was_active": False}),
    ]


def test_a_reset_password_works_the_old_one_does_not_and_sessions_end(
    engine: Engine, users: dict[str, UserPublic]
) -> None:
    token = live_token(engine, "curator")
    with write_session(engine) as session:
        reset_password(session, username="curator", password="a new secret", actor="admin")
    assert owner(engine, token) is None
    with pytest.raises(NotAuthenticated), write_session(engine) as session:
        login(session, username="curator", password=PASSWORD)
    assert owner(engine, live_token(engine, "curator", "a new secret")) == "curator"
    with pytest.raises(InvalidInput, match="^password: "), write_session(engine) as session:
        reset_password(session, username="curator", password="", actor="admin")
    [entry] = audit_actions(engine, "curator")
    assert entry == ("admin", "user.reset_password", {"sessions_revoked": 1})
    assert "a new secret" not in str(entry)
    assert len(generate_password()) >= 16 and generate_password() != generate_password()


def test_revoking_sessions_signs_a_person_out_everywhere(engine: Engine, users: dict[str, UserPublic]) -> None:
    tokens = [live_token(engine, "researcher") for _ in range(3)]
    with write_session(engine) as session:
        assert revoke_sessions(session, username="researcher", actor="admin") == 3
        assert revoke_sessions(session, username="researcher", actor="admin") == 0
    assert [owner(engine, token) for token in tokens] == [None, None, None]
    assert owner(engine, live_token(engine, "researcher")) == "researcher"  # they may sign in again
    assert [action for _actor, action, _detail in audit_actions(engine, "researcher")] == ["user.revoke_sessions"] * 2


def test_the_last_active_admin_can_be_neither_deactivated_nor_demoted(
    engine: Engine, users: dict[str, UserPublic]
) -> None:
    for change in (
        lambda session: set_active(session, username="admin", active=False, actor="admin"),
        lambda session: set_role(session, username="admin", role="curator", actor="admin"),
    ):
        last_admin = pytest.raises(Conflict, match="^username: 'admin' is the last active admin")
        with last_admin, write_session(engine) as session:
            change(session)
    with write_session(engine) as session:
        create_user(session, username="admin2", password="x", role="admin")
        set_active(session, username="admin", active=False, actor="admin2")  # another admin stays active
    with pytest.raises(Conflict), write_session(engine) as session:
        set_role(session, username="admin2", role="annotator", actor="admin2")
    assert [action for _actor, action, _detail in audit_actions(engine, "admin")] == ["user.deactivate"]


def test_an_account_named_before_the_rule_can_still_be_managed(engine: Engine, password_hash: str) -> None:
    add_people(engine, password_hash, ["legacy\u200b"], "annotator")  # stored directly, as older versions allowed
    with write_session(engine) as session:
        assert set_active(session, username="legacy\u200b", active=False, actor="admin").is_active is False
    with pytest.raises(NotFound, match="^username: "), write_session(engine) as session:
        set_active(session, username="nobody", active=False, actor="admin")
    with read_session(engine) as session:
        assert [visible_username(user.username) for user in list_users(session)] == ["legacy⟨U+200B⟩"]


def test_two_admins_deactivating_each_other_at_once_leave_one_active(engine: Engine, password_hash: str) -> None:
    """The first change holds its transaction open while the second starts: the second must wait for it (row locks on
    PostgreSQL, the write lock on SQLite), then see it and refuse — never both committing from a stale count."""
    import threading

    add_people(engine, password_hash, ["ada", "bea"], "admin")
    outcome: list[str] = []

    def second() -> None:
        try:
            with write_session(engine) as session:
                set_active(session, username="ada", active=False, actor="bea")
            outcome.append("deactivated ada")
        except Conflict as error:
            outcome.append(str(error))

    with write_session(engine) as session:
        set_active(session, username="bea", active=False, actor="ada")
        racer = threading.Thread(target=second)
        racer.start()
        racer.join(timeout=0.5)  # without a lock the second change would commit in this time, from a stale count
    racer.join(timeout=60)
    assert outcome == ["username: 'ada' is the last active admin; deactivating them would lock everyone out"]
    with read_session(engine) as session:
        assert {user.username: user.is_active for user in list_users(session)} == {"ada": True, "bea": False}
