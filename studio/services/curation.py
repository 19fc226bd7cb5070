"""Curation: browse scenarios and responses, inspect one scenario's votes, accept / edit / reject with an audit
trail, and publish immutable dataset versions.

Who may read and who may change is ``studio.policies.CurationPolicy``, checked by ``studio.usecases.curate`` before
it calls these functions (the command line calls them directly: it is trusted). Edits are an overlay
(``ScenarioStatus.edits``) on the ingested scenario, so re-ingesting a run never silently overwrites them;
``base_changed`` shows when the ingested text under an edit changed since the curator made it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ValidationError
from sqlalchemy import Select, func, select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col

from pipeline.records import Scenario
from studio.models import (
    Answer,
    AuditLog,
    AuditLogPublic,
    Campaign,
    Item,
    ResponseRow,
    ScenarioRow,
    ScoreRow,
    User,
    utc_now,
)
from studio.models.curation import (
    EDITABLE_FIELDS,
    DatasetVersion,
    DatasetVersionPublic,
    ScenarioStatus,
    ScenarioStatusPublic,
)
from studio.results.agreement import percent_agreement
from studio.schemas import FreeText, WorkflowSchema
from studio.services.errors import Conflict, InvalidInput, NotFound

ACTIONS: tuple[str, ...] = ("accept", "edit", "reject")
MAX_AUDIT_ENTRIES = 1000
SCENARIO_FIELDS: tuple[str, ...] = (
    "id",
    "subtask",
    "persona",
    "history",
    "user_input",
    "reference",
    "tags",
    "context",
    "source",
)


class Page(BaseModel):
    """One page of a browse listing; ``total`` counts every row the filters match."""

    total: int
    page: int
    page_size: int
    rows: list[dict[str, Any]]


def _page(session: Session, query: Any, page: int, page_size: int) -> Page:
    """Page ``page`` (from 1) of ``page_size`` rows of ``query``, and how many rows it matches in all.

    Paging and filters arrive checked (``studio.usecases.queries``: one rule for both front doors).
    """
    total = session.execute(select(func.count()).select_from(query.order_by(None).subquery())).scalar_one()
    rows = [dict(row._mapping) for row in session.execute(query.offset((page - 1) * page_size).limit(page_size))]
    return Page(total=int(total), page=page, page_size=page_size, rows=rows)


def browse_scenarios(
    session: Session,
    *,
    subtask: str | None = None,
    status: str | None = None,
    agreement_below: float | None = None,
    disagreement: bool | None = None,
    page: int = 1,
    page_size: int = 50,
) -> Page:
    """Scenarios with their review state, filtered and paginated (two queries, whatever the page).

    ``status`` is one of ``studio.models.curation.STATUSES`` (``pending`` includes scenarios nobody reviewed yet);
    ``agreement_below`` keeps scenarios whose crowd agreement (winning share) is below it; ``disagreement`` keeps
    those with (or without) a crowd tie / low agreement. Rows: id, subtask, user_input, reference, status,
    decided_by, crowd_decision, crowd_votes, crowd_agreement, disagreement, edited, base_changed.
    """
    state = func.coalesce(col(ScenarioStatus.status), "pending")
    query = select(
        col(ScenarioRow.id),
        col(ScenarioRow.subtask),
        col(ScenarioRow.user_input),
        col(ScenarioRow.reference),
        state.label("status"),
        col(ScenarioStatus.decided_by),
        col(ScenarioStatus.crowd_decision),
        col(ScenarioStatus.crowd_votes),
        col(ScenarioStatus.crowd_agreement),
        func.coalesce(col(ScenarioStatus.disagreement), False).label("disagreement"),
        (col(ScenarioStatus.edited_from_hash).is_not(None)).label("edited"),
        (
            col(ScenarioStatus.edited_from_hash).is_not(None)
            & (col(ScenarioStatus.edited_from_hash) != col(ScenarioRow.content_hash))
        ).label("base_changed"),
    ).outerjoin(ScenarioStatus, col(ScenarioStatus.scenario_id) == col(ScenarioRow.id))
    if subtask is not None:
        query = query.where(col(ScenarioRow.subtask) == subtask)
    if status is not None:
        query = query.where(state == status)
    if agreement_below is not None:
        query = query.where(col(ScenarioStatus.crowd_agreement) < agreement_below)
    if disagreement is not None:
        query = query.where(func.coalesce(col(ScenarioStatus.disagreement), False).is_(disagreement))
    return _page(session, query.order_by(col(ScenarioRow.id)), page, page_size)


def browse_responses(
    session: Session,
    *,
    subtask: str | None = None,
    model: str | None = None,
    variant: str | None = None,
    flagged: bool | None = None,
    adjudicated: bool | None = None,
    page: int = 1,
    page_size: int = 50,
) -> Page:
    """Responses with their automatic and judge scores, filtered and paginated.

    ``flagged`` keeps responses flagged (or not) for human adjudication; ``adjudicated`` those with (or without)
    an experts' J_human. Rows: response_id, scenario_id, model, variant, subtask, needs_adjudication, S, J_judge,
    J, J_human, J_final.
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
        (col(ScenarioRow.subtask), subtask),
        (col(ResponseRow.model), model),
        (col(ResponseRow.variant), variant),
    ):
        if wanted is not None:
            query = query.where(column == wanted)
    if flagged is not None:
        query = query.where(col(ResponseRow.needs_adjudication).is_(flagged))
    if adjudicated is not None:
        query = query.where(col(ScoreRow.J_human).is_not(None) if adjudicated else col(ScoreRow.J_human).is_(None))
    return _page(
        session,
        query.order_by(col(ResponseRow.scenario_id), col(ResponseRow.model), col(ResponseRow.variant)),
        page,
        page_size,
    )


