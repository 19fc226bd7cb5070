"""The curation listings' query parameters over REST: one model (``studio.services.listing``) for the route, the use
case and the Curate page, so the API takes the words the page sends and refuses a bad value with a 422 naming it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from studio.models import CampaignPublic, UserPublic
from studio.settings import get_settings
from studio.web.api import create_api
from tests.studio.helpers import PASSWORD


@pytest.fixture
def curator(store: Engine, db_url: str, campaign: CampaignPublic, users: dict[str, UserPublic]) -> Iterator[TestClient]:
    with TestClient(create_api(get_settings(database_url=db_url), store)) as client:
        answer = client.post("/v1/login", json={"username": "curator", "password": PASSWORD})
        client.headers["Authorization"] = f"Bearer {answer.json()['token']}"
        yield client


def test_the_api_takes_the_filter_words_the_page_sends(curator: TestClient) -> None:
    """Before, the page's "any" (and an empty picker) was a 422 on the API, whose parameters were typed ``bool``."""
    every = curator.get("/v1/curation/scenarios").json()
    assert every["total"] > 0
    for words in ({"disagreement": "any", "flagged": ""}, {"disagreement": "ANY", "order": ""}):
        answer = curator.get("/v1/curation/scenarios", params=words)
        assert answer.status_code == 200, answer.text
        assert answer.json()["total"] == every["total"]
    for word in ("no", "false", "0", "off"):  # what a typed bool took is still taken
        assert curator.get("/v1/curation/responses", params={"flagged": word}).status_code == 200
    either = curator.get("/v1/curation/responses", params={"adjudicated": "any"})
    assert either.status_code == 200 and either.json()["total"] == curator.get("/v1/curation/responses").json()["total"]


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/v1/curation/scenarios", {"status": "maybe"}, "status"),
        ("/v1/curation/scenarios", {"agreement_below": "1.5"}, "agreement_below"),
        ("/v1/curation/scenarios", {"order": "random"}, "order"),
        ("/v1/curation/scenarios", {"disagreement": "perhaps"}, "disagreement"),
        ("/v1/curation/scenarios", {"page_size": "0"}, "page_size"),
        ("/v1/curation/responses", {"adjudicated": "perhaps"}, "adjudicated"),
        ("/v1/curation/responses", {"page": "0"}, "page"),
    ],
)
def test_a_refused_filter_is_a_422_naming_it(
    curator: TestClient, path: str, params: dict[str, str], field: str
) -> None:
    answer = curator.get(path, params=params)
    assert answer.status_code == 422, answer.text
    assert field in answer.json()["detail"]
