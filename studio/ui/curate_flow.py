"""The curator page's logic as plain functions: browse, inspect, decide, audit log, publish, download, aggregate.

Every function takes the caller's session token, re-resolves the caller on each call and checks the role
(curators and admins change things; researchers may also read) before touching the store, then goes through
``studio.services.curation`` / ``studio.services.aggregation``. Nothing the browser holds is trusted for
authorisation. Tables come back as DataFrames of plain values for ``gr.Dataframe`` (text columns shown as
text, never HTML); the scenario itself comes back as HTML escaped by :mod:`studio.ui.render`.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import Engine

from studio.ui.flow import current_user
from studio.ui.render import escape_text, render_item, render_persona

CURATE_ROLES: tuple[str, ...] = ("curator", "admin")
READ_ROLES: tuple[str, ...] = ("curator", "researcher", "admin")
DOWNLOAD_FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet")
DOWNLOAD_PREFIX = "h2h-download-"
DOWNLOAD_KEEP_SECONDS = 3600.0
#: Long text is cut in listing tables (the detail view shows it whole).
CELL_CHARS = 120
SCENARIO_COLUMNS: list[str] = [
    "id",
    "subtask",
    "status",
    "user_input",
    "reference",
    "crowd_decision",
    "crowd_votes",
    "crowd_agreement",
    "disagreement",
    "edited",
    "decided_by",
]
RESPONSE_COLUMNS: list[str] = [
    "scenario_id",
    "model",
    "variant",
    "subtask",
    "needs_adjudication",
    "S",
    "J_judge",
    "J",
    "J_human",
    "J_final",
]
TALLY_COLUMNS: list[str] = ["campaign", "question", "value", "count", "percent_agreement"]
COMMENT_COLUMNS: list[str] = ["campaign", "annotator", "question", "text"]
SCORE_COLUMNS: list[str] = ["model", "variant", "bleu4", "rougeL", "ss", "S", "J_judge", "J", "J_human", "J_final"]
VERSION_COLUMNS: list[str] = ["name", "scenarios", "created_at", "created_by", "note", "content_hash"]
AUDIT_COLUMNS: list[str] = ["at", "actor", "action", "entity", "entity_id", "before", "after", "reason"]


@dataclass(frozen=True)
class TablePage:
    """One page of a listing: the rows to show, how many rows match, and the page numbers."""

    frame: pd.DataFrame
    total: int
    page: int
    pages: int

    @property
    def summary(self) -> str:
        """A one-line caption, e.g. ``"12 match · page 1 of 3"``."""
        return f"{self.total} match · page {self.page} of {self.pages}"


@dataclass(frozen=True)
class ScenarioView:
    """What the curator sees of one scenario: its text (escaped HTML), review state, votes and scores."""

    scenario_id: str
    item_html: str
    persona_html: str
    status_html: str
    tallies: pd.DataFrame
    comments: pd.DataFrame
    scores: pd.DataFrame
    audit: pd.DataFrame


def caller(engine: Engine, token: str | None, roles: tuple[str, ...]) -> Any:
    """The caller (``UserPublic``) if their role is one of ``roles``; ``NotAuthenticated`` / ``PermissionDenied``."""
    from studio.services.auth import require_role

    return require_role(current_user(engine, token), *roles)


def shorten(value: Any, limit: int = CELL_CHARS) -> Any:
    """Text cut to ``limit`` characters (with an ellipsis); other values unchanged."""
    if isinstance(value, str) and len(value) > limit:
        return value[: limit - 1] + "…"
    return value


def display_frame(rows: list[dict[str, Any]] | pd.DataFrame, columns: list[str] | None = None) -> pd.DataFrame:
    """Rows as a DataFrame for display: long text cut, nested values as JSON text, floats rounded to 4 places."""
    frame = rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame.from_records(rows, columns=columns)
    for column in frame.columns:
        frame[column] = frame[column].map(_display_cell)
    return frame


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 4)
    if isinstance(value, list | tuple):
        return [_rounded(part) for part in value]
    if isinstance(value, dict):
        return {key: _rounded(part) for key, part in value.items()}
    return value


def _display_cell(value: Any) -> Any:
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars and arrays
        value = value.tolist()
    value = _rounded(value)
    if isinstance(value, dict | list | tuple):
        value = json.dumps(value, ensure_ascii=False, default=str)
    return shorten(value)


def parse_agreement(text: str | float | None) -> float | None:
    """The "agreement below" filter as typed: empty means any; else a number in [0, 1] (``InvalidInput`` if not)."""
    from studio.services.errors import InvalidInput

    if text is None or (isinstance(text, str) and not text.strip()):
        return None
    try:
        value = float(text)
    except ValueError:
        raise InvalidInput(f"agreement_below: {str(text)[:40]!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise InvalidInput("agreement_below: must lie in 0-1")
    return value


def _pages(total: int, page_size: int) -> int:
    return max(1, math.ceil(total / page_size))


def browse_scenarios(
    engine: Engine,
    token: str | None,
    *,
    subtask: str | None = None,
    status: str | None = None,
    agreement_below: float | str | None = None,
    disagreement: bool | None = None,
    page: int = 1,
    page_size: int = 25,
) -> TablePage:
    """One page of scenarios with their review state, filtered as :func:`studio.services.curation.browse_scenarios`
    (``agreement_below`` may be the text typed into the filter, see :func:`parse_agreement`). A page past the
    end shows the last page."""
    from studio.db import read_session
    from studio.services import curation

    user = caller(engine, token, READ_ROLES)
    filters = {
        "subtask": subtask or None,
        "status": status or None,
        "disagreement": disagreement,
        "agreement_below": parse_agreement(agreement_below),
    }
    with read_session(engine) as session:
        found = curation.browse_scenarios(session, user=user, page=page, page_size=page_size, **filters)
        if found.total and not found.rows:
            found = curation.browse_scenarios(
                session, user=user, page=_pages(found.total, page_size), page_size=page_size, **filters
            )
    frame = display_frame(found.rows)[SCENARIO_COLUMNS] if found.rows else pd.DataFrame(columns=SCENARIO_COLUMNS)
    return TablePage(frame, found.total, found.page, _pages(found.total, page_size))


def browse_responses(
    engine: Engine,
    token: str | None,
    *,
    subtask: str | None = None,
    flagged: bool | None = None,
    adjudicated: bool | None = None,
    page: int = 1,
    page_size: int = 25,
) -> TablePage:
    """One page of responses with their scores (``flagged``: flagged for adjudication or not)."""
    from studio.db import read_session
    from studio.services import curation

    user = caller(engine, token, READ_ROLES)
    with read_session(engine) as session:
        found = curation.browse_responses(
            session,
            user=user,
            subtask=subtask or None,
            flagged=flagged,
            adjudicated=adjudicated,
            page=page,
            page_size=page_size,
        )
    columns = RESPONSE_COLUMNS
    return TablePage(
        display_frame(found.rows)[columns] if found.rows else pd.DataFrame(columns=columns),
        found.total,
        found.page,
        _pages(found.total, page_size),
    )


def _tally_rows(campaigns: list[dict[str, Any]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    tallies, comments = [], []
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
    return (display_frame(tallies, TALLY_COLUMNS), pd.DataFrame.from_records(comments, columns=COMMENT_COLUMNS))


def _status_html(detail: dict[str, Any]) -> str:
    status = detail["status"] or {}
    parts = [f"<b>Status:</b> {escape_text(status.get('status', 'pending'))}"]
    if status.get("decided_by"):
        parts.append(f"<b>decided by</b> {escape_text(status['decided_by'])}")
    if status.get("reason"):
        parts.append(f"<b>reason:</b> {escape_text(status['reason'])}")
    if status.get("edits"):
        parts.append(f"<b>edited fields:</b> {escape_text(', '.join(sorted(status['edits'])))}")
    if detail["base_changed"]:
        parts.append("<b>the ingested text changed under this edit</b>")
    return '<div class="h2h-curate-status">' + " · ".join(parts) + "</div>"


def scenario_view(engine: Engine, token: str | None, scenario_id: str) -> ScenarioView:
    """One scenario as the curator sees it: text (with edits applied), tallies, agreement, comments, scores, log."""
    from studio.db import read_session
    from studio.services import curation

    user = caller(engine, token, READ_ROLES)
    with read_session(engine) as session:
        detail = curation.scenario_detail(session, user=user, scenario_id=scenario_id)
    record = detail["scenario"]
    tallies, comments = _tally_rows(detail["campaigns"])
    scores = display_frame(detail["responses"], ["id", *SCORE_COLUMNS])
    return ScenarioView(
        scenario_id=scenario_id,
        item_html=render_item({**record, "tags": _shown_tags(record.get("tags"))}),
        persona_html=render_persona(record.get("persona")),
        status_html=_status_html(detail),
        tallies=tallies,
        comments=comments,
        scores=scores.drop(columns=["id"]),
        audit=audit_log(engine, token, scenario_id=scenario_id),
    )


def _shown_tags(tags: Any) -> dict[str, Any]:
    if not isinstance(tags, dict):
        return {}
    return {name: value for name, value in tags.items() if value not in (None, False, "", [])}


def audit_log(engine: Engine, token: str | None, *, scenario_id: str | None = None, limit: int = 200) -> pd.DataFrame:
    """The newest audit entries (of one scenario when given): when, who, what, before, after and why."""
    from studio.db import read_session
    from studio.services import curation

    user = caller(engine, token, READ_ROLES)
    entity = "scenario" if scenario_id is not None else None
    with read_session(engine) as session:
        entries = curation.list_audit_entries(session, user=user, entity=entity, entity_id=scenario_id, limit=limit)
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


def parse_edits(text: str | None) -> dict[str, Any]:
    """The edits a curator typed: a JSON object of field → new value (``InvalidInput`` when it is not one)."""
    from studio.services.errors import InvalidInput

    if not text or not text.strip():
        return {}
    try:
        edits = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidInput(f"edits: not valid JSON ({error.msg} at line {error.lineno} column {error.colno})") from None
    if not isinstance(edits, dict):
        raise InvalidInput('edits: must be a JSON object such as {"reference": "new text"}')
    return edits


def decide(
    engine: Engine,
    token: str | None,
    scenario_id: str | None,
    action: str,
    reason: str | None,
    edits_text: str | None = None,
) -> str:
    """Accept, edit or reject a scenario with a required reason (audit-logged); return a confirmation line."""
    from studio.db import write_session
    from studio.services import curation
    from studio.services.errors import InvalidInput

    user = caller(engine, token, CURATE_ROLES)
    if not scenario_id:
        raise InvalidInput("scenario_id: open a scenario first")
    edits = parse_edits(edits_text) if action == "edit" else None
    with write_session(engine) as session:
        status = curation.decide_scenario(
            session, user=user, scenario_id=scenario_id, action=action, reason=reason or "", edits=edits
        )
    return f"{scenario_id}: {action} saved (status {status.status})."


def publish(engine: Engine, token: str | None, name: str | None, note: str | None) -> str:
    """Publish the accepted scenarios as an immutable version; return what happened."""
    from studio.db import write_session
    from studio.services import curation

    user = caller(engine, token, CURATE_ROLES)
    with write_session(engine) as session:
        version, created = curation.publish_dataset(
            session, user=user, name=name or "", note=(note or "").strip() or None
        )
    if created:
        return f"Published {version.name}: {version.n_scenarios} scenarios (sha256 {version.content_hash[:12]})."
    return f"Nothing new to publish: the accepted scenarios are already version {version.name}."


def dataset_versions(engine: Engine, token: str | None) -> pd.DataFrame:
    """Every published version, newest first: name, scenarios, created_at, created_by, note, content hash."""
    from studio.db import read_session
    from studio.services import curation

    user = caller(engine, token, READ_ROLES)
    with read_session(engine) as session:
        versions = curation.list_dataset_versions(session, user=user)
    rows = [
        {
            "name": v.name,
            "scenarios": v.n_scenarios,
            "created_at": v.created_at.isoformat(timespec="seconds"),
            "created_by": v.created_by,
            "note": v.note,
            "content_hash": v.content_hash,
        }
        for v in reversed(versions)
    ]
    return display_frame(rows, VERSION_COLUMNS)


def safe_filename(text: str) -> str:
    """``text`` reduced to letters, digits, ``.``, ``_`` and ``-`` (others become ``_``) for a file name."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", text).strip("._")
    return cleaned[:80] or "download"


