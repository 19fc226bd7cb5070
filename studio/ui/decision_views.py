"""How the Curate page states decisions: a scenario's status with the rule that made it, the crowd's classification
and what the workflow did with it, and what Publish would publish and why. Pure functions (no Gradio, no session);
every text from data is escaped (:func:`studio.ui.render.escape_text`) or goes into a text-only table, invisible
characters written out (:func:`studio.services.text.visible_text`) either way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from studio.results.decisions import crowd_side
from studio.rules import MODEL_NAMES, QUOTA_RULE, MajorityRule
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
    models = models_html(status.get("crowd"))
    if models:
        lines.append(models)
    return '<div class="h2h-curate-status">' + "<br>".join(lines) + "</div>"


def models_html(stored: Mapping[str, Any] | None) -> str:
    """The crowd's majority beside each reliability-weighted model (decision and posterior), a visible
    "models disagree" mark, and the rule in words (:meth:`studio.rules.MajorityRule.models_statement`); "" where the
    workflow asks for no model. Every value is escaped: votes are untrusted text."""
    side = crowd_side(stored)
    if side is None or not side.models:
        return ""
    majority = side.majority
    said = f"{majority} {side.counts.get(majority, 0)}/{side.votes}" if majority else f"a tie of {side.votes} votes"
    cells = [f"<b>majority:</b> {escape_text(said)}"]
    for name, model in side.models.items():
        decides = " (decides)" if name == side.rule else ""
        posterior = float(model.get("posterior", 0.0))
        cells.append(
            f"<b>{escape_text(MODEL_NAMES.get(name, name))}{decides}:</b> {escape_text(str(model.get('decision')))}"
            f" (posterior {posterior:.2f})"
        )
    if side.models_disagree:
        cells.append('<b class="h2h-models-disagree">⚠ models disagree</b>')
    also = [name for name in side.models if name != side.rule]
    rule = MajorityRule(rule=side.rule, also=also)
    statement = f'<br><span class="h2h-rule">{escape_text(rule.models_statement().strip())}</span>'
    return '<div class="h2h-crowd-models">' + " · ".join(cells) + statement + "</div>"


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
