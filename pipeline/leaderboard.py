"""The leaderboard of paper Table 2: the one definition the CLI (``h2h leaderboard``) and the studio both use.

Per item the value is ``100 * S``, or ``100 * J_final / 5`` for itinerary levels I-III (ARCHITECTURE.md "Scores"). An
item with no value is *pending* and left out of every mean: an item without S, a judged item without J_final, and a
judged item flagged for human adjudication (``J < tau`` or no judge score) that no expert has scored yet (no
``J_human``) — its ``J_final`` is J until then, not a final score. A subtask's cell is the mean over its counted items;
a dimension's average is the plain mean of its subtasks' cells, and is left empty (NaN) unless *every* subtask of the
dimension has counted items, so an average over 2 of 5 subtasks never looks final; ``overall`` is the mean over all of a
model's counted items (item-weighted), shown however many subtasks it covers and marked when that is fewer than all 11.
Every cell comes with how many items it counted and how many are pending, and every average with how many of its
subtasks have counted items (:class:`Leaderboard`), so a partial column is never ranked against full ones without saying
so. The columns follow paper Table 2: each dimension's subtasks (Table 1's order), then its average; overall last.

:func:`cell_text`, :func:`partial_columns` and :data:`AVERAGES_RULE` are how every front door renders a cell, marks a
column and states the rule: ``h2h leaderboard`` (:func:`format_leaderboard`), ``h2h export leaderboard`` and the
studio's Research page.

The pipeline's rows come from ``RUN/results.jsonl`` (:func:`load_score_rows`); the studio builds the same per-item
rows from its store (with the experts' ``J_human``) and calls :func:`build_leaderboard` too.
"""

from __future__ import annotations

import codecs
import math
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from pipeline.csvsafe import CSV_ENCODING, neutralise_cell
from pipeline.jsonl import validate_lines
from pipeline.records import DIMENSION_OF_SUBTASK, JUDGED_SUBTASKS, SUBTASKS, ScoreSignature, Subtask
from pipeline.results import judge_label

#: Paper Table 2's dimensions, in its order.
DIMENSIONS: tuple[str, ...] = ("dialogue", "recollection", "itinerary")
#: Each dimension's subtasks, in paper Table 1's order.
DIMENSION_SUBTASKS: dict[str, tuple[str, ...]] = {
    dimension: tuple(subtask for subtask in SUBTASKS if DIMENSION_OF_SUBTASK[subtask] == dimension)
    for dimension in DIMENSIONS
}
AVERAGE_COLUMNS: tuple[str, ...] = tuple(f"{dimension}_avg" for dimension in DIMENSIONS)
#: The subtasks each average is over: a dimension's for its ``_avg``, all of them for ``overall``.
SUBTASKS_OF_AVERAGE: dict[str, tuple[str, ...]] = {
    **{f"{dimension}_avg": subtasks for dimension, subtasks in DIMENSION_SUBTASKS.items()},
    "overall": SUBTASKS,
}
#: The leaderboard's columns in paper Table 2's order (the CSV header): per dimension its subtasks, then its average;
#: overall last.
COLUMNS: tuple[str, ...] = (
    "model",
    *(column for dimension in DIMENSIONS for column in (*DIMENSION_SUBTASKS[dimension], f"{dimension}_avg")),
    "overall",
)
#: The per-item columns :func:`build_leaderboard` reads (``needs_adjudication`` and ``J_human`` may be absent: then
#: nothing is flagged / nobody adjudicated) and :func:`load_score_rows` returns (``scenario_id`` pairs the bootstrap of
#: :mod:`pipeline.leaderboard_intervals` across models; the table itself does not read it).
ROW_COLUMNS: tuple[str, ...] = (
    "model",
    "subtask",
    "S",
    "J_final",
    "needs_adjudication",
    "J_human",
    "variant",
    "signature",
    "judge",
    "scenario_id",
)
#: The columns of :meth:`Leaderboard.coverage`: items counted and pending per cell, and how many of the subtasks the
#: cell is over have counted items (``subtasks_counted`` of ``subtasks``: 0 or 1 of 1 for a subtask's cell).
COVERAGE_COLUMNS: tuple[str, ...] = ("model", "column", "counted", "pending", "subtasks_counted", "subtasks")
#: The mark on a column where some model's cell is partial (:func:`partial_columns`).
PARTIAL_MARK = " *"
#: How the averages treat missing subtasks, in words: stated under the table by every front door.
AVERAGES_RULE = (
    "A dimension's avg. is the plain mean of its subtasks, shown only when every one of them has counted items; "
    "otherwise it is left empty and the cell says how many have, e.g. – (2/5 subtasks). Overall is a model's mean "
    f"over all its counted items; it says (k/{len(SUBTASKS)} subtasks) when fewer than all {len(SUBTASKS)} subtasks "
    "have counted items."
)
#: What ``(counted/total)`` in a cell means (said where some cell has pending items).
PENDING_CELLS = "(counted/total) in a cell: the items in its mean of all its items; the others await a value."


