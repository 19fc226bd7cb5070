"""The curator page's views: use-case results (``studio.usecases.curate``) turned into component values.

The scenario comes back as HTML escaped by :mod:`studio.ui.render`; tables as DataFrames of plain values
(:mod:`studio.ui.tables`). Nothing here opens a session or checks a role: the handlers of :mod:`studio.ui.curate`
get the results from the use cases, which do.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from studio.models import AuditLogPublic
from studio.models.curation import DatasetVersionPublic, ScenarioStatusPublic
from studio.services.aggregation import AggregationSummary
from studio.services.curation import decisions_text
from studio.services.curation_decisions import form_values
from studio.services.rater import RaterAgreement
from studio.ui.curate_responses import responses_html
from studio.ui.decision_views import status_html
from studio.ui.render import escape_text, render_item, render_message, render_persona
from studio.ui.tables import (
    AGGREGATION_COLUMNS,
    AUDIT_COLUMNS,
    COMMENT_COLUMNS,
    FLAG_COLUMNS,
    TALLY_COLUMNS,
    VERSION_COLUMNS,
    display_frame,
    shown,
)


@dataclass(frozen=True)
class ScenarioView:
    """What the curator sees of one scenario: its text (escaped HTML), review state, votes, and its responses' texts
    and scores (escaped HTML)."""

    scenario_id: str
    item_html: str
    persona_html: str
    status_html: str
    tallies: pd.DataFrame
    comments: pd.DataFrame
    responses_html: str
    audit: pd.DataFrame
    #: The LLM pre-screen's verdict, votes, uncertainty and reasons (escaped HTML).
    llm_html: str
    #: The refine run's flags, PII replacements with their text before and after.
    flags: pd.DataFrame
    #: The edit form's values (``studio.services.curation_decisions.FORM_FIELDS``) of the scenario as shown.
    form: dict[str, str]


def _tally_rows(campaigns: list[dict[str, Any]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    tallies: list[dict[str, Any]] = []
    comments: list[dict[str, Any]] = []
    for campaign in campaigns:
        for question, tally in campaign["questions"].items():
            for value, count in sorted(tally["counts"].items()):
                tallies.append(
                    {
                        "campaign": campaign["campaign"],
                        "question": question,
                        "value": value,
                        "count": count,
                        "percent_agreement": tally.get("percent_agreement"),
                    }
                )
        comments.extend({"campaign": campaign["campaign"], **comment} for comment in campaign["comments"])
    # comments are shown whole (their column wraps), invisible characters written out like every other cell
    shown_comments = pd.DataFrame.from_records(comments, columns=COMMENT_COLUMNS).map(shown)
    return (display_frame(tallies, TALLY_COLUMNS), shown_comments)


def _shown_tags(tags: Any) -> dict[str, Any]:
    if not isinstance(tags, dict):
        return {}
    return {name: value for name, value in tags.items() if value not in (None, False, "", [])}


def scenario_view(scenario_id: str, detail: dict[str, Any], audit: Iterable[AuditLogPublic]) -> ScenarioView:
    """One scenario (``curate.scenario_detail``) and its audit entries as the curator sees them."""
    record = detail["scenario"]
    tallies, comments = _tally_rows(detail["campaigns"])
    return ScenarioView(
        scenario_id=scenario_id,
        item_html=render_item({**record, "tags": _shown_tags(record.get("tags"))}),
        persona_html=render_persona(record.get("persona")),
        status_html=status_html(detail),
        tallies=tallies,
        comments=comments,
        responses_html=responses_html(detail["responses"]),
        audit=audit_frame(audit),
        llm_html=llm_html(detail.get("findings") or {}),
        flags=display_frame((detail.get("findings") or {}).get("flags", []), FLAG_COLUMNS),
        form=form_values(record),
    )


def _pairs_html(pairs: list[dict[str, Any]]) -> str:
    if not pairs:
        return ""
    rows = "".join(
        f"<li>{escape_text(pair['campaign'])} item {int(pair['item'])}: "
        f"{escape_text(pair['winner'] or 'no winner (the orders disagree)')}, "
        f"uncertainty {float(pair['uncertainty']):.2f}</li>"
        for pair in pairs
    )
    return f'<div class="h2h-llm-pairs"><b>LLM rater on pairwise items</b><ul>{rows}</ul></div>'


def llm_html(findings: dict[str, Any]) -> str:
    """The LLM pre-screen of a scenario (verdict, votes, uncertainty, whether a person must look, reasons) and its
    pairwise verdicts, escaped; a line saying there is none when the run had no judge."""
    verdict = findings.get("prescreen")
    kinds = ", ".join(findings.get("flag_kinds") or []) or "none"
    head = f"<div><b>Preprocess flags:</b> {escape_text(kinds)}</div>"
    pairs = _pairs_html(findings.get("pairs") or [])
    if verdict is None:
        return f'<div class="h2h-llm">{head}<div><b>LLM pre-screen:</b> none ingested</div>{pairs}</div>'
    votes = ", ".join(f"{name} {count}" for name, count in verdict["votes"].items() if count) or "none readable"
    line = (
        f"<b>LLM pre-screen:</b> {escape_text(verdict['verdict'] or 'no verdict')} ({escape_text(votes)}) · "
        f"uncertainty {float(verdict['uncertainty']):.2f}"
        + (" · <b>needs a person</b>" if verdict["needs_human"] else "")
        + f" · judge {escape_text(verdict['judge_model'])}"
        + (f" · queue rank {int(verdict['queue_rank'])}" if verdict.get("queue_rank") else "")
    )
    reasons = "".join(f"<li>{escape_text(reason)}</li>" for reason in verdict["reasons"])
    return (
        f'<div class="h2h-llm">{head}<div>{line}</div>'
        f'<div><b>Its reasons:</b><ul class="h2h-llm-reasons">{reasons or "<li>none given</li>"}</ul></div>'
        f"{pairs}</div>"
    )


def audit_frame(entries: Iterable[AuditLogPublic]) -> pd.DataFrame:
    """Audit entries as rows: when, who, what, before, after and why."""
    rows = [
        {
            "at": entry.at.isoformat(timespec="seconds"),
            "actor": entry.actor,
            "action": entry.action,
            "entity": entry.entity,
            "entity_id": entry.entity_id,
            "before": entry.detail.get("before"),
            "after": entry.detail.get("after"),
            "reason": entry.detail.get("reason"),
        }
        for entry in entries
    ]
    return display_frame(rows, AUDIT_COLUMNS)


def versions_frame(versions: Iterable[DatasetVersionPublic]) -> pd.DataFrame:
    """Published versions, newest first: name, scenarios, what was decided (accepted, edited, rejected, pending when
    it was published), created_at, created_by, note, content hash."""
    rows = [
        {
            "name": version.name,
            "scenarios": version.n_scenarios,
            "decided": decisions_text(version.summary),
            "created_at": version.created_at.isoformat(timespec="seconds"),
            "created_by": version.created_by,
            "note": version.note,
            "content_hash": version.content_hash,
        }
        for version in reversed(list(versions))
    ]
    return display_frame(rows, VERSION_COLUMNS)


def aggregation_frame(summaries: Iterable[AggregationSummary]) -> pd.DataFrame:
    """One row per aggregated campaign: what the run found and changed."""
    return display_frame([summary.model_dump(exclude={"table"}) for summary in summaries], AGGREGATION_COLUMNS)


def decision_message(scenario_id: str, action: str, status: ScenarioStatusPublic) -> str:
    return f"{scenario_id}: {action} saved (status {status.status})."


def publish_message(version: DatasetVersionPublic, created: bool) -> str:
    if created:
        return f"Published {version.name}: {version.n_scenarios} scenarios (sha256 {version.content_hash[:12]})."
    return f"Nothing new to publish: the accepted scenarios are already version {version.name}."


def rater_frame(agreements: list[RaterAgreement]) -> pd.DataFrame:
    """The LLM rater against the humans' majority: one row per campaign compared, one column per measure of
    :class:`~studio.services.rater.RaterAgreement` (no row, no header: nothing was compared)."""
    if not agreements:
        return pd.DataFrame(columns=[""])
    return display_frame([agreement.model_dump() for agreement in agreements], list(RaterAgreement.model_fields))


#: What the rater table's measures mean (``RaterAgreement``), said under every comparison.
RATER_MEASURES = (
    "agreement: the share of items where the LLM's winner equals the people's majority (items_compared: those with "
    "both); cohen_kappa: that agreement corrected for chance; vote_agreement: the share of all people's votes equal "
    "to the LLM's winner."
)


def rater_note(campaign: str | None, agreements: list[RaterAgreement]) -> str:
    """What "Compare the LLM rater" compared — the campaign chosen, or every pairwise campaign for "all campaigns"
    — and what its measures mean; or why there is nothing to compare (escaped HTML)."""
    if not agreements:
        line = (
            "Nothing to compare: there is no pairwise campaign. The LLM rater is compared with people on pairwise "
            "campaigns whose pairs it judged (h2h export-pairs, h2h judge-pairs, then h2h ingest-curation --pairs)."
        )
        return render_message(line)
    names = ", ".join(agreement.campaign for agreement in agreements)
    scope = f"on {names}" if campaign else f"on every pairwise campaign ({len(agreements)}): {names}"
    return render_message(f"The LLM's pairwise verdicts against the people's majority {scope}. {RATER_MEASURES}")
