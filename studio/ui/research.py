"""The Research tab (researchers, curators and admins): Gradio wiring only, the logic lives in
:mod:`studio.ui.research_flow`.

Each section has a button that computes its table (and figure) and a download of that table in CSV, JSONL or
Parquet. Every handler takes ``gr.Request`` and goes through the flow, which re-resolves the caller and checks
the role on every call; downloads are written to a fresh directory per request under a name the server builds.
Tables are ``gr.Dataframe`` with ``datatype="str"`` (text nodes, never HTML), so model names stay inert.
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine

from studio.services.research import METRIC_RANGES
from studio.ui import research_flow as flow
from studio.ui.curate import refused_as_gradio_errors, table
from studio.ui.curate_flow import DOWNLOAD_FORMATS, display_frame, new_download_dir


def _token(request: Any) -> str | None:
    from studio.app import token_from_request

    return token_from_request(request)


class ResearchTab:
    """The components of the Research tab and the handlers that fill them."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
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
        private = {"api_visibility": "private"}
        params = self._params()
        self.leaderboard_button.click(
            self._on_leaderboard(),
            inputs=[self.variant, self.signature],
            outputs=[self.leaderboard, self.leaderboard_caption],
            **private,
        )
        self.safety_button.click(
            self._handler(
                lambda token, values: [
                    display_frame(flow.safety_table(self.engine, token, by_model=bool(values["by_model"])))
                ]
            ),
            inputs=params,
            outputs=[self.safety],
            **private,
        )
        self.instruction_button.click(
            self._handler(self._instruction),
            inputs=params,
            outputs=[self.instruction, self.instruction_plot],
            **private,
        )
        self.agreement_button.click(
            self._handler(
                lambda token, values: [
                    display_frame(frame) for frame in flow.agreement(self.engine, token, values["campaign"])
                ]
            ),
            inputs=params,
            outputs=[self.agreement, self.annotators],
            **private,
        )
        self.calibration_button.click(
            self._handler(self._calibration),
            inputs=params,
            outputs=[self.calibration_stats, self.calibration_plot],
            **private,
        )
        self.progress_button.click(
            self._handler(lambda token, values: [display_frame(frame) for frame in flow.progress(self.engine, token)]),
            inputs=params,
            outputs=[self.progress_campaigns, self.progress_people],
            **private,
        )
        self.distribution_button.click(
            self._handler(self._distribution),
            inputs=params,
            outputs=[self.distribution_plot, self.distribution],
            **private,
        )
        for name, (fmt, button, file) in self.downloads.items():
            button.click(self._on_export(name), inputs=[fmt, *params], outputs=[file], **private)

    def _instruction(self, token: str | None, values: dict[str, Any]) -> list[Any]:
        directory = new_download_dir()
        frame = flow.instruction_table(self.engine, token)
        return [display_frame(frame), str(flow.instruction_plot(self.engine, token, directory))]

    def _calibration(self, token: str | None, values: dict[str, Any]) -> list[Any]:
        stats, _rows, plot = flow.calibration(self.engine, token, new_download_dir())
        return [display_frame(stats), str(plot) if plot else None]

    def _distribution(self, token: str | None, values: dict[str, Any]) -> list[Any]:
        options = {"metric": values["metric"] or "S", "bins": int(values["bins"] or 20), "variant": values["variant"]}
        frame = flow.distribution(self.engine, token, **options)
        return [str(flow.distribution_plot(self.engine, token, new_download_dir(), **options)), display_frame(frame)]

    def _handler(self, compute: Callable[[str | None, dict[str, Any]], list[Any]]) -> Any:
        """Wrap ``compute(token, page values)`` as an event handler over :meth:`_params`."""
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
            values = {
                "variant": variant or None,
                "signature": signature or None,
                "campaign": campaign or None,
                "by_model": by_model,
                "metric": metric,
                "bins": bins,
            }
            with refused_as_gradio_errors():
                return compute(_token(request), values)

        return on_click

    def _on_leaderboard(self) -> Any:
        import gradio as gr

        def on_leaderboard(variant: str | None, signature: str | None, request: gr.Request) -> list[Any]:
            with refused_as_gradio_errors():
                board = flow.leaderboard(self.engine, _token(request), variant=variant, signature=signature)
            return [display_frame(board.table), board.caption]

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
            params = {
                "variant": variant or None,
                "signature": signature or None,
                "campaign": campaign or None,
                "by_model": by_model,
                "metric": metric,
                "bins": bins,
            }
            # A fresh private directory per request; the file name is built by the flow, never sent by the client.
            with refused_as_gradio_errors():
                return str(flow.export_table(self.engine, _token(request), name, fmt, new_download_dir(), **params))

        return on_export

    def load_values(self, token: str | None) -> list[Any]:
        """Choices for the variant, signature and campaign pickers when the page loads (role checked by the flow)."""
        import gradio as gr

        from studio.ui.curate_flow import campaign_names

        options = flow.score_options(self.engine, token)
        campaigns = campaign_names(self.engine, token)
        return [
            gr.Dropdown(choices=options.variants, value=options.variants[0] if options.variants else None),
            gr.Dropdown(choices=options.signatures, value=options.signatures[0] if options.signatures else None),
            gr.Dropdown(choices=campaigns, value=campaigns[0] if campaigns else None),
        ]

    def load_outputs(self) -> list[Any]:
        """The components :meth:`load_values` fills."""
        return [self.variant, self.signature, self.campaign]
