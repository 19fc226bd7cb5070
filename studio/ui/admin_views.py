"""The admin page's views: use-case results (``studio.usecases.admin`` / ``imports``) turned into component values.

Tables are DataFrames of plain text (:mod:`studio.ui.tables`: shown as text nodes, never HTML or Markdown); messages,
import problems and notes are HTML escaped by :mod:`studio.ui.render`. Nothing here opens a session or checks a role.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import pandas as pd

from studio.services.campaigns import CampaignOverview
from studio.services.curation import Page
from studio.services.progress import QuotaReport
from studio.ui.forms import read_number
from studio.ui.render import escape_text
from studio.ui.tables import TablePage, display_frame, table_page
from studio.usecases.admin import PasswordSet, UserRow
from studio.usecases.imports import ImportCheck

USER_COLUMNS: list[str] = ["username", "role", "active", "last_login", "created_at"]
AUDIT_COLUMNS: list[str] = ["at", "actor", "action", "entity", "entity_id", "detail"]
CAMPAIGN_COLUMNS: list[str] = [
    "name",
    "workflow",
    "status",
    "roles",
    "people_per_item",
    "complete_at",
    "queue",
    "items",
    "answers",
    "complete",
    "people",
]
#: Inline styles (fixed text, never data): the page's own stylesheet is shared with the other tabs.
_PROBLEM_LIST_STYLE = "color: #991b1b; max-height: 28em; overflow-y: auto; padding-left: 3.5em; margin: 0.5em 0;"
_PROBLEM_STYLE = "color: #991b1b; font-family: ui-monospace, monospace; white-space: pre-wrap; word-break: break-all;"


def when(value: datetime | None) -> str:
    """A timestamp as ``2026-11-24 10:02 UTC`` (``never`` for none)."""
    return value.strftime("%Y-%m-%d %H:%M UTC") if value is not None else "never"


def users_frame(rows: Iterable[UserRow]) -> pd.DataFrame:
    """The users table: name (hidden characters written out), role, active, last sign-in, created."""
    records = [
        {
            "username": row.shown_name,
            "role": row.role,
            "active": "yes" if row.is_active else "no",
            "last_login": when(row.last_login),
            "created_at": when(row.created_at),
        }
        for row in rows
    ]
    return display_frame(records, USER_COLUMNS) if records else pd.DataFrame(columns=USER_COLUMNS)


def audit_page(found: Page) -> TablePage:
    """A page of the audit log as the table shows it (details as JSON text)."""
    rows = [{**row, "at": when(row["at"])} for row in found.rows]
    return table_page(found.model_copy(update={"rows": rows}), AUDIT_COLUMNS)


def campaigns_frame(overviews: Iterable[CampaignOverview]) -> pd.DataFrame:
    """The campaigns table: workflow, status, roles that may work, people per item, the answers that complete an item,
    the queue's order, progress — complete items in words, with those a stopping rule stopped early — and people who
    answered."""
    records: list[dict[str, Any]] = [
        {
            "name": overview.name,
            "workflow": overview.schema_name,
            "status": overview.status,
            "roles": ", ".join(overview.eligible_roles),
            "people_per_item": overview.people_per_item,
            "complete_at": overview.complete_at,
            "queue": overview.assignment,
            "items": overview.progress.get("items", 0),
            "answers": overview.progress.get("answers", 0),
            "complete": overview.complete,
            "people": overview.people,
        }
        for overview in overviews
    ]
    return display_frame(records, CAMPAIGN_COLUMNS) if records else pd.DataFrame(columns=CAMPAIGN_COLUMNS)


def closing_preview(name: str, quota: QuotaReport) -> str:
    """What closing ``name`` now would do to its items, said before the admin closes it."""
    if not quota.below_quota:
        return f"Closing {name} now: every answered item has its quota of {quota.complete_at}."
    return (
        f"Closing {name} now: {quota.below_quota} of {quota.items} item(s) are answered but below their quota of "
        f"{quota.complete_at}. They stay undecided unless you tick 'decide the items below quota' before closing."
    )


def message_html(text: str, *, kind: str = "done") -> str:
    """A status line for the page (escaped): ``done`` or ``error``."""
    safe_kind = kind if kind in {"done", "error", "info"} else "info"
    return f'<div class="h2h-message h2h-{safe_kind}" role="status">{escape_text(text)}</div>'


def password_message(outcome: PasswordSet, done: str) -> tuple[str, str | None]:
    """The message after adding a person or resetting a password, and the one-time password to show (or None)."""
    if outcome.password is None:
        return message_html(f"{done} (the password you typed)."), None
    return message_html(f"{done}. Copy the generated password just below now: it is shown this once."), outcome.password


def problems_html(problems: list[str]) -> str:
    """Every problem of an upload, one ``file:line: field: problem`` per item (escaped), numbered."""
    if not problems:
        return ""
    items = "".join(f'<li style="{_PROBLEM_STYLE}">{escape_text(problem)}</li>' for problem in problems)
    heading = escape_text(f"{len(problems)} problem(s); nothing was stored. Fix the file(s) and upload them again.")
    return (
        f'<p class="h2h-message h2h-error" role="alert">{heading}</p>'
        f'<ol class="h2h-import-problems" style="{_PROBLEM_LIST_STYLE}">{items}</ol>'
    )


def check_html(check: ImportCheck) -> str:
    """What a clean upload holds and what importing it will do (escaped)."""
    lines = [
        f"{check.scenarios} scenario(s) in {len(check.files)} file(s): {check.new} new, {check.changed} changed "
        f"(updated in place, audit-logged), {check.unchanged} already stored as they are.",
        *check.notes,
        "Press Import to store them.",
    ]
    return "".join(f'<p class="h2h-import-note">{escape_text(line)}</p>' for line in lines)


def stored_html(added: int, updated: int) -> str:
    return message_html(f"Imported: {added} scenario(s) added, {updated} updated.")


def people_per_item(typed: str | float | None) -> int | None:
    """The "people per item" a person typed: None when empty (the workflow's own), else a whole number (the use case
    says when it is below 1). Raises ``InvalidInput`` naming the field for anything else."""
    from studio.errors import InvalidInput

    number = read_number(typed if typed is not None else "")
    if number is None:
        return None
    if not isinstance(number, float | int) or isinstance(number, bool) or not float(number).is_integer():
        text = str(typed).strip()
        raise InvalidInput(f"people_per_item: {text!r} is not a whole number (leave it empty for the workflow's)")
    return int(number)
