"""The Curate list by the crowd models' disagreement (issue 21), through the real store on SQLite and PostgreSQL: the
``models_disagree`` column aggregation writes from the crowd side, the filter of that name through the service and
the REST API, the default order (those scenarios first; the explicit orders unchanged), the models fitted in the read
half of a run (the write session only writes), and migration 0006 copying the flag from crowd sides stored before.

The crowd is the known-truth simulated one of ``test_crowd_models`` (a group of always-'discard' raters and spammers
outvote the careful raters on some scenarios; Dawid–Skene sees through them there).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text

from studio.db import create_db_engine, read_session, upgrade_db, write_session
from studio.services import aggregation_scenarios
from studio.services.aggregation import (
    AnswersRead,
    aggregate,
    aggregate_campaign,
    answers_to_aggregate,
    write_aggregation,
)
from studio.services.aggregation_scenarios import FittedModels
from studio.services.curation import browse_scenarios
from studio.services.listing import ScenarioFilters, parse
from studio.settings import get_settings
from studio.ui import tables
from studio.web.api import create_api
from studio.workflows import load_schemas
from tests.studio.helpers import PASSWORD, add_people
from tests.studio.services.test_crowd_models import SCENARIOS, crowd_sides, vote


@pytest.fixture
def modelled(engine: Engine, tmp_path: Path, password_hash: str) -> tuple[Engine, list[str]]:
    """The simulated crowd's vote, aggregated in two halves (:func:`aggregate`); the store and the scenarios whose
    models disagree with the majority (as the stored crowd sides say), sorted."""
    vote(engine, tmp_path, password_hash, load_schemas()["crowd_vote"])
    aggregate(engine, campaign="vote", actor="curator")
    disagreeing = sorted(sid for sid, (side, _row) in crowd_sides(engine).items() if side.models_disagree)
    assert 0 < len(disagreeing) < SCENARIOS  # both kinds, or the order and the filter prove nothing
    return engine, disagreeing


def listed(engine: Engine, **filters: Any) -> list[dict[str, Any]]:
    """The rows of the scenario listing for ``filters`` (the page's words), 100 to a page."""
    with read_session(engine) as session:
        return browse_scenarios(session, filters=parse(ScenarioFilters, page_size=100, **filters)).rows


def test_the_column_follows_the_crowd_side_and_the_filter_lists_by_it(modelled: tuple[Engine, list[str]]) -> None:
    engine, disagreeing = modelled
    every = listed(engine, order="id")
    assert {row["id"]: row["models_disagree"] for row in every} == {
        sid: side.models_disagree for sid, (side, _row) in crowd_sides(engine).items()
    }
    assert {sid: row.models_disagree for sid, (_side, row) in crowd_sides(engine).items()} == {
        row["id"]: row["models_disagree"] for row in every
    }
    assert [row["id"] for row in listed(engine, models_disagree="yes")] == disagreeing
    agreeing = [row["id"] for row in listed(engine, models_disagree="no")]
    assert agreeing == sorted(set(row["id"] for row in every) - set(disagreeing))
    assert len(listed(engine, models_disagree="any")) == SCENARIOS
    # A models' disagreement is someone to look at: the Disagreement filter lists it too.
    assert set(disagreeing) <= {row["id"] for row in listed(engine, disagreement="yes")}
    with read_session(engine) as session:
        page = browse_scenarios(session, filters=ScenarioFilters(models_disagree=True, page_size=100))
    assert set(tables.scenario_list(page).frame["models"]) == {tables.MODELS_DISAGREE_MARK}


def test_the_default_order_puts_the_models_disagreements_first(modelled: tuple[Engine, list[str]]) -> None:
    engine, disagreeing = modelled
    by_id = [row["id"] for row in listed(engine, order="id")]
    assert by_id == sorted(by_id)
    others = [sid for sid in by_id if sid not in disagreeing]
    for asked in ({}, {"order": ""}, {"order": "models_disagree"}):
        assert [row["id"] for row in listed(engine, **asked)] == disagreeing + others, asked
    # Nothing pre-screened: the LLM order is the id order, as it was.
    assert [row["id"] for row in listed(engine, order="uncertainty")] == by_id
    # Paged, the first page holds the disagreements.
    with read_session(engine) as session:
        first = browse_scenarios(session, filters=ScenarioFilters(page_size=len(disagreeing)))
    assert [row["id"] for row in first.rows] == disagreeing and first.total == SCENARIOS


@pytest.fixture
def api(modelled: tuple[Engine, list[str]], db_url: str, password_hash: str) -> Iterator[TestClient]:
    engine, _disagreeing = modelled
    add_people(engine, password_hash, ["curator"], "curator")
    with TestClient(create_api(get_settings(database_url=db_url), engine)) as client:
        answer = client.post("/v1/login", json={"username": "curator", "password": PASSWORD})
        client.headers["Authorization"] = f"Bearer {answer.json()['token']}"
        yield client


def test_the_rest_api_takes_the_same_filter_and_order(modelled: tuple[Engine, list[str]], api: TestClient) -> None:
    _engine, disagreeing = modelled
    for word in ("yes", "true", "1"):
        answer = api.get("/v1/curation/scenarios", params={"models_disagree": word, "page_size": 100})
        assert answer.status_code == 200, answer.text
        assert [row["id"] for row in answer.json()["rows"]] == disagreeing
        assert all(row["models_disagree"] is True for row in answer.json()["rows"])
    first = api.get("/v1/curation/scenarios", params={"page_size": len(disagreeing)}).json()
    assert [row["id"] for row in first["rows"]] == disagreeing
    refused = api.get("/v1/curation/scenarios", params={"models_disagree": "perhaps"})
    assert refused.status_code == 422 and "models_disagree" in refused.json()["detail"]
    refused = api.get("/v1/curation/scenarios", params={"order": "disagreeing"})
    assert refused.status_code == 422 and "order" in refused.json()["detail"]


def test_the_models_are_fitted_in_the_read_half_and_the_write_half_only_writes(
    engine: Engine, tmp_path: Path, password_hash: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    vote(engine, tmp_path, password_hash, load_schemas()["crowd_vote"])
    with read_session(engine) as session:
        read = answers_to_aggregate(session, campaign="vote")
    assert isinstance(read, AnswersRead) and read.models["vote"].table is not None
    fits: list[int] = []
    real = aggregation_scenarios.model_table

    def counted(*args: Any, **kwargs: Any) -> Any:
        fits.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(aggregation_scenarios, "model_table", counted)
    with write_session(engine) as session:
        [summary] = write_aggregation(session, campaign="vote", actor="curator", answers=read)
    assert fits == [] and summary.changed > 0  # written, with no model fitted under the write lock
    with write_session(engine) as session:  # all in one session, the models fitted there: the same outcome
        assert aggregate_campaign(session, campaign="vote").changed == 0
    assert fits == [1]
    # Models fitted on other decided items (the campaign closed in between) are fitted again, on these.
    stale = AnswersRead()
    stale["vote"], stale.models["vote"] = read["vote"], FittedModels(read.models["vote"].table, frozenset())
    with write_session(engine) as session:
        assert write_aggregation(session, campaign="vote", actor="curator", answers=stale)[0].changed == 0
    assert fits == [1, 1]


def _status_row(connection: Any, scenario_id: str, crowd: str) -> None:
    """A scenario and its status row as revision 0005 stores them."""
    connection.execute(
        text(
            "INSERT INTO scenario (id, subtask, persona, history, user_input, reference, tags, context, language, "
            "high_risk, content_hash, updated_at) VALUES (:id, 'dialogue_base', 'p', '[]', 'u', 'r', '{}', '{}', "
            "'zh', false, 'h', CURRENT_TIMESTAMP)"
        ),
        {"id": scenario_id},
    )
    connection.execute(
        text(
            "INSERT INTO scenario_status (scenario_id, status, decided_by, crowd_votes, disagreement, "
            "expert_verdicts, edits, updated_at, crowd, experts) VALUES (:id, 'in_review', 'crowd:vote', 9, true, "
            "'{}', '{}', CURRENT_TIMESTAMP, :crowd, '{}')"
        ),
        {"id": scenario_id, "crowd": crowd},
    )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def fresh_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database no migration has run on: a new SQLite file or a new PostgreSQL database (dropped after)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'old.sqlite'}"
        return
    import psycopg

    name = f"h2h_migrate_{uuid.uuid4().hex[:12]}"
    with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_migration_0006_copies_the_flag_from_the_stored_crowd_sides(fresh_url: str) -> None:
    upgrade_db(fresh_url, "0005")
    engine = create_db_engine(fresh_url)
    try:
        with engine.begin() as connection:
            _status_row(connection, "split", '{"campaign": "vote", "models_disagree": true}')
            _status_row(connection, "agreed", '{"campaign": "vote", "models_disagree": false}')
            _status_row(connection, "plain", "{}")
        upgrade_db(engine)
        rows = listed(engine, order="id")
        assert {row["id"]: row["models_disagree"] for row in rows} == {"agreed": False, "plain": False, "split": True}
        assert [row["id"] for row in listed(engine)] == ["split", "agreed", "plain"]
    finally:
        engine.dispose()