class LeaderboardError(ValueError):
    """The input cannot make one table (mixed variants, signatures or judges; bad lines)."""


class ScoreRow(BaseModel):
    """What the leaderboard needs from one input line; other fields (of a Result, say) are ignored.

    A plain line that gives ``J_final`` without ``needs_adjudication`` states a final score; a Result flagged for
    adjudication (``needs_adjudication`` true) has none until a line gives its experts' ``J_human``.
    """

    model_config = ConfigDict(extra="ignore")

    model: str = Field(min_length=1)
    subtask: Subtask
    S: float | None = Field(default=None, ge=0, le=1)  # noqa: N815
    J_final: float | None = Field(default=None, ge=0, le=5)  # noqa: N815
    needs_adjudication: bool = False
    J_human: float | None = Field(default=None, ge=0, le=5)  # noqa: N815
    variant: str | None = None
    signature: ScoreSignature | str | None = None
    judge_model: str | None = None
    judge_prompt_version: str | None = None
    scenario_id: str | None = None

    def signature_label(self) -> str | None:
        """The score signature as a label (a Result's object or a plain dict's string), or None."""
        return self.signature.label() if isinstance(self.signature, ScoreSignature) else self.signature

    def judge_label(self) -> str | None:
        """``judge=MODEL|prompt=VERSION`` for a judged subtask's row that names its judge, else None."""
        if self.subtask not in JUDGED_SUBTASKS or self.judge_model is None:
            return None
        return judge_label(self.judge_model, self.judge_prompt_version)


def load_score_rows(path: Path | str) -> pd.DataFrame:
    """Read score lines (Result records or plain dicts) into :data:`ROW_COLUMNS` columns.

    ``signature`` holds the score signature's label and ``judge`` the judge's label (see :func:`judge_label`;
    None outside itinerary I-III). Raises :class:`LeaderboardError` listing every bad line
    (``file:line: field: problem``).
    """
    fast = _fast_rows(Path(path))
    if fast is not None:
        return _frame_of(fast)
    numbered, problems = validate_lines(path, ScoreRow)
    if problems:
        listed = "\n".join(str(problem) for problem in problems[:20])
        more = f"\n... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise LeaderboardError(f"{len(problems)} bad line(s):\n{listed}{more}")
    return _frame_of([row for _, row in numbered])


#: Reads a whole score file in one pass (pydantic's own JSON parser; see :func:`_fast_rows`).
_SCORE_LIST = TypeAdapter(list[ScoreRow])


def _fast_rows(path: Path) -> list[ScoreRow] | None:
    """Every line of ``path`` as a :class:`ScoreRow` in one validation pass, or None when anything is off (not UTF-8,
    a line that is not exactly one valid record): :func:`load_score_rows` then reads it line by line, which names
    every bad line."""
    data = path.read_bytes().removeprefix(codecs.BOM_UTF8)
    lines = [line for line in data.splitlines() if line.strip()]
    try:
        data.decode("utf-8")
        rows = _SCORE_LIST.validate_json(b"[" + b",".join(lines) + b"]")
    except (UnicodeDecodeError, ValidationError):
        return None
    return rows if len(rows) == len(lines) else None


def _frame_of(rows: list[ScoreRow]) -> pd.DataFrame:
    """:data:`ROW_COLUMNS` columns of ``rows`` (signature and judge as labels)."""
    columns: dict[str, list[object]] = {
        "model": [row.model for row in rows],
        "subtask": [row.subtask for row in rows],
        "S": [row.S for row in rows],
        "J_final": [row.J_final for row in rows],
        "needs_adjudication": [row.needs_adjudication for row in rows],
        "J_human": [row.J_human for row in rows],
        "variant": [row.variant for row in rows],
        "signature": [row.signature_label() for row in rows],
        "judge": [row.judge_label() for row in rows],
        "scenario_id": [row.scenario_id for row in rows],
    }
    return pd.DataFrame(columns, columns=list(ROW_COLUMNS))


def _distinct(rows: pd.DataFrame, column: str) -> list[str]:
    return sorted(str(value) for value in rows[column].dropna().unique()) if column in rows else []