def new_download_dir(*, keep_seconds: float = DOWNLOAD_KEEP_SECONDS) -> Path:
    """A fresh private directory for one request's download (never a path from the client).

    Gradio copies a returned file into its own cache at once, so download directories older than
    ``keep_seconds`` are no longer needed and are removed here, keeping the temporary folder small.
    """
    root = Path(tempfile.gettempdir())
    cutoff = time.time() - keep_seconds
    for old in root.glob(DOWNLOAD_PREFIX + "*"):
        with contextlib.suppress(OSError):
            if old.is_dir() and old.stat().st_mtime < cutoff:
                shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=DOWNLOAD_PREFIX))


def download_version(engine: Engine, token: str | None, version: str | None, fmt: str, directory: Path) -> Path:
    """Write a published version's scenarios to ``directory`` as CSV (formula-safe), JSONL or Parquet.

    The file name is built here from the format, never taken from the caller. JSONL keeps nested fields
    (history, tags) as JSON; CSV and Parquet carry them as JSON text.
    """
    from studio.db import read_session
    from studio.results.export_formats import write_table
    from studio.services import curation
    from studio.services.errors import InvalidInput

    user = caller(engine, token, READ_ROLES)
    if fmt not in DOWNLOAD_FORMATS:
        raise InvalidInput(f"format: {fmt!r} is not one of {', '.join(DOWNLOAD_FORMATS)}")
    if not version:
        raise InvalidInput("version: choose a published version")
    with read_session(engine) as session:
        records = curation.dataset_version_records(session, user=user, version=version)
    target = directory / f"h2h-scenarios-{safe_filename(version)}.{fmt}"
    if fmt == "jsonl":
        from pipeline.jsonl import write_records

        write_records(target, records)
        return target
    flat = [
        {
            key: json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else value
            for key, value in record.items()
        }
        for record in records
    ]
    return write_table(flat, target)


def campaign_names(engine: Engine, token: str | None) -> list[str]:
    """Every campaign (open or closed) the caller may read, by name."""
    from studio.db import read_session
    from studio.services.campaigns import list_campaigns

    user = caller(engine, token, READ_ROLES)
    with read_session(engine) as session:
        return [campaign.name for campaign in list_campaigns(session, user=user, include_closed=True)]


def run_aggregation(engine: Engine, token: str | None, campaign: str | None) -> pd.DataFrame:
    """Aggregate one campaign (or all when ``campaign`` is empty) and return one summary row per campaign."""
    from studio.services.aggregation import aggregate

    user = caller(engine, token, CURATE_ROLES)
    summaries = aggregate(engine, campaign=campaign or None, user=user)
    rows = [summary.model_dump(exclude={"table"}) for summary in summaries]
    return display_frame(
        rows,
        [
            "campaign",
            "workflow_type",
            "rule",
            "answers",
            "complete_items",
            "incomplete_items",
            "changed",
            "review_campaign",
            "review_items_opened",
            "statuses",
            "pending_adjudication",
        ],
    )
