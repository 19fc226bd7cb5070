"""The admin API (``/api/v1/admin``) over a real store and server: people and accounts (with the audit log), campaigns
over a target filter with their progress and assignment by role, and scenario imports — checked whole, every problem
``file:line: field: problem``, stored only on confirmation, the staged files deleted after."""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, func, select

from studio.db import read_session
from studio.models import CampaignPublic, ScenarioRow, UserPublic
from studio.settings import get_settings
from studio.web.api import create_api
from tests.serving import serve_in_thread
from tests.studio.conftest import PASSWORD


@pytest.fixture
def admin_api(
    corpus: Engine, users: dict[str, UserPublic], campaign: CampaignPublic, db_url: str, tmp_path: Path
) -> Iterator[str]:
    """The API over the corpus (one person per role, the ``vote`` campaign); temporary files go to ``tmp_path``."""
    app = FastAPI()
    app.mount("/api", create_api(get_settings(database_url=db_url), engine=corpus))
    previous, tempfile.tempdir = tempfile.tempdir, str(tmp_path / "tmp")
    (tmp_path / "tmp").mkdir()
    try:
        with serve_in_thread(app) as url:
            yield f"{url}/api/v1"
    finally:
        tempfile.tempdir = previous


def login(api: str, username: str, password: str = PASSWORD) -> httpx.Response:
    return httpx.post(f"{api}/login", json={"username": username, "password": password}, timeout=60)


def client_for(api: str, username: str, password: str = PASSWORD) -> httpx.Client:
    token = login(api, username, password).json()["token"]
    return httpx.Client(base_url=api, headers={"Authorization": f"Bearer {token}"}, timeout=60)


def me(api: str, client: httpx.Client) -> int:
    return client.get("/me").status_code


def test_an_admin_adds_people_changes_roles_deactivates_resets_and_revokes(admin_api: str) -> None:
    with client_for(admin_api, "admin") as admin:
        added = admin.post("/admin/users", json={"username": "ｎｅｗ", "role": "annotator"})
        assert added.status_code == 201, added.text
        generated = added.json()["password"]
        assert added.json()["user"]["username"] == "new" and len(generated) >= 16
        assert login(admin_api, "new", generated).status_code == 200
        assert admin.put("/admin/users/new/role", json={"role": "expert"}).json()["role"] == "expert"

        expert = client_for(admin_api, "expert")
        assert me(admin_api, expert) == 200
        assert admin.post("/admin/users/expert/deactivate").json()["is_active"] is False
        assert me(admin_api, expert) == 401  # at once: the session that was open a moment ago
        assert login(admin_api, "expert").status_code == 401
        assert admin.post("/admin/users/expert/activate").json()["is_active"] is True
        assert me(admin_api, expert) == 401 and login(admin_api, "expert").status_code == 200

        curator = client_for(admin_api, "curator")
        reset = admin.post("/admin/users/curator/password", json={"password": "typed by the admin"})
        assert reset.status_code == 200 and reset.json()["password"] is None  # a typed password is not echoed
        assert me(admin_api, curator) == 401
        assert login(admin_api, "curator").status_code == 401
        assert login(admin_api, "curator", "typed by the admin").status_code == 200

        researcher = client_for(admin_api, "researcher")
        assert admin.post("/admin/users/researcher/revoke-sessions").json() == {
            "username": "researcher",
            "sessions_revoked": 1,
        }
        assert me(admin_api, researcher) == 401

        listed = {row["username"]: row for row in admin.get("/admin/users").json()}
        assert listed["expert"]["is_active"] is True and listed["new"]["role"] == "expert"
        assert listed["curator"]["last_login"] is not None and listed["new"]["last_login"] is not None
        assert listed["annotator"]["last_login"] is None

        log = admin.get("/admin/audit", params={"action": "user.", "actor": "admin"}).json()
        actions = [(row["action"], row["entity_id"]) for row in reversed(log["rows"])]
        assert actions == [
            ("user.create", "new"),
            ("user.set_role", "new"),
            ("user.deactivate", "expert"),
            ("user.activate", "expert"),
            ("user.reset_password", "curator"),
            ("user.revoke_sessions", "researcher"),
        ]
        assert log["total"] == 6 and "typed by the admin" not in json.dumps(log)


