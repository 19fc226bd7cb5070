"""Publishing accepted scenarios as immutable dataset versions — only what a stated rule or a person decided, and only
what the publisher saw in the preview.

:func:`publish_preview` lists every scenario a version would hold and why (accepted by a curator, or by the crowd's
or the experts' rule, with the decision in words) and the content hash of those records; :func:`publish_dataset`
publishes exactly that preview (``expected_hash``: a ``Conflict`` when anything changed since). A scenario whose
status says accepted but that no rule and no person is recorded as deciding is left out and counted.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col

from pipeline.records import Scenario
from studio.errors import Conflict, InvalidInput, NotFound
from studio.models import AuditLog, ScenarioRow
from studio.models.curation import DatasetVersion, DatasetVersionPublic, ScenarioStatus
from studio.services.curation_decisions import scenario_record

#: Who may have decided an accepted scenario (the prefix of ``ScenarioStatus.decided_by``) and how a preview says it.
DECIDERS: dict[str, str] = {"curator": "a curator", "expert": "the experts' rule", "crowd": "the crowd's rule"}


class PublishRow(BaseModel):
    """One scenario a version would hold: its (published) subtask, who decided it and why, in words."""

    scenario_id: str
    subtask: str
    decided_by: str
    why: str
    edited: bool
    relabelled: bool


class PublishPreview(BaseModel):
    """What publishing now would publish: the scenarios and why each is in, by decider, and the records' hash."""

    content_hash: str
    rows: list[PublishRow]
    by_decider: dict[str, int]
    undecided_accepted: list[str]

    def words(self) -> str:
        """``7 scenario(s): 3 accepted by a curator, 4 by the crowd's rule`` (and what was left out)."""
        parts = [f"{count} by {DECIDERS[kind]}" for kind, count in self.by_decider.items() if count]
        text = f"{len(self.rows)} scenario(s) would be published" + (": " + ", ".join(parts) if parts else "")
        if self.undecided_accepted:
            text += f"; {len(self.undecided_accepted)} marked accepted with no rule or person recorded are left out"
        return text + "."