def scenario_record(row: ScenarioRow, status: ScenarioStatus | None = None) -> dict[str, Any]:
    """The scenario as a ``pipeline.records.Scenario`` dict, with the curator's edits (if any) applied."""
    record = {name: getattr(row, name) for name in SCENARIO_FIELDS}
    if status is not None and status.edits:
        record.update(status.edits)
    return record


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


def scenario_detail(session: Session, *, scenario_id: str) -> dict[str, Any]:
    """One scenario: its record (as ingested and as edited), review state, per-campaign tallies, agreement and
    comments of its scenario-level items, and the automatic / judge scores of its responses (three queries)."""
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
    scores = session.execute(
        select(
            col(ResponseRow.id),
            col(ResponseRow.model),
            col(ResponseRow.variant),
            col(ScoreRow.bleu4),
            col(ScoreRow.rougeL),
            col(ScoreRow.ss),
            col(ScoreRow.S),
            col(ScoreRow.J_judge),
            col(ScoreRow.J),
            col(ScoreRow.J_human),
            col(ScoreRow.J_final),
        )
        .outerjoin(ScoreRow, col(ScoreRow.response_id) == col(ResponseRow.id))
        .where(col(ResponseRow.scenario_id) == scenario_id)
        .order_by(col(ResponseRow.model), col(ResponseRow.variant))
    )
    return {
        "scenario": scenario_record(row, status),
        "ingested": scenario_record(row),
        "status": ScenarioStatusPublic.model_validate(status).model_dump(mode="json") if status else None,
        "base_changed": bool(status and status.edited_from_hash and status.edited_from_hash != row.content_hash),
        "campaigns": campaigns,
        "responses": [dict(score._mapping) for score in scores],
    }


