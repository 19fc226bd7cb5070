"""``GET /v1/results/campaigns/{name}/ranking`` on the real API app over SQLite and PostgreSQL: a pairwise
campaign's ranking equals the pure Bradley–Terry fit of its own votes export; annotators get 403, a campaign that is
not pairwise 422, an unknown one 404; the page download's table names build it too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from studio.db import read_session, write_session
from studio.models import UserPublic
from studio.results.export_formats import read_table
from studio.results.ranking import bradley_terry
from studio.services.campaigns import create_campaign
from studio.services.votes_export import export_votes
from studio.settings import get_settings
from studio.usecases import research
from studio.web.api import create_api
from studio.workflows import load_schemas
from tests.studio.helpers import PASSWORD, add_people, answer_all


@pytest.fixture
def pairs(corpus: Engine, users: dict[str, UserPublic], password_hash: str) -> Engine:
    """A pairwise campaign, three people per item: p-1 and p-2 pick what they saw as A, p-3 what they saw as B."""
    with write_session(corpus) as session:
        create_campaign(session, name="pairs", schema=load_schemas()["pairwise"], people_per_item=3)
        create_campaign(session, name="vote", schema=load_schemas()["crowd_vote"], people_per_item=1)
    people = add_people(corpus, password_hash, ["p-1", "p-2", "p-3"], "annotator")
    answer_all(corpus, "pairs", people, lambda _i, _r, person: {"preference": "B" if person.username == "p-3" else "A"})
    return corpus


@pytest.fixture
def client(pairs: Engine, db_url: str) -> Iterator[TestClient]:
    with TestClient(create_api(get_settings(database_url=db_url), pairs)) as test_client:
        yield test_client


def headers(client: TestClient, role: str) -> dict[str, str]:
    answer = client.post("/v1/login", json={"username": role, "password": PASSWORD})
    assert answer.status_code == 200, answer.text
    return {"Authorization": f"Bearer {answer.json()['token']}"}


def test_the_ranking_equals_the_fit_of_the_campaigns_own_export(
    pairs: Engine, client: TestClient, tmp_path: Path, users: dict[str, UserPublic]
) -> None:
    export_votes(pairs, "pairs", tmp_path / "votes.csv", question="preference")
    expected = bradley_terry(read_table(tmp_path / "votes.csv"))
    answer = client.get("/v1/results/campaigns/pairs/ranking", headers=headers(client, "researcher"))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["question"] == "preference" and "arena-rank" in body["rule"]
    assert [row["competitor"] for row in body["ranking"]] == expected.table["competitor"].tolist()
    assert [row["rating"] for row in body["ranking"]] == pytest.approx(expected.table["rating"].tolist(), abs=1e-6)
    assert [row["lower"] for row in body["ranking"]] == pytest.approx(expected.table["lower"].tolist(), abs=1e-6)
    bias = body["position_bias"]
    assert bias["decided"] == 3 * bias["first_wins"] / 2 and bias["sentence"] == expected.position_bias["sentence"]
    pairs_met = {(row["competitor"], row["opponent"]): row for row in body["win_rates"]}
    for (first, second), row in pairs_met.items():
        back = pairs_met[(second, first)]
        assert row["votes"] == back["votes"]
        if row["votes"]:
            assert row["win_rate"] + back["win_rate"] == pytest.approx(1.0)
    assert len(body["fragility"]) == len(body["ranking"]) - 1
    assert all(row["method"] == "greedy upper bound" for row in body["fragility"])
    with read_session(pairs) as session:
        table = research.table(session, caller=users["researcher"], name="ranking", ranking_campaign="pairs")
    assert table["competitor"].tolist() == expected.table["competitor"].tolist()


def test_who_may_read_and_what_is_refused(client: TestClient) -> None:
    assert client.get("/v1/results/campaigns/pairs/ranking", headers=headers(client, "annotator")).status_code == 403
    assert client.get("/v1/results/campaigns/pairs/ranking").status_code == 401
    researcher = headers(client, "researcher")
    assert client.get("/v1/results/campaigns/vote/ranking", headers=researcher).status_code == 422
    assert client.get("/v1/results/campaigns/nope/ranking", headers=researcher).status_code == 404
