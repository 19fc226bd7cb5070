"""Target kinds, in one place (ARCHITECTURE.md "Where does a change go"): what an item of each kind points at, how a
campaign selects its targets, which responses its content shows (in the order this person sees them) and how the
votes export names it. ``TARGETS`` is the registry; a workflow's ``target`` names one of its keys
(``studio.workflows.TargetKind``; ``tests/studio/services/test_targets.py`` keeps the two equal).

An item row always points at a scenario (``scenario_id``) and, by kind, at no response, one (``response_id``) or two
(``response_id``, ``response_b_id``). A ``live_session`` item points at a scenario only: its conversation is made
live, per person, and stored in ``live_session`` / ``live_turn`` (``studio.services.live_sessions``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from itertools import combinations
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel
from sqlalchemy import select
from sqlmodel import Session, col

from pipeline.taxonomy import JUDGED_SUBTASKS
from studio.models import ResponseRow, ScenarioRow, ScoreRow
from studio.services.content import pair_is_swapped
from studio.workflows import WorkflowSchema

ItemTarget = dict[str, Any]  # {"scenario_id", "response_id", "response_b_id"}


class TargetSelection(BaseModel):
    """How a campaign picks its targets on top of the schema's own ``target_filter``."""

    subtasks: list[str] | None = None
    #: Scenario languages (``tags.language``: zh, en, mixed).
    languages: list[str] | None = None
    high_risk_only: bool = False
    models: list[str] | None = None
    variants: list[str] | None = None
    flagged_only: bool = False


def scenario_filters(query: Any, schema: WorkflowSchema, selection: TargetSelection) -> Any:
    """``query`` (over ``ScenarioRow``) narrowed by the selection and the schema's ``target_filter``."""
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


def response_query(schema: WorkflowSchema, selection: TargetSelection) -> Any:
    """The responses a response or pair campaign may take: id, scenario_id, model, variant, in a stable order."""
    query = select(
        col(ResponseRow.id), col(ResponseRow.scenario_id), col(ResponseRow.model), col(ResponseRow.variant)
    ).join(ScenarioRow, col(ScenarioRow.id) == col(ResponseRow.scenario_id))
    query = scenario_filters(query, schema, selection)
    if selection.models:
        query = query.where(col(ResponseRow.model).in_(selection.models))
    if selection.variants:
        query = query.where(col(ResponseRow.variant).in_(selection.variants))
    if selection.flagged_only or schema.target_filter.flagged_for_adjudication:
        query = query.where(col(ResponseRow.needs_adjudication).is_(True))
    return query.order_by(col(ResponseRow.scenario_id), col(ResponseRow.model), col(ResponseRow.variant))


def audit_draw(session: Session, *, schema: WorkflowSchema, selection: TargetSelection) -> dict[int, Any]:
    """The audit sample of ``schema.audit`` by response id: drawn uniformly without replacement by
    ``numpy.random.default_rng(seed)`` from every JUDGED response the selection takes (a judged subtask, itinerary
    I–III, with a judge score), flagged or not, listed in ``response_query``'s stable order, so a rerun on the same
    store draws the same responses. Empty without ``audit:``."""
    if schema.audit is None:
        return {}
    unflagged = schema.model_copy(
        update={"target_filter": schema.target_filter.model_copy(update={"flagged_for_adjudication": None})}
    )
    query = (
        response_query(unflagged, selection.model_copy(update={"flagged_only": False}))
        .join(ScoreRow, col(ScoreRow.response_id) == col(ResponseRow.id))
        .where(col(ScoreRow.subtask).in_(sorted(JUDGED_SUBTASKS)), col(ScoreRow.J_judge).is_not(None))
    )
    population = session.execute(query).all()
    size = schema.audit.size(len(population))
    picks = np.random.default_rng(schema.audit.seed).choice(len(population), size=size, replace=False)
    return {population[index].id: population[index] for index in sorted(int(pick) for pick in picks)}


def response_pairs(rows: Iterable[Any]) -> list[tuple[str, int, int]]:
    """Two responses to one scenario: each model's with_sap vs without_sap, and every two models per variant."""
    by_model: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
    by_variant: dict[tuple[str, str], list[int]] = defaultdict(list)
    for row in rows:
        by_model[(row.scenario_id, row.model)][row.variant] = row.id
        by_variant[(row.scenario_id, row.variant)].append(row.id)
    pairs = [
        (scenario_id, variants["with_sap"], variants["without_sap"])
        for (scenario_id, _model), variants in by_model.items()
        if {"with_sap", "without_sap"} <= set(variants)
    ]
    for (scenario_id, _variant), ids in by_variant.items():
        pairs.extend((scenario_id, first, second) for first, second in combinations(ids, 2))
    return sorted(pairs)