#: What must be one value in one table: (column, what it is, the option that picks one, whether a row without a
#: value stays when one is picked: rows outside itinerary I-III have no judge and belong to every judge's table).
_NEVER_MIXED: tuple[tuple[str, str, str, bool], ...] = (
    ("variant", "variants", "--variant", False),
    ("signature", "signatures", "--signature", False),
    ("judge", "judges (judge model or judge prompt version)", "--judge", True),
)


def select_rows(
    rows: pd.DataFrame, *, variant: str | None = None, signature: str | None = None, judge: str | None = None
) -> pd.DataFrame:
    """Keep the rows of one variant, one score signature and one judge; refuse to mix any of them.

    Picking a judge keeps the rows without one (subtasks the judge does not grade, items not judged).
    Raises :class:`LeaderboardError` naming the values present when a choice is needed or wrong.
    """
    chosen_values = {"variant": variant, "signature": signature, "judge": judge}
    for column, plural, option, keep_missing in _NEVER_MIXED:
        present, chosen = _distinct(rows, column), chosen_values[column]
        if chosen is not None:
            if chosen not in present:
                raise LeaderboardError(f"no rows with {column} {chosen!r}; present: {', '.join(present) or 'none'}")
            keep = rows[column] == chosen
            rows = rows[keep | rows[column].isna()] if keep_missing else rows[keep]
        elif len(present) > 1:
            listing = "\n  ".join(present)
            message = f"rows with different {plural} must not be mixed; pick one with {option}:\n  {listing}"
            raise LeaderboardError(message)
    return rows


def _column(rows: pd.DataFrame, name: str) -> pd.Series:
    """``rows[name]`` as floats (NaN where missing or where the frame has no such column)."""
    if name not in rows:
        return pd.Series(float("nan"), index=rows.index, dtype=float)
    return pd.to_numeric(rows[name], errors="coerce").astype(float)


def awaiting_adjudication(rows: pd.DataFrame) -> pd.Series:
    """True for the items flagged for human adjudication (only itinerary I-III items are) that no expert has scored
    yet: ``needs_adjudication`` set and no ``J_human``. Their ``J_final`` (J until then) is no final score."""
    if "needs_adjudication" not in rows:
        return pd.Series(False, index=rows.index, dtype=bool)
    flagged = rows["needs_adjudication"].astype("boolean").fillna(False).astype(bool)
    return flagged & _column(rows, "J_human").isna()


def item_values(rows: pd.DataFrame) -> pd.Series:
    """Each item's leaderboard value: 100*S, or 100*J_final/5 for itinerary I-III; NaN for a pending item (no S,
    no J_final, or :func:`awaiting_adjudication`)."""
    judged = rows["subtask"].isin(JUDGED_SUBTASKS)
    j_value = (_column(rows, "J_final") * 100.0 / 5.0).mask(awaiting_adjudication(rows))
    return j_value.where(judged, _column(rows, "S") * 100.0)


@dataclass(frozen=True)
class Leaderboard:
    """Paper Table 2 and its coverage.

    ``table`` has the columns :data:`COLUMNS` (best overall first; NaN where a cell counted no item, and on a
    dimension's average unless each of its subtasks counted some). ``counted`` and ``pending`` have the same rows and
    columns, holding per cell the number of items in its mean and the number left out because they have no value yet
    (a dimension's average and ``overall`` sum their subtasks').
    """

    table: pd.DataFrame
    counted: pd.DataFrame
    pending: pd.DataFrame

    def pending_by_model(self) -> dict[str, int]:
        """Models with pending items → how many (the ``overall`` column of :attr:`pending`)."""
        totals = zip(self.pending["model"].tolist(), self.pending["overall"].tolist(), strict=True)
        return {str(model): int(count) for model, count in totals if count}

    def subtasks_counted(self) -> pd.DataFrame:
        """Per model and column (:data:`COLUMNS`): how many of the subtasks the cell is over have counted items — 0
        or 1 for a subtask's cell, up to the dimension's for its average, up to all 11 for ``overall``."""
        has_items = self.counted.set_index("model")[list(SUBTASKS)] > 0
        frame = has_items.astype(int)
        for column, subtasks in SUBTASKS_OF_AVERAGE.items():
            frame[column] = has_items[list(subtasks)].sum(axis=1)
        return frame.loc[:, list(COLUMNS[1:])].reset_index()

    def coverage(self) -> pd.DataFrame:
        """Long form: one row per (model, column) with counted and pending items and the subtasks counted of the
        cell's subtasks (:data:`COVERAGE_COLUMNS`)."""
        long = [
            frame.melt(id_vars="model", var_name="column", value_name=name)
            for frame, name in ((self.counted, "counted"), (self.pending, "pending"))
        ]
        long.append(self.subtasks_counted().melt(id_vars="model", var_name="column", value_name="subtasks_counted"))
        merged = long[0].merge(long[1], on=["model", "column"], sort=False)
        merged = merged.merge(long[2], on=["model", "column"], sort=False)
        merged["subtasks"] = [len(SUBTASKS_OF_AVERAGE.get(column, (column,))) for column in merged["column"]]
        return merged.loc[:, list(COVERAGE_COLUMNS)]


