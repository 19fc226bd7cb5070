"""What the refine run found about one scenario, as the curator page shows it: the preprocess flags (each PII
replacement with its text before and after), the field edits, the LLM pre-screen's verdict with its reasons and
uncertainty, and the LLM's verdicts on the scenario's pairwise items.

Curators, experts' reviewers and researchers read this (``studio.usecases.curate``); annotators never do: nothing
here is part of an annotate item's payload (``studio.services.content``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlmodel import Session, col

from studio.models import Campaign, CurationReport, Item, PairJudgmentRow, PrescreenRow

#: A flag's kind-specific fields, as "what it found" (the rest are shown in their own columns).
FOUND_FIELDS: tuple[str, ...] = ("entity", "category", "rule", "text", "of", "method", "similarity")


def flag_row(flag: dict[str, Any]) -> dict[str, Any]:
    """One flag as a table row: kind, field, what was found, before, after, what was done, source and reason."""
    found = ", ".join(f"{name} {flag[name]}" for name in FOUND_FIELDS if flag.get(name) not in (None, ""))
    done = flag.get("action") or ("removed" if flag.get("removed") else "kept" if "removed" in flag else "")
    return {
        "kind": flag.get("kind"),
        "field": flag.get("field") or "(scenario)",
        "found": found,
        "before": flag.get("before"),
        "after": flag.get("after"),
        "done": done,
        "source": flag.get("source"),
        "reason": flag.get("reason"),
    }


def _prescreen(row: PrescreenRow | None) -> dict[str, Any] | None:
    if row is None:
        return None
    return {
        "verdict": row.verdict,
        "votes": dict(row.votes),
        "uncertainty": row.uncertainty,
        "needs_human": row.needs_human,
        "reasons": list(row.reasons),
        "judge_model": row.judge_model,
        "prompt_version": row.prompt_version,
        "queue_rank": row.queue_rank,
    }


def scenario_findings(session: Session, *, scenario_id: str) -> dict[str, Any]:
    """The run's findings on ``scenario_id``: ``flags`` (rows of :func:`flag_row`), ``flag_kinds``, ``edits``
    (field, before, after), ``prescreen`` (None when the run had no judge) and ``pairs`` (the LLM's verdicts on the
    scenario's pairwise items: campaign, item, winner, consistent, uncertainty, judge_model)."""
    report = session.get(CurationReport, scenario_id)
    pairs = session.execute(
        select(
            col(Campaign.name).label("campaign"),
            col(PairJudgmentRow.item_id).label("item"),
            col(PairJudgmentRow.winner),
            col(PairJudgmentRow.consistent),
            col(PairJudgmentRow.uncertainty),
            col(PairJudgmentRow.judge_model),
        )
        .join(Item, col(Item.id) == col(PairJudgmentRow.item_id))
        .join(Campaign, col(Campaign.id) == col(Item.campaign_id))
        .where(col(Item.scenario_id) == scenario_id)
        .order_by(col(Campaign.name), col(PairJudgmentRow.item_id))
    )
    return {
        "flags": [flag_row(flag) for flag in report.flags] if report else [],
        "flag_kinds": list(report.flag_kinds) if report else [],
        "edits": list(report.edits) if report else [],
        "prescreen": _prescreen(session.get(PrescreenRow, scenario_id)),
        "pairs": [dict(row._mapping) for row in pairs],
    }
