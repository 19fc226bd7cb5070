"""Campaigns: a workflow schema + a set of targets (+ optional gold items), opened and closed by staff."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import func, insert, select
from sqlmodel import Session, col

from studio.errors import Conflict, InvalidInput, NotFound
from studio.models import Answer, AuditLog, Campaign, CampaignPublic, Item, ResponseRow, ScenarioRow
from studio.models.types import stored_id
from studio.policies import ROLES
from studio.services.live_endpoint import LiveEndpointConfig
from studio.services.progress import (
    QuotaReport,
    campaign_progress,
    closing_words,
    complete_at,
    complete_words,
    quota_report,
)
from studio.services.queue import get_campaign
from studio.services.review_order import order_by_uncertainty
from studio.services.targets import TargetSelection as TargetSelection  # re-exported: callers import it from here
from studio.services.targets import target_kind
from studio.workflows import AnswerValidationError, WorkflowSchema

#: The queue's orders (``Campaign.assignment``), in words for the pages that offer the choice.
ASSIGNMENTS: dict[str, str] = {
    "fill": "fill items to their quota first (a small team gets decided items and agreement figures early)",
    "spread": "least-answered first (every item gets a first answer before any gets a second)",
}


class CampaignSummary(BaseModel):
    """A campaign as the queue lists it; ``schema`` is the workflow schema's name."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    name: str
    schema_name: str = Field(alias="schema")
    title: str
    status: str
    people_per_item: int
    #: The answers that decide an item now (``studio.services.progress.complete_at``), and the queue's order.
    complete_at: int
    assignment: str
    progress: dict[str, int]
    #: The complete items in words (``studio.services.progress.complete_words``): "5 / 6 complete", with
    #: "(stopped early: N)" where the workflow stops items early.
    complete: str = ""


def select_targets(session: Session, schema: WorkflowSchema, selection: TargetSelection) -> list[dict[str, Any]]:
    """The campaign's targets as item rows (scenario_id, response_id, response_b_id), in a stable order: the schema's
    target kind (``studio.services.targets.TARGETS``) selects them."""
    return target_kind(schema.target).select(session, schema=schema, selection=selection)


TargetKey = tuple[Any, ...]  # (scenario_id, response_id, response_b_id)


def _gold_rows(session: Session, schema: WorkflowSchema, gold: list[dict[str, Any]]) -> dict[TargetKey, dict[str, Any]]:
    """Gold answers by target key; each entry names scenario_id (+ model, variant for responses) and answers."""
    keyed: dict[TargetKey, dict[str, Any]] = {}
    for number, entry in enumerate(gold, start=1):
        if not target_kind(schema.target).takes_gold:
            raise InvalidInput(f"gold: gold items are not supported for {schema.target} campaigns")
        try:
            answers = schema.validate_answers(entry.get("answers", {}))
        except AnswerValidationError as error:
            raise InvalidInput(f"gold[{number}].answers.{error.question_id}: {error.problem}") from None
        response_id = None
        if schema.target == "response":
            response_id = session.execute(
                select(col(ResponseRow.id)).where(
                    col(ResponseRow.scenario_id) == entry.get("scenario_id"),
                    col(ResponseRow.model) == entry.get("model"),
                    col(ResponseRow.variant) == entry.get("variant"),
                )
            ).scalar()
            if response_id is None:
                raise InvalidInput(
                    f"gold[{number}]: no response for {entry.get('scenario_id')!r} "
                    f"{entry.get('model')!r} {entry.get('variant')!r}"
                )
        elif session.get(ScenarioRow, entry.get("scenario_id")) is None:
            raise InvalidInput(f"gold[{number}].scenario_id: no scenario {entry.get('scenario_id')!r}")
        keyed[(entry.get("scenario_id"), response_id, None)] = answers
    return keyed


def _item_rows(
    campaign_id: int, targets: list[dict[str, Any]], gold: dict[TargetKey, dict[str, Any]]
) -> list[dict[str, Any]]:
    rows = []
    for position, target in enumerate(targets):
        answers = gold.get((target["scenario_id"], target["response_id"], target["response_b_id"]))
        rows.append(
            {
                **target,
                "campaign_id": campaign_id,
                "position": position,
                "answer_count": 0,
                "is_gold": answers is not None,
                "gold_answers": answers,
                "audit": bool(target.get("audit", False)),
            }
        )
    return rows


