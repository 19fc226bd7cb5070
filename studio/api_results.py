"""REST endpoints for curators and researchers (``/v1/results/...``, ``/v1/curation/...``): thin wrappers over
``studio.services.research``, ``curation`` and ``aggregation``, which check roles (annotators and experts: 403).

:func:`create_results_router` follows ``studio.api_routes.add_routes``: each route resolves its caller from the API's
``BearerToken`` first thing in its (first) session; aggregation reads in one session and writes in a second.

No ``from __future__ import annotations`` here: FastAPI must see the ``BearerToken`` dependency type as an
object, not as an unresolvable string.
"""

import tempfile
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, Response, status
from pydantic import BaseModel, Field
from sqlalchemy import Engine

from studio.api import BearerToken
from studio.db import read_session, write_session
from studio.models.curation import DatasetVersionPublic, ScenarioStatusPublic
from studio.results.defaults import DEFAULT_RESAMPLES, MAX_RESAMPLES
from studio.services import aggregation, auth, curation, research
from studio.services.aggregation import AggregationSummary
from studio.services.curation import Page

PREFIX = "/v1"


class DecisionIn(BaseModel):
    action: Literal["accept", "edit", "reject"]
    reason: str = Field(max_length=4000)
    edits: dict[str, Any] | None = None


class PublishIn(BaseModel):
    name: str = Field(min_length=1, max_length=128)
    note: str | None = Field(default=None, max_length=4000)
    include_edits: bool = True


def _png(draw: Any) -> Response:
    """Run ``draw(path)`` into a temporary PNG and answer its bytes."""
    with tempfile.TemporaryDirectory() as folder:
        target = Path(folder) / "figure.png"
        draw(target)
        return Response(content=target.read_bytes(), media_type="image/png")


def create_results_router(engine: Engine) -> APIRouter:
    """The curator / researcher endpoints; ``caller`` is the API's annotated dependency resolving the user."""
    router = APIRouter(prefix=PREFIX)
    _add_result_routes(router, engine)
    _add_statistics_routes(router, engine)
    _add_figure_routes(router, engine)
    _add_curation_routes(router, engine)
    _add_version_routes(router, engine)
    return router


def _add_result_routes(router: APIRouter, engine: Engine) -> None:
    @router.get("/results/leaderboard", tags=["results"])
    def leaderboard(
        token: BearerToken, variant: str | None = None, signature: str | None = None, judge: str | None = None
    ) -> dict[str, Any]:
        with read_session(engine) as session:
            user = auth.signed_in(session, token=token)
            view = research.leaderboard(session, user=user, variant=variant, signature=signature, judge=judge)
        return {
            "rows": research.frame_records(view.table),
            "pending": view.pending,
            "adjudicated": view.adjudicated,
            "coverage": research.frame_records(view.coverage),  # per cell: items counted and pending
        }

    @router.get("/results/sap", tags=["results"])
    def sap(token: BearerToken, campaign: str | None = None, by_model: bool = False) -> list[dict[str, Any]]:
        with read_session(engine) as session:
            user = auth.signed_in(session, token=token)
            return research.frame_records(research.sap_table(session, user=user, campaign=campaign, by_model=by_model))

    @router.get("/results/instruction", tags=["results"])
    def instruction(token: BearerToken, campaign: str | None = None) -> list[dict[str, Any]]:
        with read_session(engine) as session:
            user = auth.signed_in(session, token=token)
            return research.frame_records(research.instruction_table(session, user=user, campaign=campaign))

    @router.get("/results/agreement/{campaign}", tags=["results"])
    def agreement(
        campaign: str, token: BearerToken, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
    ) -> dict[str, Any]:
        resamples = max(0, min(resamples, MAX_RESAMPLES))
        with read_session(engine) as session:
            user = auth.signed_in(session, token=token)
            view = research.agreement(session, user=user, campaign=campaign, resamples=resamples, seed=seed)
        return {
            "by_question": research.frame_records(view.by_question),
            "annotators": research.frame_records(view.annotators),
            "gold": research.frame_records(view.gold),
        }


def _add_statistics_routes(router: APIRouter, engine: Engine) -> None:
    @router.get("/results/calibration", tags=["results"])
    def calibration(token: BearerToken) -> dict[str, Any]:
        with read_session(engine) as session:
            user = auth.signed_in(session, token=token)
            figures, rows = research.calibration(session, user=user)
        return {"statistics": figures.to_dict(), "rows": research.frame_records(rows)}

    @router.get("/results/progress", tags=["results"])
    def progress(token: BearerToken) -> dict[str, Any]:
        with read_session(engine) as session:
            user = auth.signed_in(session, token=token)
            campaigns, people = research.progress(session, user=user)
        return {"campaigns": research.frame_records(campaigns), "annotators": research.frame_records(people)}

    @router.get("/results/distribution", tags=["results"])
    def distribution(
        token: BearerToken, metric: str = "S", bins: int = 20, variant: str | None = None
    ) -> list[dict[str, Any]]:
        with read_session(engine) as session:
            user = auth.signed_in(session, token=token)
            frame = research.score_distribution(session, user=user, metric=metric, bins=bins, variant=variant)
        return research.frame_records(frame)

    @router.post("/results/aggregate", response_model=list[AggregationSummary], tags=["results"])
    def aggregate(token: BearerToken, campaign: str | None = None) -> list[AggregationSummary]:
        with read_session(engine) as session:  # the long read, off the write lock (see studio.services.aggregation)
            user = auth.signed_in(session, token=token)
            answers = aggregation.answers_to_aggregate(session, campaign=campaign, user=user)
        with write_session(engine) as session:
            if campaign is not None:
                return [
                    aggregation.aggregate_campaign(session, campaign=campaign, user=user, answers=answers[campaign])
                ]
            return aggregation.aggregate_all(session, user=user, answers=answers)