def test_the_last_active_admin_cannot_lock_everyone_out(admin_api: str) -> None:
    with client_for(admin_api, "admin") as admin:
        for refused in (
            admin.post("/admin/users/admin/deactivate"),
            admin.put("/admin/users/admin/role", json={"role": "curator"}),
        ):
            assert refused.status_code == 409
            assert refused.json()["detail"].startswith("username: 'admin' is the last active admin")
        assert me(admin_api, admin) == 200
        bad = admin.post("/admin/users", json={"username": "eve\u200b", "role": "annotator", "password": "x"})
        assert bad.status_code == 422 and bad.json()["detail"].startswith("username: contains an invisible")
        assert admin.post("/admin/users/ghost/deactivate").status_code == 404


def test_an_admin_creates_a_campaign_over_a_filter_assigns_it_and_reads_its_progress(admin_api: str) -> None:
    spec = {
        "name": "zh-plans",
        "schema": "crowd_vote",
        "people_per_item": 1,
        "subtasks": ["itinerary_basic", "itinerary_middle"],
        "languages": ["zh"],
    }
    with client_for(admin_api, "admin") as admin, client_for(admin_api, "annotator") as annotator:
        choices = admin.get("/admin/targets").json()
        assert choices["languages"] == ["en", "zh"] and choices["models"] == ["model-alpha", "model-beta"]
        created = admin.post("/admin/campaigns", json=spec)
        assert created.status_code == 201, created.text
        assert created.json()["eligible_roles"] == ["annotator"] and created.json()["created_by"] == "admin"
        assert admin.post("/admin/campaigns", json=spec).status_code == 409
        bad = admin.post("/admin/campaigns", json={**spec, "name": "a/b"})
        assert bad.status_code == 422 and bad.json()["detail"].startswith("name: ")
        zero = admin.post("/admin/campaigns", json={**spec, "name": "zero", "people_per_item": 0})
        assert zero.status_code == 422 and zero.json()["detail"].startswith("people_per_item: must be 1 or more")

        item = annotator.get("/campaigns/zh-plans/next").json()
        assert item["content"]["user_input"] in ("周末去杭州玩两天", "去北京一天")  # iti-1 or iti-3: zh, level I
        answer = {"verdict": "keep", "subtask_label": "itinerary_basic"}
        body = {"item_id": item["item_id"], "lease_id": item["lease_id"], "submission_id": uuid.uuid4().hex}
        assert annotator.post("/campaigns/zh-plans/answers", json={**body, "answers": answer}).status_code == 201
        [overview] = [row for row in admin.get("/admin/campaigns").json() if row["name"] == "zh-plans"]
        assert overview["progress"] == {"answers": 1, "items": 2, "complete_items": 1} and overview["people"] == 1
        assert overview["filters"]["languages"] == ["zh"]

        assigned = admin.put("/admin/campaigns/zh-plans/roles", json={"roles": ["expert", "curator"]})
        assert assigned.json()["eligible_roles"] == ["expert", "curator"]
        assert annotator.get("/campaigns/zh-plans/next").status_code == 403  # no longer theirs
        with client_for(admin_api, "expert") as expert:
            assert expert.get("/campaigns/zh-plans/next").status_code == 200
        assert admin.put("/admin/campaigns/zh-plans/roles", json={"roles": []}).status_code == 422

        assert admin.post("/admin/campaigns/zh-plans/close").json()["status"] == "closed"
        assert admin.post("/admin/campaigns/zh-plans/open").json()["status"] == "open"
        log = admin.get("/admin/audit", params={"entity": "campaign", "entity_id": "zh-plans"}).json()
        assert [row["action"] for row in log["rows"]] == [
            "campaign.open",
            "campaign.closed",
            "campaign.assign",
            "campaign.create",
        ]


GOOD_LINES = [
    {"id": "imp-1", "subtask": "dialogue_base", "user_input": "今天下雨了。", "reference": "记得带伞哦。"},
    {"id": "imp-2", "subtask": "dialogue_emotion", "user_input": "I failed.", "reference": "That hurts. I'm here."},
]
BAD_FILE = "\n".join(
    [
        json.dumps(GOOD_LINES[0], ensure_ascii=False),
        json.dumps({"id": "imp-3", "subtask": "dialogue_nonsense", "reference": "x"}),
        "{not json",
        json.dumps({"id": "imp-4", "subtask": "dialogue_base", "reference": "  "}),
        json.dumps(GOOD_LINES[0], ensure_ascii=False),
    ]
)


