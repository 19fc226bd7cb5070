"""Safe rendering of untrusted text (model output, dataset text) for the browser.

Every function here returns an HTML string in which *all* text that came from data has been
escaped: ``<``, ``>``, ``&``, quotes, and also ``$``, ``{``, ``}`` and backticks, because Gradio's
``gr.HTML`` treats its template as a JavaScript template string / Handlebars template and must not
find any placeholder syntax inside data. Newlines are kept as ``<br>``. The only tags in the output
are the fixed ones written in this module.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import Any

from studio.services.text import marker, visible_text

#: Characters that html.escape leaves alone but a template engine would interpret.
_TEMPLATE_ENTITIES = {"$": "&#36;", "{": "&#123;", "}": "&#125;", "`": "&#96;", "\\": "&#92;"}
_TEMPLATE_TABLE = {ord(char): entity for char, entity in _TEMPLATE_ENTITIES.items()}


def _invisible_span(char: str) -> str:
    """An invisible character as the page draws it: its ``⟨U+202E⟩`` marker, highlighted."""
    return f'<span class="h2h-invisible">{marker(char)}</span>'


ROLE_LABELS = {"user": "User", "assistant": "Companion"}


def escape_text(text: Any) -> str:
    """Return ``text`` as inert HTML: every markup and template character escaped, newlines as ``<br>``, and every
    character a person cannot see shown as a highlighted ``⟨U+202E⟩`` (the studio's one rule:
    :func:`studio.services.text.visible_text`).

    ``None`` renders as the empty string; any other value is converted with ``str`` first.
    """
    if text is None:
        return ""
    escaped = html.escape(str(text), quote=True).translate(_TEMPLATE_TABLE)
    escaped = visible_text(escaped, shown=_invisible_span)  # markup and markers hold no invisible character
    return escaped.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>")


def visible_controls(text: str) -> str:
    """``text`` with each invisible character written as ``⟨U+202E⟩`` (plain text, for a label the page shows as text:
    ``abc\u202eexe.txt`` would otherwise read "abctxt.exe"): :func:`studio.services.text.visible_text`."""
    return visible_text(text)


def escape_attribute(text: Any) -> str:
    """Return ``text`` as an inert HTML attribute value (to put between double quotes): markup, quotes and template
    characters escaped; the browser reads the attribute back as ``text`` exactly."""
    return html.escape(str(text), quote=True).translate(_TEMPLATE_TABLE)


CONTEXT_LABELS = {
    "date": "Date",
    "location": "Location",
    "memories": "Memories of the user",
    "schedule": "The user's schedule",
    "routine": "The user's routine",
    "hobbies": "Hobbies",
    "feedback": "The user's feedback",
}
TAG_LABELS = {
    "language": "Language",
    "emotion": "Emotion",
    "instruction_kind": "Kind of request",
    "high_risk": "High risk",
    "risk_kind": "Risk",
}

VOCABULARY_TAGS = frozenset({"instruction_kind", "risk_kind"})

#: The benchmark's subtasks as a rater reads them (the crowd vote's options say the same: a test keeps them equal).
SUBTASK_LABELS = {
    "dialogue_base": "Dialogue — everyday chat",
    "dialogue_emotion": "Dialogue — emotional support",
    "dialogue_schedule": "Dialogue — schedule and plans",
    "recollection_synthesis": "Recollection — combining memories",
    "recollection_refinement": "Recollection — refining a memory",
    "recollection_initialization": "Recollection — first memories",
    "itinerary_basic": "Itinerary — basic (level I)",
    "itinerary_middle": "Itinerary — middle (level II)",
    "itinerary_advanced": "Itinerary — advanced (level III)",
    "itinerary_response": "Itinerary — responding to feedback",
    "itinerary_initialization": "Itinerary — starting a plan",
}


def _cut_note(cut: Mapping[str, Any] | None) -> str:
    if not cut:
        return ""
    return (
        f'<div class="h2h-cut">Cut here: showing the first {int(cut["shown_chars"]):,} of '
        f"{int(cut['total_chars']):,} characters. Press “Show the whole text” to see all of it.</div>"
    )


#: A text longer than this is drawn in blocks of about this many characters that the browser lays out only when
#: scrolled to (``content-visibility: auto``): one 10 MB paragraph takes Chromium minutes to lay out, blocks seconds.
CHUNK_CHARS = 20_000


def _chunks(text: str) -> list[str]:
    """``text`` in pieces of at most :data:`CHUNK_CHARS`, each ending at a line break where one is near."""
    pieces, start = [], 0
    while start < len(text):
        end = min(start + CHUNK_CHARS, len(text))
        if end < len(text):
            newline = text.rfind("\n", start + CHUNK_CHARS // 2, end)
            end = newline + 1 if newline >= 0 else end
        pieces.append(text[start:end])
        start = end
    return pieces


def text_html(text: Any) -> str:
    """``text`` as :func:`escape_text` renders it; a long one in lazily drawn blocks (:data:`CHUNK_CHARS`)."""
    if text is None or len(str(text)) <= CHUNK_CHARS:
        return escape_text(text)
    return "".join(f'<div class="h2h-chunk">{escape_text(piece)}</div>' for piece in _chunks(str(text)))


def _bubble(kind: str, label: str, text: Any, cut: Mapping[str, Any] | None = None) -> str:
    return (
        f'<div class="h2h-turn h2h-{kind}"><div class="h2h-who">{escape_text(label)}</div>'
        f'<div class="h2h-text">{text_html(text)}</div>{_cut_note(cut)}</div>'
    )


def render_history(turns: Iterable[Mapping[str, Any]], cuts: Mapping[str, Any] | None = None) -> str:
    """Render earlier conversation turns (``{"role", "content"}`` mappings) as escaped chat bubbles; ``cuts`` (by
    field path, see :func:`studio.services.content.cut_long_texts`) says which were cut."""
    parts = []
    for index, turn in enumerate(turns):
        role = str(turn.get("role", "user"))
        kind = "user" if role == "user" else "assistant"
        cut = (cuts or {}).get(f"history.{index}.content")
        parts.append(_bubble(kind, ROLE_LABELS.get(role, role), turn.get("content"), cut))
    return "".join(parts)


def render_context(context: Any) -> str:
    """Render a scenario's context (what the companion was told: date, location, memories, schedule, routine,
    hobbies, feedback) as escaped labelled text; lists as bullet lists."""
    if not isinstance(context, Mapping) or not context:
        return '<div class="h2h-context h2h-empty">No memories, schedule or other context for this item.</div>'
    parts = ['<dl class="h2h-context">']
    for name, value in context.items():
        parts.append(f'<dt class="h2h-context-{escape_text(name)}">{escape_text(CONTEXT_LABELS.get(name, name))}</dt>')
        if isinstance(value, list):
            entries = "".join(f"<li>{escape_text(entry)}</li>" for entry in value)
            parts.append(f"<dd><ul>{entries}</ul></dd>")
        else:
            parts.append(f"<dd>{escape_text(value)}</dd>")
    parts.append("</dl>")
    return "".join(parts)


def tag_text(name: str, value: Any) -> str:
    """A scenario tag as a person reads it: ``High risk: yes``, ``Kind of request: implicit help``."""
    if isinstance(value, bool):
        shown = "yes" if value else "no"
    else:  # the vocabulary tags are ids (implicit_help, suicidal_ideation); free text stays as written
        shown = str(value).replace("_", " ") if name in VOCABULARY_TAGS else str(value)
    return f"{TAG_LABELS.get(name, name.replace('_', ' ').capitalize())}: {shown}"


def render_persona(persona: Any) -> str:
    """Render the companion's character sheet as escaped text (shown inside a collapsible block)."""
    if not persona:
        return '<div class="h2h-persona h2h-empty">No persona.</div>'
    return f'<div class="h2h-persona">{escape_text(persona)}</div>'


