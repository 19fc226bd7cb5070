"""A sign-in checks the password (argon2, slow by design) without holding SQLite's write lock: while the hash is
being verified another connection can take the write lock at once, so answers are never queued behind sign-ins.
(The sign-in page calls the same use case, ``studio.usecases.account.sign_in``.)"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from studio.db import create_db_engine, upgrade_db, write_session
from studio.services import auth
from studio.services.auth import create_user
from studio.settings import get_settings
from studio.web.api import create_api
from tests.serving import serve_in_thread
from tests.studio.conftest import PASSWORD


@pytest.fixture
def store_file(tmp_path: Path) -> Path:
    path = tmp_path / "studio.sqlite"
    engine = create_db_engine(f"sqlite:///{path}")
    upgrade_db(engine)
    with write_session(engine) as session:
        create_user(session, username="annotator", password=PASSWORD, role="annotator")
    engine.dispose()
    return path


@pytest.fixture
def write_lock_free_during_verify(store_file: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[bool]]:
    """Each password verification records whether another connection could take the write lock meanwhile."""
    seen: list[bool] = []
    verify = auth.verify_password

    def verify_and_probe(password: str, password_hash: str) -> bool:
        probe = sqlite3.connect(store_file, timeout=0, isolation_level=None)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.execute("ROLLBACK")
            seen.append(True)
        except sqlite3.OperationalError:  # "database is locked": the sign-in holds the write lock
            seen.append(False)
        finally:
            probe.close()
        return verify(password, password_hash)

    monkeypatch.setattr(auth, "verify_password", verify_and_probe)
    yield seen


def serve(store_file: Path) -> Any:
    settings = get_settings(database_url=f"sqlite:///{store_file}")
    app = FastAPI()
    app.mount("/api", create_api(settings, engine=create_db_engine(settings.database_url)))
    return serve_in_thread(app)


def test_the_rest_login_verifies_the_password_outside_the_write_lock(
    store_file: Path, write_lock_free_during_verify: list[bool]
) -> None:
    with serve(store_file) as url:
        answer = httpx.post(f"{url}/api/v1/login", json={"username": "annotator", "password": PASSWORD})
        wrong = httpx.post(f"{url}/api/v1/login", json={"username": "annotator", "password": "wrong-password"})
    assert answer.status_code == 200 and answer.json()["token"]
    assert wrong.status_code == 401
    assert write_lock_free_during_verify == [True, True]


def test_a_person_deactivated_between_the_check_and_the_token_gets_no_token(store_file: Path) -> None:
    engine = create_db_engine(f"sqlite:///{store_file}")
    with write_session(engine) as session:
        user_id = auth.check_credentials(session, username="annotator", password=PASSWORD)
        auth.set_active(session, username="annotator", active=False)
    with write_session(engine) as session, pytest.raises(auth.NotAuthenticated):
        auth.issue_token(session, user_id=user_id)
    engine.dispose()
