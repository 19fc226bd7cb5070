"""``h2h users deactivate|activate|reset-password|revoke-sessions`` and ``h2h campaign assign`` / ``--language``:
the same account and campaign rules as the admin page and API, audit-logged with the actor ``cli``."""

from __future__ import annotations

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import Engine, select

from studio.cli import build_cli
from studio.db import read_session, write_session
from studio.errors import NotAuthenticated
from studio.models import AuditLog, CampaignPublic, UserPublic
from studio.services.auth import login, user_for_token
from tests.studio.conftest import PASSWORD


def h2h(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(build_cli(), list(args), input=input, catch_exceptions=False)


def token(engine: Engine, username: str, password: str = PASSWORD) -> str:
    with write_session(engine) as session:
        return login(session, username=username, password=password)


def alive(engine: Engine, value: str) -> bool:
    with read_session(engine) as session:
        return user_for_token(session, token=value) is not None


def test_account_commands_end_sessions_refuse_sign_in_and_are_audit_logged(
    engine: Engine, users: dict[str, UserPublic], db_url: str
) -> None:
    session_token = token(engine, "expert")
    assert h2h("users", "deactivate", "expert", "--db", db_url).output == "expert is now inactive\n"
    assert not alive(engine, session_token)
    with pytest.raises(NotAuthenticated), write_session(engine) as session:
        login(session, username="expert", password=PASSWORD)
    assert h2h("users", "activate", "expert", "--db", db_url).output == "expert is now active\n"
    assert alive(engine, token(engine, "expert"))

    reset = h2h("users", "reset-password", "expert", "--generate", "--db", db_url)
    assert reset.exit_code == 0 and "their sessions were revoked" in reset.output
    generated = reset.output.split("password (shown once): ")[1].strip()
    assert alive(engine, token(engine, "expert", generated))
    typed = h2h("users", "reset-password", "curator", "--db", db_url, input="new secret\nnew secret\n")
    assert typed.exit_code == 0 and alive(engine, token(engine, "curator", "new secret"))

    assert h2h("users", "revoke-sessions", "curator", "--db", db_url).output == "1 session(s) of curator revoked\n"
    last = h2h("users", "deactivate", "admin", "--db", db_url)
    assert last.exit_code == 1 and "the last active admin" in last.output
    hidden = h2h("users", "add", "eve\u200b", "--role", "annotator", "--password", "x", "--db", db_url)
    assert hidden.exit_code == 1 and "username: contains an invisible or control character (U+200B" in hidden.output
    listed = h2h("users", "list", "--db", db_url).output.splitlines()
    assert [line.split("\t")[:3] for line in listed if line.startswith("expert")] == [["expert", "expert", "active"]]
    with read_session(engine) as session:
        actions = session.execute(select(AuditLog.actor, AuditLog.action).where(AuditLog.entity == "user")).all()
    assert [action for actor, action in actions if actor == "cli"] == [
        "user.deactivate",
        "user.activate",
        "user.reset_password",
        "user.reset_password",
        "user.revoke_sessions",
    ]


def test_campaign_assign_and_language_filter(corpus: Engine, campaign: CampaignPublic, db_url: str) -> None:
    assigned = h2h("campaign", "assign", "vote", "--role", "expert", "--role", "annotator", "--db", db_url)
    assert assigned.output == "campaign vote: annotator, expert may work on it\n"
    created = h2h("campaign", "create", "en-only", "--schema", "crowd_vote", "--language", "en", "--db", db_url)
    assert created.exit_code == 0, created.output
    listing = {
        line.split("\t")[0]: line.split("\t") for line in h2h("campaign", "list", "--db", db_url).output.splitlines()
    }
    assert listing["en-only"][4:6] == ["complete at 20", "queue: fill"]  # the threshold used, the queue's order
    assert listing["en-only"][7] == "0 / 2 complete" and listing["en-only"][8] == "0 people"  # dlg-2 and iti-2
    assert listing["vote"][9] == "annotator,expert"
    unknown = h2h("campaign", "assign", "nope", "--role", "expert", "--db", db_url)
    assert unknown.exit_code == 1
