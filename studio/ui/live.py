"""The "Live sessions" tab: a rater talks with the companion of a live_session campaign, then rates the conversation
(ARCHITECTURE.md "Live sessions"). Layout, wiring, and the use cases of :mod:`studio.usecases.live` turned into
component values (the HTML: :mod:`studio.ui.live_views`).

"Start / resume" opens the caller's session (the open one is resumed, so a reloaded page continues where it was).
Send streams the reply: the handler is a generator that yields the growing reply into the conversation as the
companion writes it (:func:`studio.usecases.live.send_message`); no transaction is held meanwhile. A companion
failure says so in kind words and shows Retry; the message stays stored. The rating form (one per live workflow, as
the Annotate tab builds one per schema) opens once ``min_turns`` replies are in; its submission id is made when the
form is shown, so a second click stores nothing new. Every handler authorises the caller again through the use
cases; a refusal (429, 409, 422, ...) is said on the message line, never as a crash.
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
import hashlib
import json
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from studio.errors import CompanionUnavailable, ServiceError
from studio.ui.annotate_conditions import conditions_html
from studio.ui.calls import OpenContext
from studio.ui.forms import build_component, empty_value
from studio.ui.live_views import (
    NOTHING_LEFT,
    care_note_html,
    conversation_html,
    counter_html,
    harmful_choices,
    kept_marks,
    may_send,
    opening_text,
    problems_text,
    rating_answers,
    scenario_html,
    status_html,
)
from studio.ui.render import render_message
from studio.usecases import live
from studio.usecases.annotate import AnswerLimits, visible_campaigns
from studio.usecases.live import LiveSessionView, LiveTurnView, Rating
from studio.workflows import Question, WorkflowSchema

__all__ = ["LiveTab", "questions_key"]

#: Raters stream at once: each send holds its handler for the whole reply (Gradio runs one event per handler at a
#: time by default, so one rater's reply would make the others wait for it).
STREAMS_AT_ONCE = 16
#: Seconds between two redraws of a reply as it streams (the stored reply is drawn whole at the end).
STREAM_REDRAW_S = 0.1


def questions_key(questions: list[dict[str, Any]]) -> str:
    """The rating form for a session: its workflow's public questions, digested (equal questions share one form)."""
    return hashlib.sha256(json.dumps(questions, sort_keys=True).encode("utf-8")).hexdigest()[:12]


@dataclass
class RatingForm:
    """One live workflow's rating form: its questions but the turn marks (ticked beside the replies instead)."""

    schema: WorkflowSchema
    column: Any
    questions: list[Question] = field(default_factory=list)
    fields: list[Any] = field(default_factory=list)
    submit: Any = None

    @property
    def turn_marks(self) -> str | None:
        return self.schema.live.turn_marks if self.schema.live is not None else None


