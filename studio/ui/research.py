"""The Research tab (researchers, curators and admins): layout, wiring, and results turned into values.

Each section has a button that computes its table (and figure) and a download of that table in CSV, JSONL or
Parquet. Every handler takes ``gr.Request``, opens the caller's context once (one read session per event) and calls
``studio.usecases.research``, which authorises the caller on every call; downloads and figures are written to a
fresh directory per request under a name the server builds. Tables are ``gr.Dataframe`` with ``datatype="str"``
(text nodes, never HTML), so model names stay inert.
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from collections.abc import Callable
from typing import Any

from studio.results.defaults import DEFAULT_RESAMPLES
from studio.services.research import METRIC_RANGES, LeaderboardView
from studio.ui.calls import OpenContext, reading, refused_as_gradio_errors
from studio.ui.downloads import DOWNLOAD_FORMATS, new_download_dir, table_file
from studio.ui.tables import display_frame, table
from studio.usecases import research

#: A handler's computation: (session, caller, the page's choices) -> the values of its outputs.
Compute = Callable[[Any, Any, dict[str, Any]], list[Any]]


def leaderboard_caption(view: LeaderboardView) -> str:
    """E.g. "3 item(s) pending adjudication (model-a: 2, model-b: 1); 4 adjudicated."."""
    pending = sum(view.pending.values())
    detail = ", ".join(f"{model}: {count}" for model, count in sorted(view.pending.items()))
    caption = f"{pending} item(s) pending adjudication" + (f" ({detail})" if detail else "")
    return caption + f"; {view.adjudicated} adjudicated."


def leaderboard_table(view: LeaderboardView) -> Any:
    """Table 2 with the model as a column (the page's table has no index)."""
    return view.table.reset_index() if view.table.index.name else view.table


class ResearchTab:
    """The components of the Research tab and the handlers that fill them."""

    def __init__(self, open_context: OpenContext) -> None:
        self.open_context = open_context
        self.downloads: dict[str, tuple[Any, Any, Any]] = {}

    def build(self) -> None:
        """Create the tab's components inside the current ``gr.Blocks`` and wire their events."""
        import gradio as gr

        with gr.Row():
            self.variant = gr.Dropdown([], label="Variant", elem_id="h2h-research-variant")
            self.signature = gr.Dropdown([], label="Score signature", elem_id="h2h-research-signature")
            self.campaign = gr.Dropdown([], label="Campaign (agreement)", elem_id="h2h-research-campaign")
        with gr.Tabs():
            with gr.Tab("Leaderboard", elem_id="h2h-research-leaderboard-tab"):
                self.leaderboard_button = gr.Button(
                    "Show the leaderboard (Table 2)", variant="primary", elem_id="h2h-leaderboard-button"
                )
                self.leaderboard_caption = gr.Markdown(elem_id="h2h-leaderboard-caption")
                self.leaderboard = table(
                    "Table 2: 100·S per subtask (itinerary I–III: 100·J_final/5)", "h2h-leaderboard"
                )
                self._download_row("leaderboard")
            with gr.Tab("SAP safety", elem_id="h2h-research-safety-tab"):
                self.by_model = gr.Checkbox(label="Per model", value=False, elem_id="h2h-safety-by-model")
                self.safety_button = gr.Button("Show Table 3", variant="primary", elem_id="h2h-safety-button")
                self.safety = table("Table 3: SAP safety", "h2h-safety")
                self._download_row("table3")
            with gr.Tab("Instruction following", elem_id="h2h-research-if-tab"):
                self.instruction_button = gr.Button("Show Fig. 7", variant="primary", elem_id="h2h-if-button")
                self.instruction = table("Fig. 7: mean rating by request kind", "h2h-if")
                self.instruction_plot = gr.Image(
                    label="Fig. 7", type="filepath", interactive=False, elem_id="h2h-if-plot"
                )
                self._download_row("instruction_following")
            self._build_quality(gr)
        self._wire()

    def _build_quality(self, gr: Any) -> None:
        with gr.Tab("Agreement", elem_id="h2h-research-agreement-tab"):
            self.agreement_button = gr.Button("Compute agreement", variant="primary", elem_id="h2h-agreement-button")
            self.agreement = table(
                "Per question: Krippendorff's α (95% CI), Fleiss' κ, percent agreement", "h2h-agreement"
            )
            self._download_row("agreement")
            self.annotators = table("Per annotator: agreement with the others' majority", "h2h-annotators")
            self._download_row("annotators")
        with gr.Tab("Judge vs human", elem_id="h2h-research-calibration-tab"):
            self.calibration_button = gr.Button("Compare", variant="primary", elem_id="h2h-calibration-button")
            self.calibration_stats = table("Spearman ρ, Kendall τ, mean |J_judge − J_human|", "h2h-calibration")
            self.calibration_plot = gr.Image(
                label="J_judge vs J_human", type="filepath", interactive=False, elem_id="h2h-calibration-plot"
            )
            self._download_row("calibration")
        with gr.Tab("Progress", elem_id="h2h-research-progress-tab"):
            self.progress_button = gr.Button("Show progress", variant="primary", elem_id="h2h-progress-button")
            self.progress_campaigns = table("Per campaign", "h2h-progress-campaigns")
            self._download_row("progress_campaigns")
            self.progress_people = table("Per annotator (answers, median seconds per item)", "h2h-progress-people")
            self._download_row("progress_annotators")
        with gr.Tab("Score distributions", elem_id="h2h-research-distribution-tab"):
            with gr.Row():
                self.metric = gr.Dropdown(list(METRIC_RANGES), value="S", label="Score", elem_id="h2h-metric")
                self.bins = gr.Slider(5, 50, value=20, step=1, label="Bins", elem_id="h2h-bins")
                self.distribution_button = gr.Button("Show", variant="primary", elem_id="h2h-distribution-button")
            self.distribution_plot = gr.Image(
                label="Distribution", type="filepath", interactive=False, elem_id="h2h-distribution-plot"
            )
            self.distribution = table("Histogram per model", "h2h-distribution")
            self._download_row("distribution")

    def _download_row(self, name: str) -> None:
        import gradio as gr

        with gr.Row():
            fmt = gr.Radio(list(DOWNLOAD_FORMATS), value="csv", label="Format", elem_id=f"h2h-format-{name}")
            button = gr.Button(f"Export {name}", elem_id=f"h2h-export-{name}")
            file = gr.File(label="Download", interactive=False, height=90, elem_id=f"h2h-file-{name}")
        self.downloads[name] = (fmt, button, file)

    def _params(self) -> list[Any]:
        return [self.variant, self.signature, self.campaign, self.by_model, self.metric, self.bins]

    def _wire(self) -> None:
        params = self._params()
        self.leaderboard_button.click(
            self._on_leaderboard(),
            inputs=[self.variant, self.signature],
            outputs=[self.leaderboard, self.leaderboard_caption],
            api_visibility="private",
        )
        self.safety_button.click(
            self._handler(self._safety), inputs=params, outputs=[self.safety], api_visibility="private"
        )
        self.instruction_button.click(
            self._handler(self._instruction),
            inputs=params,
            outputs=[self.instruction, self.instruction_plot],
            api_visibility="private",
        )
        self.agreement_button.click(
            self._handler(self._agreement),
            inputs=params,
            outputs=[self.agreement, self.annotators],
            api_visibility="private",
        )
        self.calibration_button.click(
            self._handler(self._calibration),
            inputs=params,
            outputs=[self.calibration_stats, self.calibration_plot],
            api_visibility="private",
        )
        self.progress_button.click(
            self._handler(self._progress),
            inputs=params,
            outputs=[self.progress_campaigns, self.progress_people],
            api_visibility="private",
        )
        self.distribution_button.click(
            self._handler(self._distribution),
            inputs=params,
            outputs=[self.distribution_plot, self.distribution],
            api_visibility="private",
        )
        for name, (fmt, button, file) in self.downloads.items():
            button.click(self._on_export(name), inputs=[fmt, *params], outputs=[file], api_visibility="private")

    @staticmethod
    def _safety(session: Any, caller: Any, values: dict[str, Any]) -> list[Any]:
        return [display_frame(research.safety_table(session, caller=caller, by_model=bool(values["by_model"])))]

    @staticmethod
    def _instruction(session: Any, caller: Any, values: dict[str, Any]) -> list[Any]:
        from studio.results.tables import plot_instruction_following

        frame = research.instruction_table(session, caller=caller)
        plot = plot_instruction_following(frame.set_index("model"), new_download_dir() / "instruction_following.png")
        return [display_frame(frame), str(plot)]

    @staticmethod
    def _agreement(session: Any, caller: Any, values: dict[str, Any]) -> list[Any]:
        view = research.agreement(session, caller=caller, campaign=values["campaign"], resamples=DEFAULT_RESAMPLES)
        return [display_frame(view.by_question), display_frame(view.annotators)]

    @staticmethod
    def _calibration(session: Any, caller: Any, values: dict[str, Any]) -> list[Any]:
        import pandas as pd

        from studio.results.calibration import plot_calibration

        stats, rows = research.calibration(session, caller=caller)
        plot = plot_calibration(rows, new_download_dir() / "calibration.png") if len(rows) else None
        return [display_frame(pd.DataFrame([stats.to_dict()])), str(plot) if plot else None]

    @staticmethod
    def _progress(session: Any, caller: Any, values: dict[str, Any]) -> list[Any]:
        return [display_frame(frame) for frame in research.progress(session, caller=caller)]

    @staticmethod
    def _distribution(session: Any, caller: Any, values: dict[str, Any]) -> list[Any]:
        from studio.results.figures import plot_score_distribution

        metric = values["metric"] or "S"
        frame = research.score_distribution(
            session, caller=caller, metric=metric, bins=values["bins"], variant=values["variant"]
        )
        plot = plot_score_distribution(frame, new_download_dir() / f"distribution-{metric}.png", metric=metric)
        return [str(plot), display_frame(frame)]

    def _handler(self, compute: Compute) -> Any:
        """Wrap ``compute(session, caller, page values)`` as an event handler over :meth:`_params`."""
        import gradio as gr

        def on_click(
            variant: str | None,
            signature: str | None,
            campaign: str | None,
            by_model: bool,
            metric: str | None,
            bins: float | None,
            request: gr.Request,
        ) -> list[Any]:
            values = _choices(variant, signature, campaign, by_model, metric, bins)
            with reading(self.open_context, request) as (session, caller):
                return compute(session, caller, values)

        return on_click

    def _on_leaderboard(self) -> Any:
        import gradio as gr

        def on_leaderboard(variant: str | None, signature: str | None, request: gr.Request) -> list[Any]:
            with reading(self.open_context, request) as (session, caller):
                view = research.leaderboard(session, caller=caller, variant=variant, signature=signature)
            return [display_frame(leaderboard_table(view)), leaderboard_caption(view)]

        return on_leaderboard

    def _on_export(self, name: str) -> Any:
        import gradio as gr

        def on_export(
            fmt: str,
            variant: str | None,
            signature: str | None,
            campaign: str | None,
            by_model: bool,
            metric: str | None,
            bins: float | None,
            request: gr.Request,
        ) -> str:
            choices = _choices(variant, signature, campaign, by_model, metric, bins)
            with reading(self.open_context, request) as (session, caller):
                frame = research.table(session, caller=caller, name=name, resamples=DEFAULT_RESAMPLES, **choices)
            # A fresh private directory per request; the file name is built here, never sent by the client.
            with refused_as_gradio_errors():
                return str(table_file(frame, name, fmt, new_download_dir()))

        return on_export

    def load_values(self, session: Any, caller: Any) -> list[Any]:
        """Choices for the variant, signature and campaign pickers when the page loads, in the loader's session."""
        import gradio as gr

        from studio.usecases import annotate

        variants, signatures = research.score_options(session, caller=caller)
        campaigns = [
            campaign.name for campaign in annotate.visible_campaigns(session, caller=caller, include_closed=True)
        ]
        return [
            gr.Dropdown(choices=variants, value=variants[0] if variants else None),
            gr.Dropdown(choices=signatures, value=signatures[0] if signatures else None),
            gr.Dropdown(choices=campaigns, value=campaigns[0] if campaigns else None),
        ]

    def load_outputs(self) -> list[Any]:
        """The components :meth:`load_values` fills."""
        return [self.variant, self.signature, self.campaign]


def _choices(
    variant: str | None,
    signature: str | None,
    campaign: str | None,
    by_model: bool,
    metric: str | None,
    bins: float | None,
) -> dict[str, Any]:
    """The page's current choices, by the names the use cases take."""
    return {
        "variant": variant or None,
        "signature": signature or None,
        "campaign": campaign or None,
        "by_model": by_model,
        "metric": metric,
        "bins": int(bins or 20),
    }