def create_campaign(
    session: Session,
    *,
    name: str,
    schema: WorkflowSchema,
    people_per_item: int | None = None,
    selection: TargetSelection | None = None,
    gold: list[dict[str, Any]] | None = None,
    actor: str | None = None,
    assignment: str = "fill",
    live_endpoint: LiveEndpointConfig | None = None,
) -> CampaignPublic:
    """Create a campaign of ``schema`` over the targets ``selection`` picks; gold entries mark (or add) items.

    ``assignment`` is the queue's order (:data:`ASSIGNMENTS`; ``fill``: items closest to their quota first).
    ``live_endpoint`` names a ``live_session`` campaign's companion (required there, refused elsewhere; the caller
    probes it first: :func:`studio.services.live_endpoint.check_companion`).
    ``Conflict`` if the name exists; ``InvalidInput`` when nothing matches or a gold entry is invalid.
    """
    selection = selection or TargetSelection()
    if assignment not in ASSIGNMENTS:
        raise InvalidInput(f"assignment: {assignment!r} is not one of {', '.join(ASSIGNMENTS)}")
    if session.execute(select(col(Campaign.id)).where(col(Campaign.name) == name)).first() is not None:
        raise Conflict(f"name: campaign {name!r} already exists")
    if (schema.target == "live_session") != (live_endpoint is not None):
        raise InvalidInput(
            "model: a live_session campaign names its companion (--model and --base-url), and only such a campaign"
        )
    quota = people_per_item or schema.people_per_item
    if quota < schema.min_people_per_item:
        raise InvalidInput(f"people_per_item: {schema.name} needs at least {schema.min_people_per_item}")
    targets = order_by_uncertainty(session, select_targets(session, schema, selection))
    gold_answers = _gold_rows(session, schema, gold or [])
    known = {(row["scenario_id"], row["response_id"], row["response_b_id"]) for row in targets}
    targets += [
        {"scenario_id": key[0], "response_id": key[1], "response_b_id": None}
        for key in gold_answers
        if key not in known
    ]
    if not targets:
        raise InvalidInput(f"schema: no {schema.target} in the store matches this campaign's filters")
    campaign = Campaign(
        name=name,
        schema_name=schema.name,
        workflow_type=schema.type,
        target_kind=schema.target,
        people_per_item=quota,
        eligible_roles=list(schema.eligible_roles),
        created_by=actor,
        filters=selection.model_dump(),
        schema_snapshot=schema.model_dump(mode="json"),
        pair_seed=secrets.token_hex(32),
        assignment=assignment,
        live_endpoint=live_endpoint.model_dump() if live_endpoint is not None else None,
    )
    session.add(campaign)
    session.flush()
    rows = _item_rows(stored_id(campaign.id), targets, gold_answers)
    session.execute(insert(Item), rows)
    session.add(
        AuditLog(
            actor=actor or "system",
            action="campaign.create",
            entity="campaign",
            entity_id=name,
            detail={"schema": schema.name, "items": len(rows), "gold": len(gold_answers), "assignment": assignment},
        )
    )
    session.flush()
    return CampaignPublic.model_validate(campaign)


class CampaignStatusChange(CampaignPublic):
    """A campaign just opened or closed, with its items against their quota and what that means, in words."""

    quota: QuotaReport
    message: str


def set_campaign_status(
    session: Session, *, name: str, status: str, actor: str | None = None, decide_below_quota: bool = False
) -> CampaignStatusChange:
    """Open or close a campaign (closed: no next items, submits or revisions), audit-logged.

    Closing records the closer's choice for the items below quota: ``decide_below_quota`` True decides them on the
    answers they have; False (the default) leaves them undecided. Reopening clears the choice. The result says how
    many items are below quota and what happens to them (:func:`closing_words`).
    """
    if status not in ("open", "closed"):
        raise InvalidInput(f"status: {status!r} is not open or closed")
    campaign = get_campaign(session, name)
    previous, campaign.status = campaign.status, status
    campaign.decide_below_quota = status == "closed" and decide_below_quota
    report = quota_report(session, campaign)
    detail: dict[str, Any] = {"from": previous, "decide_below_quota": campaign.decide_below_quota}
    session.add(
        AuditLog(
            actor=actor or "system",
            action=f"campaign.{status}",
            entity="campaign",
            entity_id=name,
            detail=detail | report.model_dump(),
        )
    )
    session.flush()
    if status == "closed":
        message = closing_words(report, decide_below_quota=campaign.decide_below_quota)
    else:
        message = f"{report.at_quota} of {report.items} item(s) have their quota of {report.complete_at} answer(s)"
        message += f" (stopped early: {report.stopped_early})." if report.stopped_early else "."
    public = CampaignPublic.model_validate(campaign).model_dump()
    return CampaignStatusChange(**public, quota=report, message=message)


