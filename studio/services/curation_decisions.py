"""A curator's decision on one scenario: accept, edit-and-accept or reject, on the revision the curator saw.

The rule for edits (issue 11): **an edit is an edit-and-accept in one step**. ``edit`` merges the edited fields
into the overlay (:attr:`ScenarioStatus.edits`, the ingested text is never overwritten) and sets the status to
``accepted`` under the curator's name; a scenario a curator wants to change and *not* keep is rejected instead.

Every decision names the revision of the scenario it was made on (:func:`scenario_revision`, a digest of the
ingested text and the review state). A revision that is not the current one means the scenario changed since the
curator opened it (another curator decided, aggregation moved it, a re-ingest changed its text): the decision is
refused as a ``Conflict`` and nothing is stored, instead of landing on a state nobody saw.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import ValidationError
from sqlmodel import Session

from pipeline.records import Scenario
from studio.errors import Conflict, InvalidInput, NotFound
from studio.models import AuditLog, ScenarioRow, utc_now
from studio.models.curation import EDITABLE_FIELDS, ScenarioStatus, ScenarioStatusPublic

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
ACTIONS: tuple[str, ...] = ("accept", "edit", "reject", "relabel")
#: The status each action leaves (edit-and-accept: see the module's docstring). ``relabel`` leaves the status as it
#: is: it applies the crowd's classification (a subtask the workflow flagged) as a curator's edit of the subtask.
STATUS_AFTER: dict[str, str] = {"accept": "accepted", "edit": "accepted", "reject": "rejected"}


class EditProblem(InvalidInput):
    """An edited field the Scenario record refuses; ``field`` names it (``reference``, ``context.date``...)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"edits.{field}: {problem}")
        self.field = field
        self.problem = problem


def scenario_record(
    row: ScenarioRow, status: ScenarioStatus | None = None, *, with_edits: bool = True
) -> dict[str, Any]:
    """The scenario as a ``pipeline.records.Scenario`` dict as it would be published: the crowd's subtask where the
    workflow's classification rule applied it (``label_action`` ``applied``), then the curator's edits (if any, and
    ``with_edits``)."""
    record = {name: getattr(row, name) for name in SCENARIO_FIELDS}
    if status is not None:
        if status.label_action == "applied" and status.crowd_label:
            record["subtask"] = status.crowd_label
        if status.edits and with_edits:
            record.update(status.edits)
    return record


