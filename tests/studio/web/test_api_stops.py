"""The stops of a campaign over REST (``GET /v1/curation/campaigns/{name}/stops``): the same use case as the Curate
page's Stops tab and ``h2h export stops`` — curators, researchers and admins read it; an annotator is refused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from studio.models import UserPublic
from studio.settings import get_settings
from studio.web.api import create_api
from tests.studio.helpers import PASSWORD
from tests.studio.services.test_stopping_live import four_leases_three_votes


@pytest.fixture
def api(corpus: Engine, db_url: str, users: dict[str, UserPublic]) -> Iterator[TestClient]:
    with TestClient(create_api(get_settings(database_url=db_url), corpus)) as client:
        yield client


def signed_in(client: TestClient, username: str) -> dict[str, str]:
    token = client.post("/v1/login", json={"username": username, "password": PASSWORD}).json()["token"]
    return {"Authorization": f"Bearer {token}"}


def test_curators_read_a_campaigns_stops_with_the_rule_in_words(corpus: Engine, api: TestClient) -> None:
    _crowd, fourth = four_leases_three_votes(corpus, {"rule": "curtail"})
    answer = api.get("/v1/curation/campaigns/stop/stops", headers=signed_in(api, "curator"))
    assert answer.status_code == 200
    report = answer.json()
    assert report["campaign"] == "stop" and report["statement"].startswith("Stopping (curtail):")
    [stop] = report["stops"]
    assert (stop["item"], stop["votes_at_stop"], stop["rule"], stop["probability"]) == (
        fourth.item_id,
        3,
        "curtail",
        1.0,
    )
    # nothing a stop shows names a model or a variant: a crowd vote's target is the scenario
    assert set(stop) == {"item", "scenario", "votes_at_stop", "rule", "probability", "stopped_at"}
    for reader in ("researcher", "admin"):
        assert api.get("/v1/curation/campaigns/stop/stops", headers=signed_in(api, reader)).json() == report


def test_an_annotator_is_refused_and_an_unknown_campaign_is_a_404(corpus: Engine, api: TestClient) -> None:
    four_leases_three_votes(corpus, {"rule": "curtail"})
    assert api.get("/v1/curation/campaigns/stop/stops", headers=signed_in(api, "annotator")).status_code == 403
    assert api.get("/v1/curation/campaigns/stop/stops").status_code == 401
    missing = api.get("/v1/curation/campaigns/nope/stops", headers=signed_in(api, "curator"))
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]