def post_files(client: httpx.Client, files: dict[str, str], *, confirm: bool) -> httpx.Response:
    parts = [("files", (name, text.encode("utf-8"))) for name, text in files.items()]
    return client.post("/admin/imports", files=parts, data={"confirm": "true" if confirm else "false"})


def stored_ids(engine: Engine) -> list[str]:
    with read_session(engine) as session:
        found = session.execute(select(ScenarioRow.id)).scalars()
        return sorted(name for name in found if not name.startswith(("dlg-", "iti-")))  # less the corpus's own


def test_an_import_with_bad_lines_lists_every_problem_and_stores_nothing(
    admin_api: str, corpus: Engine, tmp_path: Path
) -> None:
    before = stored_ids(corpus)
    with client_for(admin_api, "admin") as admin:
        refused = post_files(admin, {"mixed.jsonl": BAD_FILE}, confirm=True)
    assert refused.status_code == 422, refused.text
    body: dict[str, Any] = refused.json()
    assert body["detail"] == f"files: {len(body['problems'])} problem(s); nothing was stored" and not body["stored"]
    problems = body["problems"]
    assert any(problem.startswith("mixed.jsonl:2: subtask: ") for problem in problems), problems
    assert any(problem.startswith("mixed.jsonl:3: (line): invalid JSON") for problem in problems), problems
    assert "mixed.jsonl:4: reference: reference is blank" in problems
    assert any(problem.startswith("mixed.jsonl:5: (key): duplicate imp-1") for problem in problems), problems
    assert all(str(tmp_path) not in problem for problem in problems)  # files are named as the person named them
    assert stored_ids(corpus) == before
    assert list((tmp_path / "tmp").iterdir()) == []  # nothing staged is left behind


def test_a_good_import_is_checked_then_stored_on_confirmation_and_the_release_layout_too(
    admin_api: str, corpus: Engine, tmp_path: Path
) -> None:
    ours = "\n".join(json.dumps(line, ensure_ascii=False) for line in GOOD_LINES) + "\n"
    release = '{"response": "抱抱你，今天辛苦了。"}\n{"response": "别难过，我在这里。"}\n'
    files = {"ours.jsonl": ours, "dialogue_emotion.jsonl": release}
    with client_for(admin_api, "admin") as admin:
        checked = post_files(admin, files, confirm=False).json()
        assert (checked["scenarios"], checked["new"], checked["stored"]) == (4, 4, False)
        assert stored_ids(corpus) == []
        stored = post_files(admin, files, confirm=True).json()
        assert stored["stored"] is True and stored["report"]["scenarios_added"] == 4
        again = post_files(admin, files, confirm=False).json()
        assert (again["new"], again["changed"], again["unchanged"]) == (0, 0, 4)
        [entry] = admin.get("/admin/audit", params={"action": "import."}).json()["rows"]
    assert stored_ids(corpus) == ["dialogue_emotion-000001", "dialogue_emotion-000002", "imp-1", "imp-2"]
    assert entry["actor"] == "admin" and entry["detail"] == {"added": 4, "updated": 0}
    assert list((tmp_path / "tmp").iterdir()) == []


def test_an_import_refuses_other_file_kinds_and_a_curator_may_import(admin_api: str, corpus: Engine) -> None:
    with client_for(admin_api, "curator") as curator:
        wrong = post_files(curator, {"notes.html": "<script>alert(1)</script>"}, confirm=True)
        assert wrong.status_code == 422 and "is not a .jsonl file" in wrong.json()["detail"]
        line = json.dumps(GOOD_LINES[1], ensure_ascii=False) + "\n"
        assert post_files(curator, {"one.jsonl": line}, confirm=True).json()["stored"] is True
        assert curator.get("/admin/users").status_code == 403  # importing is theirs, accounts are not
    with read_session(corpus) as session:
        assert session.execute(select(func.count(ScenarioRow.id)).where(ScenarioRow.id == "imp-2")).scalar_one() == 1
