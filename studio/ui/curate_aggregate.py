"""The Curate page's Aggregation tab: run the campaigns' aggregation rules (each stated in words beside what it found
and changed), and compare the LLM rater with the
people on a pairwise campaign, or on each of them for "all campaigns" (``studio.services.rater``: the numbers
``h2h rater-agreement`` prints). A choice with nothing to compare (no pairwise campaign, a campaign that is not one)
is said in the note above the table, not as an error."""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from typing import Any

from studio.ui import curate_views as views
from studio.ui.calls import OpenContext, reading, refused_as_gradio_errors
from studio.ui.decision_views import rules_html
from studio.ui.render import render_message
from studio.ui.tables import table
from studio.usecases import curate


class AggregationPanel:
    """The campaign picker, the aggregation run and the LLM-rater comparison."""

    def __init__(self, open_context: OpenContext) -> None:
        self.open_context = open_context

    def build(self) -> None:
        import gradio as gr

        with gr.Row():
            self.campaign = gr.Dropdown([], label="Campaign (empty: all)", elem_id="h2h-aggregate-campaign")
            self.aggregate = gr.Button("Run aggregation", variant="primary", elem_id="h2h-aggregate")
        self.rules = gr.HTML(elem_id="h2h-aggregation-rules", js_on_load=None)
        self.aggregation = table("What aggregation found and changed", "h2h-aggregation")
        self.rater = gr.Button("Compare the LLM rater with the humans (pairwise)", elem_id="h2h-rater-agreement")
        self.rater_note = gr.HTML(elem_id="h2h-rater-note", js_on_load=None)
        self.rater_table = table(
            "The LLM rater against the humans' majority, per campaign", "h2h-rater-table", wrap=True
        )
        self.aggregate.click(
            self._on_aggregate(),
            inputs=[self.campaign],
            outputs=[self.rules, self.aggregation],
            trigger_mode="once",
            api_visibility="private",
        )
        self.rater.click(
            self._on_rater(),
            inputs=[self.campaign],
            outputs=[self.rater_note, self.rater_table],
            api_visibility="private",
        )

    def _on_aggregate(self) -> Any:
        import gradio as gr

        def on_aggregate(campaign: str | None, request: gr.Request) -> list[Any]:
            context = self.open_context(request)
            with refused_as_gradio_errors():  # the long read off the write lock, the writes in short transactions
                summaries = curate.aggregate(context, campaign=campaign)
            return [rules_html(summaries), views.aggregation_frame(summaries)]

        return on_aggregate

    def _on_rater(self) -> Any:
        import gradio as gr

        from studio.errors import InvalidInput, NotFound

        def on_rater(campaign: str | None, request: gr.Request) -> list[Any]:
            with reading(self.open_context, request) as (session, caller):
                try:
                    agreements = curate.rater_agreement(session, caller=caller, campaign=campaign)
                except (InvalidInput, NotFound) as problem:  # the choice, not the caller: said in the note
                    return [render_message(f"Nothing to compare: {problem}", kind="error"), views.rater_frame([])]
            return [views.rater_note(campaign, agreements), views.rater_frame(agreements)]

        return on_rater
