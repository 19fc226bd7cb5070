"""The REST API over a real uvicorn server on 127.0.0.1, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from studio.models import CampaignPublic, UserPublic
from studio.settings import get_settings
from studio.web.api import create_api
from tests.serving import serve_in_thread
from tests.studio.conftest import PASSWORD

VOTE = {"verdict": "revise", "subtask_label": "dialogue_base"}


@pytest.fixture
def base_url(corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], db_url: str) -> Iterator[str]:
    """The API mounted at /api (as studio.web.app does) and served by uvicorn in a thread."""
    app = FastAPI()
    app.mount("/api", create_api(get_settings(database_url=db_url), engine=corpus))
    with serve_in_thread(app) as url:
        yield f"{url}/api/v1"


def client_for(base_url: str, username: str) -> httpx.Client:
    token = httpx.post(f"{base_url}/login", json={"username": username, "password": PASSWORD}).json()["token"]
    return httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"})


def test_login_logout_and_missing_or_bad_tokens(base_url: str) -> None:
    wrong = httpx.post(f"{base_url}/login", json={"username": "annotator", "password": "nope"})
    assert wrong.status_code == 401 and "password" in wrong.json()["detail"]
    assert httpx.get(f"{base_url}/campaigns").status_code == 401
    assert httpx.get(f"{base_url}/campaigns", headers={"Authorization": "Bearer forged"}).status_code == 401
    missing = httpx.post(f"{base_url}/login", json={"username": "annotator"})
    assert missing.status_code == 422 and "password" in missing.json()["detail"]
    with client_for(base_url, "annotator") as client:
        assert client.get("/me").json()["role"] == "annotator"
        assert client.post("/logout").status_code == 204
        assert client.get("/campaigns").status_code == 401


def test_campaign_list_shows_only_campaigns_open_to_the_role(base_url: str) -> None:
    with client_for(base_url, "annotator") as client:
        listed = client.get("/campaigns").json()
    assert [(c["name"], c["schema"], c["people_per_item"]) for c in listed] == [("vote", "crowd_vote", 2)]
    assert listed[0]["progress"] == {"answers": 0, "items": 6, "complete_items": 0}
    with client_for(base_url, "expert") as client:
        assert client.get("/campaigns").json() == []
        assert client.get("/campaigns/vote/next").status_code == 403


def test_next_submit_retry_conflict_revise_and_done(base_url: str) -> None:
    with client_for(base_url, "annotator") as client:
        item = client.get("/campaigns/vote/next").json()
        assert set(item) >= {"item_id", "lease_id", "questions", "content"}
        assert {q["id"]: q["type"] for q in item["questions"]}["verdict"] == "single_choice"
        body = {
            "item_id": item["item_id"],
            "lease_id": item["lease_id"],
            "submission_id": "s-1",
            "answers": VOTE,
            "seconds_spent": 4.5,
        }
        created = client.post("/campaigns/vote/answers", json=body)
        assert created.status_code == 201, created.text
        retried = client.post("/campaigns/vote/answers", json=body)
        assert retried.status_code == 200 and retried.json() == created.json()
        again = client.post("/campaigns/vote/answers", json=body | {"submission_id": "s-2"})
        assert again.status_code == 409 and "item_id" in again.json()["detail"]
        revised = client.put(f"/campaigns/vote/answers/{item['item_id']}", json={"answers": VOTE | {"verdict": "keep"}})
        assert revised.status_code == 200 and revised.json()["revision"] == 1
        assert client.get(f"/campaigns/vote/answers/{item['item_id']}").json()["values"]["verdict"] == "keep"
        mine = client.get("/me/progress", params={"campaign": "vote"}).json()
        assert mine["mine"]["answers"] == 1 and mine["overall"]["answers"] == 1
        count = 1
        while (response := client.get("/campaigns/vote/next")).status_code == 200:
            current = response.json()
            stored = client.post(
                "/campaigns/vote/answers",
                json={
                    "item_id": current["item_id"],
                    "lease_id": current["lease_id"],
                    "submission_id": f"s-{current['item_id']}-x",
                    "answers": VOTE,
                },
            )
            assert stored.status_code == 201
            count += 1
        assert response.status_code == 204 and count == 6


BAD_SUBMISSIONS = [
    ({"answers": {"verdict": "maybe", "subtask_label": "dialogue_base"}}, 422, "answers.verdict"),
    ({"answers": {"verdict": "keep"}}, 422, "answers.subtask_label"),
    ({"answers": VOTE | {"nope": 1}}, 422, "answers.nope"),
    ({"answers": VOTE | {"comment": "x" * 5000}}, 422, "answers.comment"),
    ({"answers": "keep"}, 422, "answers"),
    ({"item_id": 99999}, 404, "item_id"),
    ({"lease_id": "forged"}, 404, "lease_id"),
    ({"seconds_spent": -1}, 422, "seconds_spent"),
    ({"submission_id": ""}, 422, "submission_id"),
]


def test_bad_submissions_answer_the_right_status_naming_the_field_and_store_nothing(base_url: str) -> None:
    with client_for(base_url, "annotator") as client:
        item = client.get("/campaigns/vote/next").json()
        body = {"item_id": item["item_id"], "lease_id": item["lease_id"], "submission_id": "s-1", "answers": VOTE}
        for change, status, field in BAD_SUBMISSIONS:
            response = client.post("/campaigns/vote/answers", json=body | change)
            assert response.status_code == status, (change, response.text)
            assert field in response.json()["detail"], (change, response.text)
        assert client.post("/campaigns/nope/answers", json=body).status_code == 404
        assert client.get("/me/progress", params={"campaign": "vote"}).json()["overall"]["answers"] == 0
        assert client.post("/campaigns/vote/answers", json=body).status_code == 201  # the lease is still good


def test_someone_elses_lease_is_403_and_skip_releases(base_url: str, corpus: Engine, password_hash: str) -> None:
    from tests.studio.conftest import add_people

    add_people(corpus, password_hash, ["second"], "annotator")
    with client_for(base_url, "annotator") as owner, client_for(base_url, "second") as other:
        item = owner.get("/campaigns/vote/next").json()
        body = {"item_id": item["item_id"], "lease_id": item["lease_id"], "submission_id": "x", "answers": VOTE}
        stolen = other.post("/campaigns/vote/answers", json=body)
        assert stolen.status_code == 403 and "lease" in stolen.json()["detail"]
        assert (
            owner.post(
                "/campaigns/vote/skip", json={"item_id": item["item_id"], "lease_id": item["lease_id"]}
            ).status_code
            == 204
        )
        assert owner.get("/campaigns/vote/next").json()["item_id"] != item["item_id"]


def test_openapi_is_served_under_api_v1(base_url: str) -> None:
    spec = httpx.get(f"{base_url}/openapi.json").json()
    assert {"/v1/login", "/v1/campaigns/{name}/next", "/v1/campaigns/{name}/answers"} <= set(spec["paths"])


def test_h2h_max_text_chars_caps_free_text_answers_on_submit_and_revise(
    corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The studio-wide limit applies on top of each schema's own (crowd_vote's comment allows 4,000 characters)."""
    monkeypatch.setenv("H2H_MAX_TEXT_CHARS", "50")
    app = FastAPI()
    app.mount("/api", create_api(get_settings(database_url=db_url), engine=corpus))
    with serve_in_thread(app) as url, client_for(f"{url}/api/v1", "annotator") as client:
        item = client.get("/campaigns/vote/next").json()
        body = {"item_id": item["item_id"], "lease_id": item["lease_id"], "submission_id": "s-1", "answers": VOTE}
        too_long = client.post("/campaigns/vote/answers", json=body | {"answers": VOTE | {"comment": "字" * 51}})
        assert too_long.status_code == 422
        assert too_long.json()["detail"] == "answers.comment: text is 51 characters; the studio's limit is 50"
        assert client.get("/me/progress", params={"campaign": "vote"}).json()["overall"]["answers"] == 0
        fits = client.post("/campaigns/vote/answers", json=body | {"answers": VOTE | {"comment": "字" * 50}})
        assert fits.status_code == 201
        revised = client.put(
            f"/campaigns/vote/answers/{item['item_id']}", json={"answers": VOTE | {"comment": "x" * 51}}
        )
        assert revised.status_code == 422 and revised.json()["detail"].startswith("answers.comment: text is 51")
        assert client.get(f"/campaigns/vote/answers/{item['item_id']}").json()["values"]["comment"] == "字" * 50


