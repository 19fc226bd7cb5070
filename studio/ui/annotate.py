"""The Annotate tab: layout, wiring, and the use cases' results turned into component values.

One form per distinct workflow schema (:func:`studio.ui.shown.form_key`) is built up front (hidden); choosing a
campaign shows its item and the form of the schema it was created with. The item on screen is written into the page
(:class:`studio.ui.shown.ShownItem`, a hidden field) and every submit and skip sends it back, so an event names the
item the rater saw, never the one the server moved on to meanwhile. Every handler takes ``gr.Request`` and runs
``studio.usecases.annotate`` in one session, which authorises the caller on every call: an annotator calling an
expert campaign's handler through ``/gradio_api/*`` is refused there, not by a hidden component.
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from studio.schemas import WorkflowSchema
from studio.services.errors import Conflict, ServiceError
from studio.ui.calls import OpenContext
from studio.ui.forms import answers_from_form, build_component, empty_value
from studio.ui.render import render_item, render_message, render_persona, render_progress
from studio.ui.shown import ShownItem, form_key
from studio.usecases import annotate
from studio.usecases.annotate import AnswerLimits, Offer, Submission

NO_FORM_YET = (
    "This campaign was created after the studio started, from a schema it has no form for yet. "
    "Ask an administrator to restart the studio."
)
SHORTCUTS_HELP = (
    "**Keyboard:** digits **1–9** choose an option in the first unanswered question, **Enter** submits, "
    "**S** skips (not while typing in a text box)."
)
#: A submit refused because its lease no longer holds the item (skipped or answered meanwhile, or expired and handed
#: on): the page moves on to the rater's next item and says so.
NOT_SAVED = "Not saved ({}). Nothing was stored for that item; the item shown now is your next one."


@dataclass(frozen=True)
class Panel:
    """What the annotate page shows after an event; ``form_key`` picks the form (None: no form)."""

    shown: ShownItem | None
    chat_html: str
    persona_html: str
    progress_html: str
    message_html: str
    form_key: str | None


def panel_of(campaign: str | None, offer: Offer | None, *, note: str | None = None) -> Panel:
    """The page for ``offer`` (the use case's next item, schema and progress); ``note`` (e.g. "Saved.") leads."""
    if not campaign or offer is None:
        return Panel(None, "", "", "", render_message("Choose a campaign to start."), None)
    counts = offer.progress["overall"]
    progress = render_progress(
        mine=offer.progress["mine"]["answers"],
        answers=counts["answers"],
        items=counts["items"],
        complete_items=counts["complete_items"],
    )
    prefix = f"{note} " if note else ""
    if offer.view is None:
        message = render_message(prefix + "No more items for you in this campaign — thank you!", kind="done")
        return Panel(None, "", "", progress, message, None)
    content = dict(offer.view.content)
    message = render_message(prefix + "Answer the questions below, then submit.")
    shown = ShownItem.of(campaign, offer.view)
    return Panel(
        shown, render_item(content), render_persona(content.get("persona")), progress, message, form_key(offer.schema)
    )


def campaign_choices(campaigns: list[Any]) -> list[tuple[str, str]]:
    """Campaigns as (label, name) pairs for the picker."""
    return [(f"{campaign.name} ({campaign.schema_name})", campaign.name) for campaign in campaigns]


class AnnotateTab:
    """The components of the Annotate tab and the handlers that fill them."""

    def __init__(
        self, open_context: OpenContext, schemas: dict[str, WorkflowSchema], limits: AnswerLimits | None = None
    ) -> None:
        self.open_context = open_context
        self.limits = limits or AnswerLimits()
        self.schemas = schemas
        self.forms: dict[str, Any] = {}
        self.fields: dict[str, list[Any]] = {}
        self.buttons: dict[str, tuple[Any, Any]] = {}
        self.elem_names: dict[str, str] = {}  # form key -> the name in its element ids

    def build(self) -> None:
        """Create the tab's components inside the current ``gr.Blocks`` and wire their events."""
        import gradio as gr

        with gr.Row():
            self.campaign = gr.Dropdown(label="Campaign", choices=[], value=None, elem_id="h2h-campaign", scale=4)
            self.refresh = gr.Button("Refresh campaigns", elem_id="h2h-refresh", scale=1)
        self.progress = gr.HTML(elem_id="h2h-progress", js_on_load=None)
        self.message = gr.HTML(render_message("Choose a campaign to start."), elem_id="h2h-message", js_on_load=None)
        # The item and lease on screen, sent back with every submit and skip (see studio.ui.shown).
        self.shown = gr.Textbox(value="", visible="hidden", interactive=False, elem_id="h2h-shown-item")
        with gr.Accordion("Persona (the companion's character sheet)", open=False, elem_id="h2h-persona-box"):
            self.persona = gr.HTML(elem_id="h2h-persona", js_on_load=None)
        self.chat = gr.HTML(elem_id="h2h-chat", js_on_load=None)
        for key, schema in self.schemas.items():
            self._build_form(key, schema)
        gr.Markdown(SHORTCUTS_HELP, elem_id="h2h-shortcuts")
        self._wire()

    def _build_form(self, key: str, schema: WorkflowSchema) -> None:
        import gradio as gr

        # Element ids name the schema; a second version of one schema adds its digest so ids stay unique.
        name = schema.name if schema.name not in self.elem_names.values() else key.replace("@", "-")
        self.elem_names[key] = name
        with gr.Column(visible=False, elem_id=f"h2h-form-{name}", elem_classes=["h2h-form"]) as form:
            gr.Markdown(f"### {schema.title}\n\n{schema.instructions}")
            fields = [build_component(question, elem_id=f"q-{name}-{question.id}") for question in schema.questions]
            with gr.Row():
                submit_button = gr.Button("Submit (Enter)", variant="primary", elem_classes=["h2h-submit"])
                skip_button = gr.Button("Skip (S)", elem_classes=["h2h-skip"])
        self.forms[key], self.fields[key] = form, fields
        self.buttons[key] = (submit_button, skip_button)

    def _panel_outputs(self) -> list[Any]:
        return [self.shown, self.chat, self.persona, self.progress, self.message, *self.forms.values()]

    def panel_values(self, panel: Panel) -> list[Any]:
        """``panel`` as values of :meth:`_panel_outputs`."""
        import gradio as gr

        visibility = [gr.Column(visible=(key == panel.form_key)) for key in self.forms]
        message = panel.message_html
        if panel.form_key is not None and panel.form_key not in self.forms:
            # Forms are built when the studio starts: a campaign created since with a new schema version has none.
            message = render_message(NO_FORM_YET, kind="error")
        shown = panel.shown.to_page() if panel.shown is not None else ""
        return [shown, panel.chat_html, panel.persona_html, panel.progress_html, message, *visibility]

    def _error_values(self, error: Exception, *, form: str | None) -> list[Any]:
        """Show why the event failed (a ServiceError's text is safe to show). With ``form`` (the form the event came
        from) the item stays on screen, its answers untouched; without, the page shows no item."""
        import gradio as gr

        # Layouts cannot take gr.skip(): their visibility is restated instead.
        visibility = [gr.Column(visible=(key == form)) for key in self.forms]
        message = render_message(str(error), kind="error")
        if form is not None:
            return [gr.skip()] * 4 + [message, *visibility]
        return ["", "", "", gr.skip(), message, *visibility]

    def _wire(self) -> None:
        self.refresh.click(self._load_campaigns(), outputs=[self.campaign], api_visibility="private")
        # Blur the dropdown once the item is shown, so the keyboard shortcuts work without an extra click.
        shown = self.campaign.change(
            self._choose(), inputs=[self.campaign], outputs=self._panel_outputs(), api_visibility="private"
        )
        shown.then(None, js="() => { if (document.activeElement) document.activeElement.blur(); }")
        for key, schema in self.schemas.items():
            submit_button, skip_button = self.buttons[key]
            fields = self.fields[key]
            outputs = [*self._panel_outputs(), *fields]
            # A set of inputs reaches the handler as one {component: value} dict, which leaves room for the
            # `request` parameter Gradio injects (it cannot follow a *values parameter).
            submit_button.click(
                self._submit_handler(schema, fields),
                inputs={self.shown, *fields},
                outputs=outputs,
                api_visibility="private",
                trigger_mode="once",
            )
            skip_button.click(
                self._skip_handler(schema),
                inputs=[self.shown],
                outputs=outputs,
                api_visibility="private",
                trigger_mode="once",
            )

    def campaign_picker(self, session: Any, caller: Any) -> Any:
        """The campaign picker's choices for the caller (the open campaigns they may answer)."""
        import gradio as gr

        campaigns = annotate.visible_campaigns(session, caller=caller)
        return gr.Dropdown(choices=campaign_choices(campaigns), value=None)

    def _load_campaigns(self) -> Callable[..., Any]:
        import gradio as gr

        from studio.ui.calls import reading

        def load_campaigns(request: gr.Request) -> Any:
            with reading(self.open_context, request) as (session, caller):
                return self.campaign_picker(session, caller)

        return load_campaigns

    def _offer(self, campaign: str, request: Any, before: Callable[[Any, Any], None] | None = None) -> Offer:
        """In one write session: ``before(session, caller)`` (a submit, a skip), then the caller's next item."""
        with self.open_context(request).writing() as (session, caller):
            if before is not None:
                before(session, caller)
            return annotate.offer_next(
                session, caller=caller, campaign=campaign, lease_seconds=self.limits.lease_seconds
            )

    def _moved_on(self, campaign: str, why: str, request: Any, form: str) -> list[Any]:
        """The rater's next item, led by ``why`` as an error; if even that fails, the error alone."""
        try:
            panel = panel_of(campaign, self._offer(campaign, request))
        except ServiceError as error:
            return self._error_values(ServiceError(f"{why} ({error})"), form=form)
        values = self.panel_values(panel)
        values[4] = render_message(why, kind="error")
        return values

    def _choose(self) -> Callable[..., list[Any]]:
        import gradio as gr

        def choose(campaign: str | None, request: gr.Request) -> list[Any]:
            try:
                offer = self._offer(campaign, request) if campaign else None
                return self.panel_values(panel_of(campaign, offer))
            except ServiceError as error:
                return self._error_values(error, form=None)

        return choose

    def _submit_handler(self, schema: WorkflowSchema, fields: list[Any]) -> Callable[..., list[Any]]:
        import gradio as gr

        resets = [empty_value(question) for question in schema.questions]
        form = form_key(schema)

        def on_submit(data: dict[Any, Any], request: gr.Request) -> list[Any]:
            values = [data[component] for component in fields]
            kept = [gr.skip()] * len(values)
            try:
                shown = ShownItem.from_page(data[self.shown])
                if shown is None:  # a late second press after the last item: nothing is on screen to answer
                    return self._error_values(ServiceError("Nothing to submit."), form=None) + kept
                submission = Submission(
                    item_id=shown.item_id,
                    lease_id=shown.lease_id,
                    submission_id=shown.submission_id,
                    answers=answers_from_form(schema, values),
                    seconds_spent=shown.seconds_on_screen(),
                )
            except ServiceError as error:
                return self._error_values(error, form=form) + kept
            campaign = shown.campaign

            def store(session: Any, caller: Any) -> None:
                annotate.submit(session, caller=caller, campaign=campaign, submission=submission, limits=self.limits)

            try:
                offer = self._offer(campaign, request, store)
            except Conflict as error:  # nothing was stored: move on to the rater's next item, saying why
                return self._moved_on(campaign, NOT_SAVED.format(error), request, form) + resets
            except ServiceError as error:
                return self._error_values(error, form=form) + kept
            return self.panel_values(panel_of(campaign, offer, note="Saved.")) + resets

        return on_submit

    def _skip_handler(self, schema: WorkflowSchema) -> Callable[..., list[Any]]:
        import gradio as gr

        resets = [empty_value(question) for question in schema.questions]
        form = form_key(schema)

        def on_skip(shown_text: str | None, request: gr.Request) -> list[Any]:
            kept = [gr.skip()] * len(resets)
            try:
                shown = ShownItem.from_page(shown_text)
            except ServiceError as error:
                return self._error_values(error, form=form) + kept
            if shown is None:
                return self._error_values(ServiceError("Nothing to skip."), form=None) + kept
            campaign, item_id, lease_id = shown.campaign, shown.item_id, shown.lease_id

            def release(session: Any, caller: Any) -> None:
                annotate.skip(session, caller=caller, campaign=campaign, item_id=item_id, lease_id=lease_id)

            try:
                offer = self._offer(campaign, request, release)
            except ServiceError as error:
                return self._error_values(error, form=form) + kept
            return self.panel_values(panel_of(campaign, offer, note="Skipped.")) + resets

        return on_skip