def _target(scenario_id: str, response_id: int | None = None, response_b_id: int | None = None) -> ItemTarget:
    return {"scenario_id": scenario_id, "response_id": response_id, "response_b_id": response_b_id}


class TargetKindSpec:
    """One target kind. Subclasses set ``name`` and override what differs; the defaults are a scenario's."""

    name: ClassVar[str]
    #: Gold items (answers known in advance) can be set for this kind.
    takes_gold: ClassVar[bool] = True
    #: An item's content shows responses stored in advance (False: made live, per person).
    shows_stored_responses: ClassVar[bool] = True
    #: The annotate queue hands out and takes answers on this kind's items (False: a live session opens the item
    #: and its rating is the answer, ``studio.services.live_sessions.rate_session``; the queue must refuse them).
    answered_in_queue: ClassVar[bool] = True

    def select(self, session: Session, *, schema: WorkflowSchema, selection: TargetSelection) -> list[ItemTarget]:
        """The campaign's targets as item rows, in a stable order."""
        query = scenario_filters(select(col(ScenarioRow.id)), schema, selection).order_by(col(ScenarioRow.id))
        return [_target(scenario_id) for scenario_id in session.execute(query).scalars()]

    def shown_response_ids(self, *, item: Any, pair_seed: str, user_id: int) -> tuple[int, ...]:
        """The responses this person sees on ``item`` (an item row), in the order shown (A then B for a pair)."""
        return ()

    def export_target(self, *, item: Any) -> str:
        """How the votes export names the item's target: the scenario id, with its response ids where it has any."""
        parts = [item.scenario_id] + [str(part) for part in (item.response_id, item.response_b_id) if part is not None]
        return ":".join(parts)


class ScenarioTarget(TargetKindSpec):
    """A scenario (crowd vote, expert review): the conversation is the content."""

    name = "scenario"


class ResponseTarget(TargetKindSpec):
    """One stored response to a scenario (safety, adjudication, instruction following)."""

    name = "response"

    def select(self, session: Session, *, schema: WorkflowSchema, selection: TargetSelection) -> list[ItemTarget]:
        """The selected responses; with a workflow ``audit:``, its seeded random draw too, each marked ``audit``."""
        rows = session.execute(response_query(schema, selection)).all()
        if schema.audit is None:
            return [_target(row.scenario_id, row.id) for row in rows]
        drawn = audit_draw(session, schema=schema, selection=selection)
        merged = {row.id: row for row in [*rows, *drawn.values()]}
        ordered = sorted(merged.values(), key=lambda row: (row.scenario_id, row.model, row.variant))
        return [{**_target(row.scenario_id, row.id), "audit": row.id in drawn} for row in ordered]

    def shown_response_ids(self, *, item: Any, pair_seed: str, user_id: int) -> tuple[int, ...]:
        return (item.response_id,)


class ResponsePairTarget(TargetKindSpec):
    """Two responses to one scenario, shown as A and B in a per-person random order kept on the server."""

    name = "response_pair"
    takes_gold = False

    def select(self, session: Session, *, schema: WorkflowSchema, selection: TargetSelection) -> list[ItemTarget]:
        rows = session.execute(response_query(schema, selection)).all()
        return [_target(*pair) for pair in response_pairs(rows)]

    def shown_response_ids(self, *, item: Any, pair_seed: str, user_id: int) -> tuple[int, ...]:
        first, second = item.response_id, item.response_b_id
        if first is None or second is None:
            raise ValueError(f"item {item.id} is not a pair")
        return (second, first) if pair_is_swapped(pair_seed, user_id, item.id) else (first, second)


class LiveSessionTarget(TargetKindSpec):
    """A scenario that starts a live conversation with the campaign's companion (``studio.services.live_sessions``):
    persona and history as context, its user input as the opening line. No response is stored in advance."""

    name = "live_session"
    takes_gold = False
    shows_stored_responses = False
    answered_in_queue = False


#: Every target kind by name: the one place a new kind is added.
TARGETS: dict[str, TargetKindSpec] = {
    spec.name: spec for spec in (ScenarioTarget(), ResponseTarget(), ResponsePairTarget(), LiveSessionTarget())
}


def target_kind(name: str) -> TargetKindSpec:
    """The registered kind ``name``; ``KeyError`` naming the known kinds otherwise."""
    try:
        return TARGETS[name]
    except KeyError:
        raise KeyError(f"unknown target kind {name!r}; known: {', '.join(TARGETS)}") from None