def _response_text(response: Any) -> Any:
    """A response is either its text or a mapping holding ``text`` (plus any revealed fields)."""
    return response.get("text") if isinstance(response, Mapping) else response


def _revealed(response: Any) -> str:
    """Fields a schema chose to reveal beside a response (model, variant, scores), as escaped text."""
    if not isinstance(response, Mapping):
        return ""
    extras = {name: value for name, value in response.items() if name != "text"}
    if not extras:
        return ""
    shown = "; ".join(f"{name}: {value}" for name, value in sorted(extras.items()))
    return f'<div class="h2h-revealed">{escape_text(shown)}</div>'


def _judged(kind: str, label: str, response: Any, cut: Mapping[str, Any] | None) -> str:
    return _bubble(kind, label, _response_text(response), cut) + _revealed(response)


def cuts_by_field(content: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The texts cut for display in ``content`` (its ``cut`` list), by field path."""
    cuts = content.get("cut")
    if not isinstance(cuts, list):
        return {}
    return {str(cut.get("field")): cut for cut in cuts if isinstance(cut, Mapping)}


def render_item(content: Mapping[str, Any]) -> str:
    """Render one item's content as a chat: history, the user's input, then what is being judged.

    ``content`` is what :func:`studio.services.content.build_item_content` hands out: ``history``,
    ``user_input`` and one of ``response`` (a response item), ``response_a``/``response_b`` (a pair,
    already in this person's A/B order) or ``reference`` (a scenario item, judged on its reference).
    A response is its text or a mapping with ``text`` and whatever the schema reveals. ``subtask``
    and ``tags`` show when present; a text cut for display (``cut``) says so under it. Other keys are ignored
    (the context and persona are the side panel's: :func:`render_context`, :func:`render_persona`).
    """
    cuts = cuts_by_field(content)
    parts = ['<div class="h2h-chat">']
    if content.get("subtask"):
        subtask = str(content.get("subtask"))
        parts.append(f'<div class="h2h-subtask">Subtask: {escape_text(SUBTASK_LABELS.get(subtask, subtask))}</div>')
    tags = content.get("tags")
    if isinstance(tags, Mapping) and tags:
        shown = "; ".join(tag_text(name, value) for name, value in tags.items() if value is not None)
        parts.append(f'<div class="h2h-subtask">{escape_text(shown)}</div>')
    parts.append(render_history(content.get("history") or [], cuts))
    parts.append(_bubble("user h2h-input", "User (current input)", content.get("user_input"), cuts.get("user_input")))
    if content.get("response_a") is not None or content.get("response_b") is not None:
        parts.append('<div class="h2h-pair">')
        for side in ("a", "b"):
            response = content.get(f"response_{side}")
            cut = cuts.get(f"response_{side}.text")
            parts.append(_judged("assistant h2h-candidate", f"Response {side.upper()}", response, cut))
        parts.append("</div>")
    elif content.get("response") is not None:
        label = "Companion response (to rate)"
        parts.append(_judged("assistant h2h-judged", label, content.get("response"), cuts.get("response.text")))
    if content.get("reference") is not None:
        reference = content.get("reference")
        parts.append(_bubble("assistant h2h-reference", "Reference response", reference, cuts.get("reference")))
    parts.append("</div>")
    return "".join(parts)


def render_item_id(item_id: int) -> str:
    """The item's id as the page shows it above the chat ("Item 12"), so a person can name the item they mean."""
    return f'<div class="h2h-item-id">Item {int(item_id)}</div>'


def _duration(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60:02d} s"


def render_progress(
    *,
    mine: int,
    answers: int,
    items: int,
    complete_items: int,
    left: int | None = None,
    median_seconds: float | None = None,
    stopped_early: int | None = None,
) -> str:
    """Render progress: this person's answers, the items left for them and their median time per item, then the
    campaign's answers and complete items (complete as ``h2h aggregate`` counts it; with ``stopped_early``, how many
    of them its workflow's stopping rule completed before their quota)."""
    percent = 0 if items <= 0 else round(100 * complete_items / items)
    own = [f"You answered <b>{int(mine)}</b> item(s)."]
    if left is not None:
        own.append(f"<b>{int(left)}</b> of {int(items)} left for you.")
    if median_seconds is not None:
        own.append(f"Median time per item: <b>{_duration(float(median_seconds))}</b>.")
    return (
        '<div class="h2h-progress">'
        f'<span class="h2h-mine">{" ".join(own)}</span> '
        f'<span class="h2h-campaign">Campaign: <b>{int(answers)}</b> answers; {int(complete_items)} / {int(items)} '
        f"items complete ({percent}%){_stopped_words(stopped_early)}.</span></div>"
    )


def _stopped_words(stopped_early: int | None) -> str:
    return "" if stopped_early is None else f" (stopped early: {int(stopped_early)})"


def render_message(text: Any, *, kind: str = "info") -> str:
    """Render a status line (e.g. "No more items") with its text escaped."""
    safe_kind = kind if kind in {"info", "error", "done"} else "info"
    return f'<div class="h2h-message h2h-{safe_kind}">{escape_text(text)}</div>'


#: What a page says when its sign-in has ended (an admin deactivated the person, reset their password or ended their
#: sessions; or it expired): fixed text, the sign-in page opened in a new tab so the page keeps what was typed.
SIGNED_OUT_HTML = (
    '<div class="h2h-message h2h-error" role="alert">You were signed out — '
    '<a href="/login" target="_blank" rel="noopener">sign in again</a> (it opens in a new tab), then press Submit '
    "here: what you typed is still in the form. Nothing was stored.</div>"
)


CHAT_CSS = """
.h2h-chat { display: flex; flex-direction: column; gap: 8px; }
.h2h-turn { border-radius: 8px; padding: 8px 12px; max-width: 92%; white-space: normal; word-break: break-word; }
.h2h-user { background: #eef2ff; align-self: flex-start; }
.h2h-assistant { background: #f0fdf4; align-self: flex-end; }
.h2h-judged, .h2h-candidate { border: 2px solid #16a34a; }
.h2h-reference { background: #fefce8; }
.h2h-revealed { font-size: 0.8em; color: #64748b; align-self: flex-end; }
.h2h-input { border: 2px solid #6366f1; }
.h2h-who { font-size: 0.8em; font-weight: 600; color: #475569; margin-bottom: 2px; }
.h2h-subtask { font-size: 0.8em; color: #64748b; }
.h2h-item-id { font-size: 0.85em; font-weight: 600; color: #475569; margin-bottom: 4px; }
.h2h-pair { display: flex; flex-direction: column; gap: 8px; }
.h2h-message.h2h-error { color: #b91c1c; }
.h2h-progress { font-size: 0.95em; }
.h2h-context dt { font-weight: 600; margin-top: 6px; }
.h2h-context dd { margin: 0 0 0 8px; }
.h2h-context ul { margin: 0; padding-left: 18px; }
.h2h-invisible { background: #fde68a; color: #7c2d12; font-family: monospace; font-size: 0.85em; border-radius: 3px; }
.h2h-text { max-height: 32em; overflow-y: auto; }
.h2h-chunk { content-visibility: auto; contain-intrinsic-size: auto 600px; }
.h2h-cut { margin-top: 6px; font-size: 0.85em; color: #92400e; font-style: italic; }
.h2h-field-error { color: #b91c1c; font-weight: 600; margin-top: -4px; }
/* Gradio may still lay out an empty gr.HTML (a 20 px band): an error line without an error takes no room. */
.h2h-field-error-box:not(:has(.h2h-field-error)) { display: none !important; }
"""
