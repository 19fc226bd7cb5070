"""Importing scenario files through the admin page or API: check everything first, store only on confirmation.

:func:`check_upload` authorises the caller (``AdminPolicy.import_scenarios``), moves the received files into a private
staging directory (``studio.services.imports``), checks every line and compares the scenarios with the store. With
any problem the staging directory is deleted at once and the check lists every ``file:line: field: problem``;
nothing is stored. A clean check keeps the files staged for :func:`store_upload`, which only the same person may
call: it reads the staged files again (what is stored is what was checked), stores them as ``h2h ingest`` does (new
scenarios added, changed ones updated in place and audit-logged) in the caller's transaction, and deletes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import select
from sqlmodel import Session, col

from pipeline.records import Scenario
from studio.errors import InvalidInput, PermissionDenied, ServiceError
from studio.models import AuditLog, ScenarioRow, UserPublic
from studio.policies import AdminPolicy, authorize
from studio.services import imports
from studio.services.imports import StagedImport, UploadedFile
from studio.services.ingest import IngestReport, ingest_scenarios, scenario_row

_ID_CHUNK = 500


@dataclass
class ImportCheck:
    """What an upload holds and what storing it would do; ``staged`` is None when it has problems (nothing kept)."""

    files: list[str]
    problems: list[str]
    notes: list[str] = field(default_factory=list)
    scenarios: int = 0
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    staged: StagedImport | None = None

    @property
    def ok(self) -> bool:
        return not self.problems


def _stored_hashes(session: Session, ids: list[str]) -> dict[str, str]:
    hashes: dict[str, str] = {}
    for start in range(0, len(ids), _ID_CHUNK):
        chunk = ids[start : start + _ID_CHUNK]
        query = select(col(ScenarioRow.id), col(ScenarioRow.content_hash)).where(col(ScenarioRow.id).in_(chunk))
        hashes.update({row.id: row.content_hash for row in session.execute(query)})
    return hashes


def _compare(session: Session, scenarios: list[Scenario], check: ImportCheck) -> None:
    stored = _stored_hashes(session, [scenario.id for scenario in scenarios])
    for scenario in scenarios:
        old = stored.get(scenario.id)
        if old is None:
            check.new += 1
        elif old != scenario_row(scenario)["content_hash"]:
            check.changed += 1
        else:
            check.unchanged += 1
    check.scenarios = len(scenarios)


def check_upload(
    session: Session, *, caller: UserPublic, files: list[UploadedFile], limit_bytes: int, root: Path | None = None
) -> ImportCheck:
    """Stage and check ``files`` (their received copies are deleted either way); nothing is stored."""
    try:
        authorize(caller, AdminPolicy.import_scenarios())
    except ServiceError:
        for upload in files:  # a refused upload leaves nothing behind
            upload.path.unlink(missing_ok=True)
        raise
    staged = imports.stage(files, owner=caller.username, limit_bytes=limit_bytes, root=root)
    try:
        found = imports.read_staged(staged)
        check = ImportCheck(files=list(staged.names), problems=found.problems, notes=found.notes)
        if check.ok:
            _compare(session, found.scenarios, check)
    except BaseException:
        imports.discard(staged)
        raise
    if check.ok:
        check.staged = staged
    else:
        imports.discard(staged)
    return check


def store_upload(session: Session, *, caller: UserPublic, staged: StagedImport | None) -> IngestReport:
    """Store the scenarios of a clean check (run it in a write session); the staged files are deleted after."""
    authorize(caller, AdminPolicy.import_scenarios())
    if staged is None:
        raise InvalidInput("files: nothing to import: upload files and check them first")
    if staged.owner != caller.username:
        raise PermissionDenied("files: these files were uploaded by someone else")
    try:
        if not staged.directory.is_dir():
            raise InvalidInput("files: the checked upload has expired; upload the files again")
        found = imports.read_staged(staged)
        if found.problems:
            raise InvalidInput(f"files: {len(found.problems)} problem(s); nothing was stored: {found.problems[0]}")
        report = ingest_scenarios(session, found.scenarios, actor=caller.username)
        session.add(
            AuditLog(
                actor=caller.username,
                action="import.scenarios",
                entity="import",
                entity_id=", ".join(staged.names)[:256],
                detail={"added": report.scenarios_added, "updated": report.scenarios_updated},
            )
        )
        return report
    finally:
        imports.discard(staged)


def cancel_upload(*, caller: UserPublic, staged: StagedImport | None) -> None:
    """Forget a checked upload without storing it (its files are deleted)."""
    authorize(caller, AdminPolicy.import_scenarios())
    if staged is not None and staged.owner != caller.username:
        raise PermissionDenied("files: these files were uploaded by someone else")
    imports.discard(staged)
