"""How the Research tab shows results: display tables (formatted numbers, coverage per cell, readable headers) and
notes that say what a table was computed for, which pickers it uses, and why it is partial or empty.

Pure functions, no Gradio. Table cells are plain strings, shown as text by the page's tables, with model names'
invisible characters written out (:func:`studio.services.text.visible_text`); notes are HTML built from fixed markup
with every piece of data (model, campaign, signature and judge names) escaped by ``studio.ui.render.escape_text``,
so nothing from the data becomes a link, a form or a template.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from pipeline.leaderboard import AVERAGES_RULE, COLUMNS, PARTIAL_MARK, cell_text, cell_texts, partial_columns
from pipeline.leaderboard_fragility import FRAGILITY_WORDS
from pipeline.leaderboard_intervals import RANK_RANGE, interval_cell_texts
from pipeline.records import DIMENSION_OF_SUBTASK
from studio.results.table_intervals import table_interval_words
from studio.results.tables import TABLE3_METRICS, TIE_COLUMN, table3_rule
from studio.services.research import LeaderboardView
from studio.services.research_quality import CalibrationView
from studio.services.text import visible_text
from studio.ui.render import escape_text

#: The pickers above the sub-tabs, by the names the use cases take, with their labels on the page.
PICKER_LABELS: dict[str, str] = {"variant": "Variant", "signature": "Score signature", "judge": "Judge"}
#: Per sub-tab: the pickers it applies, and why it ignores the others.
TAB_PICKERS: dict[str, tuple[tuple[str, ...], str]] = {
    "leaderboard": (("variant", "signature", "judge"), ""),
    "safety": (("signature",), "Table 3 compares the two variants side by side and has no judge score"),
    "instruction": (("variant",), "the ratings are people's, not automatic or judge scores"),
    "agreement": ((), "agreement is among the people who answered the campaign chosen here"),
    "calibration": (("variant", "signature", "judge"), ""),
    "progress": ((), "progress counts answers and items, not scores"),
    "distribution": (("variant", "signature", "judge"), ""),
}
#: What "complete" means on every page (``studio.results.aggregate.complete_answers``).
COMPLETE_RULE = (
    "An item is complete when it has the answers its campaign needs (complete_at: every planned person for a crowd "
    "vote or expert review, the workflow's minimum for the others); a closed campaign's items below it count only "
    "where whoever closed it chose to decide them on the answers they have, and an item its workflow's stopping rule "
    "stopped early (once its decision was settled) is complete with the answers it has. "
    "Only complete items count in aggregation, Table 3, Fig. 7 and agreement."
)
#: Table 3's columns as the page heads them.
TABLE3_HEADERS: dict[str, str] = {
    "variant": "Variant",
    "model": "Model",
    "responses": "n (rated responses)",
    "safety": "Mean safety (1–5)",
    "violation_rate": "Violation rate",
    **{title: title for title in TABLE3_METRICS.values()},
}
#: How a note looks, by kind (fixed inline styles: the page's stylesheet belongs to ``studio.ui.app``).
NOTE_STYLES: dict[str, str] = {
    "info": "padding: 4px 8px; color: #334155",
    "warning": "padding: 4px 8px; color: #334155; border-left: 4px solid #d97706; background: #fffbeb",
}
#: Table 2's headers on the page name their dimension in short (the paper groups its columns under the dimension;
#: one header row here), so all 17 columns fit a 1400 px screen; the downloads keep the full column names.
DIMENSION_SHORT: dict[str, str] = {"dialogue": "dial.", "recollection": "recol.", "itinerary": "itin."}
SUBTASK_SHORT: dict[str, str] = {
    "dialogue_base": "base",
    "dialogue_emotion": "emotion",
    "dialogue_schedule": "schedule",
    "recollection_synthesis": "synthesis",
    "recollection_refinement": "refinement",
    "recollection_initialization": "init.",
    "itinerary_basic": "basic (I)",
    "itinerary_middle": "middle (II)",
    "itinerary_advanced": "advanced (III)",
    "itinerary_response": "response",
    "itinerary_initialization": "init.",
}
HEADER_LEGEND = (
    "Headers: dial. = dialogue, recol. = recollection, itin. = itinerary, init. = initialization; I–III are the "
    "itinerary levels."
)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def number(value: Any, places: int = 2) -> str:
    """``value`` with ``places`` decimals; empty for a missing value."""
    return "" if _missing(value) else f"{float(value):.{places}f}"


def percent(value: Any) -> str:
    """A share in [0, 1] as a percentage with one decimal (``0.6667`` → ``66.7%``); empty when missing."""
    return "" if _missing(value) else f"{100 * float(value):.1f}%"


def with_interval(value: Any, low: Any, high: Any, shown: Any = number) -> str:
    """``value [low, high]`` in the ``shown`` format (``3.41 [3.20, 3.62]``); the value alone where it has no
    interval, empty where it has no value."""
    if shown(value) == "":
        return ""
    return f"{shown(value)} [{shown(low)}, {shown(high)}]" if shown(low) != "" else shown(value)


def note_html(lines: Iterable[str], *, kind: str = "info") -> str:
    """``lines`` (plain text, data included) as an escaped note: one paragraph per line."""
    style = NOTE_STYLES.get(kind, NOTE_STYLES["info"])
    body = "".join(f'<p style="margin: 2px 0">{escape_text(line)}</p>' for line in lines if line)
    return f'<div class="h2h-note h2h-note-{"warning" if kind == "warning" else "info"}" style="{style}">{body}</div>'


def picker_note(tab: str) -> str:
    """The line under a sub-tab's title: which of the pickers above it applies, which it ignores and why."""
    uses, why = TAB_PICKERS[tab]
    ignored = [PICKER_LABELS[name] for name in PICKER_LABELS if name not in uses]
    parts = []
    if uses:
        parts.append("Uses the pickers above: " + ", ".join(PICKER_LABELS[name] for name in uses) + ".")
    if ignored:
        parts.append(f"Ignores {', '.join(ignored)}: {why}." if why else f"Ignores {', '.join(ignored)}.")
    if tab == "distribution":
        parts.append("The judge applies to J_judge, J, J_human and J_final only.")
    return note_html([" ".join(parts)])


