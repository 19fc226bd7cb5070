"""The seeded random audit of adjudication campaigns (``item.audit``) and the prediction-powered itinerary scores
read from the store (``studio.services.research_ppi``), its REST route and its export, on real stores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate
from sqlalchemy import Engine, select, update
from sqlmodel import col

from pipeline.taxonomy import JUDGED_SUBTASKS
from studio.db import read_session, write_session
from studio.errors import InvalidInput
from studio.models import Campaign, Item, ResponseRow, ScoreRow, UserPublic
from studio.services.campaigns import create_campaign
from studio.services.research_ppi import ppi_table
from studio.settings import get_settings
from studio.web.api import create_api
from studio.workflows import WorkflowSchema, load_schemas
from tests.studio.helpers import PASSWORD, insert_synthetic_scores

JUDGE = "judge=judge-a|prompt=j1"


def audited_schema(**audit: float) -> WorkflowSchema:
    schema = load_schemas()["adjudication"]
    return WorkflowSchema.model_validate({**schema.model_dump(mode="json"), "audit": audit})


def campaign_items(engine: Engine, name: str) -> dict[int, bool]:
    with read_session(engine) as session:
        rows = session.execute(
            select(col(Item.response_id), col(Item.audit))
            .join(Campaign, col(Campaign.id) == col(Item.campaign_id))
            .where(col(Campaign.name) == name)
        ).all()
    return {int(rid): bool(audit) for rid, audit in rows}


def test_the_audit_is_a_seeded_uniform_draw_of_every_judged_response_beside_the_flagged(corpus: Engine) -> None:
    with write_session(corpus) as session:
        create_campaign(session, name="adj-a", schema=audited_schema(items=3, seed=7))
        create_campaign(session, name="adj-b", schema=audited_schema(items=3, seed=7))
        judged = session.execute(
            select(col(ResponseRow.id))
            .join(ScoreRow, col(ScoreRow.response_id) == col(ResponseRow.id))
            .where(col(ScoreRow.subtask).in_(sorted(JUDGED_SUBTASKS)), col(ScoreRow.J_judge).is_not(None))
            .order_by(col(ResponseRow.scenario_id), col(ResponseRow.model), col(ResponseRow.variant))
        ).scalars()
        flagged = set(
            session.execute(select(col(ResponseRow.id)).where(col(ResponseRow.needs_adjudication).is_(True))).scalars()
        )
    population = list(judged)
    expected = {population[i] for i in np.random.default_rng(7).choice(len(population), size=3, replace=False)}
    items = campaign_items(corpus, "adj-a")
    assert {rid for rid, audit in items.items() if audit} == expected
    assert set(items) == flagged | expected
    assert campaign_items(corpus, "adj-b") == items  # the same draw on a rerun


def test_an_audit_goes_with_adjudication_only_and_one_size() -> None:
    with pytest.raises(ValueError, match="exactly one of share"):
        audited_schema(share=0.1, items=3)
    schema = load_schemas()["crowd_vote"]
    with pytest.raises(ValueError, match="adjudication workflow"):
        WorkflowSchema.model_validate({**schema.model_dump(mode="json"), "audit": {"share": 0.1}})


@pytest.fixture
def audited_store(store: Engine) -> Engine:
    """Synthetic scores (J = 0.6·5S + 0.4·J_judge), an adjudication campaign auditing 40% of judged responses,
    and an expert J_human on every audited item and on the flagged ones (as aggregation writes it)."""
    insert_synthetic_scores(store, models=("m-a", "m-b"), per_subtask=12, seed=3)
    with write_session(store) as session:
        session.execute(update(ScoreRow).values(J=3 * col(ScoreRow.S) + 0.4 * col(ScoreRow.J_judge)))
        create_campaign(session, name="adj", schema=audited_schema(share=0.4, seed=1))
    audited = [rid for rid, audit in campaign_items(store, "adj").items() if audit]
    with write_session(store) as session:
        rng = np.random.default_rng(5)
        for rid in audited:
            row = session.execute(select(ScoreRow).where(col(ScoreRow.response_id) == rid)).scalar_one()
            row.J_human = float(np.clip(row.J_judge - 1.0 + rng.normal(0, 0.5), 0, 5))
    return store


def _expected(store: Engine) -> dict[tuple[str, str], tuple[float, float, float]]:
    """ppi_py called directly on the store's rows: with_sap, judge-a, per model and judged subtask."""
    audited = {rid for rid, audit in campaign_items(store, "adj").items() if audit}
    with read_session(store) as session:
        rows = session.execute(
            select(
                col(ResponseRow.id),
                col(ResponseRow.model),
                col(ScoreRow.subtask),
                col(ScoreRow.S),
                col(ScoreRow.J),
                col(ScoreRow.J_human),
            )
            .join(ScoreRow, col(ScoreRow.response_id) == col(ResponseRow.id))
            .where(col(ResponseRow.variant) == "with_sap", col(ScoreRow.judge_model) == "judge-a")
        ).all()
    frame = pd.DataFrame(rows, columns=["id", "model", "subtask", "S", "J", "J_human"]).dropna(subset=["J"])
    expected: dict[tuple[str, str], tuple[float, float, float]] = {}
    for (model, subtask), cell in frame.groupby(["model", "subtask"]):
        labelled = cell["id"].isin(audited) & cell["J_human"].notna()
        y = (100 * (3 * cell["S"] + 0.4 * cell["J_human"]) / 5)[labelled].to_numpy()
        yhat = (100 * cell["J"] / 5)[labelled].to_numpy()
        rest = (100 * cell["J"] / 5)[~labelled].to_numpy()
        if len(y) >= 2 and len(rest):
            low, high = ppi_mean_ci(y, yhat, rest, alpha=0.05)
            expected[(str(model), str(subtask))] = (
                float(ppi_mean_pointestimate(y, yhat, rest)[0]),
                float(low[0]),
                float(high[0]),
            )
    return expected