class LiveTab:
    """The components of the Live sessions tab and the handlers that fill them."""

    def __init__(
        self, open_context: OpenContext, schemas: dict[str, WorkflowSchema], limits: AnswerLimits | None = None
    ) -> None:
        self.open_context = open_context
        self.limits = limits or AnswerLimits()
        live_schemas = [schema for schema in schemas.values() if schema.target == "live_session"]
        self.schemas = {questions_key(schema.public_questions()): schema for schema in live_schemas}
        self.forms: dict[str, RatingForm] = {}

    def build(self) -> None:
        """Create the tab's components inside the current ``gr.Blocks`` and wire their events."""
        import gradio as gr

        from studio.services.live_sessions import RATER_CARE_NOTE

        # Shown by the page-load handler to whoever may talk in an open live campaign (load_values).
        with gr.Tab("Live sessions", elem_id="h2h-tab-live", visible=False) as self.tab:
            gr.HTML(care_note_html(RATER_CARE_NOTE), elem_id="h2h-live-care", js_on_load=None)
            with gr.Row():
                self.campaign = gr.Dropdown(label="Live campaign", choices=[], value=None, elem_id="h2h-live-campaign")
                self.start = gr.Button("Start / resume", variant="primary", elem_id="h2h-live-start", scale=0)
                self.refresh = gr.Button("Refresh campaigns", elem_id="h2h-live-refresh", scale=0)
            self.message = gr.HTML(
                render_message("Choose a live campaign, then Start / resume."), elem_id="h2h-live-message"
            )
            self.session_id = gr.State("")
            self.submission_id = gr.State("")
            with gr.Row():
                with gr.Column(scale=3):
                    self.counter = gr.HTML(elem_id="h2h-live-counter-box", js_on_load=None)
                    self.chat = gr.HTML(elem_id="h2h-live-chat", js_on_load=None)
                    self.harmful = gr.CheckboxGroup(
                        choices=[], label="Tick each companion reply that was harmful", elem_id="h2h-live-harmful"
                    )
                    self.text = gr.Textbox(label="Your message", lines=3, elem_id="h2h-live-text", interactive=False)
                    with gr.Row():
                        self.send = gr.Button("Send", variant="primary", elem_id="h2h-live-send", interactive=False)
                        self.retry = gr.Button("Retry", elem_id="h2h-live-retry", visible=False)
                with gr.Column(scale=2), gr.Accordion("The scenario", open=True, elem_id="h2h-live-scenario-box"):
                    self.scenario = gr.HTML(elem_id="h2h-live-scenario", js_on_load=None)
            for number, (key, schema) in enumerate(self.schemas.items()):
                self.forms[key] = self._build_form(schema, f"live{number}")
        self._wire()

    def _build_form(self, schema: WorkflowSchema, name: str) -> RatingForm:
        import gradio as gr

        turn_marks = schema.live.turn_marks if schema.live is not None else None
        with gr.Column(visible=False, elem_id=f"h2h-form-{name}", elem_classes=["h2h-live-form"]) as column:
            form = RatingForm(schema, column)
            gr.Markdown("### Rate the conversation")
            if schema.guidelines:
                with gr.Accordion("Guidelines", open=False):
                    gr.Markdown(schema.guidelines)
            for question in schema.questions:
                if question.id == turn_marks:
                    continue
                with gr.Column(elem_id=f"q-box-{name}-{question.id}"):
                    form.fields.append(build_component(question, elem_id=f"q-{name}-{question.id}"))
                form.questions.append(question)
            if any(question.when for question in schema.questions):
                gr.HTML(conditions_html(schema, name), visible="hidden", js_on_load=None, padding=False)
            form.submit = gr.Button("Submit rating", variant="primary", elem_classes=["h2h-live-submit"])
        return form

    def panel_outputs(self) -> list[Any]:
        return [
            self.message,
            self.counter,
            self.chat,
            self.harmful,
            self.text,
            self.send,
            self.retry,
            self.scenario,
            self.session_id,
            self.submission_id,
            *(form.column for form in self.forms.values()),
        ]

    def panel_values(
        self, view: LiveSessionView | None, *, note: str | None = None, error: bool = False, marks: Any = None
    ) -> list[Any]:
        """``view`` as values of :meth:`panel_outputs` (None: nothing left), led by ``note`` (an error with
        ``error``); the marks ticked (``marks``) stay ticked while their replies are shown."""
        import gradio as gr

        message = render_message(note, kind="error") if error else status_html(view, note)
        if view is None:
            hidden = [gr.Column(visible=False) for _form in self.forms.values()]
            empty = gr.CheckboxGroup(choices=[], value=[])
            return [message, "", "", empty, gr.Textbox(value="", interactive=False), gr.Button(interactive=False),
                    gr.Button(visible=False), "", "", "", *hidden]  # fmt: skip
        rating_shown = view.can_rate and view.status != "rated"
        key = questions_key(view.questions)
        return [
            message,
            counter_html(view),
            conversation_html(view.turns),
            gr.CheckboxGroup(choices=harmful_choices(view.turns), value=kept_marks(marks, view.turns)),
            gr.Textbox(value=opening_text(view), interactive=may_send(view)),
            gr.Button(interactive=may_send(view)),
            gr.Button(visible=view.reply_pending and view.status == "open"),
            scenario_html(view.content),
            view.session_id,
            uuid.uuid4().hex if rating_shown else "",
            *(gr.Column(visible=rating_shown and form_key == key) for form_key in self.forms),
        ]

    def _said(
        self, error: Exception, request: Any, session_id: str, marks: Any = None, typed: str | None = None
    ) -> list[Any]:
        """A refusal said on the message line, the conversation drawn as stored; what was typed stays in the box
        (``typed``: the message a refused send took out of it)."""
        import gradio as gr

        try:
            view = self._view(request, session_id) if session_id else None
        except ServiceError:
            view = None
        if view is None:
            return [render_message(str(error), kind="error"), *[gr.skip()] * (len(self.panel_outputs()) - 1)]
        values = self.panel_values(view, note=str(error), error=True, marks=marks)
        kept = gr.skip() if typed is None else typed
        values[4] = gr.Textbox(value=kept, interactive=may_send(view))  # the message typed stays in the box
        return values

    def _view(self, request: Any, session_id: str) -> LiveSessionView:
        with self.open_context(request).reading() as (session, caller):
            return live.view_session(session, caller=caller, session_id=session_id)

    def load_outputs(self) -> list[Any]:
        return [self.tab, self.campaign]

    def load_values(self, session: Any, caller: Any) -> list[Any]:
        """For the page-load handler: the tab, shown when the caller may talk in an open live campaign (the
        campaign's roles: annotators and experts by default), and the picker listing those campaigns."""
        import gradio as gr

        names = live_campaigns(session, caller)
        return [gr.Tab(visible=bool(names)), self._picker(names)]

    def hidden_values(self) -> list[Any]:
        """For a page whose caller is not signed in: the tab hidden, the picker empty."""
        import gradio as gr

        return [gr.Tab(visible=False), gr.Dropdown(choices=[], value=None)]

    def _picker(self, names: list[str], chosen: str | None = None) -> Any:
        import gradio as gr

        # The first campaign is chosen: a rater back on a reloaded page presses Start / resume and is where they were.
        return gr.Dropdown(choices=names, value=chosen if chosen in names else (names[0] if names else None))

    def _wire(self) -> None:
        panel = self.panel_outputs()
        self.refresh.click(self._refresh(), inputs=[self.campaign], outputs=[self.campaign], api_visibility="private")
        self.start.click(self._start(), inputs=[self.campaign], outputs=panel, api_visibility="private")
        stream = {"outputs": panel, "api_visibility": "private", "concurrency_limit": STREAMS_AT_ONCE}
        inputs = [self.session_id, self.text, self.harmful]
        self.send.click(self._send(), inputs=inputs, trigger_mode="once", **stream)  # type: ignore[arg-type]
        self.retry.click(self._retry(), inputs=inputs[::2], trigger_mode="once", **stream)  # type: ignore[arg-type]
        for form in self.forms.values():
            form.submit.click(
                self._rate(form),
                inputs={self.campaign, self.session_id, self.submission_id, self.harmful, *form.fields},
                outputs=[*panel, *form.fields],
                api_visibility="private",
                trigger_mode="once",
            )

    def _refresh(self) -> Callable[..., Any]:
        import gradio as gr

        from studio.ui.calls import reading

        def live_campaigns_refresh(chosen: str | None, request: gr.Request) -> Any:
            with reading(self.open_context, request) as (session, caller):
                return self._picker(live_campaigns(session, caller), chosen)

        return live_campaigns_refresh

    def _start(self) -> Callable[..., list[Any]]:
        import gradio as gr

        def live_start(campaign: str | None, request: gr.Request) -> list[Any]:
            if not campaign:
                return self._said(ServiceError("Choose a live campaign first."), request, "")
            try:
                with self.open_context(request).writing() as (session, caller):
                    opened = live.start_session(
                        session, caller=caller, campaign=campaign, lease_seconds=self.limits.lease_seconds
                    )
            except ServiceError as error:
                return self._said(error, request, "")
            return self.panel_values(opened[0] if opened else None)

        return live_start

    def _send(self) -> Callable[..., Iterator[list[Any]]]:
        import gradio as gr

        def live_send(session_id: str, text: str, marks: list[str], request: gr.Request) -> Iterator[list[Any]]:
            if not session_id:
                yield self._said(ServiceError("Start a session first."), request, "")
                return
            if not (text or "").strip():
                yield self._said(ServiceError("message: write something to send"), request, session_id, marks)
                return
            yield from self._streamed(request, session_id, marks, text)

        return live_send

    def _retry(self) -> Callable[..., Iterator[list[Any]]]:
        import gradio as gr

        def live_retry(session_id: str, marks: list[str], request: gr.Request) -> Iterator[list[Any]]:
            if not session_id:
                yield self._said(ServiceError("Start a session first."), request, "")
                return
            yield from self._streamed(request, session_id, marks, None)

        return live_retry

    def _streamed(self, request: Any, session_id: str, marks: Any, text: str | None) -> Iterator[list[Any]]:
        """Send ``text`` (None: ask again for the last message's reply), yielding the conversation with the reply
        growing as it arrives, then the stored conversation; a failure or refusal is said on the message line."""
        import gradio as gr

        context = self.open_context(request)
        skipped = [gr.skip()] * len(self.panel_outputs())
        try:
            before = self._view(request, session_id)
            turns = list(before.turns)
            if text is not None:
                turns.append(LiveTurnView(number=before.turns_done + 1, role="user", text=text))
            replies = (
                live.send_message(context, session_id=session_id, text=text, lease_seconds=self.limits.lease_seconds)
                if text is not None
                else live.retry_reply(context, session_id=session_id)
            )
            reply = ""
            waiting = skipped.copy()
            waiting[0] = render_message("The companion is writing…")
            waiting[2] = conversation_html(turns, streaming="")
            waiting[4] = gr.Textbox(value="", interactive=False)  # the message is in the conversation now
            waiting[5], waiting[6] = gr.Button(interactive=False), gr.Button(visible=False)
            yield waiting
            shown_at = 0.0
            for piece in replies:
                if isinstance(piece, str):
                    reply += piece
                    # At most one redraw per STREAM_REDRAW_S: every delta redrawn would keep a busy browser drawing.
                    if time.monotonic() - shown_at >= STREAM_REDRAW_S:
                        shown_at = time.monotonic()
                        growing = skipped.copy()
                        growing[2] = conversation_html(turns, streaming=reply)
                        yield growing
            yield self.panel_values(self._view(request, session_id), marks=marks)
        except CompanionUnavailable as error:
            yield self.panel_values(self._view(request, session_id), note=str(error), error=True, marks=marks)
        except ServiceError as error:
            yield self._said(error, request, session_id, marks, typed=text)

    def _rate(self, form: RatingForm) -> Callable[..., list[Any]]:
        import gradio as gr

        def live_rate(values: dict[Any, Any], request: gr.Request) -> list[Any]:
            session_id, marks = values[self.session_id], values[self.harmful] or []
            answers, problems = rating_answers(
                form.questions, [values[box] for box in form.fields], marks=marks, turn_marks=form.turn_marks
            )
            kept = [gr.skip()] * len(form.fields)
            if problems:
                return [render_message(problems_text(form.questions, problems), kind="error"),
                        *[gr.skip()] * (len(self.panel_outputs()) - 1), *kept]  # fmt: skip
            rating = Rating(submission_id=values[self.submission_id] or uuid.uuid4().hex, answers=answers)
            try:
                with self.open_context(request).writing() as (session, caller):
                    live.rate(session, caller=caller, session_id=session_id, rating=rating, limits=self.limits)
                    opened = live.start_session(
                        session, caller=caller, campaign=values[self.campaign], lease_seconds=self.limits.lease_seconds
                    )
            except ServiceError as error:
                return [*self._said(error, request, session_id, marks), *kept]
            note = "Rating saved. Here is your next scenario." if opened else f"Rating saved. {NOTHING_LEFT}"
            reset = [empty_value(question) for question in form.questions]
            return [*self.panel_values(opened[0] if opened else None, note=note), *reset]

        return live_rate


def live_campaigns(session: Any, caller: Any) -> list[str]:
    """The names of the open live_session campaigns the caller may talk in (the tab is shown when there is one)."""
    return [
        campaign.name
        for campaign in visible_campaigns(session, caller=caller)
        if campaign.target_kind == "live_session"
    ]
