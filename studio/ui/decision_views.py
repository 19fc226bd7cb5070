"""How the Curate page states decisions: a scenario's status with the rule that made it, the crowd's classification
and what the workflow did with it, and what Publish would publish and why. Pure functions (no Gradio, no session);
every text from data is escaped (:func:`studio.ui.render.escape_text`) or goes into a text-only table, invisible
characters written out (:func:`studio.services.text.visible_text`) either way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from studio.rules import QUOTA_RULE
from studio.services.aggregation import AggregationSummary
from studio.services.publishing import PublishPreview
from studio.services.text import visible_text
from studio.ui.render import escape_text

#: The publish preview's columns as the page heads them.
PREVIEW_COLUMNS: dict[str, str] = {
    "scenario_id": "scenario",
    "subtask": "subtask (published)",
    "decided_by": "decided by",
    "why": "why",
}


def _label_line(status: Mapping[str, Any], ingested_subtask: str) -> str | None:
    """The crowd's classification where it differs from the ingested subtask, and what the rule did with it."""
    label, action = status.get("crowd_label"), status.get("label_action")
    if not label or not action:
        return None
    counts = (status.get("crowd") or {}).get("label_counts") or {}
    votes = f" ({counts.get(label, 0)} of {sum(counts.values())} votes)" if counts else ""
    said = f"<b>Crowd's subtask:</b> {escape_text(label)}{votes}, ingested as {escape_text(ingested_subtask)} — "
    if action == "applied":
        return said + "applied to the published scenario by the workflow's classification rule"
    return said + "flagged for you: the decision “Apply the crowd's subtask” applies it (the status stays)"


def status_html(detail: Mapping[str, Any]) -> str:
    """A scenario's review state (``curate.scenario_detail``): status, who decided and why, the rule's decision in
    words (e.g. ``crowd: revise 3/3 · experts: … → waits for a curator (agree_or_curator: …)``) and the crowd's
    classification."""
    status = detail.get("status") or {}
    parts = [f"<b>Status:</b> {escape_text(status.get('status', 'pending'))}"]
    if status.get("decided_by"):
        parts.append(f"<b>decided by</b> {escape_text(status['decided_by'])}")
    if status.get("reason"):
        parts.append(f"<b>reason:</b> {escape_text(status['reason'])}")
    if status.get("edits"):
        parts.append(f"<b>edited fields:</b> {escape_text(', '.join(sorted(status['edits'])))}")
    if detail.get("base_changed"):
        parts.append("<b>the ingested text changed under this edit</b>")
    lines = [" · ".join(parts)]
    if status.get("rule_note"):
        lines.append(f'<span class="h2h-rule"><b>By the rules:</b> {escape_text(status["rule_note"])}</span>')
    label = _label_line(status, str((detail.get("ingested") or {}).get("subtask", "")))
    if label:
        lines.append(label)
    return '<div class="h2h-curate-status">' + "<br>".join(lines) + "</div>"


def preview_frame(preview: PublishPreview) -> pd.DataFrame:
    """The scenarios Publish would publish, one row each: id, published subtask, who decided, why (text only)."""
    rows = [{name: visible_text(str(getattr(row, name))) for name in PREVIEW_COLUMNS} for row in preview.rows]
    frame = pd.DataFrame.from_records(rows, columns=list(PREVIEW_COLUMNS))
    return frame.rename(columns=PREVIEW_COLUMNS)


def preview_message(preview: PublishPreview) -> str:
    """The preview in one line, and what Publish does next."""
    if not preview.rows:
        return preview.words() + " Nothing to publish."
    return preview.words() + " Publish publishes exactly these (a change in between refuses it: preview again)."


def rules_html(summaries: list[AggregationSummary]) -> str:
    """The rules an aggregation run applied, per campaign, in words, and when an item counts as decided."""
    items = "".join(
        f"<li><b>{escape_text(summary.campaign)}</b> ({escape_text(summary.workflow_type)}): "
        f"{escape_text(summary.statement)}</li>"
        for summary in summaries
    )
    return f'<div class="h2h-rules"><p>{escape_text(QUOTA_RULE)}</p><ul>{items}</ul></div>'
