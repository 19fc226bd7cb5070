"""The Curate tab (curators and admins; researchers may read): layout, wiring, and results turned into values.

Every handler takes ``gr.Request``, opens the caller's context once (one session per event) and calls
``studio.usecases.curate``, which authorises the caller on every call; a refused call raises ``gr.Error`` (the
event fails, nothing is sent). Tables are ``gr.Dataframe`` with ``datatype="str"``, which Gradio renders as text
nodes (never HTML or Markdown); the scenario itself is HTML escaped by :mod:`studio.ui.render`.
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from typing import Any

import pandas as pd

from pipeline.records import SUBTASKS
from studio.models.curation import STATUSES
from studio.services.listing import ResponseFilters, ScenarioFilters, parse
from studio.ui import curate_views as views
from studio.ui import tables
from studio.ui.calls import OpenContext, reading, refused_as_gradio_errors
from studio.ui.curate_aggregate import AggregationPanel
from studio.ui.curate_detail import DetailPanel
from studio.ui.curate_publish import PublishPanel
from studio.ui.curate_stops import StopsPanel
from studio.ui.downloads import DOWNLOAD_FORMATS, download_button, new_download_dir, ready, version_file
from studio.ui.tables import table
from studio.usecases import curate

TRISTATE: list[tuple[str, str]] = [("any", ""), ("yes", "yes"), ("no", "no")]


class CurateTab:
    """The components of the Curate tab and the handlers that fill them."""

    def __init__(self, open_context: OpenContext) -> None:
        self.open_context = open_context
        self.detail = DetailPanel(open_context)
        self.decision = self.detail.decision
        self.aggregation_panel = AggregationPanel(open_context)
        self.publishing = PublishPanel(open_context)
        self.stops_panel = StopsPanel(open_context)

    def build(self) -> None:
        """Create the tab's components inside the current ``gr.Blocks`` and wire their events."""
        import gradio as gr

        with gr.Tabs() as self.tabs:
            with gr.Tab("Scenarios", id="scenarios", elem_id="h2h-curate-scenarios"):
                self._build_filters()
                # The list beside the opened scenario and its decision form: one screen, not a page of ~4,000 px.
                with gr.Row(equal_height=False, elem_id="h2h-curate-desk"):
                    with gr.Column(scale=1, min_width=400, elem_id="h2h-curate-browse"):
                        self._build_scenarios()
                    with gr.Column(scale=1, min_width=480, elem_id="h2h-curate-opened"):
                        self.detail.build()
            with gr.Tab("Responses", elem_id="h2h-curate-responses"):
                self._build_responses()
            with gr.Tab("Dataset versions", elem_id="h2h-curate-versions"):
                self._build_versions()
            with gr.Tab("Aggregation", elem_id="h2h-curate-aggregation"):
                self.aggregation_panel.build()
            with gr.Tab("Stops", elem_id="h2h-curate-stops"):
                self.stops_panel.build()
            with gr.Tab("Audit log", elem_id="h2h-curate-audit"):
                self.audit_refresh = gr.Button("Show the latest entries", elem_id="h2h-audit-refresh")
                self.audit = table("Audit log (newest first)", "h2h-audit", tables.AUDIT_COLUMNS)
        self._wire()

    def _build_filters(self) -> None:
        import gradio as gr

        with gr.Row():
            self.subtask = gr.Dropdown(
                [("any", ""), *[(s, s) for s in SUBTASKS]], value="", label="Subtask", elem_id="h2h-filter-subtask"
            )
            self.status = gr.Dropdown(
                [("any", ""), *[(s, s) for s in STATUSES]], value="", label="Status", elem_id="h2h-filter-status"
            )
            self.agreement_below = gr.Textbox(
                label="Agreement below (0–1, empty: any)", value="", elem_id="h2h-filter-agreement"
            )
            self.disagreement = gr.Dropdown(TRISTATE, value="", label="Disagreement", elem_id="h2h-filter-disagree")
            self.models_disagree = gr.Dropdown(
                TRISTATE, value="", label="Models disagree", elem_id="h2h-filter-models-disagree"
            )
            self.flagged_scenarios = gr.Dropdown(TRISTATE, value="", label="Refine flags", elem_id="h2h-filter-flagged")
            self.order = gr.Dropdown(
                [
                    ("models disagree first", "models_disagree"),
                    ("id", "id"),
                    ("most uncertain first (LLM)", "uncertainty"),
                ],
                value="models_disagree",
                label="Order",
                elem_id="h2h-filter-order",
            )

    def _build_scenarios(self) -> None:
        """The left-hand column: paging, the list, and opening a scenario by its id."""
        import gradio as gr

        with gr.Row():
            self.page = gr.Number(label="Page", value=1, precision=0, minimum=1, elem_id="h2h-page", min_width=80)
            self.page_size = gr.Dropdown(
                [10, 25, 50, 100], value=25, label="Rows per page", elem_id="h2h-page-size", min_width=80
            )
        with gr.Row():
            self.search = gr.Button("Search", variant="primary", elem_id="h2h-search", min_width=80)
            self.previous = gr.Button("◀ Previous", elem_id="h2h-previous", min_width=80)
            self.next = gr.Button("Next ▶", elem_id="h2h-next", min_width=80)
        self.summary = gr.Markdown(elem_id="h2h-browse-summary")
        self.scenarios = table(
            "Scenarios (select a row to open it)", "h2h-scenarios", tables.SCENARIO_COLUMNS, wrap=True, pinned_columns=1
        )
        with gr.Row():
            self.scenario_id = gr.Textbox(label="Scenario id (to open one)", elem_id="h2h-scenario-id", scale=3)
            self.open = gr.Button("Open", elem_id="h2h-open", scale=1, min_width=80)

    def _build_responses(self) -> None:
        import gradio as gr

        with gr.Row():
            self.response_subtask = gr.Dropdown(
                [("any", ""), *[(s, s) for s in SUBTASKS]], value="", label="Subtask", elem_id="h2h-response-subtask"
            )
            self.flagged = gr.Dropdown(TRISTATE, value="", label="Flagged for adjudication", elem_id="h2h-flagged")
            self.adjudicated = gr.Dropdown(TRISTATE, value="", label="Adjudicated", elem_id="h2h-adjudicated")
            self.response_page = gr.Number(label="Page", value=1, precision=0, minimum=1, elem_id="h2h-response-page")
            self.response_search = gr.Button("Search", variant="primary", elem_id="h2h-response-search")
        self.response_summary = gr.Markdown(elem_id="h2h-response-summary")
        self.responses = table(
            "Responses (select a row to open its scenario)", "h2h-responses", tables.RESPONSE_COLUMNS
        )

    def _build_versions(self) -> None:
        import gradio as gr

        self.publishing.build()
        self.versions_refresh = gr.Button("Refresh the list", elem_id="h2h-versions-refresh")
        self.versions = table("Published versions (newest first)", "h2h-versions", tables.VERSION_COLUMNS)
        with gr.Row():
            self.download_version = gr.Dropdown([], label="Version", elem_id="h2h-download-version")
            self.download_format = gr.Radio(
                list(DOWNLOAD_FORMATS), value="csv", label="Format", elem_id="h2h-download-format"
            )
            self.prepare = gr.Button("Prepare download", elem_id="h2h-prepare-download")
            self.download = download_button("h2h-version-file")

    def _wire(self) -> None:
        self._wire_scenarios()
        self._wire_responses()
        self._wire_versions()

    def _wire_scenarios(self) -> None:
        # Each control by the ScenarioFilters field it sets: the page's one list of its filters, handed to the
        # handler by those names (Gradio's inputs_kwargs; sent over the wire in this order).
        self.scenario_controls: dict[str, Any] = {
            "subtask": self.subtask,
            "status": self.status,
            "agreement_below": self.agreement_below,
            "disagreement": self.disagreement,
            "models_disagree": self.models_disagree,
            "flagged": self.flagged_scenarios,
            "order": self.order,
            "page_size": self.page_size,
            "page": self.page,
        }
        filters = self.scenario_controls
        listing = [self.scenarios, self.summary, self.page]
        self.search.click(self._browse(0, reset=True), inputs_kwargs=filters, outputs=listing, api_visibility="private")
        self.previous.click(self._browse(-1), inputs_kwargs=filters, outputs=listing, api_visibility="private")
        self.next.click(self._browse(1), inputs_kwargs=filters, outputs=listing, api_visibility="private")
        detail = self._detail_outputs()
        for table_of_rows in (self.scenarios, self.responses):
            table_of_rows.select(self._on_select(), outputs=[*detail, self.tabs], api_visibility="private")
        self.open.click(self._on_open(), inputs=[self.scenario_id], outputs=detail, api_visibility="private")
        # Opening another scenario clears the last decision's message (it spoke of the scenario shown before); in the
        # page alone, no server call.
        for opening in (self.open.click, self.scenarios.select, self.responses.select):
            opening(None, js="() => ''", outputs=[self.decision.message])
        decided = self.decision.wire(shown=self.detail.shown, detail_outputs=detail, detail_values=self._detail_values)
        # The list shows the decision at once (same filters, same page).
        decided.then(self._browse(0), inputs_kwargs=filters, outputs=listing, api_visibility="private")

    def _wire_responses(self) -> None:
        # Each control by the ResponseFilters field it sets (the page offers no model or variant filter).
        self.response_controls: dict[str, Any] = {
            "subtask": self.response_subtask,
            "flagged": self.flagged,
            "adjudicated": self.adjudicated,
            "page": self.response_page,
        }
        self.response_search.click(
            self._on_responses(),
            inputs_kwargs=self.response_controls,
            outputs=[self.responses, self.response_summary],
            api_visibility="private",
        )

    def _wire_versions(self) -> None:
        listing = [self.versions, self.download_version]
        published = self.publishing.wire()
        published.success(self._on_versions(), outputs=listing, api_visibility="private")
        self.versions_refresh.click(self._on_versions(), outputs=listing, api_visibility="private")
        self.prepare.click(
            self._on_download(),
            inputs=[self.download_version, self.download_format],
            outputs=[self.download],
            api_visibility="private",
        )
        self.audit_refresh.click(self._on_audit(), outputs=[self.audit], api_visibility="private")

    def _browse(self, step: int, *, reset: bool = False) -> Any:
        import gradio as gr

        def on_browse(request: gr.Request, **chosen: Any) -> list[Any]:
            chosen["page"] = 1 if reset else max(1, int(chosen["page"] or 1) + step)
            chosen["page_size"] = chosen["page_size"] or 25
            with reading(self.open_context, request) as (session, caller):
                filters = parse(ScenarioFilters, **chosen)
                found = curate.browse_scenarios(session, caller=caller, filters=filters)
            shown = tables.scenario_list(found)
            return [tables.listed(shown), shown.summary, shown.page]

        return on_browse

    def _detail_outputs(self) -> list[Any]:
        return [self.scenario_id, *self.detail.outputs()]

    def _detail_values(self, session: Any, caller: Any, scenario_id: str | None) -> list[Any]:
        shown_id, values = self.detail.values(session, caller, scenario_id)
        return [shown_id, *values]

    def _on_select(self) -> Any:
        import gradio as gr

        def on_select(event: gr.SelectData, request: gr.Request) -> list[Any]:
            # Both listings start with the scenario's id; opening it shows the Scenarios tab.
            row = event.row_value or []
            with reading(self.open_context, request) as (session, caller):
                values = self._detail_values(session, caller, str(row[0]) if row else None)
            return [*values, gr.Tabs(selected="scenarios")]

        return on_select

    def _on_open(self) -> Any:
        import gradio as gr

        def on_open(scenario_id: str | None, request: gr.Request) -> list[Any]:
            with reading(self.open_context, request) as (session, caller):
                return self._detail_values(session, caller, scenario_id)

        return on_open

    def _on_responses(self) -> Any:
        import gradio as gr

        def on_responses(request: gr.Request, **chosen: Any) -> list[Any]:
            chosen["page"] = max(1, int(chosen["page"] or 1))
            with reading(self.open_context, request) as (session, caller):
                filters = parse(ResponseFilters, **chosen, page_size=25)
                found = curate.browse_responses(session, caller=caller, filters=filters)
            shown = tables.table_page(found, tables.RESPONSE_COLUMNS)
            return [shown.frame, shown.summary]

        return on_responses

    def _versions_values(self, session: Any, caller: Any) -> list[Any]:
        import gradio as gr

        versions = views.versions_frame(curate.dataset_versions(session, caller=caller))
        names = versions["name"].tolist()
        return [versions, gr.Dropdown(choices=tables.labelled(names), value=names[0] if names else None)]

    def _on_versions(self) -> Any:
        import gradio as gr

        def on_versions(request: gr.Request) -> list[Any]:
            with reading(self.open_context, request) as (session, caller):
                return self._versions_values(session, caller)

        return on_versions

    def _on_download(self) -> Any:
        import gradio as gr

        def on_download(version: str | None, fmt: str, request: gr.Request) -> Any:
            with reading(self.open_context, request) as (session, caller):
                records = curate.dataset_version_records(session, caller=caller, version=version)
            # A fresh private directory per request; the file name is built here, never sent by the client.
            with refused_as_gradio_errors():
                return ready(version_file(records, str(version), fmt, new_download_dir()))

        return on_download

    def _on_audit(self) -> Any:
        import gradio as gr

        def on_audit(request: gr.Request) -> pd.DataFrame:
            with reading(self.open_context, request) as (session, caller):
                return views.audit_frame(curate.audit_entries(session, caller=caller))

        return on_audit

    def load_values(self, session: Any, caller: Any) -> list[Any]:
        """Values for the tab's choices when the page loads (versions and campaigns), in the loader's session."""
        import gradio as gr

        from studio.usecases import annotate

        names = [campaign.name for campaign in annotate.visible_campaigns(session, caller=caller, include_closed=True)]
        # The first page of scenarios is shown at once: an empty table under "Search" read as "no scenarios".
        listed = curate.browse_scenarios(session, caller=caller, filters=ScenarioFilters(page_size=25))
        first = tables.scenario_list(listed)
        return [
            *self._versions_values(session, caller),
            gr.Dropdown(choices=[("all campaigns", ""), *tables.labelled(names)], value=""),
            gr.Dropdown(choices=tables.labelled(names), value=names[0] if names else None),
            tables.listed(first),
            first.summary,
            first.page,
        ]

    def load_outputs(self) -> list[Any]:
        """The components :meth:`load_values` fills."""
        return [
            *[self.versions, self.download_version, self.aggregation_panel.campaign, self.stops_panel.campaign],
            *[self.scenarios, self.summary, self.page],
        ]