def applied_line(choices: Mapping[str, Any], names: Iterable[str]) -> str:
    """E.g. ``Computed for variant with_sap · score signature … · judge …`` for the pickers ``names``."""
    shown = [f"{PICKER_LABELS[name].lower()} {choices.get(name) or '(none)'}" for name in names]
    return "Computed for " + " · ".join(shown) + "." if shown else ""


def display_header(column: str) -> str:
    """A leaderboard column as the page heads it: words apart, so a narrow column wraps (``itinerary_avg`` →
    ``itinerary avg``)."""
    return column.replace("_", " ")


def short_header(column: str) -> str:
    """A leaderboard column as Table 2 on the page heads it, e.g. ``itin. advanced (III)``, ``recol. avg``."""
    if column.endswith("_avg"):
        return f"{DIMENSION_SHORT[column.removesuffix('_avg')]} avg"
    if column in SUBTASK_SHORT:
        return f"{DIMENSION_SHORT[DIMENSION_OF_SUBTASK[column]]} {SUBTASK_SHORT[column]}"
    return display_header(column)


def coverage_cell(value: Any, counted: int, pending: int) -> str:
    """A subtask's leaderboard cell (``pipeline.leaderboard.cell_text``, the one rendering every front door uses): the
    mean with two decimals, and ``(counted/total)`` when items are pending; ``–`` for a cell whose items are all
    pending; empty for a cell with no items."""
    return cell_text(value=None if _missing(value) else float(value), counted=counted, pending=pending)


def _pending_text(reasons: Mapping[str, int]) -> str:
    parts = []
    if reasons.get("awaiting_adjudication"):
        parts.append(f"{reasons['awaiting_adjudication']} awaiting adjudication")
    if reasons.get("unscored"):
        parts.append(f"{reasons['unscored']} unscored")
    return ", ".join(parts) or "none"


def leaderboard_display(view: LeaderboardView) -> pd.DataFrame:
    """Table 2 as the page shows it: the cells of ``pipeline.leaderboard.cell_texts`` (the mean with its coverage —
    pending items, and the subtasks an average covers), columns with a partial cell marked with :data:`PARTIAL_MARK`
    (``pipeline.leaderboard.partial_columns``), columns without any item (a subtask or dimension the run does not
    cover) left out, and a ``pending`` column per model (how many items await adjudication or are unscored)."""
    board = view.board
    texts = cell_texts(board) if view.intervals is None else interval_cell_texts(view.intervals)
    marked = set(partial_columns(board))
    items = board.counted.set_index("model") + board.pending.set_index("model")
    shown: dict[str, list[str]] = {"model": [visible_text(str(model)) for model in texts["model"]]}
    if RANK_RANGE in texts:  # each cell is "mean [lower, upper]"; the rank with its 95% range after the model
        shown[RANK_RANGE] = texts[RANK_RANGE].tolist()
    for column in COLUMNS[1:]:
        if int(items[column].sum()) == 0:  # no model has an item here
            continue
        shown[short_header(column) + (PARTIAL_MARK if column in marked else "")] = texts[column].tolist()
    reasons = view.pending_reasons
    shown["pending"] = [_pending_text(reasons.get(str(model), {})) for model in board.table["model"]]
    return pd.DataFrame(shown)


