"""The Curate tab's Publish part: preview what a version would hold and why (accepted by a curator, or by the crowd's
or the experts' rule, with the decision in words), then publish exactly that preview.

The preview's content hash is written into the page (``#h2h-publish-hash``) and Publish sends it back: when the
accepted scenarios changed in between (another curator, an aggregation), publishing is refused and says "preview
again" — nothing is published that the curator did not see. Handlers call ``studio.usecases.curate``, which
authorises each call (``CurationPolicy.publish``).
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from typing import Any

from studio.ui.calls import OpenContext, reading, says_refusals, writing
from studio.ui.curate_views import publish_message
from studio.ui.decision_views import PREVIEW_COLUMNS, preview_frame, preview_message
from studio.ui.render import render_message
from studio.ui.tables import table
from studio.usecases import curate

PREVIEW_FIRST = "Preview first: Publish publishes what the preview shows."


class PublishPanel:
    """The components of the Publish part and the handlers that fill them."""

    def __init__(self, open_context: OpenContext) -> None:
        self.open_context = open_context

    def build(self) -> None:
        import gradio as gr

        with gr.Row():
            self.name = gr.Textbox(label="Version name", elem_id="h2h-version-name")
            self.note = gr.Textbox(label="Note", elem_id="h2h-version-note")
            self.preview_button = gr.Button("Preview what would be published", elem_id="h2h-publish-preview")
            self.publish = gr.Button("Publish this preview", variant="primary", elem_id="h2h-publish")
        self.message = gr.HTML(render_message(PREVIEW_FIRST), elem_id="h2h-publish-message", js_on_load=None)
        self.expected = gr.Textbox(value="", visible="hidden", interactive=False, elem_id="h2h-publish-hash")
        self.preview = table("What would be published, and why", "h2h-publish-rows", list(PREVIEW_COLUMNS.values()))

    def wire(self) -> Any:
        """Wire Preview and Publish; return the publish event (the versions list refreshes after it)."""
        self.preview_button.click(
            self._on_preview(), outputs=[self.message, self.preview, self.expected], api_visibility="private"
        )
        return self.publish.click(
            self._on_publish(),
            inputs=[self.name, self.note, self.expected],
            outputs=[self.message, self.expected],
            trigger_mode="once",
            api_visibility="private",
        )

    def _on_preview(self) -> Any:
        import gradio as gr

        def on_preview(request: gr.Request) -> list[Any]:
            with reading(self.open_context, request) as (session, caller):
                preview = curate.publish_preview(session, caller=caller)
            return [render_message(preview_message(preview)), preview_frame(preview), preview.content_hash]

        return on_preview

    def _on_publish(self) -> Any:
        import gradio as gr

        @says_refusals(2)  # a stale preview or a bad name is said beside the form; the preview stays as it was
        def on_publish(name: str | None, note: str | None, expected: str | None, request: gr.Request) -> list[Any]:
            with writing(self.open_context, request) as (session, caller):
                curate.may_publish(session, caller=caller)  # who is calling, before anything else is said
                if not expected:
                    return [render_message(PREVIEW_FIRST, kind="error"), gr.skip()]
                version, created = curate.publish(session, caller=caller, name=name, note=note, expected_hash=expected)
            return [render_message(publish_message(version, created), kind="done"), ""]

        return on_publish
