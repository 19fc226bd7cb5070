"""``GET /v1/results/judge-bias`` on the real API app (SQLite and PostgreSQL): the card over the adjudicated items
the calibration pairs, researchers read it, annotators get 403."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from studio.models import UserPublic
from studio.results.judge_bias import CARD_COLUMNS, NO_PAIRS, expected_calibration_error
from studio.settings import get_settings
from studio.web.api import create_api
from tests.studio.helpers import PASSWORD


@pytest.fixture
def client(store: Engine, db_url: str) -> Iterator[TestClient]:
    with TestClient(create_api(get_settings(database_url=db_url), store)) as test_client:
        yield test_client


def headers(client: TestClient, role: str) -> dict[str, str]:
    answer = client.post("/v1/login", json={"username": role, "password": PASSWORD})
    assert answer.status_code == 200, answer.text
    return {"Authorization": f"Bearer {answer.json()['token']}"}


def test_judge_bias_card_over_the_calibrated_items(studied: Engine, client: TestClient) -> None:
    researcher = headers(client, "researcher")
    card = client.get("/v1/results/judge-bias?variant=with_sap", headers=researcher)
    assert card.status_code == 200, card.text
    body = card.json()
    rows = {row["measure"]: row for row in body["rows"]}
    assert set(body["rows"][0]) == set(CARD_COLUMNS)
    calibration = client.get("/v1/results/calibration?variant=with_sap", headers=researcher).json()
    judge = np.array([row["J_judge"] for row in calibration["rows"]])
    human = np.array([row["J_human"] for row in calibration["rows"]])
    assert rows["ece"]["n"] == len(judge) > 0 and sum(body["decision_counts"].values()) == len(judge)
    assert rows["ece"]["value"] == pytest.approx(expected_calibration_error(judge, human))
    assert rows["mean_bias"]["value"] == pytest.approx(float((judge - human).mean()))
    assert rows["flip_rate"]["value"] is None and rows["flip_rate"]["sentence"] == NO_PAIRS
    assert body["bins"] == 5 and body["summary"]
    assert client.get("/v1/results/judge-bias", headers=headers(client, "annotator")).status_code == 403
    assert client.get("/v1/results/judge-bias?signature=nope", headers=researcher).status_code == 422


def test_the_judge_bias_table_equals_the_card(studied: Engine, users: dict[str, UserPublic]) -> None:
    from studio.db import read_session
    from studio.services.research_judge import judge_bias
    from studio.usecases import research

    with read_session(studied) as session:
        table = research.table(session, caller=users["researcher"], name="judge_bias", variant="with_sap")
        card = judge_bias(session, variant="with_sap")
        paired = research.calibration(session, caller=users["researcher"], variant="with_sap").rows
    assert "judge_bias" in research.TABLE_NAMES
    assert table.equals(card.table()) and list(table.columns) == CARD_COLUMNS
    assert table.set_index("measure").loc["ece", "n"] == len(paired) > 0