def content_hash(records: list[dict[str, Any]]) -> str:
    """sha256 of the records' canonical JSON (sorted keys, no whitespace, UTF-8)."""
    canonical = json.dumps(records, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _decider(decided_by: str) -> str | None:
    kind = decided_by.split(":", 1)[0]
    return kind if kind in DECIDERS and ":" in decided_by else None


def _accepted(session: Session) -> list[tuple[ScenarioRow, ScenarioStatus]]:
    query = (
        select(ScenarioRow, ScenarioStatus)
        .join(ScenarioStatus, col(ScenarioStatus.scenario_id) == col(ScenarioRow.id))
        .where(col(ScenarioStatus.status) == "accepted")
        .order_by(col(ScenarioRow.id))
    )
    return [(row, status) for row, status in session.execute(query).all()]


def _why(status: ScenarioStatus) -> str:
    if status.decided_by.startswith("curator:"):
        return f"{status.decided_by.split(':', 1)[1]}: {status.reason or 'accepted'}"
    return status.rule_note or f"accepted by the rule of {status.decided_by.split(':', 1)[1]}"


def _preview_and_records(session: Session, include_edits: bool) -> tuple[PublishPreview, list[dict[str, Any]]]:
    rows, records, undecided = [], [], []
    by_decider = dict.fromkeys(DECIDERS, 0)
    for row, status in _accepted(session):
        kind = _decider(status.decided_by)
        if kind is None:  # accepted, but by no rule and no person the store knows: never published
            undecided.append(row.id)
            continue
        by_decider[kind] += 1
        record = Scenario.model_validate(scenario_record(row, status, with_edits=include_edits)).model_dump(mode="json")
        records.append(record)
        row_of_preview = PublishRow(
            scenario_id=row.id,
            subtask=record["subtask"],
            decided_by=status.decided_by,
            why=_why(status),
            edited=bool(include_edits and status.edits),
            relabelled=record["subtask"] != row.subtask,
        )
        rows.append(row_of_preview)
    preview = PublishPreview(
        content_hash=content_hash(records), rows=rows, by_decider=by_decider, undecided_accepted=undecided
    )
    return preview, records


def publish_preview(session: Session, *, include_edits: bool = True) -> PublishPreview:
    """What :func:`publish_dataset` would publish now, and why each scenario is in (nothing is written)."""
    return _preview_and_records(session, include_edits)[0]


def accepted_records(session: Session, *, include_edits: bool = True) -> list[dict[str, Any]]:
    """Every scenario a version would hold, as validated Scenario dicts (edits applied unless ``include_edits`` is
    False; the crowd's subtask where the classification rule applied it)."""
    return _preview_and_records(session, include_edits)[1]


def decision_summary(session: Session) -> dict[str, list[str]]:
    """Scenario ids by decision: accepted, edited (accepted with edits), rejected, pending (every other state)."""
    summary: dict[str, list[str]] = {"accepted": [], "edited": [], "rejected": [], "pending": []}
    rows = session.execute(
        select(col(ScenarioRow.id), col(ScenarioStatus.status), col(ScenarioStatus.edits))
        .outerjoin(ScenarioStatus, col(ScenarioStatus.scenario_id) == col(ScenarioRow.id))
        .order_by(col(ScenarioRow.id))
    )
    for scenario_id, status, edits in rows:
        kind = status if status in ("accepted", "rejected") else "pending"
        summary[kind].append(scenario_id)
        if kind == "accepted" and edits:
            summary["edited"].append(scenario_id)
    return summary


def decisions_text(summary: dict[str, list[str]]) -> str:
    """A version's decisions in words, e.g. ``accepted 2 (1 of them edited), rejected 1, pending 64``: the edited ones
    are among the accepted (the four counts of :func:`decision_summary` overlap), so the parts add up to the whole."""
    accepted, edited = len(summary.get("accepted", [])), len(summary.get("edited", []))
    parts = [f"accepted {accepted}" + (f" ({edited} of them edited)" if edited else "")]
    parts += [f"{kind} {len(summary.get(kind, []))}" for kind in ("rejected", "pending")]
    return ", ".join(parts)


def _summary(session: Session, preview: PublishPreview) -> dict[str, list[str]]:
    """The version's record of decisions: :func:`decision_summary`, who decided each published scenario and which
    took the crowd's subtask."""
    summary = decision_summary(session)
    for kind in DECIDERS:
        summary[f"by_{kind}"] = [row.scenario_id for row in preview.rows if row.decided_by.startswith(f"{kind}:")]
    summary["relabelled"] = [row.scenario_id for row in preview.rows if row.relabelled]
    summary["left_out_undecided"] = list(preview.undecided_accepted)
    return summary


def publish_dataset(
    session: Session,
    *,
    actor: str,
    name: str,
    include_edits: bool = True,
    note: str | None = None,
    expected_hash: str | None = None,
) -> tuple[DatasetVersionPublic, bool]:
    """Publish what :func:`publish_preview` shows as an immutable version (by ``actor``); return it and whether it
    was created.

    ``expected_hash`` (the preview's ``content_hash``, when given) must still hold: a ``Conflict`` otherwise, and
    nothing is published. Identical content (same hash) returns the existing version (``created`` False) whatever
    ``name`` says; a ``name`` already used for other content is a ``Conflict``; nothing to publish is ``InvalidInput``.
    """
    name = name.strip()
    if not name or len(name) > 128:
        raise InvalidInput("name: must be 1-128 characters")
    preview, records = _preview_and_records(session, include_edits)
    if expected_hash is not None and expected_hash != preview.content_hash:
        raise Conflict(
            "preview: the scenarios to publish changed since the preview; nothing was published — preview again"
        )
    if not records:
        raise InvalidInput("status: no accepted scenario to publish")
    digest = preview.content_hash
    same = session.execute(select(DatasetVersion).where(col(DatasetVersion.content_hash) == digest)).scalars().first()
    if same is not None:
        return DatasetVersionPublic.model_validate(same), False
    if session.execute(select(col(DatasetVersion.id)).where(col(DatasetVersion.name) == name)).first() is not None:
        raise Conflict(f"name: dataset version {name!r} already exists with other content")
    version = DatasetVersion(
        name=name,
        content_hash=digest,
        n_scenarios=len(records),
        created_by=actor,
        note=note,
        records=records,
        summary=_summary(session, preview),
    )
    session.add(version)
    try:
        session.flush()
    except IntegrityError:
        raise Conflict(f"name: dataset version {name!r} was published concurrently") from None
    decided = {kind: len(ids) for kind, ids in version.summary.items()}
    detail = {"content_hash": digest, "scenarios": len(records), "decided": decided}
    session.add(
        AuditLog(actor=actor, action="dataset.publish", entity="dataset_version", entity_id=name, detail=detail)
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
