"""What the annotate page shows, as plain values: the panel after an event (item, side panel, progress, message),
a form's field errors, and the list of a person's earlier answers.

Pure functions of the use cases' results (no Gradio, no session): the Annotate tab turns them into component
values (:mod:`studio.ui.annotate`). Every text from data is escaped by :mod:`studio.ui.render`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from studio.errors import NotAuthenticated
from studio.models import AnswerPublic
from studio.ui.forms import choices_of, is_empty
from studio.ui.render import (
    SIGNED_OUT_HTML,
    escape_text,
    render_context,
    render_item,
    render_item_id,
    render_message,
    render_persona,
    render_progress,
    visible_controls,
)
from studio.ui.shown import ShownItem, form_key
from studio.usecases.annotate import AnsweredItem, Offer
from studio.workflows import Pairwise, WorkflowSchema

REVISING = (
    "Revising your answer to item {item}. Submit saves the change; Skip (S) goes back to your next item and "
    "changes nothing."
)


@dataclass(frozen=True)
class Panel:
    """What the annotate page shows after an event; ``form_key`` picks the form (None: no form). ``values``: the
    form's values to show (a revised answer; None: an empty form); ``has_cuts``: a text was cut for display."""

    shown: ShownItem | None
    chat_html: str
    persona_html: str
    context_html: str
    progress_html: str | None  # None: leave the progress as it is
    message_html: str
    form_key: str | None
    has_cuts: bool = False
    values: dict[str, Any] | None = field(default=None)


def progress_html(progress: Mapping[str, Any]) -> str:
    """The progress line of a use case's ``progress`` dict (the person's and the campaign's)."""
    mine, counts = progress["mine"], progress["overall"]
    return render_progress(
        mine=mine["answers"],
        left=mine.get("left"),
        median_seconds=mine.get("median_seconds"),
        answers=counts["answers"],
        items=counts["items"],
        complete_items=counts["complete_items"],
        stopped_early=counts.get("stopped_early"),
    )


def item_panel(shown: ShownItem, content: Mapping[str, Any], *, key: str, message: str, **extra: Any) -> Panel:
    """The panel showing one item's ``content`` (its id above the chat) with the form ``key``."""
    return Panel(
        shown,
        render_item_id(shown.item_id) + render_item(content),
        render_persona(content.get("persona")),
        render_context(content.get("context")),
        extra.pop("progress_html", None),
        message,
        key,
        has_cuts=bool(content.get("cut")),
        **extra,
    )


def panel_of(campaign: str | None, offer: Offer | None, *, note: str | None = None) -> Panel:
    """The page for ``offer`` (the use case's next item, schema and progress); ``note`` (e.g. "Saved.") leads."""
    if not campaign or offer is None:
        return Panel(None, "", "", "", "", render_message("Choose a campaign to start."), None)
    progress = progress_html(offer.progress)
    prefix = f"{note} " if note else ""
    if offer.view is None:
        message = render_message(prefix + "No more items for you in this campaign — thank you!", kind="done")
        return Panel(None, "", "", "", progress, message, None)
    message = render_message(prefix + "Answer the questions below, then submit.")
    shown = ShownItem.of(campaign, offer.view)
    content = dict(offer.view.content)
    return item_panel(shown, content, key=form_key(offer.schema), message=message, progress_html=progress)


def revise_panel(campaign: str, answered: AnsweredItem) -> Panel:
    """The page showing an item the person answered, their answer in the form, ready to revise."""
    message = render_message(REVISING.format(item=answered.item_id))
    shown = ShownItem.to_revise(campaign, answered.item_id)
    key = form_key(answered.schema)
    return item_panel(shown, answered.content, key=key, message=message, values=dict(answered.values))


def refusal_html(error: Exception | str) -> str:
    """The message line for an event that was refused: the error's words (a ServiceError's text is safe to show), or
    for a sign-in that has ended, "You were signed out — sign in again" with a link to the sign-in page."""
    if isinstance(error, NotAuthenticated):
        return SIGNED_OUT_HTML
    return render_message(str(error), kind="error")


def field_error_html(problem: str | None) -> str:
    """The error shown under a question ("" when it has none)."""
    if not problem:
        return ""
    return f'<div class="h2h-field-error" role="alert">{escape_text(problem)}</div>'


def answer_summary(schema: WorkflowSchema, values: Mapping[str, Any]) -> str:
    """An answer in a few words, by option label: ``Keep · Dialogue — everyday chat · …`` (a pairwise choice is
    left out: it is stored as the chosen response's id)."""
    parts = []
    for question in schema.questions:
        value = values.get(question.id)
        if is_empty(value) or isinstance(question, Pairwise):  # stored as a response id, which says nothing here
            continue
        labels = {str(option): label for label, option in choices_of(question)}
        shown = [labels.get(str(entry), str(entry)) for entry in (value if isinstance(value, list) else [value])]
        text = ", ".join(shown)
        parts.append(text if len(text) <= 40 else text[:39] + "…")
    return " · ".join(parts)


def answer_choices(
    schema: WorkflowSchema, answers: list[AnswerPublic], excerpts: dict[int, str] | None = None
) -> list[tuple[str, str]]:
    """The person's answers as (label, item id) choices:
    ``Item 12 “I feel hopeless.” — 2026-11-26 05:50 UTC, revised 1× — Keep · …`` (the item's user input begins it)."""
    choices = []
    for answer in answers:
        when = answer.updated_at.strftime("%Y-%m-%d %H:%M UTC")
        revised = f", revised {answer.revision}×" if answer.revision else ""
        excerpt = (excerpts or {}).get(answer.item_id)
        quoted = f" “{visible_controls(excerpt)}”" if excerpt else ""  # shown as the chat shows it
        summary = answer_summary(schema, answer.values)
        choices.append((f"Item {answer.item_id}{quoted} — {when}{revised} — {summary}", str(answer.item_id)))
    return choices
