"""Curating: browse scenarios and responses, read one scenario and the audit log, decide, publish, aggregate.

Every function takes the request's ``session`` and ``caller``, authorises first (``studio.policies.CurationPolicy``)
and then calls ``studio.services.curation`` / ``studio.services.aggregation``. Listings take their filters and
paging whole, as the model of :mod:`studio.services.listing` the front door built (the REST route from its query,
the curator page from its widgets) — one rule for both, including "a page past the end shows the last page".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, Field, ValidationError
from sqlmodel import Session

from studio.errors import InvalidInput
from studio.models import AuditLogPublic, UserPublic
from studio.models.curation import DatasetVersionPublic, ScenarioStatusPublic
from studio.policies import AuditPolicy, CurationPolicy, authorize
from studio.services import aggregation, curation, rater
from studio.services import curation_decisions as decisions
from studio.services.aggregation import AggregationSummary
from studio.services.curation import Page
from studio.services.listing import Paging, ResponseFilters, ScenarioFilters
from studio.services.publishing import PublishPreview
from studio.services.rater import RaterAgreement
from studio.services.stopping import StopsReport, stops_report
from studio.usecases.context import RequestContext, store_faults_as_unavailable

Listing = TypeVar("Listing", bound=Paging)


def _listed(fetch: Callable[[Listing], Page], listing: Listing) -> Page:
    """``fetch(listing)``, or the last page when ``listing`` asks for a page past the end of what matches."""
    found = fetch(listing)
    if found.total and not found.rows:
        found = fetch(listing.last_for(found.total))
    return found


def browse_scenarios(session: Session, *, caller: UserPublic, filters: ScenarioFilters | None = None) -> Page:
    """One page of the scenarios ``filters`` choose (all, first page, when None), with their review state."""
    authorize(caller, CurationPolicy.read())
    # The service still takes the filters as keywords: one per field of ScenarioFilters, page and order included.
    return _listed(lambda at: curation.browse_scenarios(session, filters=at), filters or ScenarioFilters())


def browse_responses(session: Session, *, caller: UserPublic, filters: ResponseFilters | None = None) -> Page:
    """One page of the responses ``filters`` choose (all, first page, when None), with their scores."""
    authorize(caller, CurationPolicy.read())
    return _listed(lambda at: curation.browse_responses(session, filters=at), filters or ResponseFilters())


def scenario_detail(session: Session, *, caller: UserPublic, scenario_id: str) -> dict[str, Any]:
    """One scenario: record (as ingested and as edited), review state, tallies and comments, its responses' scores."""
    authorize(caller, CurationPolicy.read())
    if not isinstance(scenario_id, str) or not scenario_id.strip():
        raise InvalidInput("scenario_id: type or select a scenario")
    return curation.scenario_detail(session, scenario_id=scenario_id.strip())


def audit_entries(
    session: Session, *, caller: UserPublic, scenario_id: str | None = None, limit: int = 200
) -> list[AuditLogPublic]:
    """The newest audit entries the caller may see (``AuditPolicy``: a curator none about accounts, a researcher
    only published versions), of one scenario when given."""
    authorize(caller, AuditPolicy.read())
    entity = "scenario" if scenario_id is not None else None
    visible = AuditPolicy.visible_entities(caller)
    return curation.list_audit_entries(session, visible=visible, entity=entity, entity_id=scenario_id, limit=limit)


