"""Curation over REST (``/v1/curation/...``): browse scenarios and responses, one scenario, decisions, versions.

A scenario id may hold ``/`` (the public release's ids do not, but imported ones may): the routes that take one in
their path read it with ``{scenario_id:path}``, so ``/scenarios/a/b`` and ``/scenarios/a%2Fb`` both name ``a/b``. GET
has only the one route and POST only ``…/decision``, so the longer path is never ambiguous (an id ending in
``/decision`` is decided at ``…/ID/decision``).
"""

# No `from __future__ import annotations`: FastAPI reads the dependency types of the signatures as objects.
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response, status

from studio.models.curation import DatasetVersionPublic, ScenarioStatusPublic
from studio.services.curation import Page
from studio.services.listing import ResponseFilters, ScenarioFilters
from studio.services.publishing import PublishPreview
from studio.services.stopping import StopsReport
from studio.usecases import curate
from studio.web.deps import CallerDep
from studio.web.schemas import DecisionIn, PublishIn

router = APIRouter(prefix="/v1/curation", tags=["curation"])


@router.get("/scenarios", response_model=Page)
def scenarios(caller: CallerDep, filters: Annotated[ScenarioFilters, Query()]) -> Page:
    """Scenarios with their review state, filtered and paged (a page past the end answers the last page);
    ``flagged``: with refine flags; ``order=uncertainty``: the LLM pre-screen's most uncertain first."""
    with caller.reading() as (session, user):
        return curate.browse_scenarios(session, caller=user, filters=filters)


@router.get("/responses", response_model=Page)
def responses(caller: CallerDep, filters: Annotated[ResponseFilters, Query()]) -> Page:
    """Responses with their automatic and judge scores, filtered and paged."""
    with caller.reading() as (session, user):
        return curate.browse_responses(session, caller=user, filters=filters)


@router.get("/campaigns/{name}/stops", response_model=StopsReport)
def stops(name: str, caller: CallerDep) -> StopsReport:
    """The items the campaign's ``stopping:`` rule stopped before their quota (item, scenario, votes at the stop,
    rule, probability that the decision stays, time) and the rule in words: what the Curate page's Stops tab and
    ``h2h export stops`` show. Curators, researchers and admins."""
    with caller.reading() as (session, user):
        return curate.item_stops(session, caller=user, campaign=name)


@router.get("/scenarios/{scenario_id:path}")
def scenario(scenario_id: str, caller: CallerDep) -> dict[str, Any]:
    """One scenario: its record, review state, tallies and comments, and its responses' scores."""
    with caller.reading() as (session, user):
        return curate.scenario_detail(session, caller=user, scenario_id=scenario_id)


@router.post("/scenarios/{scenario_id:path}/decision", response_model=ScenarioStatusPublic)
def decide(scenario_id: str, body: DecisionIn, caller: CallerDep) -> ScenarioStatusPublic:
    """Accept, edit-and-accept or reject the scenario, with a reason (audit-logged); 409 when ``revision`` is not the
    scenario's current one."""
    with caller.writing() as (session, user):
        return curate.decide(
            session,
            caller=user,
            scenario_id=scenario_id,
            action=body.action,
            reason=body.reason,
            edits=body.edits,
            revision=body.revision,
        )


@router.get("/versions", response_model=list[DatasetVersionPublic])
def versions(caller: CallerDep) -> list[DatasetVersionPublic]:
    """Every published dataset version, oldest first."""
    with caller.reading() as (session, user):
        return curate.dataset_versions(session, caller=user)


@router.get("/publish-preview", response_model=PublishPreview)
def publish_preview(caller: CallerDep, include_edits: bool = True) -> PublishPreview:
    """What publishing now would publish: each scenario, who decided it and why, and the records' content hash."""
    with caller.reading() as (session, user):
        return curate.publish_preview(session, caller=user, include_edits=include_edits)


@router.post(
    "/versions",
    response_model=DatasetVersionPublic,
    status_code=status.HTTP_201_CREATED,
    responses={200: {"model": DatasetVersionPublic, "description": "identical content: the existing"}},
)
def publish(body: PublishIn, caller: CallerDep, response: Response) -> DatasetVersionPublic:
    """Publish what ``GET /publish-preview`` shows as an immutable version (201), or name the identical one (200);
    with ``expected_hash``, a 409 when the scenarios to publish changed since that preview."""
    with caller.writing() as (session, user):
        version, created = curate.publish(
            session,
            caller=user,
            name=body.name,
            note=body.note,
            include_edits=body.include_edits,
            expected_hash=body.expected_hash,
        )
    if not created:
        response.status_code = status.HTTP_200_OK
    return version


@router.get("/versions/{name}")
def version_records(name: str, caller: CallerDep) -> list[dict[str, Any]]:
    """The scenarios of a published version, as published."""
    with caller.reading() as (session, user):
        return curate.dataset_version_records(session, caller=user, version=name)
