"""The Research tab's prediction-powered section (under the Leaderboard table): per model and itinerary subtask the
PPI score with its 95% interval, Table 2's classic value beside it, the audit's own mean, the effective n and the
rule in words (``studio.results.ppi``). Layout and wiring here; the display builders are pure (``ppi_display``,
``ppi_note``). The handler opens the caller's context and calls ``studio.usecases.research.ppi_table``, which
authorises the caller. Nothing from the data is markup: table cells are text (``studio.ui.tables.display_frame``),
the note is escaped (``studio.ui.research_views.note_html``).
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from typing import Any

import pandas as pd

from studio.services.research_ppi import PpiView
from studio.ui.research_section import PickedSection
from studio.ui.research_views import note_html, number, with_interval
from studio.ui.tables import display_frame
from studio.usecases import research

BUTTON = "Prediction-powered itinerary scores"
#: The headers of :func:`ppi_display`, in order.
PPI_HEADERS: tuple[str, ...] = (
    "Model",
    "Subtask",
    "PPI [95% CI]",
    "Classic (Table 2)",
    "Human only [95% CI]",
    "Audited / judged",
    "Effective n",
    "Why no PPI",
)


def ppi_display(frame: pd.DataFrame) -> pd.DataFrame:
    """``studio.results.ppi.ppi_cells``' frame as the page shows it (:data:`PPI_HEADERS`), every cell text."""
    rows = [
        dict(
            zip(
                PPI_HEADERS,
                (
                    row["model"],
                    row["subtask"],
                    with_interval(row["ppi"], row["ppi_low"], row["ppi_high"]),
                    number(row["classic"]),
                    with_interval(row["human_only"], row["human_low"], row["human_high"]),
                    f"{int(row['n_audited'])} / {int(row['n_judged'])}",
                    number(row["effective_n"], 1),
                    row["note"],
                ),
                strict=True,
            )
        )
        for row in frame.to_dict("records")
    ]
    return display_frame(rows, columns=list(PPI_HEADERS))


def ppi_note(view: PpiView) -> str:
    """What the table was computed for, how many responses the audits drew, and the rule in words."""
    applied = "; ".join(f"{name}: {value}" for name, value in view.applied.items() if value)
    drawn = f"{view.audited} audited item(s) (a seeded random sample of an adjudication campaign)."
    if not view.audited:
        drawn = "No audited items: create an adjudication campaign with --audit-share (or audit: in its workflow)."
    return note_html([f"Computed for {applied or 'the stored scores'}.", drawn, view.rule])


class PpiSection(PickedSection):
    """Under Table 2 in the Leaderboard sub-tab: the prediction-powered itinerary scores."""

    button_label = BUTTON
    elem_id = "h2h-ppi"
    table_label = (
        "Prediction-powered scores: the judge on every judged item, rectified by the experts on a random audit"
    )

    def compute(self, session: Any, caller: Any, *, variant: Any, signature: Any, judge: Any) -> tuple[str, Any]:
        """The PPI table of these choices (``studio.usecases.research.ppi_table``) and its note."""
        view = research.ppi_table(session, caller=caller, variant=variant, signature=signature, judge=judge)
        return ppi_note(view), ppi_display(view.table)
