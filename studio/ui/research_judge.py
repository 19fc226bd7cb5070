"""The Research tab's judge-bias card (under the calibration plot on "Judge vs human"): position flips, length bias,
calibration error and the J < τ decision's κ, each with n, its 95% interval, whether it is material and a sentence
stating the threshold (``studio.results.judge_bias``), and the summary in the note. Layout and wiring here; the
display builders are pure (``card_display``, ``card_note``). The handler opens the caller's context and calls
``studio.usecases.research.judge_bias``, which authorises the caller. Nothing from the data is markup: table cells
are text (``studio.ui.tables.display_frame``), the note is escaped (``studio.ui.research_views.note_html``).
"""

# No `from __future__ import annotations` here: Gradio injects `gr.Request` only when it can resolve
# a handler's annotations, and `gradio` is imported inside functions (it is heavy).
from typing import Any

import pandas as pd

from studio.results import judge_bias as bias
from studio.results.judge_bias import JudgeBiasCard
from studio.ui.research_section import PickedSection
from studio.ui.research_views import note_html, with_interval
from studio.ui.tables import display_frame
from studio.usecases import research

BUTTON = "Judge-bias card"
#: The headers of :func:`card_display`, in order.
CARD_HEADERS: tuple[str, ...] = ("Measure", "Value [95% CI]", "n", "Material", "Material when")
#: The page's name for each measure of the card.
MEASURE_NAMES: dict[str, str] = {
    "flip_rate": "Position-flip rate",
    "first_shown": "First-shown preference",
    "length_rho_judge": "Length ρ (judge)",
    "length_rho_human": "Length ρ (humans)",
    "length_bias": "Length bias (judge − humans)",
    "ece": "Calibration error (ECE)",
    "mean_bias": "Mean bias (judge − humans)",
    "decision_kappa": "Decision J < τ: Cohen's κ",
}


#: Each measure's threshold, short (the sentences in the note state them in full).
THRESHOLDS: dict[str, str] = {
    "flip_rate": f"> {bias.FLIP_MATERIAL:.0%}",
    "first_shown": f"|value − 0.5| > {bias.FIRST_SHOWN_MATERIAL}, CI excludes 0.5",
    "length_bias": f"|value| > {bias.LENGTH_MATERIAL}, CI excludes 0",
    "ece": f"> {bias.ECE_MATERIAL} points",
    "mean_bias": f"|value| > {bias.BIAS_MATERIAL} points, CI excludes 0",
    "decision_kappa": f"< {bias.KAPPA_MATERIAL}",
}


def _material(value: Any) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return "yes" if value else "no"


def card_display(card: JudgeBiasCard) -> pd.DataFrame:
    """The card as the page shows it (:data:`CARD_HEADERS`), every cell text."""
    rows = [
        dict(
            zip(
                CARD_HEADERS,
                (
                    MEASURE_NAMES.get(measure.measure, measure.measure),
                    with_interval(measure.value, measure.low, measure.high),
                    str(measure.n),
                    _material(measure.material),
                    THRESHOLDS.get(measure.measure, "(context)"),
                ),
                strict=True,
            )
        )
        for measure in card.measures
    ]
    return display_frame(rows, columns=list(CARD_HEADERS))


def card_note(card: JudgeBiasCard) -> str:
    """The summary, each measure's sentence (with its threshold), and how the intervals were drawn."""
    drawn = (
        f"Intervals: 95% percentile bootstrap over items or pairs ({card.resamples:,} resamples, seed {card.seed}); "
        "Wilson's for the flip rate."
    )
    sentences = dict.fromkeys(measure.sentence for measure in card.measures)  # the two position rows share one
    return note_html([card.summary, *sentences, drawn])


class JudgeBiasSection(PickedSection):
    """Under the calibration plot in the Judge vs human sub-tab: the judge-bias card."""

    button_label = BUTTON
    elem_id = "h2h-judge-bias"
    table_label = "Judge biases on the adjudicated items: each measure, its 95% interval, n and the threshold in words"

    def compute(self, session: Any, caller: Any, *, variant: Any, signature: Any, judge: Any) -> tuple[str, Any]:
        """The card of these choices (``studio.usecases.research.judge_bias``) and its note."""
        card = research.judge_bias(session, caller=caller, variant=variant, signature=signature, judge=judge)
        return card_note(card), card_display(card)
