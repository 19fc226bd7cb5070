"""The opened scenario on the Curate page: its review state and text, the decision form right under it, and what it
is decided by — the crowd's and the experts' votes with the LLM and the refine run's flags, the responses' texts and
scores, the audit log — in tabs under the form, so the page stays about one screen tall beside the scenario list.

Layout and values only: the handlers of :mod:`studio.ui.curate` open the caller's context and call
``studio.usecases.curate``, which authorises; the values come from :mod:`studio.ui.curate_views` (escaped HTML and
text tables) and :mod:`studio.ui.curate_responses` (the responses' texts, escaped).
"""

# No `from __future__ import annotations` here, as in the other UI modules: `gradio` is imported inside functions.
from typing import Any

from studio.ui import curate_views as views
from studio.ui import tables
from studio.ui.calls import OpenContext
from studio.ui.curate_decide import DecisionPanel
from studio.ui.tables import table
from studio.usecases import curate

#: The tabs under the decision form, by id: their labels (the first is shown when a scenario opens).
EVIDENCE_TABS: dict[str, str] = {
    "votes": "Votes, LLM and flags",
    "responses": "Responses: texts and scores",
    "audit": "This scenario's audit log",
}


class DetailPanel:
    """The opened scenario's components (the right-hand column of the Scenarios tab) and their values."""

    def __init__(self, open_context: OpenContext) -> None:
        self.decision = DecisionPanel(open_context)

    def build(self) -> None:
        """The state line, the scenario, the decision form, then the evidence tabs (inside the current column)."""
        import gradio as gr

        # The scenario on screen and its revision, sent back with a decision (studio.usecases.curate.ShownScenario).
        self.shown = gr.Textbox(value="", visible="hidden", interactive=False, elem_id="h2h-curate-shown")
        self.status = gr.HTML(elem_id="h2h-detail-status", js_on_load=None)
        with gr.Accordion("Persona", open=False):
            self.persona = gr.HTML(elem_id="h2h-detail-persona", js_on_load=None)
        self.item = gr.HTML(elem_id="h2h-detail-item", js_on_load=None)
        self.decision.build()
        with gr.Tabs(elem_id="h2h-evidence"):
            with gr.Tab(EVIDENCE_TABS["votes"], id="votes"):
                gr.Markdown("**The LLM** (pre-screen on the refine run)")
                self.llm = gr.HTML(elem_id="h2h-llm-verdict", js_on_load=None)
                self.tallies = table(
                    "The crowd and the experts: votes per question (with percent agreement)",
                    "h2h-tallies",
                    tables.TALLY_COLUMNS,
                )
                self.flags = table(
                    "Flags of the refine run (PII replacements: the text before and after)",
                    "h2h-flags",
                    tables.FLAG_COLUMNS,
                    wrap=True,
                )
                self.comments = table("Comments", "h2h-comments", tables.COMMENT_COLUMNS, wrap=True)
            with gr.Tab(EVIDENCE_TABS["responses"], id="responses"):
                self.responses = gr.HTML(elem_id="h2h-detail-responses", js_on_load=None)
            with gr.Tab(EVIDENCE_TABS["audit"], id="audit"):
                self.audit = table("This scenario's audit log", "h2h-detail-audit", tables.AUDIT_COLUMNS, wrap=True)

    def outputs(self) -> list[Any]:
        """What opening a scenario fills here, in the order of :meth:`values`."""
        shown = [self.shown, self.status, self.persona, self.item, self.llm, self.tallies, self.flags, self.comments]
        return [*shown, self.responses, self.audit, *self.decision.form_outputs()]

    def values(self, session: Any, caller: Any, scenario_id: str | None) -> tuple[str, list[Any]]:
        """The id of the scenario ``scenario_id`` opens (``NotFound`` when none), and the values of :meth:`outputs`,
        read in the caller's ``session`` through the use cases (which authorise)."""
        detail = curate.scenario_detail(session, caller=caller, scenario_id=scenario_id or "")
        shown_id = str(detail["scenario"]["id"])
        audit = curate.audit_entries(session, caller=caller, scenario_id=shown_id)
        view = views.scenario_view(shown_id, detail, audit)
        values = [
            curate.ShownScenario.of(detail).to_page(),
            view.status_html,
            view.persona_html,
            view.item_html,
            view.llm_html,
            view.tallies,
            view.flags,
            view.comments,
            view.responses_html,
            view.audit,
            *self.decision.form_values(shown_id, view.form),
        ]
        return shown_id, values