def _validated_edits(row: ScenarioRow, status: ScenarioStatus, edits: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(edits) - set(EDITABLE_FIELDS))
    if unknown:
        raise InvalidInput(f"edits.{unknown[0]}: not editable (editable: {', '.join(EDITABLE_FIELDS)})")
    merged = {**status.edits, **edits}
    try:
        Scenario.model_validate({**scenario_record(row), **merged})
    except ValidationError as error:
        first = error.errors()[0]
        raise InvalidInput(f"edits.{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    return merged


def _scenario_and_status(session: Session, scenario_id: str) -> tuple[ScenarioRow, ScenarioStatus]:
    """The scenario (``NotFound`` when unknown) and its status row, created when missing."""
    row = session.get(ScenarioRow, scenario_id)
    if row is None:
        raise NotFound(f"scenario_id: no scenario {scenario_id!r}")
    status = session.get(ScenarioStatus, scenario_id)
    if status is None:
        status = ScenarioStatus(scenario_id=scenario_id)
        session.add(status)
    return row, status


def decide_scenario(
    session: Session,
    *,
    actor: str,
    scenario_id: str,
    action: str,
    reason: str,
    edits: dict[str, Any] | None = None,
) -> ScenarioStatusPublic:
    """Accept, edit or reject a scenario as ``actor``; audit-logged with who, when, before, after, why.

    ``reason`` is required. ``edit`` merges ``edits`` (fields of :data:`EDITABLE_FIELDS`, checked against the
    Scenario record type) into the overlay and leaves the status (and who decided it) alone; accept / reject set
    the status, and a curator's status outranks crowd and expert aggregation from then on.
    """
    if action not in ACTIONS:
        raise InvalidInput(f"action: {action!r} is not one of {', '.join(ACTIONS)}")
    if not reason or not reason.strip():
        raise InvalidInput("reason: a reason is required")
    row, status = _scenario_and_status(session, scenario_id)
    before = {"status": status.status, "decided_by": status.decided_by, "edits": dict(status.edits)}
    if action == "edit":
        if not edits:
            raise InvalidInput("edits: nothing to edit")
        status.edits = _validated_edits(row, status, edits)
        status.edited_from_hash = row.content_hash
    else:
        status.status = "accepted" if action == "accept" else "rejected"
        status.decided_by = f"curator:{actor}"
    status.reason = reason.strip()
    status.updated_at = utc_now()
    after = {"status": status.status, "decided_by": status.decided_by, "edits": dict(status.edits)}
    session.add(
        AuditLog(
            actor=actor,
            action=f"scenario.{action}",
            entity="scenario",
            entity_id=scenario_id,
            detail={"before": before, "after": after, "reason": reason.strip()},
        )
    )
    session.flush()
    return ScenarioStatusPublic.model_validate(status)


def content_hash(records: list[dict[str, Any]]) -> str:
    """sha256 of the records' canonical JSON (sorted keys, no whitespace, UTF-8)."""
    canonical = json.dumps(records, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def accepted_records(session: Session, *, include_edits: bool = True) -> list[dict[str, Any]]:
    """Every accepted scenario as a validated Scenario dict (edits applied unless ``include_edits`` is False)."""
    rows = session.execute(
        select(ScenarioRow, ScenarioStatus)
        .join(ScenarioStatus, col(ScenarioStatus.scenario_id) == col(ScenarioRow.id))
        .where(col(ScenarioStatus.status) == "accepted")
        .order_by(col(ScenarioRow.id))
    ).all()
    return [
        Scenario.model_validate(scenario_record(row, status if include_edits else None)).model_dump(mode="json")
        for row, status in rows
    ]


def publish_dataset(
    session: Session, *, actor: str, name: str, include_edits: bool = True, note: str | None = None
) -> tuple[DatasetVersionPublic, bool]:
    """Publish the accepted scenarios as an immutable version (by ``actor``); return it and whether it was created.

    Identical content (same hash) returns the existing version (``created`` False) whatever ``name`` says; a
    ``name`` already used for other content is a ``Conflict``; nothing accepted is ``InvalidInput``.
    """
    name = name.strip()
    if not name or len(name) > 128:
        raise InvalidInput("name: must be 1-128 characters")
    records = accepted_records(session, include_edits=include_edits)
    if not records:
        raise InvalidInput("status: no accepted scenario to publish")
    digest = content_hash(records)
    same = session.execute(select(DatasetVersion).where(col(DatasetVersion.content_hash) == digest)).scalars().first()
    if same is not None:
        return DatasetVersionPublic.model_validate(same), False
    if session.execute(select(col(DatasetVersion.id)).where(col(DatasetVersion.name) == name)).first() is not None:
        raise Conflict(f"name: dataset version {name!r} already exists with other content")
    version = DatasetVersion(
        name=name, content_hash=digest, n_scenarios=len(records), created_by=actor, note=note, records=records
    )
    session.add(version)
    try:
        session.flush()
    except IntegrityError:
        raise Conflict(f"name: dataset version {name!r} was published concurrently") from None
    session.add(
        AuditLog(
            actor=actor,
            action="dataset.publish",
            entity="dataset_version",
            entity_id=name,
            detail={"content_hash": digest, "scenarios": len(records)},
        )
    )
    session.flush()
    return DatasetVersionPublic.model_validate(version), True


def list_dataset_versions(session: Session) -> list[DatasetVersionPublic]:
    """Every published version, oldest first."""
    rows = session.execute(select(DatasetVersion).order_by(col(DatasetVersion.id))).scalars()
    return [DatasetVersionPublic.model_validate(row) for row in rows]


def dataset_version_records(session: Session, *, version: str) -> list[dict[str, Any]]:
    """The scenarios of a published version, as published; ``NotFound`` for an unknown name."""
    found = session.execute(select(DatasetVersion).where(col(DatasetVersion.name) == version)).scalars().first()
    if found is None:
        raise NotFound(f"version: no dataset version {version!r}")
    return list(found.records)


def list_audit_entries(
    session: Session,
    *,
    entity: str | None = None,
    entity_id: str | None = None,
    limit: int = 200,
) -> list[AuditLogPublic]:
    """The newest audit entries first (at most ``limit``, 1-:data:`MAX_AUDIT_ENTRIES`), only those of ``entity``
    (e.g. ``"scenario"``) and/or ``entity_id`` when given."""
    if not 1 <= limit <= MAX_AUDIT_ENTRIES:
        raise InvalidInput(f"limit: must be 1-{MAX_AUDIT_ENTRIES}")
    query = select(AuditLog).order_by(col(AuditLog.id).desc()).limit(limit)
    if entity is not None:
        query = query.where(col(AuditLog.entity) == entity)
    if entity_id is not None:
        query = query.where(col(AuditLog.entity_id) == entity_id)
    return [AuditLogPublic.model_validate(entry) for entry in session.execute(query).scalars()]