def test_a_revision_that_changes_nothing_is_said_and_stores_nothing(base_url: str) -> None:
    """Issue 16 item 3: the same answer sent again was stored as a revision ("revised 1×", a history row)."""
    with client_for(base_url, "annotator") as client:
        item = client.get("/campaigns/vote/next").json()
        body = {"item_id": item["item_id"], "lease_id": item["lease_id"], "submission_id": "s-1", "answers": VOTE}
        assert client.post("/campaigns/vote/answers", json=body).status_code == 201
        path = f"/campaigns/vote/answers/{item['item_id']}"
        same = client.put(path, json={"answers": dict(reversed(VOTE.items())), "seconds_spent": 3})
        assert same.status_code == 200, same.text
        assert same.json()["changed"] is False and same.json()["revision"] == 0
        assert same.json()["message"] == "Nothing changed: your answer is as it was."
        assert client.get(path).json()["revision"] == 0
        changed = client.put(path, json={"answers": VOTE | {"verdict": "discard"}}).json()
        assert changed["changed"] is True and changed["revision"] == 1
        assert changed["message"] == "Saved your revised answer."


def test_a_missing_required_number_is_refused_naming_the_question(base_url: str, corpus: Engine) -> None:
    """Issue 16 item 1 on the REST API: an adjudication without its rubric score is refused 422 naming the question
    (a null or empty score too), never stored as 0; a score of 0 sent as such is an answer."""
    from studio.db import write_session
    from studio.services.campaigns import create_campaign
    from studio.workflows import TargetFilter, load_schemas

    adjudication = load_schemas()["adjudication"].model_copy(update={"target_filter": TargetFilter()})
    with write_session(corpus) as session:
        create_campaign(session, name="adjudicate", schema=adjudication, people_per_item=1, actor="admin")
    with client_for(base_url, "expert") as client:
        item = client.get("/campaigns/adjudicate/next").json()
        body = {"item_id": item["item_id"], "lease_id": item["lease_id"], "submission_id": "a-1"}
        for answers in (
            {"note": "Only a note."},
            {"rubric_score": None, "note": "x"},
            {"rubric_score": "", "note": "x"},
        ):
            refused = client.post("/campaigns/adjudicate/answers", json=body | {"answers": answers})
            assert refused.status_code == 422, refused.text
            assert refused.json()["detail"] == "answers.rubric_score: an answer is required"
        assert client.get("/me/progress", params={"campaign": "adjudicate"}).json()["mine"]["answers"] == 0
        zero = client.post("/campaigns/adjudicate/answers", json=body | {"answers": {"rubric_score": 0, "note": "x"}})
        assert zero.status_code == 201 and zero.json()["values"] == {"rubric_score": 0.0, "note": "x"}
