"""The Curate page's Stops tab: the items a campaign's ``stopping:`` rule stopped early (item, scenario, votes at the
stop, rule, probability, time), with the rule in words above them (``studio.usecases.curate.item_stops``).

The table is a ``gr.Dataframe`` of plain text cells (:func:`studio.ui.tables.table`); the rule's words are escaped
(:func:`studio.ui.render.render_message`): scenario ids and campaign names are never rendered as HTML.
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from typing import Any

import pandas as pd

from studio.services.stopping import STOP_COLUMNS, StopsReport
from studio.ui.calls import OpenContext, reading
from studio.ui.render import render_message
from studio.ui.tables import display_frame, table
from studio.usecases import curate


def stops_values(report: StopsReport) -> list[Any]:
    """What the tab shows for ``report``: the rule in words (escaped HTML) and one text row per stop."""
    count = len(report.stops)
    words = f"{report.campaign}: {count} item(s) stopped early. {report.statement}"
    # The time to the second, as text (the table shows every cell as text).
    rows = [stop | {"stopped_at": stop["stopped_at"].isoformat(timespec="seconds")} for stop in report.stops]
    frame = display_frame(rows, list(STOP_COLUMNS)) if rows else pd.DataFrame(columns=STOP_COLUMNS)
    return [render_message(words), frame]


class StopsPanel:
    """The campaign picker and its stops."""

    def __init__(self, open_context: OpenContext) -> None:
        self.open_context = open_context

    def build(self) -> None:
        import gradio as gr

        with gr.Row():
            self.campaign = gr.Dropdown([], label="Campaign", elem_id="h2h-stops-campaign")
            self.show = gr.Button("Show the stops", variant="primary", elem_id="h2h-stops-show")
        self.rule = gr.HTML(elem_id="h2h-stops-rule", js_on_load=None)
        self.stops = table("Items stopped early (oldest first)", "h2h-stops", list(STOP_COLUMNS))
        self.show.click(
            self.on_show(), inputs=[self.campaign], outputs=[self.rule, self.stops], api_visibility="private"
        )

    def on_show(self) -> Any:
        """The handler of "Show the stops": the caller is checked by the use case."""
        import gradio as gr

        def on_show(campaign: str | None, request: gr.Request) -> list[Any]:
            with reading(self.open_context, request) as (session, caller):
                return stops_values(curate.item_stops(session, caller=caller, campaign=campaign))

        return on_show