def list_campaigns(session: Session) -> list[CampaignPublic]:
    """Every campaign, open or closed, by name (who sees which is ``studio.usecases.annotate``'s business)."""
    campaigns = session.execute(select(Campaign).order_by(col(Campaign.name))).scalars().all()
    return [CampaignPublic.model_validate(campaign) for campaign in campaigns]


def campaign_summaries(session: Session, campaigns: Iterable[CampaignPublic] | None = None) -> list[CampaignSummary]:
    """``campaigns`` (default: every campaign, by name) with each one's title and progress (answers, items,
    complete items)."""
    summaries = []
    for public in list_campaigns(session) if campaigns is None else campaigns:
        campaign = session.get(Campaign, public.id)
        if campaign is None:
            raise NotFound(f"campaign: {public.name!r} vanished")
        summaries.append(CampaignSummary(**_summary_fields(session, campaign)))
    return summaries


def _summary_fields(session: Session, campaign: Campaign) -> dict[str, Any]:
    """What :class:`CampaignSummary` says of ``campaign`` (its progress counted in ``session``)."""
    progress = campaign_progress(session, campaign)
    return {
        "name": campaign.name,
        "schema_name": campaign.schema_name,
        "title": str(campaign.schema_snapshot.get("title", "")),
        "status": campaign.status,
        "people_per_item": campaign.people_per_item,
        "complete_at": complete_at(campaign),
        "assignment": campaign.assignment,
        "progress": progress,
        "complete": complete_words(progress),
    }


def schema_snapshots(session: Session) -> list[dict[str, Any]]:
    """Every campaign's frozen workflow schema (as stored, oldest campaign first), for the forms a page builds."""
    query = select(col(Campaign.schema_snapshot)).order_by(col(Campaign.id))
    return [dict(snapshot) for snapshot in session.execute(query).scalars() if snapshot]


class CampaignOverview(CampaignSummary):
    """A campaign as its managers see it: the summary, who may work on it, how many people answered, its filters."""

    eligible_roles: list[str]
    people: int
    created_by: str | None
    filters: dict[str, Any]


def campaign_overviews(session: Session) -> list[CampaignOverview]:
    """Every campaign (by name) with its progress (answers, items, complete items) and the number of people who
    answered it."""
    people = dict(
        session.execute(
            select(col(Answer.campaign_id), func.count(func.distinct(col(Answer.user_id)))).group_by(
                col(Answer.campaign_id)
            )
        ).all()
    )
    rows = session.execute(select(Campaign).order_by(col(Campaign.name))).scalars().all()
    return [
        CampaignOverview(
            **_summary_fields(session, campaign),
            eligible_roles=list(campaign.eligible_roles),
            people=int(people.get(campaign.id, 0)),
            created_by=campaign.created_by,
            filters=dict(campaign.filters),
        )
        for campaign in rows
    ]


def set_eligible_roles(
    session: Session, *, name: str, roles: Iterable[str], actor: str | None = None
) -> CampaignPublic:
    """Say which roles may work on the campaign (take items, answer, revise): one or more of ``ROLES``
    (audit-logged). The campaign's schema names the default; this replaces it for this campaign only."""
    wanted = {str(role) for role in roles}
    chosen: list[str] = [role for role in ROLES if role in wanted]
    unknown = sorted(wanted - set(ROLES))
    if unknown:
        raise InvalidInput(f"roles: {', '.join(map(repr, unknown))} is not one of {', '.join(ROLES)}")
    if not chosen:
        raise InvalidInput("roles: choose at least one role")
    campaign = get_campaign(session, name)
    previous, campaign.eligible_roles = list(campaign.eligible_roles), chosen
    session.add(
        AuditLog(
            actor=actor or "system",
            action="campaign.assign",
            entity="campaign",
            entity_id=name,
            detail={"from": previous, "to": chosen},
        )
    )
    session.flush()
    return CampaignPublic.model_validate(campaign)


class TargetChoices(BaseModel):
    """What a campaign's target filter can pick from in this store."""

    subtasks: list[str]
    languages: list[str]
    models: list[str]
    variants: list[str]


def target_choices(session: Session) -> TargetChoices:
    """The subtasks and languages of the stored scenarios, the models and variants of the stored responses."""

    def distinct(column: Any) -> list[str]:
        return [str(value) for value in session.execute(select(column).distinct().order_by(column)).scalars() if value]

    return TargetChoices(
        subtasks=distinct(col(ScenarioRow.subtask)),
        languages=distinct(col(ScenarioRow.language)),
        models=distinct(col(ResponseRow.model)),
        variants=distinct(col(ResponseRow.variant)),
    )
