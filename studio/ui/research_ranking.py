"""The Research tab's "Rankings (pairwise)" section: a pairwise campaign's Bradley–Terry ranking (arena-rank) with
its 95% intervals as a table and a plot, the win-rate matrix, the position bias and how many votes would swap each
two neighbours (a greedy upper bound), with the rule in words. Layout and wiring here; the display builders are pure
(``ranking_display``, ``fragility_display``, ``ranking_note``, ``ranking_plot``). Every handler opens the caller's
context and calls ``studio.usecases.research.ranking``, which authorises the caller. Nothing from the data is markup:
tables are text cells (``studio.ui.tables``), notes are escaped (``studio.ui.research_views.note_html``), plot labels
are drawn literally (``studio.results.figures.inert_label``).
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from pathlib import Path
from typing import Any

import pandas as pd

from studio.results.ranking import win_rate_rows
from studio.results.ranking_fragility import fragility_lines
from studio.services.research_ranking import RankingView
from studio.ui.calls import OpenContext, reading, refused_as_gradio_errors
from studio.ui.downloads import download_button, new_download_dir, ready, table_file
from studio.ui.research_views import note_html
from studio.ui.tables import display_frame, labelled, sized, table
from studio.usecases import research

#: The workflow whose campaigns the picker offers.
PAIRWISE_TARGET = "response_pair"


def ranking_display(frame: pd.DataFrame) -> pd.DataFrame:
    """The ranking (``studio.results.ranking.RANKING_COLUMNS``) as the page shows it: rating and its 95% interval
    to one decimal, the votes with wins / losses / ties."""
    rows = [
        {
            "Rank": str(int(row["rank"])),
            "System": str(row["competitor"]),
            "Rating": f"{float(row['rating']):.1f}",
            "95% CI": f"[{float(row['lower']):.1f}, {float(row['upper']):.1f}]",
            "Votes": str(int(row["votes"])),
            "Wins / losses / ties": f"{int(row['wins'])} / {int(row['losses'])} / {int(row['ties'])}",
        }
        for row in frame.to_dict("records")
    ]
    return display_frame(rows, ["Rank", "System", "Rating", "95% CI", "Votes", "Wins / losses / ties"])


def fragility_display(frame: pd.DataFrame) -> pd.DataFrame:
    """The fragility table as the page shows it; "no swap" where the removal order never swaps the two."""
    rows = [
        {
            "Upper": str(row["upper"]),
            "Lower": str(row["lower"]),
            "Rating gap": f"{float(row['rating_gap']):.1f}",
            "Votes to swap": "no swap" if pd.isna(row["votes_to_swap"]) else str(int(row["votes_to_swap"])),
            "Of votes": str(int(row["votes"])),
            "Method": str(row["method"]),
        }
        for row in frame.to_dict("records")
    ]
    return display_frame(rows, ["Upper", "Lower", "Rating gap", "Votes to swap", "Of votes", "Method"])


def ranking_note(view: RankingView) -> str:
    """The campaign and question, the position-bias sentence, one line per neighbour pair, and the rule."""
    bias = str(view.ranking.position_bias["sentence"])
    lines = [f"Campaign: {view.campaign}; question: {view.question}.", bias, *fragility_lines(view.ranking.fragility)]
    return note_html([*lines, view.rule], kind="warning" if view.ranking.position_bias["material"] else "info")


def ranking_plot(frame: pd.DataFrame, path: Path) -> Path:
    """Each system's rating with its 95% interval as a horizontal error bar, best at the top, saved to ``path``."""
    from studio.results.figures import inert_label, saved_figure

    ordered = frame.sort_values("rating")
    ratings = ordered["rating"].astype(float).to_numpy()
    errors = [ratings - ordered["lower"].astype(float).to_numpy(), ordered["upper"].astype(float).to_numpy() - ratings]
    with saved_figure(path, size=(7.0, 1.2 + 0.45 * len(ordered))) as axes:
        axes.errorbar(ratings, range(len(ordered)), xerr=errors, fmt="o", capsize=4, color="#1f6feb")
        axes.set_yticks(range(len(ordered)), [inert_label(name) for name in ordered["competitor"]])
        axes.set_xlabel("Bradley–Terry rating (95% sandwich interval)")
        axes.grid(axis="x", alpha=0.3)
    return path


class RankingSection:
    """The rankings section's components (inside the Research tab's "Rankings (pairwise)" sub-tab), handlers."""

    def __init__(self, open_context: OpenContext) -> None:
        self.open_context = open_context

    def build(self) -> None:
        """Create the components in the current Gradio context."""
        import gradio as gr

        gr.HTML(note_html(["Applies: only this section's campaign picker (pairwise campaigns)."]))
        self.picker = gr.Dropdown([], label="pairwise campaign", elem_id="h2h-ranking-campaign")
        self.button = gr.Button("Show the ranking", variant="primary", elem_id="h2h-ranking-button")
        self.note = gr.HTML(elem_id="h2h-ranking-note")
        self.table = table("Bradley–Terry ranking (arena-rank)", "h2h-ranking", wrap=True)
        self.plot = gr.Image(label="Ratings, 95% CI", type="filepath", interactive=False, elem_id="h2h-ranking-plot")
        self.win_rates = table("Win rate: row beats column (votes)", "h2h-ranking-winrates", wrap=True)
        self.fragility = table("Votes to swap neighbours (greedy upper bound)", "h2h-ranking-fragility", wrap=True)
        with gr.Row():
            self.export_button = gr.Button("Export the ranking (CSV)", elem_id="h2h-export-ranking")
            self.file = download_button("h2h-file-ranking")
        self._wire()

    def _wire(self) -> None:
        import gradio as gr

        from studio.errors import InvalidInput, NotFound

        def show(campaign: Any, request: gr.Request) -> list[Any]:
            """Fill the note, tables and plot; a choice with nothing to show says so in the note."""
            try:
                view = self._view(request, campaign)
            except (InvalidInput, NotFound) as problem:
                empty = pd.DataFrame(columns=[""])
                return [note_html([f"Nothing to show: {problem}"], kind="warning"), empty, None, empty, empty]
            plot = ranking_plot(view.ranking.table, new_download_dir() / "ranking.png")
            return [
                ranking_note(view),
                sized(ranking_display(view.ranking.table)),
                str(plot),
                sized(display_frame(win_rate_rows(view.ranking))),
                sized(fragility_display(view.ranking.fragility)),
            ]

        def export(campaign: Any, request: gr.Request) -> Any:
            view = self._view(request, campaign)
            with refused_as_gradio_errors():  # the file name is built here, never sent by the client
                return ready(table_file(view.ranking.table, "ranking", "csv", new_download_dir()))

        outputs = [self.note, self.table, self.plot, self.win_rates, self.fragility]
        self.button.click(show, inputs=[self.picker], outputs=outputs, api_visibility="private")
        self.export_button.click(export, inputs=[self.picker], outputs=[self.file], api_visibility="private")

    def _view(self, request: Any, campaign: Any) -> RankingView:
        with reading(self.open_context, request) as (session, caller):
            return research.ranking(session, caller=caller, campaign=campaign or None)

    def load_value(self, found: list[Any]) -> Any:
        """The picker's choices on page load: the pairwise campaigns among ``found`` (first one chosen)."""
        import gradio as gr

        names = [campaign.name for campaign in found if getattr(campaign, "target_kind", None) == PAIRWISE_TARGET]
        return gr.Dropdown(choices=labelled(names), value=names[0] if names else None)
