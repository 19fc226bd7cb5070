"""Running the studio: people's accounts, the audit log, campaigns (the admin page and ``/api/v1/admin``).

Every function takes the request's ``session`` and ``caller`` and authorises first (``studio.policies.AdminPolicy``),
then calls ``studio.services.auth`` / ``audit`` / ``campaigns``; each change is audit-logged with the caller as its
actor. Values arrive as a front door received them (a text box's text, a dropdown's list, a number as a float) and are
parsed here, so the page and the API accept the same values and refuse the others with the same ``field: problem``.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, field_validator
from sqlmodel import Session

from studio.errors import InvalidInput
from studio.models import CampaignPublic, UserPublic
from studio.policies import AdminPolicy, AuditPolicy, authorize
from studio.services import audit, auth, campaigns
from studio.services.campaigns import CampaignOverview, CampaignStatusChange, TargetChoices, TargetSelection
from studio.services.curation import Page
from studio.services.listing import Paging, parse
from studio.services.progress import QuotaReport, quota_report
from studio.services.queue import get_campaign
from studio.services.usernames import visible_username
from studio.workflows import WorkflowSchema, load_schemas

CAMPAIGN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class UserRow(BaseModel):
    """A person as the admin lists them; ``shown_name`` writes out hidden characters of names made before the rule."""

    username: str
    shown_name: str
    role: str
    is_active: bool
    last_login: datetime | None
    created_at: datetime


class PasswordSet(BaseModel):
    """The outcome of adding a person or resetting a password: ``password`` is the generated one, shown this once
    (None when the admin typed it)."""

    user: UserPublic
    password: str | None = None


def _blank_is_none(value: Any) -> Any:
    return None if value is None or (isinstance(value, str) and not value.strip()) else value


def _typed_password(password: str | None) -> tuple[str, str | None]:
    """The password to set, and the one to show: a typed one is shown nowhere, a generated one once."""
    if _blank_is_none(password) is None:
        generated = auth.generate_password()
        return generated, generated
    return str(password), None


def list_users(session: Session, *, caller: UserPublic) -> list[UserRow]:
    """Every person, by name, with their role, whether they are active, and when they last signed in."""
    authorize(caller, AdminPolicy.manage_users())
    logins = auth.last_logins(session)
    return [
        UserRow(
            username=user.username,
            shown_name=visible_username(user.username),
            role=user.role,
            is_active=user.is_active,
            last_login=logins.get(user.id),
            created_at=user.created_at,
        )
        for user in auth.list_users(session)
    ]


def add_user(
    session: Session, *, caller: UserPublic, username: str, role: str, password: str | None = None
) -> PasswordSet:
    """Add a person; with no ``password`` one is generated and returned once."""
    authorize(caller, AdminPolicy.manage_users())
    chosen, shown = _typed_password(password)
    user = auth.create_user(session, username=username or "", password=chosen, role=role, actor=caller.username)
    return PasswordSet(user=user, password=shown)


def change_role(session: Session, *, caller: UserPublic, username: str, role: str) -> UserPublic:
    """Give a person another role (the last active admin keeps theirs)."""
    authorize(caller, AdminPolicy.manage_users())
    return auth.set_role(session, username=username or "", role=role, actor=caller.username)


def set_active(session: Session, *, caller: UserPublic, username: str, active: bool) -> UserPublic:
    """Deactivate (sessions revoked at once, no sign-in) or reactivate a person; the last active admin stays."""
    authorize(caller, AdminPolicy.manage_users())
    return auth.set_active(session, username=username or "", active=active, actor=caller.username)


def reset_password(session: Session, *, caller: UserPublic, username: str, password: str | None = None) -> PasswordSet:
    """A new password for a person (generated and returned once when none is given); their sessions are revoked."""
    authorize(caller, AdminPolicy.manage_users())
    chosen, shown = _typed_password(password)
    user = auth.reset_password(session, username=username or "", password=chosen, actor=caller.username)
    return PasswordSet(user=user, password=shown)


def revoke_sessions(session: Session, *, caller: UserPublic, username: str) -> int:
    """Sign a person out everywhere; how many live sessions were revoked."""
    authorize(caller, AdminPolicy.manage_users())
    return auth.revoke_sessions(session, username=username or "", actor=caller.username)


class AuditFilters(BaseModel):
    """Which audit entries to list: by actor, action (a prefix: ``user.``), entity and entity id; blank is any."""

    model_config = ConfigDict(frozen=True)

    actor: str | None = None
    action: str | None = None
    entity: str | None = None
    entity_id: str | None = None

    @field_validator("actor", "action", "entity", "entity_id", mode="before")
    @classmethod
    def _blank(cls, value: Any) -> Any:
        value = _blank_is_none(value)
        return value.strip() if isinstance(value, str) else value


def audit_log(session: Session, *, caller: UserPublic, page: Any = 1, page_size: Any = 50, **filters: Any) -> Page:
    """One page of the audit log, newest first; ``filters`` are :class:`AuditFilters` as the front door got them
    (a page past the end answers the last page)."""
    authorize(caller, AdminPolicy.read_audit())
    chosen = parse(AuditFilters, **filters).model_dump()
    visible = AuditPolicy.visible_entities(caller)
    paging = parse(Paging, page=page, page_size=page_size)
    found = audit.list_audit(session, visible=visible, **chosen, page=paging.page, page_size=paging.page_size)
    if found.total and not found.rows:
        last = paging.last_for(found.total)
        found = audit.list_audit(session, visible=visible, **chosen, page=last.page, page_size=last.page_size)
    return found


class CampaignSpec(BaseModel):
    """A new campaign: its name, workflow, people per item, target filter and (optionally) the roles that work on
    it (default: the workflow's)."""

    name: str
    schema_name: str
    people_per_item: int | None = None
    subtasks: list[str] | None = None
    languages: list[str] | None = None
    models: list[str] | None = None
    variants: list[str] | None = None
    high_risk_only: bool = False
    flagged_only: bool = False
    roles: list[str] | None = None
    assignment: Literal["fill", "spread"] = "fill"

    @field_validator("assignment", mode="before")
    @classmethod
    def _default_order(cls, value: Any) -> Any:
        return _blank_is_none(value) or "fill"

    @field_validator("name", mode="before")
    @classmethod
    def _name(cls, value: Any) -> Any:
        if not isinstance(value, str) or not CAMPAIGN_NAME.match(value.strip()):
            raise ValueError("use 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit")
        return value.strip()

    @field_validator("people_per_item", mode="before")
    @classmethod
    def _whole_number(cls, value: Any) -> Any:
        value = _blank_is_none(value)
        if isinstance(value, float):
            if not value.is_integer():
                raise ValueError("must be a whole number")
            value = int(value)
        if isinstance(value, int) and value < 1:
            raise ValueError("must be 1 or more (or empty: the workflow's number)")
        return value

    @field_validator("subtasks", "languages", "models", "variants", "roles", mode="before")
    @classmethod
    def _empty_is_any(cls, value: Any) -> Any:
        return _blank_is_none(value) or None

    def selection(self) -> TargetSelection:
        return TargetSelection(
            subtasks=self.subtasks,
            languages=self.languages,
            models=self.models,
            variants=self.variants,
            high_risk_only=self.high_risk_only,
            flagged_only=self.flagged_only,
        )


def workflows(*, caller: UserPublic) -> dict[str, WorkflowSchema]:
    """The workflows a campaign can be created from (the bundled ``annotation_schemas/``), by name."""
    authorize(caller, AdminPolicy.manage_campaigns())
    return load_schemas()


def campaign_overviews(session: Session, *, caller: UserPublic) -> list[CampaignOverview]:
    """Every campaign with its status, who may work on it and its progress (items, answers, complete items, people)."""
    authorize(caller, AdminPolicy.manage_campaigns())
    return campaigns.campaign_overviews(session)


def target_choices(session: Session, *, caller: UserPublic) -> TargetChoices:
    """The subtasks, languages, models and variants in the store, for a new campaign's target filter."""
    authorize(caller, AdminPolicy.manage_campaigns())
    return campaigns.target_choices(session)


def create_campaign(session: Session, *, caller: UserPublic, **values: Any) -> CampaignPublic:
    """Create a campaign from :class:`CampaignSpec` ``values`` over the targets its filter picks (audit-logged)."""
    authorize(caller, AdminPolicy.manage_campaigns())
    spec = parse(CampaignSpec, **values)
    schemas = load_schemas()
    if spec.schema_name not in schemas:
        raise InvalidInput(f"schema: {spec.schema_name!r} is not one of {', '.join(sorted(schemas))}")
    created = campaigns.create_campaign(
        session,
        name=spec.name,
        schema=schemas[spec.schema_name],
        people_per_item=spec.people_per_item,
        selection=spec.selection(),
        actor=caller.username,
        assignment=spec.assignment,
    )
    if spec.roles is not None and set(spec.roles) != set(created.eligible_roles):
        created = campaigns.set_eligible_roles(session, name=created.name, roles=spec.roles, actor=caller.username)
    return created


def set_campaign_status(
    session: Session, *, caller: UserPublic, name: str, status: str, decide_below_quota: Any = False
) -> CampaignStatusChange:
    """Close (no next items, answers or revisions) or reopen a campaign; closing records whether its items below
    quota are decided on the answers they have (``decide_below_quota``, default no) and says how many there are."""
    authorize(caller, AdminPolicy.manage_campaigns())
    if not isinstance(decide_below_quota, bool):
        raise InvalidInput("decide_below_quota: must be true or false")
    return campaigns.set_campaign_status(
        session, name=name or "", status=status, actor=caller.username, decide_below_quota=decide_below_quota
    )


def closing_preview(session: Session, *, caller: UserPublic, name: str | None) -> QuotaReport:
    """A campaign's items against their quota, for whoever is about to close it (nothing changes)."""
    authorize(caller, AdminPolicy.manage_campaigns())
    if not name:
        raise InvalidInput("campaign: choose a campaign")
    return quota_report(session, get_campaign(session, name))


def assign_roles(session: Session, *, caller: UserPublic, name: str, roles: list[str] | None) -> CampaignPublic:
    """Say which roles may work on a campaign (one or more).

    Assignment is by role: naming people would need a table of (campaign, person) the store does not have.
    """
    authorize(caller, AdminPolicy.manage_campaigns())
    return campaigns.set_eligible_roles(session, name=name or "", roles=roles or [], actor=caller.username)
