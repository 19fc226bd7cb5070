"""Tables for the page: use-case results turned into DataFrames of plain values for ``gr.Dataframe``.

Long text is cut, nested values become JSON text, floats are rounded to 4 places, NaN is empty. The page shows every
cell as text (``datatype="str"``: text nodes, never HTML or Markdown), so model names and dataset text stay inert;
and every character a person cannot see (a right-to-left override, a zero-width space, a soft hyphen) is written out
as ``⟨U+202E⟩`` by the studio's one rule (:func:`studio.services.text.visible_text`) — in :func:`display_frame`, and
again, whatever a handler returns, in the table component itself (:func:`table`, :func:`show_as_text`), for every
cell and header.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from studio.services.curation import Page
from studio.services.listing import Paging
from studio.services.text import visible_text

#: Long text is cut in listing tables (the detail view shows it whole).
CELL_CHARS = 120
#: The scenario list beside the opened scenario (half the page wide): what a curator triages by — the review state,
#: the crowd's decision with its agreement and votes, whether its models (Dawid–Skene, MACE) disagree with it, the
#: LLM's verdict with its uncertainty, the refine run's flags — then the start of the user input; each cell's words
#: wrap inside its column (:func:`scenario_list`).
SCENARIO_COLUMNS: list[str] = ["id", "status", "crowd", "models", "LLM", "flags", "user input"]
#: The ``models`` cell of a scenario whose crowd models decided otherwise than the majority (else empty).
MODELS_DISAGREE_MARK = "disagree"
#: The user input's first characters in the list (the opened scenario shows all of it).
LIST_TEXT_CHARS = 60
#: The widest a column of the list grows (in characters) before its words wrap: six columns in half the page.
LIST_COLUMN_CHARS = 16


RESPONSE_COLUMNS: list[str] = [
    "scenario_id",
    "model",
    "variant",
    "subtask",
    "needs_adjudication",
    "S",
    "J_judge",
    "J",
    "J_human",
    "J_final",
]
FLAG_COLUMNS: list[str] = ["kind", "field", "found", "before", "after", "done", "source", "reason"]
TALLY_COLUMNS: list[str] = ["campaign", "question", "value", "count", "percent_agreement"]
COMMENT_COLUMNS: list[str] = ["campaign", "annotator", "question", "text"]
VERSION_COLUMNS: list[str] = ["name", "scenarios", "decided", "created_at", "created_by", "note", "content_hash"]
AUDIT_COLUMNS: list[str] = ["at", "actor", "action", "entity", "entity_id", "before", "after", "reason"]
AGGREGATION_COLUMNS: list[str] = [
    "campaign",
    "workflow_type",
    "rule",
    "answers",
    "complete_items",
    "below_quota",
    "changed",
    "review_campaign",
    "review_items_opened",
    "statuses",
    "labels",
    "pending_adjudication",
]


@dataclass(frozen=True)
class TablePage:
    """One page of a listing: the rows to show, how many rows match, and the page numbers."""

    frame: pd.DataFrame
    total: int
    page: int
    pages: int

    @property
    def summary(self) -> str:
        """A one-line caption, e.g. ``"12 match · page 1 of 3"``."""
        return f"{self.total} match · page {self.page} of {self.pages}"


def shorten(value: Any, limit: int = CELL_CHARS) -> Any:
    """Text cut to ``limit`` characters (with an ellipsis); other values unchanged."""
    if isinstance(value, str) and len(value) > limit:
        return value[: limit - 1] + "…"
    return value


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 4)
    if isinstance(value, list | tuple):
        return [_rounded(part) for part in value]
    if isinstance(value, dict):
        return {key: _rounded(part) for key, part in value.items()}
    return value


def shown(value: Any) -> Any:
    """A cell or header as the page shows it: text with its invisible characters written out
    (:func:`~studio.services.text.visible_text`); other values unchanged."""
    return visible_text(value) if isinstance(value, str) else value


def labelled(values: Iterable[str]) -> list[tuple[str, str]]:
    """Dropdown choices for names from the data (models, campaigns, judges, versions): each labelled as shown
    (:func:`shown`) and valued as stored, so a pick still names the thing itself:
    ``gr.Dropdown(choices=labelled(names))``."""
    return [(shown(value), value) for value in values]


def _display_cell(value: Any) -> Any:
    if hasattr(value, "item") and not isinstance(value, str):  # numpy scalars and arrays
        value = value.tolist()
    value = _rounded(value)
    if isinstance(value, dict | list | tuple):
        value = json.dumps(value, ensure_ascii=False, default=str)
    return shorten(shown(value))


def display_frame(rows: list[dict[str, Any]] | pd.DataFrame, columns: list[str] | None = None) -> pd.DataFrame:
    """Rows as a DataFrame for display: long text cut, nested values as JSON text, floats rounded to 4 places,
    invisible characters written out (:func:`shown`) in cells and headers."""
    frame = rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame.from_records(rows, columns=columns)
    for column in frame.columns:
        frame[column] = frame[column].map(_display_cell)
    return frame.rename(columns=shown)


def table_page(found: Page, columns: list[str]) -> TablePage:
    """A use case's :class:`~studio.services.curation.Page` as the page shows it (only ``columns``)."""
    frame = display_frame(found.rows)[columns] if found.rows else pd.DataFrame(columns=columns)
    pages = Paging(page=found.page, page_size=found.page_size).pages(found.total)
    return TablePage(frame, found.total, found.page, pages)


