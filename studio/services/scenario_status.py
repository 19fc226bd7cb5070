"""Writing what aggregation found onto each scenario's review status (``ScenarioStatus``), by the stated rules.

Aggregation writes *sides* — the crowd's (``crowd``, ``crowd_decision``, ``crowd_votes``, ``crowd_agreement``,
``crowd_label``, ``label_action``, ``models_disagree``) or the experts' (``experts``, ``expert_verdicts``) —
never a status directly. The status, who decided it, whether someone has to look and the decision in words follow
from both sides by :func:`studio.results.decisions.decide`, whichever campaign was aggregated last. A curator's
decision stands: on a row a curator decided, aggregation updates the sides and the rule's words, never the status.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import insert, select
from sqlmodel import Session, col

from studio.models import utc_now
from studio.models.curation import ScenarioStatus, ScenarioStatusBase
from studio.results.decisions import crowd_side, decide, expert_side

#: The fields :func:`decide` sets (a curator's decision keeps the first three).
DECIDED_FIELDS: tuple[str, ...] = ("status", "decided_by", "disagreement")


def decided_by_curator(decided_by: str | None) -> bool:
    return (decided_by or "").startswith("curator:")


def settled(values: dict[str, Any]) -> dict[str, Any]:
    """The decided fields of a status row whose columns are ``values``: status, decided_by and disagreement by the
    rules (left out where a curator decided) and ``rule_note``; empty while neither side has spoken."""
    decision = decide(crowd_side(values.get("crowd")), expert_side(values.get("experts")))
    if decision is None:
        return {}
    derived: dict[str, Any] = {"rule_note": decision.note}
    if not decided_by_curator(values.get("decided_by")):
        derived.update(status=decision.status, decided_by=decision.decided_by, disagreement=decision.disagreement)
    return derived


def _status_defaults() -> dict[str, Any]:
    """A new status row's columns before any decision: the model's defaults."""
    fields = ScenarioStatusBase.model_fields
    return {name: field.get_default(call_default_factory=True) for name, field in fields.items()}


def _update(row: ScenarioStatus, sides: dict[str, Any]) -> bool:
    """Write ``sides`` onto an existing row and settle it; True when anything changed."""
    current = {name: getattr(row, name) for name in ScenarioStatusBase.model_fields}
    wanted = current | sides
    wanted |= settled(wanted)
    changed = {name: value for name, value in wanted.items() if current[name] != value}
    for name, value in changed.items():
        setattr(row, name, value)
    if changed:
        row.updated_at = utc_now()
    return bool(changed)


def write_sides(session: Session, updates: dict[str, dict[str, Any]]) -> tuple[int, Counter[str]]:
    """Write each scenario's side values (scenario id → columns), settle its status; return how many rows were created
    or changed and the statuses the updated scenarios have now.

    Existing rows are loaded in one query and updated where a value differs; new rows go in as one bulk insert
    (building an ORM object per scenario would cost more than the rest of the write phase).
    """
    known: dict[str, ScenarioStatus] = {}
    if updates:
        query = select(ScenarioStatus).where(col(ScenarioStatus.scenario_id).in_(sorted(updates)))
        known = {row.scenario_id: row for row in session.execute(query).scalars()}
    now, defaults = utc_now(), _status_defaults()
    created = []
    for scenario_id, sides in updates.items():
        if scenario_id not in known:
            values = defaults | sides | {"scenario_id": scenario_id}
            created.append(values | settled(values) | {"updated_at": now})
    changed = sum(_update(known[scenario_id], sides) for scenario_id, sides in updates.items() if scenario_id in known)
    if created:
        session.execute(insert(ScenarioStatus), created)
    session.flush()
    statuses = Counter([row["status"] for row in created] + [known[sid].status for sid in updates if sid in known])
    return len(created) + changed, statuses