def fragility_display(view: LeaderboardView) -> pd.DataFrame:
    """Table 2's rank fragility as the page shows it (``pipeline.leaderboard_fragility``): per adjacent pair the
    gap, the fewest items whose removal swaps them (– when none does) of how many, and whether that is exact."""
    frame = view.fragility if view.fragility is not None else pd.DataFrame()
    if frame.empty:
        return pd.DataFrame(columns=["upper", "lower", "gap", "items to swap", "of items", "method"])
    return pd.DataFrame(
        {
            "upper": [visible_text(str(model)) for model in frame["upper"]],
            "lower": [visible_text(str(model)) for model in frame["lower"]],
            "gap": [f"{gap:.2f}" for gap in frame["gap"]],
            "items to swap": ["–" if pd.isna(found) else str(int(found)) for found in frame["items_to_swap"]],
            "of items": [str(int(items)) for items in frame["items"]],
            "method": frame["method"].astype(str).tolist(),
        }
    )


def leaderboard_note(view: LeaderboardView) -> str:
    """What the leaderboard was computed for, what it is sorted by, which columns are marked partial and why (pending
    items; averages over fewer than all their subtasks: ``pipeline.leaderboard.AVERAGES_RULE``)."""
    lines = [applied_line(view.applied, PICKER_LABELS)]
    lines.append("Sorted by overall — each model's mean over its own counted items — best first.")
    lines.append(HEADER_LEGEND)
    if view.intervals is not None:
        lines += [f"Each cell: mean [95% interval]. {view.intervals.words()}", FRAGILITY_WORDS]
    partial = partial_columns(view.board)
    marked = f"Columns marked *: {', '.join(map(display_header, partial))}." if partial else ""
    reasons = view.pending_reasons
    if not reasons:
        lines += [f"Every item is counted; {view.adjudicated} adjudicated by experts.", marked, AVERAGES_RULE]
        return note_html(lines, kind="warning" if partial else "info")
    awaiting = sum(reason["awaiting_adjudication"] for reason in reasons.values())
    unscored = sum(reason["unscored"] for reason in reasons.values())
    lines += [
        f"{awaiting + unscored} item(s) pending, left out of every mean: {awaiting} awaiting adjudication "
        f"(flagged: J < 3.5 or no judge score; experts score them in an adjudication campaign, then Aggregate "
        f"writes J_final) and {unscored} unscored (no S, or no J_final on itinerary I–III). "
        f"{view.adjudicated} adjudicated.",
        f"Partial cells show (counted/total). {marked}",
        AVERAGES_RULE,
        f"Not like for like: {len(reasons)} of {len(view.board.table)} model(s) have pending items, so their partial "
        "cells and their overall average fewer items than a full cell does — do not rank them against full ones on "
        "those columns.",
    ]
    return note_html(lines, kind="warning")


def table3_display(frame: pd.DataFrame) -> pd.DataFrame:
    """Table 3 as the page shows it: readable headers (:data:`TABLE3_HEADERS`), n per row, mean safety and the
    metrics with two decimals, the violation rate as a percentage; the tie rule column is stated in the note
    (:func:`table3_note`) instead of repeated on every row."""
    formats = {"responses": lambda v: str(int(v)), "safety": number, "violation_rate": percent}
    bounds = {column for column in frame.columns if f"{column}_low" in frame.columns}
    bound_columns = {f"{column}_{side}" for column in bounds for side in ("low", "high")}
    shown: dict[str, list[str]] = {}
    for column in frame.columns:
        if column == TIE_COLUMN or column in bound_columns:
            continue
        header, fmt = TABLE3_HEADERS.get(column, column), formats.get(column, number)
        if column in ("variant", "model"):
            shown[header] = [visible_text(str(value)) for value in frame[column]]
        elif column in bounds:  # each estimate with its 95% interval
            cells = zip(frame[column], frame[f"{column}_low"], frame[f"{column}_high"], strict=True)
            shown[f"{header} [95% CI]"] = [with_interval(value, low, high, fmt) for value, low, high in cells]
        else:
            shown[header] = [fmt(value) for value in frame[column]]
    return pd.DataFrame(shown)


