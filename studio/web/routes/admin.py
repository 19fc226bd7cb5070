"""The admin API (``/v1/admin/...``): people and accounts, the audit log, campaigns, scenario imports.

The same use cases as the admin page (``studio.usecases.admin``, ``studio.usecases.imports``); each authorises the
caller (``AdminPolicy``), so an annotator who calls these routes gets 403 and changes nothing.
"""

# No `from __future__ import annotations`: FastAPI reads the dependency types of the signatures as objects.
import shutil
import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import APIRouter, File, Form, Response, UploadFile, status
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from studio.models import CampaignPublic, UserPublic
from studio.services.campaigns import CampaignOverview, CampaignStatusChange, TargetChoices
from studio.services.curation import Page
from studio.services.imports import UploadedFile
from studio.services.ingest import IngestReport
from studio.services.progress import QuotaReport
from studio.usecases import admin, imports
from studio.usecases.admin import PasswordSet, UserRow
from studio.web.deps import CallerDep, SettingsDep

router = APIRouter(prefix="/v1/admin", tags=["admin"])


class NewUserIn(BaseModel):
    username: str = Field(min_length=1, max_length=256)
    role: str
    #: Leave out to have one generated (returned once).
    password: str | None = Field(default=None, max_length=1024)


class RoleIn(BaseModel):
    role: str


class PasswordIn(BaseModel):
    #: Leave out to have one generated (returned once).
    password: str | None = Field(default=None, max_length=1024)


class RevokedOut(BaseModel):
    username: str
    sessions_revoked: int


class CampaignIn(BaseModel):
    name: str = Field(max_length=128)
    schema_name: str = Field(alias="schema", max_length=64)
    people_per_item: int | None = None
    subtasks: list[str] | None = None
    languages: list[str] | None = None
    models: list[str] | None = None
    variants: list[str] | None = None
    high_risk_only: bool = False
    flagged_only: bool = False
    #: Who may work on it (default: the workflow's eligible roles).
    roles: list[str] | None = None
    #: The queue's order: ``fill`` (items closest to their quota first; the default) or ``spread``.
    assignment: Literal["fill", "spread"] = "fill"


class CloseIn(BaseModel):
    """How to close a campaign: decide its items below quota on the answers they have (default: leave them
    undecided)."""

    decide_below_quota: bool = False


class RolesIn(BaseModel):
    roles: list[str]


class ImportOut(BaseModel):
    """What an upload holds; ``stored`` (with ``report``) when it was confirmed and clean."""

    files: list[str]
    problems: list[str]
    notes: list[str]
    scenarios: int
    new: int
    changed: int
    unchanged: int
    stored: bool
    report: IngestReport | None = None


@router.get("/users", response_model=list[UserRow])
def users(caller: CallerDep) -> list[UserRow]:
    """Every person: name, role, active, last sign-in."""
    with caller.reading() as (session, user):
        return admin.list_users(session, caller=user)


@router.post("/users", response_model=PasswordSet, status_code=status.HTTP_201_CREATED)
def add_user(body: NewUserIn, caller: CallerDep) -> PasswordSet:
    """Add a person (a generated password is returned this once)."""
    with caller.writing() as (session, user):
        return admin.add_user(session, caller=user, username=body.username, role=body.role, password=body.password)


@router.put("/users/{username}/role", response_model=UserPublic)
def change_role(username: str, body: RoleIn, caller: CallerDep) -> UserPublic:
    """Give the person another role."""
    with caller.writing() as (session, user):
        return admin.change_role(session, caller=user, username=username, role=body.role)


@router.post("/users/{username}/deactivate", response_model=UserPublic)
def deactivate(username: str, caller: CallerDep) -> UserPublic:
    """Deactivate the person: their sessions stop working at once and they cannot sign in."""
    with caller.writing() as (session, user):
        return admin.set_active(session, caller=user, username=username, active=False)


@router.post("/users/{username}/activate", response_model=UserPublic)
def activate(username: str, caller: CallerDep) -> UserPublic:
    """Reactivate the person (they sign in again; no old session comes back)."""
    with caller.writing() as (session, user):
        return admin.set_active(session, caller=user, username=username, active=True)


@router.post("/users/{username}/password", response_model=PasswordSet)
def reset_password(username: str, body: PasswordIn, caller: CallerDep) -> PasswordSet:
    """Set a new password (generated and returned once when none is sent); the person's sessions are revoked."""
    with caller.writing() as (session, user):
        return admin.reset_password(session, caller=user, username=username, password=body.password)


@router.post("/users/{username}/revoke-sessions", response_model=RevokedOut)
def revoke_sessions(username: str, caller: CallerDep) -> RevokedOut:
    """Sign the person out everywhere."""
    with caller.writing() as (session, user):
        revoked = admin.revoke_sessions(session, caller=user, username=username)
    return RevokedOut(username=username, sessions_revoked=revoked)


