"""Reading a whole votes CSV at once (pyarrow's CSV reader) for ``h2h agreement``: the fast path of a clean file.

The file is read once into string columns and checked column-wise: each column is dictionary-encoded, so stripping,
undoing the export's formula guard and checking values run once per *distinct* cell, and duplicates are found on
integer codes. A file this reader cannot take (ragged rows, bad UTF-8) or that holds any bad row gives ``None``:
the caller then reads it row by row (``studio.results.votes_csv.read_votes``), which names every bad row by file,
line and field — the messages stay the row reader's, and a clean file never pays for line bookkeeping.
pyarrow, numpy and pandas are imported inside the functions: the command's module loads without them, and
:func:`coded_votes` (what ``h2h agreement`` computes its figures from) needs no pandas at all.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.csvsafe import FORMULA_PREFIXES

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd
    import pyarrow as pa

#: The columns a votes file must have (``studio.results.votes_csv.REQUIRED_COLUMNS``).
VOTE_COLUMNS: tuple[str, ...] = ("item", "annotator", "value")


def plain_value(cell: str) -> str:
    """Undo the export's formula guard: ``'-2`` → ``-2``; any other cell as it is."""
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(FORMULA_PREFIXES) else cell


def read_string_table(path: Path) -> pa.Table | None:
    """The CSV file at ``path`` with every column as text (a UTF-8 BOM skipped, quoted newlines kept); ``None`` when
    pyarrow cannot read it as such (rows of another length, bad UTF-8, a repeated column name)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            header = next(csv.reader(handle), [])
        if not header or len(set(header)) != len(header):
            return None
        return pacsv.read_csv(
            path,
            parse_options=pacsv.ParseOptions(newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(column_types={name: pa.string() for name in header}),
        )
    except (pa.ArrowException, UnicodeDecodeError, OSError, csv.Error):
        return None


def distinct_questions(table: pa.Table) -> list[str]:
    """The sorted distinct values of ``table``'s ``question`` column."""
    import pyarrow.compute as pc

    return sorted(str(value) for value in pc.unique(table.column("question")).to_pylist())


def _encoded(column: pa.ChunkedArray, clean: Any) -> tuple[np.ndarray, np.ndarray]:
    """``column`` as (distinct cleaned values, sorted, as an object array; each row's index into them): ``clean``
    runs once per distinct cell; cells equal once cleaned share one index."""
    import numpy as np
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(column).combine_chunks()
    cleaned = np.array([clean(cell) for cell in encoded.dictionary.to_pylist()], dtype=object)
    distinct, inverse = np.unique(cleaned, return_inverse=True) if len(cleaned) else (cleaned, cleaned.astype(int))
    return distinct, np.asarray(inverse, dtype=np.int64).reshape(-1)[_indices(encoded.indices)]


def _indices(indices: pa.Array) -> np.ndarray:
    """A dictionary's integer indices as a numpy array, read from the buffer: pyarrow's ``to_numpy`` imports pandas
    (a quarter of a second of ``h2h agreement``), even for a copy-free array."""
    import numpy as np

    if indices.null_count:  # a CSV read as text has no null cell; kept for any other table
        return np.asarray(indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    width = indices.type.bit_width // 8
    buffer = indices.buffers()[1]
    return np.frombuffer(buffer, dtype=f"<i{width}", count=len(indices), offset=indices.offset * width).astype(np.int64)


def _value_ok(value: str, level: str) -> bool:
    """Whether a (stripped) value passes ``votes_csv``'s check: empty, any label (nominal) or a finite number."""
    if value == "" or level == "nominal":
        return True
    try:
        return math.isfinite(float(value))
    except ValueError:
        return False


@dataclass(frozen=True)
class CodedVotes:
    """A votes table's rows as codes into sorted distinct labels (stripped; values also unguarded, ``""`` = no
    answer): the selected rows' ``item_codes``, ``annotator_codes`` and ``value_codes``, and ``pair_items`` /
    ``pair_annotators``, every distinct non-empty (item, annotator) pair of the whole table (any question), sorted —
    what makes an item complete."""

    items: np.ndarray
    annotators: np.ndarray
    values: np.ndarray
    item_codes: np.ndarray
    annotator_codes: np.ndarray
    value_codes: np.ndarray
    pair_items: np.ndarray
    pair_annotators: np.ndarray

    def frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The rows as (item, annotator, value) and the pairs as (item, annotator) DataFrames of labels."""
        import pandas as pd

        rows = {"item": self.items[self.item_codes], "annotator": self.annotators[self.annotator_codes]}
        pairs = {"item": self.items[self.pair_items], "annotator": self.annotators[self.pair_annotators]}
        return pd.DataFrame({**rows, "value": self.values[self.value_codes]}), pd.DataFrame(pairs)


def coded_votes(table: pa.Table, *, question: str | None, level: str) -> CodedVotes | None:
    """The rows of ``question`` (every row when it is ``None``), stripped and unguarded as the row reader gives
    them, coded (:class:`CodedVotes`) — or ``None`` when a column is missing or any selected row has a problem (an
    empty item or annotator, a bad value for ``level``, a repeated (item, annotator)): the row reader then names
    them."""
    import numpy as np

    if any(name not in table.column_names for name in VOTE_COLUMNS):
        return None
    items, item_codes = _encoded(table.column("item"), str.strip)
    annotators, annotator_codes = _encoded(table.column("annotator"), str.strip)
    width = max(len(annotators), 1)
    pair_keys = item_codes * width + annotator_codes
    answered = np.unique(pair_keys[(items[item_codes] != "") & (annotators[annotator_codes] != "")])
    values, value_codes = _encoded(table.column("value"), lambda cell: plain_value(cell).strip())
    if question is not None:  # selected on codes: filtering the table would import pandas (see _indices)
        questions, question_codes = _encoded(table.column("question"), str)
        chosen = questions[question_codes] == question
        item_codes, annotator_codes, pair_keys = item_codes[chosen], annotator_codes[chosen], pair_keys[chosen]
        used, value_codes = np.unique(value_codes[chosen], return_inverse=True)  # only this question's values
        values, value_codes = values[used], np.asarray(value_codes, dtype=np.int64).reshape(-1)
    if (
        (items[item_codes] == "").any()
        or (annotators[annotator_codes] == "").any()
        or not all(_value_ok(value, level) for value in values)
        or len(np.unique(pair_keys)) != len(pair_keys)
    ):
        return None
    return CodedVotes(
        items, annotators, values, item_codes, annotator_codes, value_codes, answered // width, answered % width
    )


def votes_and_pairs(table: pa.Table, *, question: str | None, level: str) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """:func:`coded_votes` as DataFrames of labels: the selected rows (item, annotator, value) and every non-empty
    (item, annotator) pair of the table, sorted — or ``None`` where :func:`coded_votes` gives ``None``."""
    coded = coded_votes(table, question=question, level=level)
    return None if coded is None else coded.frames()
