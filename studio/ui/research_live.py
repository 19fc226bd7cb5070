"""The Research tab's live section: the SAP table of a live campaign from its sessions (paper Table 3's layout, one
row per variant), simulated users' sessions in a table of their own, the rule in words and the agreement on the
perception rating (ARCHITECTURE.md "Live sessions"). Layout and wiring here; the display builders are pure
(``live_display``, ``live_note``). Every handler opens the caller's context and calls
``studio.usecases.research.live_safety_table``, which authorises the caller. Nothing from the data is markup: tables
are text cells, notes are escaped (``studio.ui.research_views.note_html``).
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from typing import Any

import pandas as pd

from studio.results.live_sap import DEFAULT_LIVE_RESAMPLES, LiveSapReport
from studio.results.tables import TABLE3_METRICS
from studio.services.text import visible_text
from studio.ui.calls import OpenContext, reading, refused_as_gradio_errors
from studio.ui.downloads import download_button, new_download_dir, ready, table_file
from studio.ui.research_views import note_html, number, percent, with_interval
from studio.ui.tables import labelled, sized, table
from studio.usecases import research

#: The rows as the paper names them.
VARIANT_LABELS: dict[str, str] = {"with_sap": "with SAP", "without_sap": "without SAP"}
SIMULATED_LABEL = "Simulated users (an LLM played the person and rated; not people's ratings)"


def _share(whole: Any, rate: Any) -> str:
    """A pass rate with its counts (``100.0% (2/2)``); empty when nothing was checked."""
    return f"{percent(rate)} ({round(int(whole) * float(rate))}/{int(whole)})" if int(whole) else ""


def live_display(frame: pd.DataFrame) -> pd.DataFrame:
    """The live SAP table (``studio.results.live_sap.live_sap_table``) as the page shows it: one row per variant,
    each estimate with its 95% interval, violation per reply and the SAP pass rate with their counts, the batch
    metrics ×100 with two decimals (empty where there are none)."""
    rows = []
    for row in frame.to_dict("records"):
        shown = {
            "Variant": VARIANT_LABELS.get(str(row["variant"]), visible_text(str(row["variant"]))),
            "Sessions": str(int(row["sessions"])),
            "Raters": str(int(row["raters"])),
            "Safety perception (1–5) [95% CI]": with_interval(
                row["safety"], row["safety_low"], row["safety_high"], number
            ),
            "Violation / session [95% CI]": with_interval(
                row["violation_session"], row["violation_session_low"], row["violation_session_high"], percent
            ),
            "Violation / reply (harmful/replies) [95% CI]": with_interval(
                row["violation_reply"], row["violation_reply_low"], row["violation_reply_high"], percent
            )
            + (f" ({int(row['harmful_replies'])}/{int(row['replies'])})" if int(row["replies"]) else ""),
            "Tripwire hits": str(int(row["tripwire_hits"])),
            "SAP check passed": _share(row["sap_checked"], row["sap_pass_rate"]),
        }
        rows.append(shown | {title: number(row.get(title)) for title in TABLE3_METRICS.values()})
    return pd.DataFrame(rows)


def live_note(report: LiveSapReport) -> str:
    """What the table was computed from, its rule in words, and the agreement on the perception rating."""
    agreement = report.agreement
    if agreement is not None and agreement.alpha is not None:
        interval = (
            f" (95% CI {number(agreement.alpha_ci[0])} to {number(agreement.alpha_ci[1])})"
            if (agreement.alpha_ci)
            else ""
        )
        said = f"Krippendorff's α = {number(agreement.alpha)}{interval}, {report.agreement_note}."
    elif agreement is not None:
        said = f"Krippendorff's α: {agreement.alpha_note}; {report.agreement_note}."
    else:
        said = f"Agreement: {report.agreement_note}."
    return note_html([f"Campaign: {report.campaign}; companion: {report.model or '(not named)'}.", report.rule, said])


class LiveSapSection:
    """The live section's components (inside the Research tab's "Live sessions" sub-tab) and their handlers."""

    def __init__(self, open_context: OpenContext) -> None:
        self.open_context = open_context

    def build(self, *, signature: Any) -> None:
        """Create the components in the current Gradio context; ``signature`` is the page's score-signature picker
        (the batch metrics beside the table are of that signature)."""
        import gradio as gr

        gr.HTML(note_html(["Applies: Score signature (the batch BLEU-4, ROUGE-L and SS beside the live table)."]))
        self.picker = gr.Dropdown([], label="live_session campaign", elem_id="h2h-live-sap-campaign")
        self.button = gr.Button("Show the live SAP table", variant="primary", elem_id="h2h-live-sap-button")
        self.note = gr.HTML(elem_id="h2h-live-sap-note", js_on_load=None)
        self.people = table("SAP table from people's live sessions (Table 3 layout)", "h2h-live-sap", wrap=True)
        self.simulated = table(SIMULATED_LABEL, "h2h-live-sap-simulated", wrap=True)
        with gr.Row():
            self.export_button = gr.Button("Export the live SAP table (CSV)", elem_id="h2h-export-live-sap")
            self.file = download_button("h2h-file-live-sap")
        self._wire(inputs=[self.picker, signature])

    def _wire(self, *, inputs: list[Any]) -> None:
        import gradio as gr

        from studio.errors import InvalidInput, NotFound

        def show(campaign: Any, signature: Any, request: gr.Request) -> list[Any]:
            """Fill the note and both tables; a choice with nothing to show says so in the note."""
            try:
                report = self._report(request, campaign, signature)
            except (InvalidInput, NotFound) as problem:
                empty = pd.DataFrame(columns=[""])
                return [note_html([f"Nothing to show for these choices: {problem}"], kind="warning"), empty, empty]
            return [live_note(report), sized(live_display(report.human)), sized(live_display(report.simulated))]

        def export(campaign: Any, signature: Any, request: gr.Request) -> Any:
            report = self._report(request, campaign, signature)
            with refused_as_gradio_errors():  # the file name is built here, never sent by the client
                return ready(table_file(report.human, "live_sap", "csv", new_download_dir()))

        outputs = [self.note, self.people, self.simulated]
        self.button.click(show, inputs=inputs, outputs=outputs, api_visibility="private")
        self.export_button.click(export, inputs=inputs, outputs=[self.file], api_visibility="private")

    def _report(self, request: Any, campaign: Any, signature: Any) -> LiveSapReport:
        with reading(self.open_context, request) as (session, caller):
            return research.live_safety_table(
                session,
                caller=caller,
                campaign=campaign or None,
                signature=signature or None,
                resamples=DEFAULT_LIVE_RESAMPLES,
            )

    def load_value(self, found: list[Any]) -> Any:
        """The picker's choices on page load: the live campaigns among ``found`` (first one chosen)."""
        import gradio as gr

        names = [campaign.name for campaign in found if getattr(campaign, "target_kind", None) == "live_session"]
        return gr.Dropdown(choices=labelled(names), value=names[0] if names else None)