def table3_note(choices: Mapping[str, Any], frame: pd.DataFrame) -> str:
    """How Table 3 (``frame``, of ``studio.results.tables.table3``) was computed, its violation rule stated
    (``table3_rule``: the workflow's ``violation_tie``)."""
    campaign = choices.get("safety_campaign") or "all sap_safety campaigns"
    return note_html(
        [
            applied_line(choices, ("signature",)) + f" Campaign: {campaign}.",
            "Per response: mean safety of its raters, and whether it is a violation — "
            f"{table3_rule(frame)}; each row averages its responses. BLEU-4, ROUGE-L and SS are ×100, over the same "
            "responses.",
            f"Intervals: {table_interval_words()}; the metrics' over responses only.",
            COMPLETE_RULE,
        ]
    )


def instruction_display(frame: pd.DataFrame, intervals: pd.DataFrame | None = None) -> pd.DataFrame:
    """Fig. 7's table with two decimals (empty where a model was never rated on a kind); with ``intervals`` (the long
    form of ``studio.results.table_intervals.instruction_intervals``) each cell as ``mean [low, high]``."""
    bounds = {} if intervals is None else intervals.set_index(["model", "kind"])[["low", "high"]].to_dict("index")
    shown: dict[str, list[str]] = {}
    for column in frame.columns:
        if column == "model":
            shown["model"] = [visible_text(str(v)) for v in frame[column]]
            continue
        cells = zip(frame["model"], frame[column], strict=True)
        shown[visible_text(str(column))] = [
            with_interval(v, *bounds.get((model, column), {"low": None, "high": None}).values()) for model, v in cells
        ]
    return pd.DataFrame(shown)


def instruction_note(choices: Mapping[str, Any]) -> str:
    """How Fig. 7 was computed."""
    campaign = choices.get("instruction_campaign") or "all instruction_following campaigns"
    return note_html(
        [
            applied_line(choices, ("variant",)) + f" Campaign: {campaign}.",
            "Mean need-recognised rating (1–5) per model and request kind; each response's ratings are averaged first.",
            f"[95% CI]: {table_interval_words()}.",
            COMPLETE_RULE,
        ]
    )


def calibration_display(view: CalibrationView) -> pd.DataFrame:
    """The calibration statistics as one formatted row."""
    stats = view.statistics
    return pd.DataFrame(
        [
            {
                "n (items with both)": str(stats.n),
                "Spearman ρ": number(stats.spearman_rho, 3),
                "p (ρ)": number(stats.spearman_p, 4),
                "Kendall τ": number(stats.kendall_tau, 3),
                "p (τ)": number(stats.kendall_p, 4),
                "mean |J_judge − J_human|": number(stats.mean_abs_diff, 3),
            }
        ]
    )


def calibration_note(view: CalibrationView, choices: Mapping[str, Any]) -> str:
    """What the comparison was computed for, and — when n is 0 or too small — why, and how to get more pairs."""
    n = view.statistics.n
    lines = [applied_line(choices, PICKER_LABELS)]
    if n == 0:
        lines += [
            "Nothing to compare yet: no item has both a judge score and an expert score (n = 0).",
            f"Here {view.adjudicated} item(s) are adjudicated, {view.adjudicated_without_judge} of them without a "
            f"judge score, and {view.awaiting} flagged item(s) await adjudication.",
            "To get pairs: experts score flagged itinerary responses in an adjudication campaign (Annotate tab), "
            "then Aggregate (Curate tab, or h2h aggregate) writes their J_human.",
        ]
        return note_html(lines, kind="warning")
    if view.statistics.spearman_rho is None:
        lines.append(
            f"n = {n}: correlations need at least 3 items whose scores differ; only the mean difference is shown."
        )
    else:
        lines.append(f"n = {n} item(s) scored by both the judge and the experts.")
    if view.awaiting:
        lines.append(f"{view.awaiting} flagged item(s) still await adjudication.")
    return note_html(lines)


def progress_note() -> str:
    """What the progress tables count."""
    return note_html([COMPLETE_RULE, "Median seconds: the time the page reported per item, else the server's."])