@router.get("/audit", response_model=Page)
def audit_log(
    caller: CallerDep,
    actor: str | None = None,
    action: str | None = None,
    entity: str | None = None,
    entity_id: str | None = None,
    page: int = 1,
    page_size: int = 50,
) -> Page:
    """The audit log, newest first; ``action`` matches a prefix (``user.``)."""
    with caller.reading() as (session, user):
        return admin.audit_log(
            session,
            caller=user,
            actor=actor,
            action=action,
            entity=entity,
            entity_id=entity_id,
            page=page,
            page_size=page_size,
        )


@router.get("/campaigns", response_model=list[CampaignOverview])
def campaigns(caller: CallerDep) -> list[CampaignOverview]:
    """Every campaign: status, roles, progress (items, answers, complete items, people)."""
    with caller.reading() as (session, user):
        return admin.campaign_overviews(session, caller=user)


@router.get("/targets", response_model=TargetChoices)
def targets(caller: CallerDep) -> TargetChoices:
    """What a new campaign's target filter can pick from: subtasks, languages, models, variants."""
    with caller.reading() as (session, user):
        return admin.target_choices(session, caller=user)


@router.post("/campaigns", response_model=CampaignPublic, status_code=status.HTTP_201_CREATED)
def create_campaign(body: CampaignIn, caller: CallerDep) -> CampaignPublic:
    """Create a campaign of a bundled workflow over the targets the filter picks."""
    with caller.writing() as (session, user):
        return admin.create_campaign(session, caller=user, **body.model_dump())


@router.get("/campaigns/{name}/quota", response_model=QuotaReport)
def campaign_quota(name: str, caller: CallerDep) -> QuotaReport:
    """The campaign's items against their quota (what closing it now would leave below quota)."""
    with caller.reading() as (session, user):
        return admin.closing_preview(session, caller=user, name=name)


@router.post("/campaigns/{name}/close", response_model=CampaignStatusChange)
def close_campaign(name: str, caller: CallerDep, body: CloseIn | None = None) -> CampaignStatusChange:
    """Close the campaign: no next items, answers or revisions. The answer says how many items are below quota and
    what happens to them (undecided, unless ``decide_below_quota`` was sent true: recorded in the audit log)."""
    below = body.decide_below_quota if body is not None else False
    with caller.writing() as (session, user):
        return admin.set_campaign_status(session, caller=user, name=name, status="closed", decide_below_quota=below)


@router.post("/campaigns/{name}/open", response_model=CampaignStatusChange)
def open_campaign(name: str, caller: CallerDep) -> CampaignStatusChange:
    """Reopen the campaign."""
    with caller.writing() as (session, user):
        return admin.set_campaign_status(session, caller=user, name=name, status="open")


@router.put("/campaigns/{name}/roles", response_model=CampaignPublic)
def assign_roles(name: str, body: RolesIn, caller: CallerDep) -> CampaignPublic:
    """Say which roles may work on the campaign."""
    with caller.writing() as (session, user):
        return admin.assign_roles(session, caller=user, name=name, roles=body.roles)


def _received(files: list[UploadFile], folder: Path) -> list[UploadedFile]:
    """The request's files written to ``folder`` under numbered names (never the client's)."""
    received = []
    for number, upload in enumerate(files):
        path = folder / f"{number}.part"
        with path.open("wb") as target:
            shutil.copyfileobj(upload.file, target)
        received.append(UploadedFile(upload.filename or "", path))
    return received


@router.post("/imports", response_model=ImportOut, responses={422: {"description": "problems; nothing stored"}})
def import_scenarios(
    caller: CallerDep,
    settings: SettingsDep,
    files: Annotated[list[UploadFile], File(description="scenario JSONL files, or public-release files")],
    confirm: Annotated[bool, Form(description="store them when the check finds no problem")] = False,
) -> Response:
    """Check uploaded scenario files (every problem as ``file:line: field: problem``); store them with ``confirm``."""
    folder = Path(tempfile.mkdtemp(prefix="h2h-received-"))
    try:
        received = _received(files, folder)
        with caller.reading() as (session, user):
            check = imports.check_upload(session, caller=user, files=received, limit_bytes=settings.max_upload_bytes)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    out = ImportOut(**_summary(check), stored=False)
    if not check.ok:
        detail = f"files: {len(check.problems)} problem(s); nothing was stored"
        return JSONResponse({"detail": detail, **out.model_dump(mode="json")}, status_code=422)
    if not confirm:
        with caller.reading() as (_session, user):
            imports.cancel_upload(caller=user, staged=check.staged)
        return JSONResponse(out.model_dump(mode="json"))
    with caller.writing() as (session, user):
        report = imports.store_upload(session, caller=user, staged=check.staged)
    return JSONResponse(out.model_copy(update={"stored": True, "report": report}).model_dump(mode="json"))


def _summary(check: imports.ImportCheck) -> dict[str, Any]:
    return {
        "files": check.files,
        "problems": check.problems,
        "notes": check.notes,
        "scenarios": check.scenarios,
        "new": check.new,
        "changed": check.changed,
        "unchanged": check.unchanged,
    }