def _crowd_cell(row: dict[str, Any]) -> str:
    """E.g. ``revise · 67% · 3 votes``: the crowd's decision, its agreement (when defined) and the votes counted;
    ``tie · 4 vote(s)`` where the crowd voted and no verdict led (a tie decides nothing: it goes to experts)."""
    if not row.get("crowd_decision"):
        return f"tie · {int(row['crowd_votes'])} vote(s)" if row.get("crowd_votes") else ""
    parts = [str(row["crowd_decision"])]
    agreement = _rounded(row.get("crowd_agreement"))
    if agreement is not None:
        parts.append(f"{100 * float(agreement):.0f}%")
    if row.get("crowd_votes"):
        parts.append(f"{int(row['crowd_votes'])} vote(s)")
    return " · ".join(parts)


def _llm_cell(row: dict[str, Any]) -> str:
    """E.g. ``keep · 0.58 uncertain``: the LLM pre-screen's verdict and its uncertainty (empty when not screened)."""
    uncertainty = _rounded(row.get("uncertainty"))
    parts = [str(row["llm_verdict"])] if row.get("llm_verdict") else []
    if uncertainty is not None:
        parts.append(f"{float(uncertainty):.2f} uncertain")
    return " · ".join(parts)


def scenario_list(found: Page) -> TablePage:
    """A page of ``browse_scenarios`` as the list beside the opened scenario shows it (:data:`SCENARIO_COLUMNS`):
    the review state in words (``needs revision``), the crowd and LLM cells in one line each, the models' cell
    (:data:`MODELS_DISAGREE_MARK` where they disagree with the majority), the flags' kinds, the user input's first
    :data:`LIST_TEXT_CHARS` characters."""
    rows = [
        {
            "id": shown(row["id"]),
            "status": str(row.get("status") or "pending").replace("_", " "),
            "crowd": shown(_crowd_cell(row)),
            "models": MODELS_DISAGREE_MARK if row.get("models_disagree") else "",
            "LLM": shown(_llm_cell(row)),
            "flags": shown(", ".join(row.get("flags") or [])),
            "user input": shorten(shown(row.get("user_input")), LIST_TEXT_CHARS),
        }
        for row in found.rows
    ]
    pages = Paging(page=found.page, page_size=found.page_size).pages(found.total)
    return TablePage(pd.DataFrame(rows, columns=SCENARIO_COLUMNS), found.total, found.page, pages)


def listed(shown: TablePage) -> Any:
    """The scenario list (:func:`scenario_list`) for its ``gr.Dataframe``: its columns fill the list's half of the
    page and no more (:func:`fitted`), the user input the widest."""
    return fitted(shown.frame, max_chars=LIST_COLUMN_CHARS, texts=("user input",))


