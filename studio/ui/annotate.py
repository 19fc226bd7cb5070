"""The Annotate tab: Gradio wiring only; the flow lives in :mod:`studio.ui.flow`.

One form per distinct workflow schema (``studio.ui.flow.form_key``) is built up front (hidden);
choosing a campaign shows its item and the form of the schema it was created with. Every handler
takes ``gr.Request``, re-resolves the caller from the session token and goes through the services,
so an annotator calling an expert campaign's handler through ``/gradio_api/call/*`` is refused by
the service, not by a hidden component.
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine

from studio.schemas import WorkflowSchema
from studio.ui.flow import DEFAULT_LIMITS, ItemState, Panel, QueueLimits, campaign_choices, show_next, skip, submit
from studio.ui.forms import answers_from_form, build_component, empty_value
from studio.ui.render import render_message

NO_FORM_YET = (
    "This campaign was created after the studio started, from a schema it has no form for yet. "
    "Ask an administrator to restart the studio."
)
SHORTCUTS_HELP = (
    "**Keyboard:** digits **1–9** choose an option in the first unanswered question, **Enter** submits, "
    "**S** skips (not while typing in a text box)."
)


def _token(request: Any) -> str | None:
    from studio.app import token_from_request

    return token_from_request(request)


class AnnotateTab:
    """The components of the Annotate tab and the handlers that fill them."""

    def __init__(
        self, engine: Engine, schemas: dict[str, WorkflowSchema], limits: QueueLimits = DEFAULT_LIMITS
    ) -> None:
        self.engine = engine
        self.limits = limits
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
        self.state = gr.State(None)
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
        return [self.state, self.chat, self.persona, self.progress, self.message, *self.forms.values()]

    def _panel_values(self, panel: Panel) -> list[Any]:
        import gradio as gr

        visibility = [gr.Column(visible=(key == panel.form_key)) for key in self.forms]
        message = panel.message_html
        if panel.form_key is not None and panel.form_key not in self.forms:
            # Forms are built when the studio starts: a campaign created since with a new schema version has none.
            message = render_message(NO_FORM_YET, kind="error")
        return [panel.state, panel.chat_html, panel.persona_html, panel.progress_html, message, *visibility]

    def _error_values(self, error: Exception, state: ItemState | None) -> list[Any]:
        """Keep the item (if any) on screen and show why the call failed (a ServiceError's text is safe to show)."""
        import gradio as gr

        shown = state.form_key if state is not None else None
        # Layouts cannot take gr.skip(): their visibility is restated instead.
        visibility = [gr.Column(visible=(key == shown)) for key in self.forms]
        kept = [gr.skip()] * 3 if state is not None else ["", "", gr.skip()]
        return [state, *kept, render_message(str(error), kind="error"), *visibility]

    def _wire(self) -> None:
        import gradio as gr

        from studio.services.errors import ServiceError

        def load_campaigns(request: gr.Request) -> Any:
            return gr.Dropdown(choices=campaign_choices(self.engine, _token(request)), value=None)

        def choose(campaign: str | None, request: gr.Request) -> list[Any]:
            try:
                return self._panel_values(show_next(self.engine, _token(request), campaign, limits=self.limits))
            except ServiceError as error:
                return self._error_values(error, None)

        self.refresh.click(load_campaigns, outputs=[self.campaign], api_visibility="private")
        # Blur the dropdown once the item is shown, so the keyboard shortcuts work without an extra click.
        shown = self.campaign.change(
            choose, inputs=[self.campaign], outputs=self._panel_outputs(), api_visibility="private"
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
                inputs={self.state, *fields},
                outputs=outputs,
                api_visibility="private",
                trigger_mode="once",
            )
            skip_button.click(
                self._skip_handler(schema),
                inputs=[self.state],
                outputs=outputs,
                api_visibility="private",
                trigger_mode="once",
            )

    def _submit_handler(self, schema: WorkflowSchema, fields: list[Any]) -> Callable[..., list[Any]]:
        import gradio as gr

        from studio.services.errors import ServiceError

        resets = [empty_value(question) for question in schema.questions]

        def on_submit(data: dict[Any, Any], request: gr.Request) -> list[Any]:
            state = data[self.state]
            values = [data[component] for component in fields]
            if state is None:  # a late second click after the last item: nothing is on screen to answer
                return self._error_values(ServiceError("Nothing to submit."), None) + [gr.skip()] * len(values)
            try:
                answers = answers_from_form(schema, values)
                panel = submit(self.engine, _token(request), state, answers, limits=self.limits)
            except ServiceError as error:
                return self._error_values(error, state) + [gr.skip()] * len(values)
            return self._panel_values(panel) + resets

        return on_submit

    def _skip_handler(self, schema: WorkflowSchema) -> Callable[..., list[Any]]:
        import gradio as gr

        from studio.services.errors import ServiceError

        resets = [empty_value(question) for question in schema.questions]

        def on_skip(state: ItemState | None, request: gr.Request) -> list[Any]:
            try:
                panel = skip(self.engine, _token(request), state, limits=self.limits)
            except ServiceError as error:
                return self._error_values(error, state) + [gr.skip()] * len(resets)
            return self._panel_values(panel) + resets

        return on_skip