def scenario_revision(row: ScenarioRow, status: ScenarioStatus | None) -> str:
    """The digest of what a curator sees of a scenario: its ingested text and its review state (16 hex digits)."""
    state: dict[str, Any] = {"content": row.content_hash}
    if status is not None:
        state.update(status=status.status, decided_by=status.decided_by, edits=status.edits, reason=status.reason or "")
        state.update(label=status.crowd_label, label_action=status.label_action)
    canonical = json.dumps(state, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def _problem_field(location: tuple[Any, ...]) -> str:
    """The form field a validation error belongs to: ``context.date`` for context, else the top-level field."""
    parts = [str(part) for part in location]
    if parts and parts[0] == "context" and len(parts) > 1:
        return ".".join(parts[:2])
    return parts[0] if parts else "edits"


def validated_edits(row: ScenarioRow, status: ScenarioStatus, edits: dict[str, Any]) -> dict[str, Any]:
    """``edits`` merged over the overlay, checked as a whole Scenario record (:class:`EditProblem` names the field)."""
    unknown = sorted(set(edits) - set(EDITABLE_FIELDS))
    if unknown:
        raise EditProblem(unknown[0], f"not editable (editable: {', '.join(EDITABLE_FIELDS)})")
    merged = {**status.edits, **edits}
    try:
        Scenario.model_validate({**scenario_record(row), **merged})
    except ValidationError as error:
        first = error.errors()[0]
        raise EditProblem(_problem_field(tuple(first["loc"])), first["msg"]) from None
    return merged


def _scenario_and_status(
    session: Session, scenario_id: str, revision: str | None
) -> tuple[ScenarioRow, ScenarioStatus]:
    """The scenario (``NotFound`` when unknown) and its status row (a new one, not yet added, when missing), once
    ``revision`` (when given) was found to be the current one (``Conflict`` otherwise)."""
    row = session.get(ScenarioRow, scenario_id)
    if row is None:
        raise NotFound(f"scenario_id: no scenario {scenario_id!r}")
    status = session.get(ScenarioStatus, scenario_id)
    if revision is not None and revision != scenario_revision(row, status):
        raise Conflict(
            f"revision: {scenario_id} changed since it was opened (another decision, aggregation or a re-ingest); "
            "nothing was saved — look at it again and decide"
        )
    return row, status if status is not None else ScenarioStatus(scenario_id=scenario_id)


def _audit(session: Session, actor: str, action: str, status: ScenarioStatus, before: dict[str, Any]) -> None:
    after = {"status": status.status, "decided_by": status.decided_by, "edits": dict(status.edits)}
    detail = {"before": before, "after": after, "reason": status.reason}
    session.add(
        AuditLog(
            actor=actor, action=f"scenario.{action}", entity="scenario", entity_id=status.scenario_id, detail=detail
        )
    )


def _crowd_label_to_apply(row: ScenarioRow, status: ScenarioStatus) -> str:
    """The crowd's subtask a curator may apply with ``relabel``: one the classification rule found (a strict
    majority) that differs from the subtask the scenario has now; ``InvalidInput`` otherwise."""
    label = status.crowd_label
    if not label:
        raise InvalidInput("action: the crowd has no majority subtask for this scenario")
    if label == scenario_record(row, status)["subtask"]:
        raise InvalidInput(f"action: the scenario's subtask is already {label}")
    return label


def decide_scenario(
    session: Session,
    *,
    actor: str,
    scenario_id: str,
    action: str,
    reason: str,
    edits: dict[str, Any] | None = None,
    revision: str | None = None,
) -> ScenarioStatusPublic:
    """Accept, edit-and-accept, reject or relabel ``scenario_id`` as ``actor``; audit-logged (who, when, before, after,
    why).

    ``reason`` is required; ``edits`` (for ``edit``) are fields of :data:`EDITABLE_FIELDS`, checked against the
    Scenario record; ``relabel`` applies the crowd's majority subtask (:attr:`ScenarioStatus.crowd_label`) as an edit
    and leaves the status and who decided it as they are. ``revision`` (when given) must be the scenario's current
    :func:`scenario_revision`, else ``Conflict``. A curator's status outranks crowd and expert aggregation from then on.
    """
    if action not in ACTIONS:
        raise InvalidInput(f"action: {action!r} is not one of {', '.join(ACTIONS)}")
    if not reason or not reason.strip():
        raise InvalidInput("reason: a reason is required")
    row, status = _scenario_and_status(session, scenario_id, revision)
    before = {"status": status.status, "decided_by": status.decided_by, "edits": dict(status.edits)}
    if action == "relabel":
        edits = {"subtask": _crowd_label_to_apply(row, status)}
    if action in ("edit", "relabel"):
        if not edits:
            raise InvalidInput("edits: nothing was changed")
        status.edits = validated_edits(row, status, edits)
        status.edited_from_hash = row.content_hash
    if action in STATUS_AFTER:
        status.status = STATUS_AFTER[action]
        status.decided_by = f"curator:{actor}"
    status.reason = reason.strip()
    status.updated_at = utc_now()
    session.add(status)
    _audit(session, actor, action, status, before)
    session.flush()
    return ScenarioStatusPublic.model_validate(status)


#: The edit form's fields: the scenario's texts and its context (lists one entry per line).
FORM_TEXT_FIELDS: tuple[str, ...] = ("persona", "user_input", "reference")
FORM_CONTEXT_LISTS: tuple[str, ...] = ("memories", "schedule", "hobbies")
FORM_CONTEXT_TEXTS: tuple[str, ...] = ("routine", "feedback", "date", "location")
FORM_FIELDS: tuple[str, ...] = (
    *FORM_TEXT_FIELDS,
    *(f"context.{name}" for name in (*FORM_CONTEXT_LISTS, *FORM_CONTEXT_TEXTS)),
)


def form_values(record: dict[str, Any]) -> dict[str, str]:
    """A scenario record as the edit form's text values (:data:`FORM_FIELDS`; context lists one entry a line)."""
    context = record.get("context") or {}
    values = {name: str(record.get(name) or "") for name in FORM_TEXT_FIELDS}
    values.update({f"context.{name}": "\n".join(map(str, context.get(name) or [])) for name in FORM_CONTEXT_LISTS})
    values.update({f"context.{name}": str(context.get(name) or "") for name in FORM_CONTEXT_TEXTS})
    return values


def form_edits(record: dict[str, Any], form: dict[str, str | None]) -> dict[str, Any]:
    """The edits a submitted form makes to ``record``: the fields whose text differs (the context as a whole)."""
    unknown = sorted(set(form) - set(FORM_FIELDS))
    if unknown:
        raise EditProblem(unknown[0], "not a field of the edit form")
    shown = form_values(record)
    changed = {name: value or "" for name, value in form.items() if (value or "") != shown[name]}
    edits: dict[str, Any] = {name: changed[name] for name in FORM_TEXT_FIELDS if name in changed}
    context_changes = {name.removeprefix("context."): value for name, value in changed.items() if "." in name}
    if context_changes:
        context = dict(record.get("context") or {})
        for name, value in context_changes.items():
            if name in FORM_CONTEXT_LISTS:
                context[name] = [line.strip() for line in value.splitlines() if line.strip()]
            else:
                context[name] = value.strip() or None
        edits["context"] = context
    return edits