def _add_figure_routes(router: APIRouter, engine: Engine) -> None:
    @router.get("/results/calibration.png", response_class=Response, tags=["results"])
    def calibration_png(token: BearerToken) -> Response:
        from studio.results.calibration import plot_calibration

        with read_session(engine) as session:
            user = auth.signed_in(session, token=token)
            _figures, rows = research.calibration(session, user=user)
        return _png(lambda path: plot_calibration(rows, path))

    @router.get("/results/instruction.png", response_class=Response, tags=["results"])
    def instruction_png(token: BearerToken, campaign: str | None = None) -> Response:
        from studio.results.tables import plot_instruction_following

        with read_session(engine) as session:
            user = auth.signed_in(session, token=token)
            table = research.instruction_table(session, user=user, campaign=campaign)
        return _png(lambda path: plot_instruction_following(table.set_index("model"), path))

    @router.get("/results/sap.png", response_class=Response, tags=["results"])
    def sap_png(token: BearerToken, campaign: str | None = None, by_model: bool = False) -> Response:
        from studio.results.tables import plot_safety

        with read_session(engine) as session:
            user = auth.signed_in(session, token=token)
            table = research.sap_table(session, user=user, campaign=campaign, by_model=by_model)
        return _png(lambda path: plot_safety(table, path))

    @router.get("/results/distribution.png", response_class=Response, tags=["results"])
    def distribution_png(token: BearerToken, metric: str = "S", bins: int = 20, variant: str | None = None) -> Response:
        with read_session(engine) as session:
            user = auth.signed_in(session, token=token)
            frame = research.score_distribution(session, user=user, metric=metric, bins=bins, variant=variant)
        return _png(lambda path: research.plot_score_distribution(frame, path, metric=metric))


def _add_curation_routes(router: APIRouter, engine: Engine) -> None:
    @router.get("/curation/scenarios", response_model=Page, tags=["curation"])
    def scenarios(
        token: BearerToken,
        subtask: str | None = None,
        status: str | None = None,
        agreement_below: float | None = None,
        disagreement: bool | None = None,
        page: int = 1,
        page_size: int = 50,
    ) -> Page:
        with read_session(engine) as session:
            user = auth.signed_in(session, token=token)
            return curation.browse_scenarios(
                session,
                user=user,
                subtask=subtask,
                status=status,
                agreement_below=agreement_below,
                disagreement=disagreement,
                page=page,
                page_size=page_size,
            )

    @router.get("/curation/responses", response_model=Page, tags=["curation"])
    def responses(
        token: BearerToken,
        subtask: str | None = None,
        model: str | None = None,
        variant: str | None = None,
        flagged: bool | None = None,
        adjudicated: bool | None = None,
        page: int = 1,
        page_size: int = 50,
    ) -> Page:
        with read_session(engine) as session:
            user = auth.signed_in(session, token=token)
            return curation.browse_responses(
                session,
                user=user,
                subtask=subtask,
                model=model,
                variant=variant,
                flagged=flagged,
                adjudicated=adjudicated,
                page=page,
                page_size=page_size,
            )

    @router.get("/curation/scenarios/{scenario_id}", tags=["curation"])
    def scenario(scenario_id: str, token: BearerToken) -> dict[str, Any]:
        with read_session(engine) as session:
            user = auth.signed_in(session, token=token)
            return curation.scenario_detail(session, user=user, scenario_id=scenario_id)

    @router.post("/curation/scenarios/{scenario_id}/decision", response_model=ScenarioStatusPublic, tags=["curation"])
    def decide(scenario_id: str, body: DecisionIn, token: BearerToken) -> ScenarioStatusPublic:
        with write_session(engine) as session:
            user = auth.signed_in(session, token=token)
            return curation.decide_scenario(
                session, user=user, scenario_id=scenario_id, action=body.action, reason=body.reason, edits=body.edits
            )


def _add_version_routes(router: APIRouter, engine: Engine) -> None:
    @router.get("/curation/versions", response_model=list[DatasetVersionPublic], tags=["curation"])
    def versions(token: BearerToken) -> list[DatasetVersionPublic]:
        with read_session(engine) as session:
            user = auth.signed_in(session, token=token)
            return curation.list_dataset_versions(session, user=user)

    @router.post(
        "/curation/versions",
        response_model=DatasetVersionPublic,
        status_code=status.HTTP_201_CREATED,
        responses={200: {"model": DatasetVersionPublic, "description": "identical content: the existing"}},
        tags=["curation"],
    )
    def publish(body: PublishIn, token: BearerToken, response: Response) -> DatasetVersionPublic:
        with write_session(engine) as session:
            user = auth.signed_in(session, token=token)
            version, created = curation.publish_dataset(
                session, user=user, name=body.name, include_edits=body.include_edits, note=body.note
            )
        if not created:
            response.status_code = status.HTTP_200_OK
        return version

    @router.get("/curation/versions/{name}", tags=["curation"])
    def version_records(name: str, token: BearerToken) -> list[dict[str, Any]]:
        with read_session(engine) as session:
            user = auth.signed_in(session, token=token)
            return curation.dataset_version_records(session, user=user, version=name)
