"""GET /v1/results/leaderboard carries Table 2's intervals, rank ranges and fragility (additive keys), equal to the
service's, and the use case's tables leaderboard_intervals / leaderboard_fragility are the same numbers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from studio.db import read_session
from studio.models import CampaignPublic, UserPublic
from studio.services import research as service
from studio.settings import get_settings
from studio.usecases import research
from studio.web.api import create_api
from tests.studio.helpers import PASSWORD


@pytest.fixture
def client(store: Engine, db_url: str) -> Iterator[TestClient]:
    with TestClient(create_api(get_settings(database_url=db_url), store)) as test_client:
        yield test_client


def test_leaderboard_answers_with_intervals_and_fragility(
    client: TestClient, store: Engine, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    token = client.post("/v1/login", json={"username": "researcher", "password": PASSWORD}).json()["token"]
    answer = client.get("/v1/results/leaderboard?variant=with_sap", headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.text
    board = answer.json()
    assert {"rows", "coverage", "partial_columns", "intervals", "fragility"} <= set(board)  # old keys kept
    with read_session(store) as session:
        view = service.leaderboard(session, variant="with_sap")
        downloaded = research.table(
            session, caller=users["researcher"], name="leaderboard_intervals", variant="with_sap"
        )
        fragility = research.table(
            session, caller=users["researcher"], name="leaderboard_fragility", variant="with_sap"
        )
    assert view.intervals is not None and view.fragility is not None
    long = view.intervals.long()
    cells = {(cell["model"], cell["column"]): cell for cell in board["intervals"]["cells"]}
    for row in long.dropna(subset=["lower"]).itertuples(index=False):
        cell = cells[(row.model, row.column)]
        assert (cell["value"], cell["lower"], cell["upper"]) == pytest.approx((row.value, row.lower, row.upper))
        assert cell["lower"] <= cell["value"] <= cell["upper"]
    ranks = {rank["model"]: rank for rank in board["intervals"]["ranks"]}
    assert ranks.keys() == {row["model"] for row in board["rows"]}
    assert all(rank["rank_low"] <= rank["rank"] <= rank["rank_high"] for rank in ranks.values())
    assert "95% percentile bootstrap over items" in board["intervals"]["method"]
    assert [pair["upper"] for pair in board["fragility"]] == view.fragility["upper"].tolist()
    assert downloaded.columns.tolist() == ["model", "column", "value", "lower", "upper"] and len(downloaded) == len(
        long
    )
    assert fragility["gap"].tolist() == pytest.approx(view.fragility["gap"].tolist())