def _per_cell(rows: pd.DataFrame, flags: pd.Series, models: list[str]) -> pd.DataFrame:
    """Per model and column, how many of ``rows`` have ``flags`` set (subtasks, dimension averages, overall)."""
    counts = flags.astype(int).groupby([rows["model"], rows["subtask"]]).sum().unstack("subtask")
    counts = counts.reindex(index=models, columns=list(SUBTASKS)).fillna(0).astype(int)
    for column, subtasks in SUBTASKS_OF_AVERAGE.items():
        counts[column] = counts[list(subtasks)].sum(axis=1)
    return counts.loc[:, list(COLUMNS[1:])]


def _means(values: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """Subtask cells, dimension averages (plain mean of the subtask cells, NaN unless every subtask of the dimension
    has a cell) and the item-weighted overall per model."""
    table = values.pivot_table(index="model", columns="subtask", values="value", aggfunc="mean")
    table = table.reindex(index=models, columns=list(SUBTASKS))
    for dimension, subtasks in DIMENSION_SUBTASKS.items():
        # skipna=False: an average over some of the dimension's subtasks would look final (issue 17 item 3)
        table[f"{dimension}_avg"] = table[list(subtasks)].mean(axis=1, skipna=False)
    table["overall"] = values.groupby("model")["value"].mean()
    return table.loc[:, list(COLUMNS[1:])]


def build_leaderboard(rows: pd.DataFrame) -> Leaderboard:
    """Return paper Table 2 (one row per model, columns :data:`COLUMNS`) with its per-cell coverage.

    ``rows`` holds one item per row with ``model``, ``subtask``, ``S``, ``J_final`` and, where known,
    ``needs_adjudication`` and ``J_human`` (see :func:`item_values`); when it has a ``variant``, ``signature`` or
    ``judge`` column, all rows must share one value (see :func:`select_rows`).
    """
    select_rows(rows)
    value = item_values(rows)
    models = sorted(str(model) for model in rows["model"].unique())
    table = _means(rows.assign(value=value).dropna(subset=["value"]), models)
    order = table["overall"].sort_values(ascending=False, na_position="last", kind="stable").index
    frames = [
        frame.reindex(order).rename_axis(index="model", columns=None).reset_index()
        for frame in (table, _per_cell(rows, value.notna(), models), _per_cell(rows, value.isna(), models))
    ]
    return Leaderboard(table=frames[0], counted=frames[1], pending=frames[2])


def describe_pending(board: Leaderboard) -> list[str]:
    """One line per model with pending items, naming each subtask's pending and total items, e.g.
    ``alpha: 3 item(s) pending (left out of the means): itinerary_basic 1 of 4, itinerary_middle 2 of 9``."""
    pending = board.pending.set_index("model").to_dict("index")
    counted = board.counted.set_index("model").to_dict("index")
    lines = []
    for model, total in board.pending_by_model().items():
        left_out = {subtask: int(pending[model][subtask]) for subtask in SUBTASKS if pending[model][subtask]}
        cells = [f"{subtask} {n} of {n + int(counted[model][subtask])}" for subtask, n in left_out.items()]
        lines.append(f"{model}: {total} item(s) pending (left out of the means): {', '.join(cells)}")
    return lines


def write_leaderboard_csv(table: pd.DataFrame, path: Path | str) -> None:
    """Write the table as CSV (UTF-8 with a byte-order mark; two decimals, empty cells for missing subtasks),
    formula-safe."""
    safe = table.assign(model=table["model"].map(neutralise_cell))
    safe.to_csv(path, index=False, float_format="%.2f", na_rep="", encoding=CSV_ENCODING)


def write_coverage_csv(board: Leaderboard, path: Path | str) -> None:
    """Write :meth:`Leaderboard.coverage` as CSV (UTF-8 with a byte-order mark; model, column, counted, pending),
    formula-safe."""
    coverage = board.coverage()
    coverage.assign(model=coverage["model"].map(neutralise_cell)).to_csv(path, index=False, encoding=CSV_ENCODING)


def describe_partial(board: Leaderboard) -> list[str]:
    """One line per model whose averages cover fewer than all their subtasks, e.g. ``alpha: itinerary_avg left empty
    (2 of 5 itinerary subtasks have counted items; none in itinerary_middle, ...); overall over 5 of 11 subtasks``
    (a dimension where the model has no item at all is not named: its average is simply absent)."""
    counted, pending = board.counted.set_index("model"), board.pending.set_index("model")
    covered = board.subtasks_counted().set_index("model")
    lines = []
    for model in covered.index:
        parts = []
        for dimension, subtasks in DIMENSION_SUBTASKS.items():
            column = f"{dimension}_avg"
            missing = [subtask for subtask in subtasks if not counted.loc[model, subtask]]
            if missing and int(counted.loc[model, column] + pending.loc[model, column]):
                done = int(covered.loc[model, column])
                parts.append(
                    f"{column} left empty ({done} of {len(subtasks)} {dimension} subtasks have counted items; "
                    f"none in {', '.join(missing)})"
                )
        if int(covered.loc[model, "overall"]) < len(SUBTASKS):
            parts.append(f"overall over {int(covered.loc[model, 'overall'])} of {len(SUBTASKS)} subtasks")
        if parts:
            lines.append(f"{model}: {'; '.join(parts)}")
    return lines


def cell_text(*, value: float | None, counted: int, pending: int, of_subtasks: tuple[int, int] | None = None) -> str:
    """A leaderboard cell as every front door shows it: the mean with two decimals (``–`` when it has none); then
    ``(counted/total)`` when items are pending, and ``(k/n subtasks)`` when ``of_subtasks`` = (k, n) says an average
    covers fewer than all its subtasks. Empty for a cell with no items at all."""
    total = counted + pending
    if total == 0:
        return ""
    shown = "–" if counted == 0 or value is None or math.isnan(value) else f"{value:.2f}"
    if pending:
        shown += f" ({counted}/{total})"
    if of_subtasks is not None and of_subtasks[0] < of_subtasks[1]:
        shown += f" ({of_subtasks[0]}/{of_subtasks[1]} subtasks)"
    return shown


def cell_texts(board: Leaderboard) -> pd.DataFrame:
    """The table as :func:`cell_text` strings: ``model`` and every column of :data:`COLUMNS`, rows in table order."""
    frames = [
        frame.set_index("model") for frame in (board.table, board.counted, board.pending, board.subtasks_counted())
    ]
    shown: dict[str, list[str]] = {"model": [str(model) for model in frames[0].index]}
    for column in COLUMNS[1:]:
        size = len(SUBTASKS_OF_AVERAGE.get(column, ()))  # 0 for a subtask's cell: no subtask coverage to show
        cells = zip(*(frame[column].tolist() for frame in frames), strict=True)
        shown[column] = [
            cell_text(
                value=value, counted=int(done), pending=int(waiting), of_subtasks=(int(covered), size) if size else None
            )
            for value, done, waiting, covered in cells
        ]
    return pd.DataFrame(shown)


def partial_columns(board: Leaderboard) -> list[str]:
    """The columns (:data:`COLUMNS` order) that get :data:`PARTIAL_MARK`: some model's cell there leaves pending items
    out, or is an average over fewer than all its subtasks though the model has items under it."""
    counted, pending = board.counted.set_index("model"), board.pending.set_index("model")
    covered = board.subtasks_counted().set_index("model")
    marked = []
    for column in COLUMNS[1:]:
        has_items = (counted[column] + pending[column]) > 0
        short = covered[column] < len(SUBTASKS_OF_AVERAGE.get(column, (column,)))
        if int(pending[column].sum()) or (column in SUBTASKS_OF_AVERAGE and bool((has_items & short).any())):
            marked.append(column)
    return marked


def format_leaderboard(board: Leaderboard, *, shown: pd.DataFrame | None = None) -> str:
    """The table as aligned text for a terminal: :func:`cell_texts` (or ``shown``, the same cells with more, e.g. with
    intervals), partial columns' headers marked :data:`PARTIAL_MARK`, and under it which columns are marked and
    :data:`AVERAGES_RULE`."""
    marked = partial_columns(board)
    shown = cell_texts(board) if shown is None else shown.copy()
    shown.columns = [column + (PARTIAL_MARK if column in marked else "") for column in shown.columns]
    lines = [shown.to_string(index=False), ""]
    if marked:
        lines.append(f"Columns marked *: {', '.join(marked)} (a partial cell in each).")
    if board.pending_by_model():
        lines.append(PENDING_CELLS)
    lines.append(AVERAGES_RULE)
    return "\n".join(lines)
