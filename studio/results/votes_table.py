"""Reading a whole votes CSV at once (pyarrow's CSV reader) for ``h2h agreement``: the fast path of a clean file.

The file is read once into string columns and checked column-wise: each column is dictionary-encoded, so stripping,
undoing the export's formula guard and checking values run once per *distinct* cell, and duplicates are found on
integer codes. A file this reader cannot take (ragged rows, bad UTF-8) or that holds any bad row gives ``None``:
the caller then reads it row by row (``studio.results.votes_csv.read_votes``), which names every bad row by file,
line and field — the messages stay the row reader's, and a clean file never pays for line bookkeeping.
pyarrow, numpy and pandas are imported inside the functions: the command's module loads without them.
"""

from __future__ import annotations

import csv
import math
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
    codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
    return distinct, np.asarray(inverse, dtype=np.int64).reshape(-1)[codes]


def _value_ok(value: str, level: str) -> bool:
    """Whether a (stripped) value passes ``votes_csv``'s check: empty, any label (nominal) or a finite number."""
    if value == "" or level == "nominal":
        return True
    try:
        return math.isfinite(float(value))
    except ValueError:
        return False


def votes_and_pairs(table: pa.Table, *, question: str | None, level: str) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The rows of ``question`` (every row when it is ``None``) as (item, annotator, value), stripped and unguarded
    as the row reader gives them, and every non-empty (item, annotator) pair of the table, sorted — or ``None`` when
    a column is missing or any selected row has a problem (an empty item or annotator, a bad value for ``level``, a
    repeated (item, annotator)): the row reader then names them."""
    import numpy as np
    import pandas as pd
    import pyarrow.compute as pc

    if any(name not in table.column_names for name in VOTE_COLUMNS):
        return None
    items, item_codes = _encoded(table.column("item"), str.strip)
    annotators, annotator_codes = _encoded(table.column("annotator"), str.strip)
    pair_keys = item_codes * max(len(annotators), 1) + annotator_codes
    answered = np.unique(pair_keys[(items[item_codes] != "") & (annotators[annotator_codes] != "")])
    pairs = pd.DataFrame(
        {
            "item": items[answered // max(len(annotators), 1)],
            "annotator": annotators[answered % max(len(annotators), 1)],
        }
    )
    if question is not None:
        chosen = np.asarray(pc.equal(table.column("question"), question).to_numpy(zero_copy_only=False), dtype=bool)
        table, item_codes, annotator_codes = table.filter(chosen), item_codes[chosen], annotator_codes[chosen]
        pair_keys = pair_keys[chosen]
    values, value_codes = _encoded(table.column("value"), lambda cell: plain_value(cell).strip())
    if (
        (items[item_codes] == "").any()
        or (annotators[annotator_codes] == "").any()
        or not all(_value_ok(value, level) for value in values)
        or len(np.unique(pair_keys)) != len(pair_keys)
    ):
        return None
    frame = pd.DataFrame(
        {"item": items[item_codes], "annotator": annotators[annotator_codes], "value": values[value_codes]}
    )
    return frame, pairs