def test_the_ppi_table_is_ppi_py_on_the_audited_items(audited_store: Engine) -> None:
    expected = _expected(audited_store)
    assert expected  # some cell has at least two audited items
    with read_session(audited_store) as session:
        view = ppi_table(session, variant="with_sap", signature="sig", judge=JUDGE)
    table = view.table.set_index(["model", "subtask"])
    for key, (point, low, high) in expected.items():
        assert (table.loc[key, "ppi"], table.loc[key, "ppi_low"], table.loc[key, "ppi_high"]) == pytest.approx(
            (point, low, high)
        )
    assert view.applied == {"variant": "with_sap", "signature": "sig", "judge": JUDGE}
    with read_session(audited_store) as session, pytest.raises(InvalidInput):
        ppi_table(session, variant="with_sap", signature="sig")  # two judges: one must be chosen


def test_rest_and_export_give_the_same_cells(
    audited_store: Engine, db_url: str, users: dict[str, UserPublic], tmp_path: Path
) -> None:
    from studio.cli import build_cli

    expected = _expected(audited_store)
    params = {"variant": "with_sap", "signature": "sig", "judge": JUDGE}
    with TestClient(create_api(get_settings(database_url=db_url), audited_store)) as client:
        token = client.post("/v1/login", json={"username": "researcher", "password": PASSWORD}).json()["token"]
        answer = client.get("/v1/results/leaderboard/ppi", params=params, headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert "AUDITED" in body["rule"]
    served = {(row["model"], row["subtask"]): row["ppi"] for row in body["rows"]}
    assert {key: served[key] for key in expected} == pytest.approx({key: value[0] for key, value in expected.items()})
    output = tmp_path / "ppi.csv"
    args = [
        "export",
        "leaderboard-ppi",
        "--output",
        str(output),
        "--db",
        db_url,
        *sum(([f"--{name}", value] for name, value in params.items()), []),
    ]
    result = CliRunner().invoke(build_cli(), args)
    assert result.exit_code == 0, result.output
    written = pd.read_csv(output).set_index(["model", "subtask"])
    assert {key: written.loc[key, "ppi"] for key in expected} == pytest.approx(
        {key: value[0] for key, value in expected.items()}
    )
