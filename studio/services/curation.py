"""Curation: browse scenarios and responses, inspect one scenario's votes, accept / edit / reject with an audit
trail, and publish immutable dataset versions.

Who may read and who may change is ``studio.policies.CurationPolicy``, checked by ``studio.usecases.curate`` before
it calls these functions (the command line calls them directly: it is trusted). Edits are an overlay
(``ScenarioStatus.edits``) on the ingested scenario, so re-ingesting a run never silently overwrites them;
``base_changed`` shows when the ingested text under an edit changed since the curator made it.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel
from sqlalchemy import Select, func, select
from sqlmodel import Session, col

from pipeline.taxonomy import COMBINED_METRIC, JUDGE_SCORE_NAMES, TABLE3_METRIC_NAMES
from studio.errors import InvalidInput, NotFound
from studio.models import (
    Answer,
    AuditLog,
    AuditLogPublic,
    Campaign,
    CurationReport,
    Item,
    PrescreenRow,
    ResponseRow,
    ScenarioRow,
    ScoreRow,
    User,
)
from studio.models.curation import (
    ScenarioStatus,
    ScenarioStatusPublic,
)
from studio.results.agreement import percent_agreement
from studio.services.curation_decisions import (
    ACTIONS,
    decide_scenario,
    scenario_record,
    scenario_revision,
)
from studio.services.curation_findings import scenario_findings
from studio.services.listing import ResponseFilters, ScenarioFilters
from studio.services.publishing import (
    accepted_records,
    content_hash,
    dataset_version_records,
    decision_summary,
    decisions_text,
    list_dataset_versions,
    publish_dataset,
    publish_preview,
)
from studio.workflows import FreeText, WorkflowSchema

# Re-exported: the decision and publishing live beside (studio.services.curation_decisions, .publishing).
__all__ = [
    "ACTIONS",
    "accepted_records",
    "content_hash",
    "decide_scenario",
    "decision_summary",
    "decisions_text",
    "dataset_version_records",
    "list_dataset_versions",
    "publish_dataset",
    "publish_preview",
    "scenario_record",
]

MAX_AUDIT_ENTRIES = 1000


class Page(BaseModel):
    """One page of a browse listing; ``total`` counts every row the filters match."""

    total: int
    page: int
    page_size: int
    rows: list[dict[str, Any]]


def _page(session: Session, query: Any, page: int, page_size: int) -> Page:
    """Page ``page`` (from 1) of ``page_size`` rows of ``query``, and how many rows it matches in all.

    Paging and filters arrive checked (``studio.services.listing``: one rule for both front doors).
    """
    total = session.execute(select(func.count()).select_from(query.order_by(None).subquery())).scalar_one()
    rows = [dict(row._mapping) for row in session.execute(query.offset((page - 1) * page_size).limit(page_size))]
    return Page(total=int(total), page=page, page_size=page_size, rows=rows)


_review_state = func.coalesce(col(ScenarioStatus.status), "pending")
_flag_count = func.coalesce(col(CurationReport.n_flags), 0)
_models_disagree = func.coalesce(col(ScenarioStatus.models_disagree), False)
#: Each scenario filter as a condition on the listing (fields of ``ScenarioFilters``).
_SCENARIO_FILTERS: dict[str, Any] = {
    "subtask": lambda value: col(ScenarioRow.subtask) == value,
    "status": lambda value: _review_state == value,
    "agreement_below": lambda value: col(ScenarioStatus.crowd_agreement) < value,
    "disagreement": lambda value: func.coalesce(col(ScenarioStatus.disagreement), False).is_(value),
    "models_disagree": lambda value: _models_disagree.is_(value),
    "flagged": lambda value: _flag_count > 0 if value else _flag_count == 0,
}


#: Each scenario order (``ScenarioFilters.order``) as the listing's ORDER BY; the id last, so every page is stable.
_SCENARIO_ORDERS: dict[str, tuple[Any, ...]] = {
    "models_disagree": (_models_disagree.desc(), col(ScenarioRow.id)),
    "id": (col(ScenarioRow.id),),
    "uncertainty": (col(PrescreenRow.uncertainty).is_(None), col(PrescreenRow.uncertainty).desc(), col(ScenarioRow.id)),
}


def _scenario_listing() -> Any:
    """Every scenario with its review state, the LLM pre-screen's verdict and uncertainty, and its flag kinds."""
    edited = col(ScenarioStatus.edited_from_hash).is_not(None)
    return (
        select(
            col(ScenarioRow.id),
            col(ScenarioRow.subtask),
            col(ScenarioRow.user_input),
            col(ScenarioRow.reference),
            _review_state.label("status"),
            col(ScenarioStatus.decided_by),
            col(ScenarioStatus.crowd_decision),
            col(ScenarioStatus.crowd_votes),
            col(ScenarioStatus.crowd_agreement),
            func.coalesce(col(ScenarioStatus.disagreement), False).label("disagreement"),
            _models_disagree.label("models_disagree"),
            edited.label("edited"),
            (edited & (col(ScenarioStatus.edited_from_hash) != col(ScenarioRow.content_hash))).label("base_changed"),
            col(PrescreenRow.verdict).label("llm_verdict"),
            col(PrescreenRow.uncertainty),
            col(CurationReport.flag_kinds).label("flags"),
        )
        .outerjoin(ScenarioStatus, col(ScenarioStatus.scenario_id) == col(ScenarioRow.id))
        .outerjoin(PrescreenRow, col(PrescreenRow.scenario_id) == col(ScenarioRow.id))
        .outerjoin(CurationReport, col(CurationReport.scenario_id) == col(ScenarioRow.id))
    )


