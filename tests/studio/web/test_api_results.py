"""The curator / researcher REST endpoints on the real API app (its own login and token dependency), over SQLite
and PostgreSQL: annotators and experts get 403 on every endpoint, no token 401, researchers read only."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from pipeline.leaderboard import AVERAGES_RULE
from studio.models import CampaignPublic, UserPublic
from studio.settings import get_settings
from studio.web.api import create_api
from tests.studio.helpers import PASSWORD, crowd_vote

#: (method, path, JSON body) of every endpoint of the results router.
ENDPOINTS: tuple[tuple[str, str, dict[str, Any] | None], ...] = (
    ("GET", "/v1/results/leaderboard?variant=with_sap", None),
    ("GET", "/v1/results/sap", None),
    ("GET", "/v1/results/instruction", None),
    ("GET", "/v1/results/instruction.png", None),
    ("GET", "/v1/results/sap.png", None),
    ("GET", "/v1/results/agreement/vote?resamples=20", None),
    ("GET", "/v1/results/calibration", None),
    ("GET", "/v1/results/calibration.png", None),
    ("GET", "/v1/results/progress", None),
    ("GET", "/v1/results/distribution", None),
    ("GET", "/v1/results/distribution.png", None),
    ("POST", "/v1/results/aggregate", None),
    ("GET", "/v1/curation/scenarios", None),
    ("GET", "/v1/curation/responses?flagged=true", None),
    ("GET", "/v1/curation/scenarios/dlg-1", None),
    ("POST", "/v1/curation/scenarios/dlg-1/decision", {"action": "accept", "reason": "fine"}),
    ("GET", "/v1/curation/versions", None),
    ("POST", "/v1/curation/versions", {"name": "v1"}),
    ("GET", "/v1/curation/versions/v1", None),
)
WRITES = {
    ("POST", "/v1/results/aggregate"),
    ("POST", "/v1/curation/scenarios/dlg-1/decision"),
    ("POST", "/v1/curation/versions"),
}


@pytest.fixture
def client(store: Engine, db_url: str) -> Iterator[TestClient]:
    with TestClient(create_api(get_settings(database_url=db_url), store)) as test_client:
        yield test_client


def token_headers(client: TestClient, role: str) -> dict[str, str]:
    answer = client.post("/v1/login", json={"username": role, "password": PASSWORD})
    assert answer.status_code == 200, answer.text
    return {"Authorization": f"Bearer {answer.json()['token']}"}


def call(client: TestClient, method: str, path: str, body: dict[str, Any] | None, headers: dict[str, str]) -> Any:
    return client.request(method, path, json=body, headers=headers)


def test_annotators_and_experts_get_403_everywhere_and_no_token_401(
    client: TestClient, campaign: CampaignPublic, users: dict[str, UserPublic]
) -> None:
    outsiders = {role: token_headers(client, role) for role in ("annotator", "expert")}
    for method, path, body in ENDPOINTS:
        for role, headers in outsiders.items():
            answer = call(client, method, path, body, headers)
            assert answer.status_code == 403, (role, path, answer.text)
            assert "role" in answer.json()["detail"]
        assert call(client, method, path, body, {}).status_code == 401, path


def test_researchers_read_but_do_not_write(
    client: TestClient, campaign: CampaignPublic, users: dict[str, UserPublic], password_hash: str, store: Engine
) -> None:
    crowd_vote(store, password_hash)
    headers = token_headers(client, "researcher")
    for method, path, body in ENDPOINTS:
        answer = call(client, method, path, body, headers)
        if (method, path) in WRITES:
            assert answer.status_code == 403, path
        else:
            # 404: no SAP / instruction answers or no version v1 yet; everything else answers.
            assert answer.status_code in (200, 404), (path, answer.text)
            assert answer.status_code == 200 or path in (
                "/v1/results/sap",
                "/v1/results/instruction",
                "/v1/results/sap.png",
                "/v1/results/instruction.png",
                "/v1/curation/versions/v1",
            ), path
    png = call(client, "GET", "/v1/results/distribution.png", None, headers)
    assert png.headers["content-type"] == "image/png" and png.content[:4] == b"\x89PNG"
    board = call(client, "GET", "/v1/results/leaderboard?variant=with_sap", None, headers).json()
    assert {row["model"] for row in board["rows"]} == {"model-alpha", "model-beta"} and board["pending"]
    cells = {(cell["model"], cell["column"]): cell for cell in board["coverage"]}
    assert all(cells[(model, "overall")]["pending"] == count for model, count in board["pending"].items())
    reasons = board["pending_reasons"]  # why: every pending item here is flagged and awaits adjudication
    assert {model: sum(why.values()) for model, why in reasons.items()} == board["pending"]
    assert all(why["awaiting_adjudication"] == board["pending"][model] for model, why in reasons.items())
    assert board["applied"]["variant"] == "with_sap" and board["applied"]["judge"] == "judge=judge|prompt=j1"
    assert call(client, "GET", "/v1/results/leaderboard", None, headers).status_code == 422
    quick = call(client, "GET", "/v1/results/leaderboard?variant=with_sap&intervals=false", None, headers).json()
    assert quick["intervals"] is None and quick["fragility"] == [] and board["intervals"] is not None
    # the table summed in the store is the same table, the same pending counts and coverage
    assert {key: quick[key] for key in ("rows", "pending", "pending_reasons", "coverage", "applied")} == {
        key: board[key] for key in ("rows", "pending", "pending_reasons", "coverage", "applied")
    }
    # averages over fewer than all their subtasks are null, and the response names those columns and the rule
    rows = {row["model"]: row for row in board["rows"]}
    assert all(rows[model]["itinerary_avg"] is None for model in rows)
    assert "itinerary_avg" in board["partial_columns"] and board["averages_rule"] == AVERAGES_RULE
    agreement = call(client, "GET", "/v1/results/agreement/vote?resamples=20", None, headers).json()
    assert agreement["item_set"].startswith("over the ") and "complete item" in agreement["item_set"]
    everything = call(client, "GET", "/v1/results/agreement/vote?resamples=20&items=all", None, headers).json()
    assert everything["item_set"].startswith("over all ")
    assert call(client, "GET", "/v1/results/agreement/vote?items=some", None, headers).status_code == 422


def test_curator_aggregates_decides_and_publishes(
    client: TestClient,
    campaign: CampaignPublic,
    users: dict[str, UserPublic],
    password_hash: str,
    store: Engine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    crowd_vote(store, password_hash)
    headers = token_headers(client, "curator")
    import studio.services.aggregation as aggregation

    write_chunks, chunk_calls = aggregation.write_chunks, []

    def counted(*args: Any, **kwargs: Any) -> Any:  # the writes go through the short-transaction path
        chunk_calls.append(kwargs.get("campaign"))
        return write_chunks(*args, **kwargs)

    monkeypatch.setattr(aggregation, "write_chunks", counted)
    (summary,) = client.post("/v1/results/aggregate?campaign=vote", headers=headers).json()
    assert summary["review_campaign"] == "vote-review" and summary["changed"] == 8
    assert chunk_calls == ["vote"]
    rerun = client.post("/v1/results/aggregate", headers=headers).json()
    assert [s["changed"] for s in rerun] == [0, 0]
    in_review = client.get("/v1/curation/scenarios?status=in_review&page_size=2", headers=headers).json()
    assert in_review["total"] == 2 and [row["id"] for row in in_review["rows"]] == ["dlg-3", "iti-3"]
    no_reason = client.post(
        "/v1/curation/scenarios/dlg-3/decision", headers=headers, json={"action": "accept", "reason": ""}
    )
    assert no_reason.status_code == 422 and no_reason.json()["detail"].startswith("reason")
    accepted = client.post(
        "/v1/curation/scenarios/dlg-3/decision", headers=headers, json={"action": "accept", "reason": "experts agree"}
    )
    assert accepted.status_code == 200 and accepted.json()["status"] == "accepted"
    detail = client.get("/v1/curation/scenarios/dlg-3", headers=headers).json()
    assert detail["campaigns"][0]["questions"]["verdict"]["counts"] == {"keep": 1, "discard": 1}
    preview = client.get("/v1/curation/publish-preview", headers=headers).json()
    why = {row["scenario_id"]: (row["decided_by"], row["why"]) for row in preview["rows"]}
    assert why["dlg-3"] == ("curator:curator", "curator: experts agree")
    assert why["dlg-1"][0] == "crowd:vote" and why["dlg-1"][1].startswith("crowd: keep 2/2 → accepted")
    assert preview["by_decider"] == {"curator": 1, "expert": 0, "crowd": 2}
    stale = client.post("/v1/curation/versions", headers=headers, json={"name": "v0", "expected_hash": "0" * 64})
    assert stale.status_code == 409 and stale.json()["detail"].startswith("preview:")
    first = client.post(
        "/v1/curation/versions", headers=headers, json={"name": "v1", "expected_hash": preview["content_hash"]}
    )
    same = client.post("/v1/curation/versions", headers=headers, json={"name": "v1-again"})
    assert (first.status_code, same.status_code) == (201, 200) and same.json()["name"] == "v1"
    assert first.json()["content_hash"] == preview["content_hash"]
    records = client.get("/v1/curation/versions/v1", headers=headers).json()
    assert [record["id"] for record in records] == ["dlg-1", "dlg-3", "iti-2"]
    assert client.get("/v1/curation/scenarios/nope", headers=headers).status_code == 404


def test_figures_are_png_once_there_are_answers(studied: Engine, client: TestClient) -> None:
    headers = token_headers(client, "researcher")
    for path in ("/v1/results/sap.png", "/v1/results/instruction.png", "/v1/results/calibration.png"):
        answer = client.get(path, headers=headers)
        assert answer.status_code == 200, (path, answer.text)
        assert answer.headers["content-type"] == "image/png" and answer.content[:4] == b"\x89PNG"
    table3 = client.get("/v1/results/sap", headers=headers).json()
    assert {row["variant"]: row["violation_rate"] for row in table3} == {"with_sap": 0.0, "without_sap": 1.0}

    calibration = client.get("/v1/results/calibration?variant=with_sap", headers=headers).json()
    both = calibration["adjudicated"] - calibration["adjudicated_without_judge"]  # iti-3 was never judged
    assert calibration["statistics"]["n"] == len(calibration["rows"]) == both > 0
    assert calibration["awaiting_adjudication"] == 0 and calibration["adjudicated_without_judge"] == 2
    assert {row["variant"] for row in calibration["rows"]} == {"with_sap"}
    by_variant = {
        variant: client.get(f"/v1/results/instruction?variant={variant}", headers=headers).json()
        for variant in ("with_sap", "without_sap")
    }
    assert by_variant["with_sap"] == by_variant["without_sap"]  # the fixture rates both variants alike
    long = client.get("/v1/results/instruction?intervals=true", headers=headers).json()
    assert long and set(long[0]) == {"model", "kind", "rating", "low", "high", "responses"}
    assert all(row["low"] <= row["rating"] <= row["high"] for row in long)
    assert {row["variant"]: row["safety_low"] <= row["safety"] <= row["safety_high"] for row in table3} == {
        "with_sap": True,
        "without_sap": True,
    }
    assert client.get("/v1/results/sap?signature=nope", headers=headers).status_code == 422