class ShownScenario(BaseModel):
    """The scenario a curator page shows: its id and the revision it was rendered at (see
    ``studio.services.curation_decisions``); written into the page with the scenario, sent back with a decision."""

    scenario_id: str = Field(min_length=1, max_length=256)
    revision: str = Field(min_length=1, max_length=64)

    @classmethod
    def of(cls, detail: Mapping[str, Any]) -> ShownScenario:
        return cls(scenario_id=str(detail["scenario"]["id"]), revision=str(detail["revision"]))

    @classmethod
    def from_page(cls, text: Any) -> ShownScenario:
        """The scenario a page event names; ``InvalidInput`` when the page shows none or the field is garbled."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("scenario: no scenario is open; select one in the list or open it by its id")
        try:
            return cls.model_validate_json(text)
        except ValidationError:
            raise InvalidInput("scenario: the page did not say which scenario it shows; reload the page") from None

    def to_page(self) -> str:
        return self.model_dump_json()


def may_decide(session: Session, *, caller: UserPublic) -> None:
    """``PermissionDenied`` unless the caller may decide on scenarios (``session`` unused: one signature for all)."""
    del session
    authorize(caller, CurationPolicy.decide())


def decide(
    session: Session,
    *,
    caller: UserPublic,
    scenario_id: str,
    action: str,
    reason: str | None,
    edits: Mapping[str, Any] | None = None,
    revision: str | None = None,
) -> ScenarioStatusPublic:
    """Accept, edit-and-accept or reject a scenario with a required reason (audit-logged under the caller's name).

    ``edits`` (for "edit") map fields to new values; ``revision`` (when given) must be the scenario's current one,
    else ``Conflict`` (``studio.services.curation_decisions``).
    """
    authorize(caller, CurationPolicy.decide())
    if not scenario_id or not scenario_id.strip():
        raise InvalidInput("scenario_id: open a scenario first")
    return curation.decide_scenario(
        session,
        actor=caller.username,
        scenario_id=scenario_id.strip(),
        action=action,
        reason=reason or "",
        edits=dict(edits) if edits is not None and action == "edit" else None,
        revision=revision,
    )


def decide_shown(
    session: Session,
    *,
    caller: UserPublic,
    shown: str | None,
    action: str,
    reason: str | None,
    form: Mapping[str, str | None] | None = None,
) -> tuple[ShownScenario, ScenarioStatusPublic]:
    """A decision from the curator page: on the scenario the page shows (``shown``, :class:`ShownScenario`), at the
    revision it showed, whatever any text box says; for "edit" the edit form's values (``FORM_FIELDS``) are
    compared with the scenario as shown and the fields that differ become the edits."""
    authorize(caller, CurationPolicy.decide())
    scenario = ShownScenario.from_page(shown)
    edits = None
    if action == "edit":
        current = curation.scenario_detail(session, scenario_id=scenario.scenario_id)["scenario"]
        edits = decisions.form_edits(current, dict(form or {}))
    status = decide(
        session,
        caller=caller,
        scenario_id=scenario.scenario_id,
        action=action,
        reason=reason,
        edits=edits,
        revision=scenario.revision,
    )
    return scenario, status


def may_publish(session: Session, *, caller: UserPublic) -> None:
    """``PermissionDenied`` unless the caller may publish (``session`` unused: one signature for all)."""
    del session
    authorize(caller, CurationPolicy.publish())


def publish_preview(session: Session, *, caller: UserPublic, include_edits: bool = True) -> PublishPreview:
    """What publishing now would publish, and why each scenario is in (``studio.services.publishing``)."""
    authorize(caller, CurationPolicy.publish())
    return curation.publish_preview(session, include_edits=include_edits)


def publish(
    session: Session,
    *,
    caller: UserPublic,
    name: str | None,
    note: str | None = None,
    include_edits: bool = True,
    expected_hash: str | None = None,
) -> tuple[DatasetVersionPublic, bool]:
    """Publish what :func:`publish_preview` shows as an immutable version; the version and whether it was created now.
    ``expected_hash`` (the preview's content hash) must still hold, else ``Conflict`` and nothing is published."""
    authorize(caller, CurationPolicy.publish())
    return curation.publish_dataset(
        session,
        actor=caller.username,
        name=name or "",
        include_edits=include_edits,
        note=(note or "").strip() or None,
        expected_hash=expected_hash or None,
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


def aggregate(context: RequestContext, *, campaign: str | None = None) -> list[AggregationSummary]:
    """Apply the campaigns' aggregation rules to ``campaign`` (every one when None) for the request's caller.

    The caller is resolved and authorised first (one read session); then :func:`studio.services.aggregation.aggregate`
    reads the answers and plans the writes in a read session of its own and writes them in short transactions, so
    annotators never wait long for SQLite's write lock. A store that cannot serve raises ``StoreUnavailable``.
    """
    with context.reading() as (_session, caller):
        authorize(caller, CurationPolicy.aggregate())
    with store_faults_as_unavailable():
        return aggregation.aggregate(context.engine, campaign=campaign or None, actor=caller.username)


def rater_agreement(session: Session, *, caller: UserPublic, campaign: str | None) -> list[RaterAgreement]:
    """The LLM rater against the humans on a pairwise campaign, or on every pairwise campaign when ``campaign`` is
    empty (``studio.services.rater``; ``h2h rater-agreement`` prints the same for one): one result per campaign, none
    when there is no pairwise campaign; ``InvalidInput`` for a campaign that is not pairwise."""
    authorize(caller, CurationPolicy.read())
    return rater.llm_human_agreements(session, campaign=campaign or None)


def item_stops(session: Session, *, caller: UserPublic, campaign: str | None) -> StopsReport:
    """The items ``campaign``'s stopping rule stopped early (item, scenario, votes at the stop, rule, probability,
    time) and the rule in words; ``InvalidInput`` when no campaign is chosen."""
    authorize(caller, CurationPolicy.read())
    if not isinstance(campaign, str) or not campaign.strip():
        raise InvalidInput("campaign: choose a campaign")
    return stops_report(session, campaign=campaign.strip())