def browse_scenarios(session: Session, *, filters: ScenarioFilters) -> Page:
    """Scenarios with their review state, filtered and paginated (two queries, whatever the page).

    The filters (:class:`~studio.services.listing.ScenarioFilters`, declared once for the REST query, the use case
    and the page): ``status`` is one of ``studio.models.curation.STATUSES`` (``pending`` includes scenarios nobody
    reviewed yet); ``agreement_below`` keeps scenarios whose crowd agreement (winning share) is below it;
    ``disagreement`` keeps those with (or without) someone to look (a crowd tie / low agreement, a split panel, the
    models' disagreement); ``models_disagree`` those whose crowd models decided otherwise than the majority (or not);
    ``flagged`` those with (or without) refine-run flags. ``order``: ``models_disagree`` (the default) lists those
    models' disagreements first (as expert review opens them first), then by id; ``uncertainty`` the LLM
    pre-screen's most uncertain first (unscreened last); ``id`` by id. Rows: id, subtask, user_input, reference,
    status, decided_by, crowd_decision, crowd_votes, crowd_agreement, disagreement, models_disagree, edited,
    base_changed, llm_verdict, uncertainty, flags.
    """
    query = _scenario_listing()
    for name, condition in _SCENARIO_FILTERS.items():
        if (value := getattr(filters, name)) is not None:
            query = query.where(condition(value))
    return _page(session, query.order_by(*_SCENARIO_ORDERS[filters.order]), filters.page, filters.page_size)


def browse_responses(session: Session, *, filters: ResponseFilters) -> Page:
    """Responses with their automatic and judge scores, filtered and paginated.

    The filters (:class:`~studio.services.listing.ResponseFilters`): ``flagged`` keeps responses flagged (or not)
    for human adjudication; ``adjudicated`` those with (or without) an experts' J_human. Rows: response_id,
    scenario_id, model, variant, subtask, needs_adjudication, S, J_judge, J, J_human, J_final.
    """
    query: Select[*tuple[Any, ...]] = (
        select(
            col(ResponseRow.id).label("response_id"),
            col(ResponseRow.scenario_id),
            col(ResponseRow.model),
            col(ResponseRow.variant),
            col(ScenarioRow.subtask),
            col(ResponseRow.needs_adjudication),
            col(ScoreRow.S),
            col(ScoreRow.J_judge),
            col(ScoreRow.J),
            col(ScoreRow.J_human),
            col(ScoreRow.J_final),
        )
        .join(ScenarioRow, col(ScenarioRow.id) == col(ResponseRow.scenario_id))
        .outerjoin(ScoreRow, col(ScoreRow.response_id) == col(ResponseRow.id))
    )
    for column, wanted in (
        (col(ScenarioRow.subtask), filters.subtask),
        (col(ResponseRow.model), filters.model),
        (col(ResponseRow.variant), filters.variant),
    ):
        if wanted is not None:
            query = query.where(column == wanted)
    if filters.flagged is not None:
        query = query.where(col(ResponseRow.needs_adjudication).is_(filters.flagged))
    if filters.adjudicated is not None:
        adjudicated = col(ScoreRow.J_human).is_not(None) if filters.adjudicated else col(ScoreRow.J_human).is_(None)
        query = query.where(adjudicated)
    return _page(
        session,
        query.order_by(col(ResponseRow.scenario_id), col(ResponseRow.model), col(ResponseRow.variant)),
        filters.page,
        filters.page_size,
    )


def _tallies(answers: pd.DataFrame, schema: WorkflowSchema) -> tuple[dict[str, Any], list[dict[str, str]]]:
    """Per question: value counts and percent agreement; and the free-text answers as comments."""
    texts = {q.id for q in schema.questions if isinstance(q, FreeText)}
    tallies: dict[str, Any] = {}
    comments: list[dict[str, str]] = []
    for annotator, values in zip(answers["annotator"], answers["values"], strict=True):
        for question, value in values.items():
            if question in texts:
                if str(value).strip():
                    comments.append({"annotator": annotator, "question": question, "text": str(value)})
                continue
            for part in value if isinstance(value, list) else [value]:
                counts = tallies.setdefault(question, {}).setdefault("counts", {})
                counts[str(part)] = counts.get(str(part), 0) + 1
    for tally in tallies.values():
        tally["percent_agreement"] = percent_agreement(np.array([list(tally["counts"].values())]))
    return tallies, comments


