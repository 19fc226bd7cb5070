"""Curating: browse scenarios and responses, read one scenario and the audit log, decide, publish, aggregate.

Every function takes the request's ``session`` and ``caller``, authorises first (``studio.policies.CurationPolicy``)
and then calls ``studio.services.curation`` / ``studio.services.aggregation``. Listings take their paging and
filters as the raw values a front door received and parse them with ``studio.usecases.queries`` — one rule for the
REST API and the curator page, including "a page past the end shows the last page".
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd
from sqlmodel import Session

from studio.models import AuditLogPublic, UserPublic
from studio.models.curation import DatasetVersionPublic, ScenarioStatusPublic
from studio.policies import CurationPolicy, authorize
from studio.services import aggregation, curation
from studio.services.aggregation import AggregationSummary
from studio.services.curation import Page
from studio.services.errors import InvalidInput
from studio.usecases.queries import Paging, ResponseFilters, ScenarioFilters, parse


def _listed(fetch: Any, paging: Paging) -> Page:
    """``fetch(paging)``, or the last page when ``paging`` lies past the end of what matches."""
    found: Page = fetch(paging)
    if found.total and not found.rows:
        found = fetch(paging.last_for(found.total))
    return found


def browse_scenarios(
    session: Session, *, caller: UserPublic, page: Any = 1, page_size: Any = 50, **filters: Any
) -> Page:
    """One page of scenarios with their review state; ``filters`` are :class:`~studio.usecases.queries.
    ScenarioFilters` (subtask, status, agreement_below, disagreement) as the front door received them."""
    authorize(caller, CurationPolicy.read())
    chosen = parse(ScenarioFilters, **filters)
    paging = parse(Paging, page=page, page_size=page_size)
    return _listed(
        lambda at: curation.browse_scenarios(session, **chosen.model_dump(), page=at.page, page_size=at.page_size),
        paging,
    )


def browse_responses(
    session: Session, *, caller: UserPublic, page: Any = 1, page_size: Any = 50, **filters: Any
) -> Page:
    """One page of responses with their scores; ``filters`` are :class:`~studio.usecases.queries.ResponseFilters`
    (subtask, model, variant, flagged, adjudicated) as the front door received them."""
    authorize(caller, CurationPolicy.read())
    chosen = parse(ResponseFilters, **filters)
    paging = parse(Paging, page=page, page_size=page_size)
    return _listed(
        lambda at: curation.browse_responses(session, **chosen.model_dump(), page=at.page, page_size=at.page_size),
        paging,
    )


def scenario_detail(session: Session, *, caller: UserPublic, scenario_id: str) -> dict[str, Any]:
    """One scenario: record (as ingested and as edited), review state, tallies and comments, its responses' scores."""
    authorize(caller, CurationPolicy.read())
    if not isinstance(scenario_id, str) or not scenario_id.strip():
        raise InvalidInput("scenario_id: type or select a scenario")
    return curation.scenario_detail(session, scenario_id=scenario_id.strip())


def audit_entries(
    session: Session, *, caller: UserPublic, scenario_id: str | None = None, limit: int = 200
) -> list[AuditLogPublic]:
    """The newest audit entries (of one scenario when given)."""
    authorize(caller, CurationPolicy.read())
    entity = "scenario" if scenario_id is not None else None
    return curation.list_audit_entries(session, entity=entity, entity_id=scenario_id, limit=limit)


def parse_edits(text: str | None) -> dict[str, Any]:
    """Edits typed as text: a JSON object of field → new value (``InvalidInput`` when it is not one)."""
    if not text or not text.strip():
        return {}
    try:
        edits = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidInput(f"edits: not valid JSON ({error.msg} at line {error.lineno} column {error.colno})") from None
    if not isinstance(edits, dict):
        raise InvalidInput('edits: must be a JSON object such as {"reference": "new text"}')
    return edits


def decide(
    session: Session,
    *,
    caller: UserPublic,
    scenario_id: str,
    action: str,
    reason: str | None,
    edits: Mapping[str, Any] | str | None = None,
) -> ScenarioStatusPublic:
    """Accept, edit or reject a scenario with a required reason (audit-logged under the caller's name).

    ``edits`` (for "edit") is a mapping of field → new value, or that mapping as JSON text (a page's text box).
    """
    authorize(caller, CurationPolicy.decide())
    if not scenario_id or not scenario_id.strip():
        raise InvalidInput("scenario_id: open a scenario first")
    if isinstance(edits, str):
        edits = parse_edits(edits) if action == "edit" else None
    return curation.decide_scenario(
        session,
        actor=caller.username,
        scenario_id=scenario_id.strip(),
        action=action,
        reason=reason or "",
        edits=dict(edits) if edits is not None else None,
    )


def publish(
    session: Session, *, caller: UserPublic, name: str | None, note: str | None = None, include_edits: bool = True
) -> tuple[DatasetVersionPublic, bool]:
    """Publish the accepted scenarios as an immutable version; the version and whether it was created now."""
    authorize(caller, CurationPolicy.publish())
    return curation.publish_dataset(
        session, actor=caller.username, name=name or "", include_edits=include_edits, note=(note or "").strip() or None
    )


def dataset_versions(session: Session, *, caller: UserPublic) -> list[DatasetVersionPublic]:
    """Every published version, oldest first."""
    authorize(caller, CurationPolicy.read())
    return curation.list_dataset_versions(session)


def dataset_version_records(session: Session, *, caller: UserPublic, version: str | None) -> list[dict[str, Any]]:
    """The scenarios of a published version, as published."""
    authorize(caller, CurationPolicy.read())
    if not version:
        raise InvalidInput("version: choose a published version")
    return curation.dataset_version_records(session, version=version)


def answers_to_aggregate(
    session: Session, *, caller: UserPublic, campaign: str | None = None
) -> dict[str, pd.DataFrame]:
    """The first half of an aggregation run, in a read session: the answers of ``campaign`` (every one when None)."""
    authorize(caller, CurationPolicy.aggregate())
    return aggregation.answers_to_aggregate(session, campaign=campaign or None)


def write_aggregation(
    session: Session, *, caller: UserPublic, campaign: str | None, answers: Mapping[str, pd.DataFrame]
) -> list[AggregationSummary]:
    """The second half, in a write session: apply the campaigns' rules to ``answers`` and write the outcome.

    Two sessions so that the long read does not hold SQLite's write lock (see ``studio.services.aggregation``).
    """
    authorize(caller, CurationPolicy.aggregate())
    return aggregation.write_aggregation(session, campaign=campaign or None, actor=caller.username, answers=answers)