def show_as_text(component: Any) -> Any:
    """``component`` (a ``gr.Dataframe``) with every value a handler returns, however it was built, reaching the page
    with its invisible characters written out (:func:`shown`, on each cell and header): the one place every table of
    the studio passes through. Gradio's own postprocessing runs first, unchanged. (An instance attribute, not a
    subclass: a ``gr.Dataframe`` subclass makes Gradio write a ``.pyi`` file beside this module at import.)"""
    postprocess = component.postprocess

    def postprocess_shown(value: Any) -> Any:
        data = postprocess(value)
        data.headers = [shown(header) for header in data.headers]
        data.data = [[shown(cell) for cell in row] for row in data.data]
        return data

    component.postprocess = postprocess_shown
    return component


def table(
    label: str, elem_id: str, columns: list[str] | None = None, *, wrap: bool = False, pinned_columns: int | None = None
) -> Any:
    """A read-only table whose cells are shown as plain text, invisible characters written out (``columns``: the
    headers shown while empty; ``wrap``: long cells and headers wrap instead of widening their column;
    ``pinned_columns``: that many leading columns stay in view while the table scrolls sideways)."""
    import gradio as gr

    component = gr.Dataframe(
        pd.DataFrame(columns=columns or [""]),
        label=label,
        elem_id=elem_id,
        interactive=False,
        datatype="str",
        max_height=600,
        wrap=wrap,
        pinned_columns=pinned_columns,
    )
    return show_as_text(component)


def column_widths(
    frame: pd.DataFrame, *, char_px: int = 9, padding_px: int = 28, max_chars: int = 28
) -> list[str | int]:
    """Pixel widths that fit each column's longest cell and its header's longest word, so a wrapping table breaks
    headers between words, never inside one; a column of long text (a long model name) stops at ``max_chars`` and
    wraps. The table scrolls sideways when the columns do not all fit."""
    widths: list[str | int] = []
    for column in frame.columns:
        cells = [len(str(cell)) for cell in frame[column] if cell is not None]
        longest = max([len(word) for word in str(column).split()] + cells)
        widths.append(f"{min(longest, max_chars) * char_px + padding_px}px")
    return widths


def sized(frame: pd.DataFrame) -> Any:
    """``frame`` for a wrapping ``gr.Dataframe`` with :func:`column_widths`: headers wrap between words (never
    inside one), long texts wrap inside their column."""
    import gradio as gr

    return gr.Dataframe(value=frame, column_widths=column_widths(frame))


def _longest_word(value: Any) -> int:
    return max((len(word) for word in str(value).split()), default=0)


def fitted_widths(
    frame: pd.DataFrame, *, max_chars: int = 20, padding_chars: int = 2, texts: tuple[str, ...] = ()
) -> list[str | int]:
    """Column widths in percent of the table's width, in proportion to what each column needs without breaking a
    word: its header's and its cells' longest word (at most ``max_chars``: a long model name wraps), plus
    ``padding_chars``; a column of running text (``texts``) takes ``max_chars``, so its lines are not a word long.
    The columns add up to the table's width, so the table never scrolls sideways; where the page is too narrow for
    the words, a word breaks inside its cell rather than push a column out of view."""
    needs = []
    for column in frame.columns:
        words = [_longest_word(column)] + [_longest_word(cell) for cell in frame[column] if cell is not None]
        needs.append((max_chars if column in texts else min(max(words), max_chars)) + padding_chars)
    total = sum(needs) or 1
    return [f"{100 * need / total:.2f}%" for need in needs]


def fitted(frame: pd.DataFrame, *, max_chars: int = 20, texts: tuple[str, ...] = ()) -> Any:
    """``frame`` for a wrapping ``gr.Dataframe`` as wide as its place on the page and no wider
    (:func:`fitted_widths`)."""
    import gradio as gr

    return gr.Dataframe(value=frame, column_widths=fitted_widths(frame, max_chars=max_chars, texts=texts))
