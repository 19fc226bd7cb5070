"""The Research tab (researchers, curators and admins): layout, wiring, and results turned into what the page shows.

Three pickers above the sub-tabs — variant, score signature, judge — and a campaign picker on the sub-tabs that
read campaigns. Each sub-tab says which pickers it applies (``research_views.TAB_PICKERS``), has a button that
computes its table (and figure) with a note saying what it was computed for, and a download of that table in CSV,
JSONL or Parquet computed with the same choices. Every handler takes ``gr.Request``, opens the caller's context once
(one read session per event) and calls ``studio.usecases.research``, which authorises the caller on every call;
downloads and figures are written to a fresh directory per request under a name the server builds.

Nothing from the data is rendered as markup: tables are ``gr.Dataframe`` with ``datatype="str"`` (text nodes),
notes are escaped HTML (``studio.ui.research_views``), figures draw labels literally, errors are escaped toasts.
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from collections.abc import Callable
from typing import Any

import pandas as pd

from studio.results.defaults import DEFAULT_RESAMPLES
from studio.services.research_quality import METRIC_RANGES
from studio.ui import research_views as views
from studio.ui.calls import OpenContext, reading, refused_as_gradio_errors
from studio.ui.downloads import DOWNLOAD_FORMATS, download_button, new_download_dir, ready, table_file
from studio.ui.research_judge import JudgeBiasSection
from studio.ui.research_live import LiveSapSection
from studio.ui.research_ppi import PpiSection
from studio.ui.research_ranking import RankingSection
from studio.ui.tables import display_frame, fitted, labelled, sized, table
from studio.usecases import research

#: A handler's computation: (session, caller, the page's choices) -> the values of its outputs.
Compute = Callable[[Any, Any, dict[str, Any]], list[Any]]
#: The page's choices, in the order the handlers receive them.
CHOICE_NAMES: tuple[str, ...] = (
    "variant",
    "signature",
    "judge",
    "safety_campaign",
    "instruction_campaign",
    "campaign",
    "by_model",
    "metric",
    "bins",
)
#: The campaign pickers: choice name → (workflow type, or None for any; elem_id; label).
CAMPAIGN_PICKERS: dict[str, tuple[str | None, str, str]] = {
    "safety_campaign": ("sap_safety", "h2h-safety-campaign", "sap_safety campaign"),
    "instruction_campaign": ("instruction_following", "h2h-if-campaign", "instruction_following campaign"),
    "campaign": (None, "h2h-agreement-campaign", "Campaign"),
}
ALL_CAMPAIGNS = "(all of them)"


class ResearchTab:
    """The components of the Research tab and the handlers that fill them."""

    def __init__(self, open_context: OpenContext) -> None:
        self.open_context = open_context
        self.downloads: dict[str, tuple[Any, Any, Any]] = {}
        self.pickers: dict[str, Any] = {}

    def build(self) -> None:
        """Create the tab's components inside the current ``gr.Blocks`` and wire their events."""
        import gradio as gr

        with gr.Row():
            for name, label in views.PICKER_LABELS.items():
                self.pickers[name] = gr.Dropdown([], label=label, elem_id=f"h2h-research-{name}")
        with gr.Tabs():
            self._build_results(gr)
            self._build_quality(gr)
            self._build_monitoring(gr)
        self._wire()

    @staticmethod
    def _picker_note(tab: str, elem_id: str) -> None:
        import gradio as gr

        gr.HTML(views.picker_note(tab), elem_id=f"{elem_id}-pickers", js_on_load=None)

    @staticmethod
    def _note(elem_id: str) -> Any:
        """The note a computation fills: what it was computed for, and why it is partial or empty."""
        import gradio as gr

        return gr.HTML(elem_id=f"{elem_id}-note", js_on_load=None)

    def _campaign_picker(self, name: str) -> None:
        import gradio as gr

        _workflow, elem_id, label = CAMPAIGN_PICKERS[name]
        self.pickers[name] = gr.Dropdown([], label=label, elem_id=elem_id)

    def _build_results(self, gr: Any) -> None:
        with gr.Tab("Leaderboard", elem_id="h2h-research-leaderboard-tab"):
            self._picker_note("leaderboard", "h2h-leaderboard")
            self.leaderboard_button = gr.Button(
                "Show the leaderboard (Table 2)", variant="primary", elem_id="h2h-leaderboard-button"
            )
            self.leaderboard_note = self._note("h2h-leaderboard")
            self.leaderboard = table(
                "Table 2: 100·S per subtask; itinerary I–III: 100·J_final/5, J_final = 0.6·5S + 0.4·(the experts' "
                "median score where adjudicated, else the judge's); (counted/total) where items are pending",
                "h2h-leaderboard",
                wrap=True,
                pinned_columns=1,
            )
            self.leaderboard_fragility = table(
                "Rank fragility: per adjacent pair, the fewest items whose removal swaps them",
                "h2h-leaderboard-fragility",
                wrap=True,
            )
            self._download_row("leaderboard")
            self._download_row("leaderboard_coverage")
            self._download_row("leaderboard_intervals")
            self._download_row("leaderboard_fragility")
            self.ppi = PpiSection(self.open_context)
            self.ppi.build(
                variant=self.pickers["variant"], signature=self.pickers["signature"], judge=self.pickers["judge"]
            )
            self._download_row("leaderboard_ppi")
        with gr.Tab("SAP safety", elem_id="h2h-research-safety-tab"):
            self._picker_note("safety", "h2h-safety")
            with gr.Row():
                self._campaign_picker("safety_campaign")
                self.pickers["by_model"] = gr.Checkbox(label="Per model", value=False, elem_id="h2h-safety-by-model")
            self.safety_button = gr.Button("Show Table 3", variant="primary", elem_id="h2h-safety-button")
            self.safety_note = self._note("h2h-safety")
            self.safety = table("Table 3: SAP safety", "h2h-safety", wrap=True)
            self._download_row("table3")
        with gr.Tab("Live sessions (SAP)", elem_id="h2h-research-live-tab"):
            self.live = LiveSapSection(self.open_context)
            self.live.build(signature=self.pickers["signature"])
        with gr.Tab("Rankings (pairwise)", elem_id="h2h-research-ranking-tab"):
            self.ranking = RankingSection(self.open_context)
            self.ranking.build()
        with gr.Tab("Instruction following", elem_id="h2h-research-if-tab"):
            self._picker_note("instruction", "h2h-if")
            self._campaign_picker("instruction_campaign")
            self.instruction_button = gr.Button("Show Fig. 7", variant="primary", elem_id="h2h-if-button")
            self.instruction_note = self._note("h2h-if")
            self.instruction = table("Fig. 7: mean rating (1–5) by request kind [95% CI]", "h2h-if", wrap=True)
            self.instruction_plot = gr.Image(label="Fig. 7", type="filepath", interactive=False, elem_id="h2h-if-plot")
            self._download_row("instruction_following")
            self._download_row("instruction_following_intervals")

    def _build_quality(self, gr: Any) -> None:
        with gr.Tab("Agreement", elem_id="h2h-research-agreement-tab"):
            self._picker_note("agreement", "h2h-agreement")
            self._campaign_picker("campaign")
            self.agreement_button = gr.Button("Compute agreement", variant="primary", elem_id="h2h-agreement-button")
            self.agreement_note = self._note("h2h-agreement")
            self.agreement = table(
                "Per question: Krippendorff's α (95% CI), Fleiss' κ, percent agreement", "h2h-agreement", wrap=True
            )
            self._download_row("agreement")
            self.annotators = table(
                "Per annotator: agreement with the others' majority and, on nominal questions, the estimated "
                "reliability (Dawid–Skene: chance the rater's label is the true one; MACE: chance of answering by "
                "knowing rather than spamming)",
                "h2h-annotators",
            )
            self._download_row("annotators")
        with gr.Tab("Judge vs human", elem_id="h2h-research-calibration-tab"):
            self._picker_note("calibration", "h2h-calibration")
            self.calibration_button = gr.Button("Compare", variant="primary", elem_id="h2h-calibration-button")
            self.calibration_note = self._note("h2h-calibration")
            self.calibration_stats = table("Spearman ρ, Kendall τ, mean |J_judge − J_human|", "h2h-calibration")
            self.calibration_plot = gr.Image(
                label="J_judge vs J_human", type="filepath", interactive=False, elem_id="h2h-calibration-plot"
            )
            self._download_row("calibration")
            self.judge_bias = JudgeBiasSection(self.open_context)
            self.judge_bias.build(
                variant=self.pickers["variant"], signature=self.pickers["signature"], judge=self.pickers["judge"]
            )
            self._download_row("judge_bias")

    def _build_monitoring(self, gr: Any) -> None:
        with gr.Tab("Progress", elem_id="h2h-research-progress-tab"):
            self._picker_note("progress", "h2h-progress")
            self.progress_button = gr.Button("Show progress", variant="primary", elem_id="h2h-progress-button")
            self.progress_note = self._note("h2h-progress")
            self.progress_campaigns = table("Per campaign", "h2h-progress-campaigns", wrap=True)
            self._download_row("progress_campaigns")
            self.progress_people = table("Per annotator (answers, median seconds per item)", "h2h-progress-people")
            self._download_row("progress_annotators")
        with gr.Tab("Score distributions", elem_id="h2h-research-distribution-tab"):
            self._picker_note("distribution", "h2h-distribution")
            with gr.Row():
                metrics = list(METRIC_RANGES)
                self.pickers["metric"] = gr.Dropdown(metrics, value="S", label="Score", elem_id="h2h-metric")
                self.pickers["bins"] = gr.Slider(5, 50, value=20, step=1, label="Bins", elem_id="h2h-bins")
                self.distribution_button = gr.Button("Show", variant="primary", elem_id="h2h-distribution-button")
            self.distribution_note = self._note("h2h-distribution")
            self.distribution_plot = gr.Image(
                label="Distribution", type="filepath", interactive=False, elem_id="h2h-distribution-plot"
            )
            self.distribution = table("Histogram per model", "h2h-distribution")
            self._download_row("distribution")

    def _download_row(self, name: str) -> None:
        import gradio as gr

        with gr.Row():
            fmt = gr.Radio(list(DOWNLOAD_FORMATS), value="csv", label=f"Format ({name})", elem_id=f"h2h-format-{name}")
            button = gr.Button(f"Export {name}", elem_id=f"h2h-export-{name}")
            file = download_button(f"h2h-file-{name}")
        self.downloads[name] = (fmt, button, file)

    def _params(self) -> list[Any]:
        return [self.pickers[name] for name in CHOICE_NAMES]

    def _wire(self) -> None:
        events = [
            (
                self.leaderboard_button,
                self._leaderboard,
                [self.leaderboard_note, self.leaderboard, self.leaderboard_fragility],
            ),
            (self.safety_button, self._safety, [self.safety_note, self.safety]),
            (
                self.instruction_button,
                self._instruction,
                [self.instruction_note, self.instruction, self.instruction_plot],
            ),
            (self.agreement_button, self._agreement, [self.agreement_note, self.agreement, self.annotators]),
            (
                self.calibration_button,
                self._calibration,
                [self.calibration_note, self.calibration_stats, self.calibration_plot],
            ),
            (self.progress_button, self._progress, [self.progress_note, self.progress_campaigns, self.progress_people]),
            (
                self.distribution_button,
                self._distribution,
                [self.distribution_note, self.distribution_plot, self.distribution],
            ),
        ]
        for button, compute, outputs in events:
            handler = self._handler(compute, outputs)
            button.click(handler, inputs=set(self._params()), outputs=outputs, api_visibility="private")
        for name, (fmt, button, file) in self.downloads.items():
            inputs = {fmt, *self._params()}
            button.click(self._on_export(name, fmt), inputs=inputs, outputs=[file], api_visibility="private")

    @staticmethod
    def _leaderboard(session: Any, caller: Any, values: dict[str, Any]) -> list[Any]:
        scoring = {name: values[name] for name in views.PICKER_LABELS}
        view = research.leaderboard(session, caller=caller, **scoring)
        fragility = fitted(views.fragility_display(view))
        return [views.leaderboard_note(view), fitted(views.leaderboard_display(view)), fragility]

    @staticmethod
    def _safety(session: Any, caller: Any, values: dict[str, Any]) -> list[Any]:
        frame = research.safety_table(
            session,
            caller=caller,
            campaign=values["safety_campaign"],
            by_model=bool(values["by_model"]),
            signature=values["signature"],
        )
        return [views.table3_note(values, frame), sized(views.table3_display(frame))]

    @staticmethod
    def _instruction(session: Any, caller: Any, values: dict[str, Any]) -> list[Any]:
        from studio.results.tables import plot_instruction_following

        chosen = {"campaign": values["instruction_campaign"], "variant": values["variant"]}
        frame = research.instruction_table(session, caller=caller, **chosen)
        bounds = research.instruction_intervals(session, caller=caller, **chosen)
        path = new_download_dir() / "instruction_following.png"
        plot = plot_instruction_following(frame.set_index("model"), path, intervals=bounds)
        return [views.instruction_note(values), sized(views.instruction_display(frame, bounds)), str(plot)]

    @staticmethod
    def _agreement(session: Any, caller: Any, values: dict[str, Any]) -> list[Any]:
        view = research.agreement(session, caller=caller, campaign=values["campaign"], resamples=DEFAULT_RESAMPLES)
        note = views.note_html(
            [
                f"Campaign: {values['campaign']}; every figure {view.item_set.describe()}; "
                f"{DEFAULT_RESAMPLES} bootstrap resamples (seed 0) for α's CI, as h2h export agreement computes them."
            ]
        )
        return [note, sized(display_frame(view.by_question)), display_frame(view.annotators)]

    @staticmethod
    def _calibration(session: Any, caller: Any, values: dict[str, Any]) -> list[Any]:
        import gradio as gr

        from studio.results.calibration import plot_calibration

        scoring = {name: values[name] for name in views.PICKER_LABELS}
        view = research.calibration(session, caller=caller, **scoring)
        plot = plot_calibration(view.rows, new_download_dir() / "calibration.png") if len(view.rows) else None
        image = gr.update(value=str(plot) if plot else None, visible=plot is not None)  # no empty frame when n = 0
        return [views.calibration_note(view, values), views.calibration_display(view), image]

    @staticmethod
    def _progress(session: Any, caller: Any, values: dict[str, Any]) -> list[Any]:
        campaigns, people = research.progress(session, caller=caller)
        return [views.progress_note(), sized(display_frame(campaigns)), display_frame(people)]

    @staticmethod
    def _distribution(session: Any, caller: Any, values: dict[str, Any]) -> list[Any]:
        from studio.results.figures import plot_score_distribution

        metric = values["metric"] or "S"
        scoring = {name: values[name] for name in views.PICKER_LABELS}
        frame = research.score_distribution(session, caller=caller, metric=metric, bins=values["bins"], **scoring)
        plot = plot_score_distribution(frame, new_download_dir() / f"distribution-{metric}.png", metric=metric)
        return [views.note_html([views.applied_line(values, views.PICKER_LABELS)]), str(plot), display_frame(frame)]

    def _handler(self, compute: Compute, outputs: list[Any]) -> Any:
        """Wrap ``compute(session, caller, page values)`` as an event handler whose inputs are :meth:`_params` as a
        set (Gradio then passes one dict, component → value). Every compute fills two or more outputs (the note
        first), so its list of values is never taken for one output's value. When the choices give nothing to show
        (no such campaign or signature, no answers yet), the note says so and the other outputs are emptied — no
        error overlay over the tab; a refusal (not signed in, a role that may not read results) is an error."""
        import gradio as gr

        from studio.errors import InvalidInput, NotFound

        emptied = [_empty_value(component) for component in outputs[1:]]

        def on_click(data: dict[Any, Any], request: gr.Request) -> list[Any]:
            values = self._choices(data)
            with reading(self.open_context, request) as (session, caller):
                try:
                    return compute(session, caller, values)
                except (InvalidInput, NotFound) as problem:
                    note = views.note_html([f"Nothing to show for these choices: {problem}"], kind="warning")
                    return [note, *emptied]

        return on_click

    def _on_export(self, name: str, fmt: Any) -> Any:
        import gradio as gr

        def on_export(data: dict[Any, Any], request: gr.Request) -> Any:
            choices = self._choices(data)
            with reading(self.open_context, request) as (session, caller):
                frame = research.table(session, caller=caller, name=name, resamples=DEFAULT_RESAMPLES, **choices)
            # A fresh private directory per request; the file name is built here, never sent by the client.
            with refused_as_gradio_errors():
                return ready(table_file(frame, name, data[fmt], new_download_dir()))

        return on_export

    def _choices(self, data: dict[Any, Any]) -> dict[str, Any]:
        """The page's current choices, by the names the use cases take (:data:`CHOICE_NAMES`): an empty picker or
        "all campaigns" is None, bins an int."""
        values = {name: data.get(self.pickers[name]) for name in CHOICE_NAMES}
        for name in (*views.PICKER_LABELS, *CAMPAIGN_PICKERS):
            if values[name] in ("", ALL_CAMPAIGNS):
                values[name] = None
        values["by_model"] = bool(values["by_model"])
        values["bins"] = int(values["bins"] or 20)
        return values

    def load_values(self, session: Any, caller: Any) -> list[Any]:
        """Choices for the pickers when the page loads, in the loader's session: variants, signatures and judges of
        the stored scores; campaigns by workflow (the SAP and Fig. 7 pickers start on all of their campaigns)."""
        import gradio as gr

        from studio.usecases import annotate

        options = research.score_options(session, caller=caller)
        found = annotate.visible_campaigns(session, caller=caller, include_closed=True)
        values = [
            gr.Dropdown(choices=labelled(choices), value=choices[0] if choices else None)
            for choices in (options.variants, options.signatures, options.judges)
        ]
        for workflow, _elem_id, _label in CAMPAIGN_PICKERS.values():
            names = [campaign.name for campaign in found if workflow in (None, campaign.workflow_type)]
            if workflow is None:
                values.append(gr.Dropdown(choices=labelled(names), value=names[0] if names else None))
            else:
                values.append(gr.Dropdown(choices=labelled([ALL_CAMPAIGNS, *names]), value=ALL_CAMPAIGNS))
        return [*values, self.live.load_value(found), self.ranking.load_value(found)]

    def load_outputs(self) -> list[Any]:
        """The components :meth:`load_values` fills."""
        pickers = [self.pickers[name] for name in (*views.PICKER_LABELS, *CAMPAIGN_PICKERS)]
        return [*pickers, self.live.picker, self.ranking.picker]


def _empty_value(component: Any) -> Any:
    """What an output shows when there is nothing to show: a table with no rows and no header (not Gradio's
    placeholder headers "1", "2", "3"), no figure."""
    import gradio as gr

    if isinstance(component, gr.Dataframe):
        return pd.DataFrame(columns=[""])
    return gr.update(value=None)
