"""The leaderboard of paper Table 2: the one definition the CLI (``h2h leaderboard``) and the studio both use.

Per item the value is ``100 * S``, or ``100 * J_final / 5`` for itinerary levels I-III (DESIGN.md "Scores"). An item
with no value is *pending* and left out of every mean: an item without S, a judged item without J_final, and a judged
item flagged for human adjudication (``J < tau`` or no judge score) that no expert has scored yet (no ``J_human``) —
its ``J_final`` is J until then, not a final score. A subtask's cell is the mean over its counted items; a dimension's
average is the plain mean of its subtasks' cells; ``overall`` is the mean over all of a model's counted items
(item-weighted). Every cell comes with how many items it counted and how many are pending (:class:`Leaderboard`), so
a partial column is never ranked against full ones without saying so.

The pipeline's rows come from ``RUN/results.jsonl`` (:func:`load_score_rows`); the studio builds the same per-item
rows from its store (with the experts' ``J_human``) and calls :func:`build_leaderboard` too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from pipeline.csvsafe import CSV_ENCODING, neutralise_cell
from pipeline.jsonl import validate_lines
from pipeline.records import DIMENSION_OF_SUBTASK, JUDGED_SUBTASKS, SUBTASKS, ScoreSignature, Subtask
from pipeline.results import judge_label

DIMENSIONS: tuple[str, ...] = ("dialogue", "itinerary", "recollection")
AVERAGE_COLUMNS: tuple[str, ...] = tuple(f"{dimension}_avg" for dimension in DIMENSIONS)
#: The leaderboard's columns, in order (the CSV header).
COLUMNS: tuple[str, ...] = ("model", *SUBTASKS, *AVERAGE_COLUMNS, "overall")
#: The per-item columns :func:`build_leaderboard` reads (``needs_adjudication`` and ``J_human`` may be absent: then
#: nothing is flagged / nobody adjudicated) and :func:`load_score_rows` returns.
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
)
#: The columns of :meth:`Leaderboard.coverage`.
COVERAGE_COLUMNS: tuple[str, ...] = ("model", "column", "counted", "pending")


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
    numbered, problems = validate_lines(path, ScoreRow)
    if problems:
        listed = "\n".join(str(problem) for problem in problems[:20])
        more = f"\n... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise LeaderboardError(f"{len(problems)} bad line(s):\n{listed}{more}")
    fields = {"model", "subtask", "S", "J_final", "needs_adjudication", "J_human", "variant"}
    rows = [
        {**row.model_dump(include=fields), "signature": row.signature_label(), "judge": row.judge_label()}
        for _, row in numbered
    ]
    return pd.DataFrame(rows, columns=list(ROW_COLUMNS))


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

    ``table`` has the columns :data:`COLUMNS` (best overall first; NaN where a cell counted no item). ``counted`` and
    ``pending`` have the same rows and columns, holding per cell the number of items in its mean and the number left
    out because they have no value yet (a dimension's average and ``overall`` sum their subtasks').
    """

    table: pd.DataFrame
    counted: pd.DataFrame
    pending: pd.DataFrame

    def pending_by_model(self) -> dict[str, int]:
        """Models with pending items → how many (the ``overall`` column of :attr:`pending`)."""
        totals = zip(self.pending["model"].tolist(), self.pending["overall"].tolist(), strict=True)
        return {str(model): int(count) for model, count in totals if count}

    def coverage(self) -> pd.DataFrame:
        """Long form: one row per (model, column) with counted and pending items (:data:`COVERAGE_COLUMNS`)."""
        counted = self.counted.melt(id_vars="model", var_name="column", value_name="counted")
        pending = self.pending.melt(id_vars="model", var_name="column", value_name="pending")
        return counted.merge(pending, on=["model", "column"], sort=False).loc[:, list(COVERAGE_COLUMNS)]


def _per_cell(rows: pd.DataFrame, flags: pd.Series, models: list[str]) -> pd.DataFrame:
    """Per model and column, how many of ``rows`` have ``flags`` set (subtasks, dimension averages, overall)."""
    counts = flags.astype(int).groupby([rows["model"], rows["subtask"]]).sum().unstack("subtask")
    counts = counts.reindex(index=models, columns=list(SUBTASKS)).fillna(0).astype(int)
    for dimension, column in zip(DIMENSIONS, AVERAGE_COLUMNS, strict=True):
        counts[column] = counts[[s for s in SUBTASKS if DIMENSION_OF_SUBTASK[s] == dimension]].sum(axis=1)
    counts["overall"] = counts[list(SUBTASKS)].sum(axis=1)
    return counts


def _means(values: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """Subtask cells, dimension averages (plain mean of subtask cells) and the item-weighted overall per model."""
    table = values.pivot_table(index="model", columns="subtask", values="value", aggfunc="mean")
    table = table.reindex(index=models, columns=list(SUBTASKS))
    for dimension, column in zip(DIMENSIONS, AVERAGE_COLUMNS, strict=True):
        subtasks = [subtask for subtask in SUBTASKS if DIMENSION_OF_SUBTASK[subtask] == dimension]
        table[column] = table[subtasks].mean(axis=1, skipna=True)
    table["overall"] = values.groupby("model")["value"].mean()
    return table


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
    return Leaderboard(table=frames[0].loc[:, list(COLUMNS)], counted=frames[1], pending=frames[2])


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


def format_leaderboard(table: pd.DataFrame) -> str:
    """Return the table as aligned text for a terminal (two decimals, blank for missing)."""
    return table.to_string(index=False, float_format=lambda value: f"{value:.2f}", na_rep="")
