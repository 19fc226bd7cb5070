"""The live page's pure view builders: a :class:`~studio.usecases.live.LiveSessionView` turned into escaped HTML
and plain values (no Gradio here, so each is unit-tested on its own).

Every text a person or a model wrote, and every dataset text, goes through :mod:`studio.ui.render`, which escapes
it and shows invisible characters as ``⟨U+…⟩``: nothing here is rendered as HTML or Markdown. Nothing here names
the companion's model or the variant (the rater's view carries neither).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from studio.ui.forms import checked_form
from studio.ui.render import (
    cuts_by_field,
    escape_text,
    render_context,
    render_history,
    render_message,
    render_persona,
    text_html,
)
from studio.usecases.live import LiveSessionView, LiveTurnView
from studio.workflows import Question

#: Said when the picker's campaign has no scenario left for the caller.
NOTHING_LEFT = "No scenario is left for you in this campaign. Thank you for your ratings!"
#: Said on a resumed conversation whose last message has no reply yet.
REPLY_PENDING = "Your last message has no reply yet (the companion failed or the page was closed): press Retry."

LIVE_CSS = """
.h2h-care { background: #fff7ed; border: 1px solid #fdba74; border-radius: 8px; padding: 8px 12px; }
.h2h-live-counter { font-weight: 600; color: #334155; }
.h2h-streaming { border: 2px dashed #16a34a; }
.h2h-live-empty { color: #64748b; font-style: italic; }
.h2h-scenario h4 { margin: 8px 0 4px 0; }
"""


def care_note_html(note: str) -> str:
    """The care note for the rater (escaped), shown at the top of the page at all times."""
    return f'<div class="h2h-care" role="note"><b>Take care.</b> {escape_text(note)}</div>'


def scenario_html(content: Mapping[str, Any]) -> str:
    """The scenario as context for the rater: the companion's persona, the earlier conversation (as the other pages
    draw a chat) and what the companion knew (memories, schedule, date, place)."""
    history = content.get("history") or []
    earlier = (
        f'<div class="h2h-chat">{render_history(history, cuts_by_field(content))}</div>'
        if history
        else '<div class="h2h-live-empty">No earlier conversation.</div>'
    )
    return (
        '<div class="h2h-scenario">'
        f"<h4>Persona (the companion's character)</h4>{render_persona(content.get('persona'))}"
        f"<h4>Earlier conversation</h4>{earlier}"
        f"<h4>What the companion knew</h4>{render_context(content.get('context'))}"
        "</div>"
    )


def _bubble(kind: str, label: str, text: str) -> str:
    return (
        f'<div class="h2h-turn {kind}"><div class="h2h-who">{escape_text(label)}</div>'
        f'<div class="h2h-text">{text_html(text)}</div></div>'
    )


def turn_label(turn: LiveTurnView) -> str:
    """How a message is labelled: "You" or "Companion — reply n" (n: what the harmful marks name)."""
    return "You" if turn.role == "user" else f"Companion — reply {turn.number}"


def conversation_html(turns: Sequence[LiveTurnView], *, streaming: str | None = None) -> str:
    """The conversation so far as chat bubbles; ``streaming`` (not None): the companion's reply as it arrives,
    drawn after the last message in a bubble marked as still being written."""
    parts = ['<div class="h2h-chat h2h-live-chat">']
    for turn in turns:
        kind = "h2h-user" if turn.role == "user" else "h2h-assistant h2h-live-reply"
        parts.append(_bubble(kind, turn_label(turn), turn.text))
    if streaming is not None:
        number = sum(1 for turn in turns if turn.role == "assistant") + 1
        parts.append(_bubble("h2h-assistant h2h-streaming", f"Companion — reply {number} (writing…)", streaming))
    if not turns and streaming is None:
        parts.append('<div class="h2h-live-empty">No messages yet: send the opening line below.</div>')
    parts.append("</div>")
    return "".join(parts)


def may_send(view: LiveSessionView) -> bool:
    """Whether the rater may send a message now: the session is open, the last message has its reply and the
    conversation has turns left."""
    return view.status == "open" and not view.reply_pending and view.turns_done < view.max_turns


def counter_html(view: LiveSessionView) -> str:
    """ "Turn n of max (you can rate after min)", or that the turns are all done or the session is rated."""
    if view.status == "rated":
        words = "This conversation is rated. Thank you."
    elif view.turns_done >= view.max_turns:
        words = f"All {view.max_turns} turns done: please rate the conversation below."
    else:
        turn = view.turns_done + 1  # an unanswered message belongs to the turn in progress
        words = f"Turn {turn} of {view.max_turns} (you can rate after {view.min_turns})"
        if view.can_rate:
            words += ": you can rate now, or keep talking"
    return f'<div class="h2h-live-counter">{escape_text(words)}</div>'


def harmful_choices(turns: Iterable[LiveTurnView]) -> list[tuple[str, str]]:
    """The "this reply was harmful" options: one per companion reply, valued "1".."n" as the turn marks store."""
    return [(f"Reply {turn.number} was harmful", str(turn.number)) for turn in turns if turn.role == "assistant"]


def kept_marks(marks: Iterable[Any] | None, turns: Iterable[LiveTurnView]) -> list[str]:
    """The marks a rater ticked that still name a reply shown (in reply order)."""
    valid = [value for _label, value in harmful_choices(turns)]
    ticked = {str(mark) for mark in marks or []}
    return [value for value in valid if value in ticked]


def opening_text(view: LiveSessionView) -> str:
    """What the message box starts with: the scenario's opening line before the first message, else nothing."""
    return str(view.content.get("opening_line") or "") if not view.turns else ""


def status_html(view: LiveSessionView | None, note: str | None = None) -> str:
    """The message line for ``view``: ``note`` when given, else what the rater should do next."""
    if view is None:
        return render_message(note or NOTHING_LEFT, kind="done")
    if note is not None:
        return render_message(note)
    if view.reply_pending:
        return render_message(REPLY_PENDING, kind="error")
    if view.status == "rated":
        return render_message("Rated. Thank you!", kind="done")
    return render_message(view.instructions.strip() or "Talk with the companion, then rate the conversation.")


def rating_answers(
    questions: Sequence[Question], values: Sequence[Any], *, marks: Iterable[Any], turn_marks: str | None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The rating form's answers (unanswered and hidden questions left out, as :func:`studio.ui.forms.
    answers_from_form` does) with the ticked replies under ``turn_marks``, and each problem by question id (empty:
    it can be submitted)."""
    answers, problems = checked_form(questions, values)
    ticked = sorted({str(mark) for mark in marks}, key=lambda mark: (len(mark), mark))
    if turn_marks is not None and ticked:
        answers[turn_marks] = ticked
    return answers, problems


def problems_text(questions: Sequence[Question], problems: Mapping[str, str]) -> str:
    """One line for the form's problems: "Not saved: <prompt>: <problem>; …"."""
    said = [f"{question.prompt}: {problems[question.id]}" for question in questions if question.id in problems]
    return "Not saved: " + "; ".join(said)
