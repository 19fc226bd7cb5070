"""The target-kind registry (``studio.services.targets``): one entry per ``TargetKind``, each kind selecting the same
item rows as the selection written out per kind before the registry, and live_session's own rules."""

from __future__ import annotations

import typing
from collections import defaultdict
from itertools import combinations
from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from sqlmodel import col

from studio.db import read_session, write_session
from studio.errors import InvalidInput
from studio.models import Item, ResponseRow, ScenarioRow
from studio.services.campaigns import create_campaign, select_targets
from studio.services.live_endpoint import LiveEndpointConfig
from studio.services.targets import TARGETS, TargetSelection, target_kind
from studio.workflows import TargetKind, WorkflowSchema, load_schemas
from tests.studio.live_helpers import ingest_demo_scenarios

# The selection as campaigns.select_targets wrote it before the registry (commit 32fb408^), kept as the reference.


def _filters(query: Any, schema: WorkflowSchema, selection: TargetSelection) -> Any:
    subtasks = selection.subtasks or schema.target_filter.subtasks
    if subtasks:
        query = query.where(col(ScenarioRow.subtask).in_(subtasks))
    if selection.languages:
        query = query.where(col(ScenarioRow.language).in_(selection.languages))
    if selection.high_risk_only or schema.target_filter.high_risk:
        query = query.where(col(ScenarioRow.high_risk).is_(True))
    if schema.target_filter.has_instruction_kind:
        query = query.where(col(ScenarioRow.instruction_kind).is_not(None))
    return query


def _old_targets(session: Any, schema: WorkflowSchema, selection: TargetSelection) -> list[dict[str, Any]]:
    if schema.target == "scenario":
        query = _filters(select(col(ScenarioRow.id)), schema, selection).order_by(col(ScenarioRow.id))
        return [
            {"scenario_id": s, "response_id": None, "response_b_id": None} for s in session.execute(query).scalars()
        ]
    query = select(
        col(ResponseRow.id), col(ResponseRow.scenario_id), col(ResponseRow.model), col(ResponseRow.variant)
    ).join(ScenarioRow, col(ScenarioRow.id) == col(ResponseRow.scenario_id))
    query = _filters(query, schema, selection)
    if selection.models:
        query = query.where(col(ResponseRow.model).in_(selection.models))
    if selection.variants:
        query = query.where(col(ResponseRow.variant).in_(selection.variants))
    if selection.flagged_only or schema.target_filter.flagged_for_adjudication:
        query = query.where(col(ResponseRow.needs_adjudication).is_(True))
    rows = session.execute(
        query.order_by(col(ResponseRow.scenario_id), col(ResponseRow.model), col(ResponseRow.variant))
    ).all()
    if schema.target == "response":
        return [{"scenario_id": row.scenario_id, "response_id": row.id, "response_b_id": None} for row in rows]
    by_model: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    by_variant: dict[tuple[str, str], list[int]] = defaultdict(list)
    for row in rows:
        by_model[(row.scenario_id, row.model)][row.variant] = row.id
        by_variant[(row.scenario_id, row.variant)].append(row.id)
    pairs = [
        (s, v["with_sap"], v["without_sap"]) for (s, _m), v in by_model.items() if {"with_sap", "without_sap"} <= set(v)
    ]
    for (s, _v), ids in by_variant.items():
        pairs.extend((s, a, b) for a, b in combinations(ids, 2))
    return [{"scenario_id": s, "response_id": a, "response_b_id": b} for s, a, b in sorted(pairs)]


SELECTIONS = [
    TargetSelection(),
    TargetSelection(subtasks=["dialogue_base", "itinerary_basic"]),
    TargetSelection(languages=["en"]),
    TargetSelection(high_risk_only=True),
    TargetSelection(models=["model-alpha"], variants=["with_sap"]),
]


def test_the_registry_names_every_target_kind_and_only_those() -> None:
    assert set(TARGETS) == set(typing.get_args(TargetKind))
    assert all(spec.name == name for name, spec in TARGETS.items())
    with pytest.raises(KeyError, match="known: scenario, response"):
        target_kind("conversation")


@pytest.mark.parametrize("schema_name", sorted(name for name in load_schemas() if name != "live_safety"))
def test_each_kind_selects_what_it_selected_before_the_registry(corpus: Engine, schema_name: str) -> None:
    schema = load_schemas()[schema_name]
    with read_session(corpus) as session:
        for selection in SELECTIONS:
            assert select_targets(session, schema, selection) == _old_targets(session, schema, selection), selection


def test_campaigns_of_each_kind_hold_the_items_they_held(corpus: Engine) -> None:
    """The fixture corpus: 6 scenarios (1 high-risk, 1 with an instruction kind), 2 models x 2 variants each."""
    schemas = load_schemas()
    expected = {"crowd_vote": 6, "sap_safety": 4, "instruction_following": 4, "pairwise": 24}
    with write_session(corpus) as session:
        for name, count in expected.items():
            created = create_campaign(session, name=name, schema=schemas[name], people_per_item=None)
            query = select(func.count()).select_from(Item).where(col(Item.campaign_id) == created.id)
            assert session.execute(query).scalar() == count, name


def test_live_session_selects_high_risk_scenarios_only_and_takes_no_gold(engine: Engine) -> None:
    ingest_demo_scenarios(engine)
    schema = load_schemas()["live_safety"]
    with write_session(engine) as session:
        high_risk = set(session.execute(select(col(ScenarioRow.id)).where(col(ScenarioRow.high_risk))).scalars())
        targets = select_targets(session, schema, TargetSelection())
        assert len(high_risk) == 10
        assert {target["scenario_id"] for target in targets} == high_risk
        assert all(target["response_id"] is None and target["response_b_id"] is None for target in targets)
        live = TARGETS["live_session"]
        assert not live.takes_gold and not live.shows_stored_responses and not live.answered_in_queue
        assert all(spec.answered_in_queue for name, spec in TARGETS.items() if name != "live_session")
        gold = [{"scenario_id": sorted(high_risk)[0], "answers": {"safety": 5, "violation": "no"}}]
        config = LiveEndpointConfig(model="m", base_url="http://127.0.0.1:9/v1")
        with pytest.raises(InvalidInput, match="gold items are not supported for live_session"):
            create_campaign(session, name="live", schema=schema, gold=gold, live_endpoint=config)


def test_a_live_campaign_needs_its_companion_and_only_it_names_one(engine: Engine) -> None:
    ingest_demo_scenarios(engine)
    config = LiveEndpointConfig(model="m", base_url="http://127.0.0.1:9/v1")
    with write_session(engine) as session:
        with pytest.raises(InvalidInput, match="names its companion"):
            create_campaign(session, name="live", schema=load_schemas()["live_safety"])
        with pytest.raises(InvalidInput, match="names its companion"):
            create_campaign(session, name="vote", schema=load_schemas()["crowd_vote"], live_endpoint=config)
