"""REST edge cases (issue 18, items 7 and 10): a resent submission with other values is a 409 naming the stored
answer, a scenario whose id holds "/" is reachable, and a deeply nested line in an import is a 422 naming its line.

Each test failed on the code before its fix: a resend with other values answered 200 with the old values;
``GET /v1/curation/scenarios/a/b`` was 404; a 3,000-deep line made the import raise ``RecursionError`` (500).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from studio.db import read_session
from studio.models import CampaignPublic, UserPublic
from studio.services.answers import answer_by_submission_id
from studio.services.ingest import ingest_run
from studio.settings import get_settings
from studio.web.api import create_api
from tests.serving import serve_in_thread
from tests.studio.helpers import PASSWORD, make_scenarios, write_run

VOTE = {"verdict": "revise", "subtask_label": "dialogue_base"}


def serve_api(engine: Engine, db_url: str) -> Iterator[str]:
    """The REST API mounted at /api (as studio.web.app does), served by uvicorn in a thread."""
    app = FastAPI()
    app.mount("/api", create_api(get_settings(database_url=db_url), engine=engine))
    with serve_in_thread(app) as url:
        yield f"{url}/api/v1"


@pytest.fixture
def base_url(corpus: Engine, campaign: CampaignPublic, users: dict[str, UserPublic], db_url: str) -> Iterator[str]:
    yield from serve_api(corpus, db_url)


def client_for(base_url: str, username: str) -> httpx.Client:
    token = httpx.post(f"{base_url}/login", json={"username": username, "password": PASSWORD}).json()["token"]
    return httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=60)


# --- 1. a resent submission_id with other values -------------------------------------------------------------------


def test_a_resent_submission_with_other_values_is_a_conflict_naming_the_stored_answer(
    base_url: str, corpus: Engine
) -> None:
    with client_for(base_url, "annotator") as client:
        item = client.get("/campaigns/vote/next").json()
        body = {"item_id": item["item_id"], "lease_id": item["lease_id"], "submission_id": "s-1", "answers": VOTE}
        created = client.post("/campaigns/vote/answers", json=body)
        assert created.status_code == 201, created.text
        other = client.post("/campaigns/vote/answers", json=body | {"answers": VOTE | {"verdict": "keep"}})
        assert other.status_code == 409, other.text
        detail = other.json()["detail"]
        assert detail.startswith("submission_id: this submission_id was already stored with other values: ")
        assert '"verdict": "revise"' in detail and "PUT" in detail
        same = client.post("/campaigns/vote/answers", json=body)  # an identical resend stays idempotent
        assert same.status_code == 200 and same.json() == created.json()
        # After a revision, resending the first submit is still that submit (200, the answer as it is now) ...
        revised = client.put(f"/campaigns/vote/answers/{item['item_id']}", json={"answers": VOTE | {"verdict": "keep"}})
        assert revised.status_code == 200 and revised.json()["changed"] is True
        again = client.post("/campaigns/vote/answers", json=body)
        assert again.status_code == 200 and again.json()["values"]["verdict"] == "keep"
        # ... and a resend with yet other values is a conflict naming the answer as stored now.
        third = client.post("/campaigns/vote/answers", json=body | {"answers": VOTE | {"verdict": "discard"}})
        assert third.status_code == 409 and '"verdict": "keep"' in third.json()["detail"]
    with read_session(corpus) as session:
        stored = answer_by_submission_id(session, "s-1")
    assert stored is not None and stored.values == VOTE | {"verdict": "keep"} and stored.revision == 1


# --- 3. scenario ids holding "/" ------------------------------------------------------------------------------------


@pytest.fixture
def slashed_api(engine: Engine, users: dict[str, UserPublic], db_url: str, tmp_path: Path) -> Iterator[str]:
    """The API over a corpus whose first scenario's id is ``a/b``."""
    scenarios = make_scenarios()
    scenarios[0] = scenarios[0].model_copy(update={"id": "a/b"})
    ingest_run(engine, write_run(tmp_path / "run", scenarios=scenarios))
    yield from serve_api(engine, db_url)


def test_a_scenario_whose_id_holds_a_slash_is_reachable_over_rest(slashed_api: str) -> None:
    with client_for(slashed_api, "curator") as client:
        for path in ("/curation/scenarios/a/b", "/curation/scenarios/a%2Fb"):
            shown = client.get(path)
            assert shown.status_code == 200, (path, shown.text)
            assert shown.json()["scenario"]["id"] == "a/b"
        decided = client.post("/curation/scenarios/a/b/decision", json={"action": "reject", "reason": "test"})
        assert decided.status_code == 200, decided.text
        assert decided.json()["scenario_id"] == "a/b" and decided.json()["status"] == "rejected"
        assert client.get("/curation/scenarios/a/b").json()["status"]["status"] == "rejected"
        assert client.get("/curation/scenarios/a/b/c").status_code == 404  # no such scenario, not another route
        assert client.get("/curation/scenarios/dlg-2").status_code == 200  # plain ids as before


# --- 5. a deeply nested line in a REST import -----------------------------------------------------------------------


def test_a_deeply_nested_line_in_a_rest_import_is_a_422_naming_its_line(base_url: str) -> None:
    good = make_scenarios()[0].model_copy(update={"id": "fresh-1"}).model_dump_json()
    deep = '{"id": "deep", "history": ' + "[" * 3000 + "]" * 3000 + "}"
    body = f"{good}\n{deep}\n".encode()
    with client_for(base_url, "curator") as client:
        reply = client.post("/admin/imports", files=[("files", ("deep.jsonl", body))], data={"confirm": "true"})
        assert reply.status_code == 422, reply.text
        assert "deep.jsonl:2: (line): JSON nested too deeply" in "\n".join(reply.json()["problems"])
        assert reply.json()["stored"] is False
        assert client.get("/curation/scenarios/fresh-1").status_code == 404  # nothing was stored