#: The scores read with each response (the curation page shows them beside it): Table 3's metrics, S, the judge's.
RESPONSE_SCORES: tuple[str, ...] = (*TABLE3_METRIC_NAMES, COMBINED_METRIC, *JUDGE_SCORE_NAMES)
#: A response's text is read whole up to this many characters (a curator reads it on the page); past it, its start.
RESPONSE_TEXT_CHARS = 100_000


def _scenario_responses(session: Session, *, scenario_id: str) -> list[dict[str, Any]]:
    """The scenario's responses by model and variant: id, model, variant, ``text`` (its first
    :data:`RESPONSE_TEXT_CHARS` characters: all of it but for a runaway generation), ``text_chars`` (its whole
    length) and the automatic / judge scores (one query; the cut is made by the store, not after reading)."""
    rows = session.execute(
        select(
            col(ResponseRow.id),
            col(ResponseRow.model),
            col(ResponseRow.variant),
            func.substr(col(ResponseRow.text), 1, RESPONSE_TEXT_CHARS).label("text"),
            func.length(col(ResponseRow.text)).label("text_chars"),
            *(col(getattr(ScoreRow, name)) for name in RESPONSE_SCORES),
        )
        .outerjoin(ScoreRow, col(ScoreRow.response_id) == col(ResponseRow.id))
        .where(col(ResponseRow.scenario_id) == scenario_id)
        .order_by(col(ResponseRow.model), col(ResponseRow.variant))
    )
    return [dict(response._mapping) for response in rows]


def scenario_detail(session: Session, *, scenario_id: str) -> dict[str, Any]:
    """One scenario: its record (as ingested and as edited), review state, per-campaign tallies, agreement and
    comments of its scenario-level items, and its responses with their texts and automatic / judge scores
    (:func:`_scenario_responses`; three queries and the refine run's findings)."""
    row = session.get(ScenarioRow, scenario_id)
    if row is None:
        raise NotFound(f"scenario_id: no scenario {scenario_id!r}")
    status = session.get(ScenarioStatus, scenario_id)
    answers = pd.DataFrame(
        session.execute(
            select(col(Campaign.name), col(Campaign.schema_snapshot), col(User.username), col(Answer.values))
            .join(Item, col(Item.id) == col(Answer.item_id))
            .join(Campaign, col(Campaign.id) == col(Item.campaign_id))
            .join(User, col(User.id) == col(Answer.user_id))
            .where(col(Item.scenario_id) == scenario_id, col(Item.response_id).is_(None))
            .order_by(col(Campaign.name), col(User.username))
        ).all(),
        columns=["campaign", "schema", "annotator", "values"],
    )
    campaigns = []
    for name, group in answers.groupby("campaign", sort=True):
        tallies, comments = _tallies(group, WorkflowSchema.model_validate(group["schema"].iloc[0]))
        campaigns.append({"campaign": name, "answers": len(group), "questions": tallies, "comments": comments})
    return {
        "scenario": scenario_record(row, status),
        "ingested": scenario_record(row),
        "status": ScenarioStatusPublic.model_validate(status).model_dump(mode="json") if status else None,
        "revision": scenario_revision(row, status),
        "base_changed": bool(status and status.edited_from_hash and status.edited_from_hash != row.content_hash),
        "campaigns": campaigns,
        "responses": _scenario_responses(session, scenario_id=scenario_id),
        "findings": scenario_findings(session, scenario_id=scenario_id),
    }


def only_visible(query: Any, visible: Collection[str] | None) -> Any:
    """``query`` (over ``AuditLog``) narrowed to the entries of the ``visible`` entities (``studio.policies.
    AuditPolicy.visible_entities``); None leaves it whole."""
    if visible is None:
        return query
    return query.where(col(AuditLog.entity).in_(sorted(visible)))  # empty: SQLAlchemy's always-false IN


def list_audit_entries(
    session: Session,
    *,
    visible: Collection[str] | None,
    entity: str | None = None,
    entity_id: str | None = None,
    limit: int = 200,
) -> list[AuditLogPublic]:
    """The newest audit entries of the ``visible`` entities (None: all) first (at most ``limit``,
    1-:data:`MAX_AUDIT_ENTRIES`), only those of ``entity`` (e.g. ``"scenario"``) and/or ``entity_id`` when given."""
    if not 1 <= limit <= MAX_AUDIT_ENTRIES:
        raise InvalidInput(f"limit: must be 1-{MAX_AUDIT_ENTRIES}")
    query = only_visible(select(AuditLog).order_by(col(AuditLog.id).desc()).limit(limit), visible)
    if entity is not None:
        query = query.where(col(AuditLog.entity) == entity)
    if entity_id is not None:
        query = query.where(col(AuditLog.entity_id) == entity_id)
    return [AuditLogPublic.model_validate(entry) for entry in session.execute(query).scalars()]
