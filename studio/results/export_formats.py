"""Write result tables as CSV (UTF-8 with a byte-order mark, formula-safe), JSONL (UTF-8, unescaped) or Parquet,
chosen by the file's suffix.

CSV starts with a UTF-8 byte-order mark (``pipeline.csvsafe.CSV_ENCODING``): Excel needs it to read UTF-8 — without
it, Chinese text opens garbled; other tools (pandas, Python's ``csv`` with ``utf-8-sig``, LibreOffice) read it too.
JSONL and Parquet carry no mark.

CSV exports are opened in spreadsheets, where a cell starting with ``=``, ``+``, ``-`` or ``@`` (or a tab or
carriage return, which some spreadsheets skip before one of those) is run as a formula — and model output and
dataset text are untrusted. Such text cells get a leading apostrophe (the OWASP "CSV injection" advice), which
spreadsheets display but do not evaluate. Numbers stay numbers: ``-1.5`` in a numeric column is not text.
Every writer replaces the target atomically (temporary sibling + rename), so a crash never leaves half a file.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pipeline.csvsafe import CSV_ENCODING, neutralise_cell
from pipeline.jsonl import atomic_target, write_records

SUFFIXES: tuple[str, ...] = (".csv", ".jsonl", ".parquet")

TableLike = pd.DataFrame | Sequence[Mapping[str, Any]]


def _as_frame(data: TableLike) -> pd.DataFrame:
    return data if isinstance(data, pd.DataFrame) else pd.DataFrame.from_records(list(data))


def _json_safe(value: Any) -> Any:
    """Plain JSON values: NaN → null, numpy scalars → Python, tuples/arrays → lists, dates → ISO 8601."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if value is pd.NaT or value is None:
        return None
    if isinstance(value, dt.datetime | dt.date | pd.Timestamp):
        return value.isoformat()
    if isinstance(value, tuple | list | np.ndarray):
        return [_json_safe(part) for part in value]
    if isinstance(value, Mapping):
        return {str(key): _json_safe(part) for key, part in value.items()}
    return value


def write_csv(frame: pd.DataFrame, path: Path) -> Path:
    """Write ``frame`` as CSV (UTF-8 with a byte-order mark) without its index, every text cell and header passed
    through :func:`neutralise_cell`. Returns ``path``."""
    safe = frame.copy()
    safe.columns = [neutralise_cell(str(column)) for column in safe.columns]
    for column in safe.columns:
        if not pd.api.types.is_numeric_dtype(safe[column]) and not pd.api.types.is_bool_dtype(safe[column]):
            safe[column] = safe[column].map(neutralise_cell)
    with atomic_target(path) as temporary:
        safe.to_csv(temporary, index=False, encoding=CSV_ENCODING, lineterminator="\n")
    return path


def write_jsonl(frame: pd.DataFrame, path: Path) -> Path:
    """Write one JSON object per row (UTF-8, CJK unescaped, NaN as null) atomically. Returns ``path``."""
    records = [{str(key): _json_safe(value) for key, value in row.items()} for row in frame.to_dict("records")]
    write_records(path, records)
    return path


def write_parquet(frame: pd.DataFrame, path: Path) -> Path:
    """Write ``frame`` as Parquet through pyarrow, without the index. Returns ``path``."""
    with atomic_target(path) as temporary:
        frame.reset_index(drop=True).to_parquet(temporary, engine="pyarrow", index=False)
    return path


def write_table(data: TableLike, path: Path | str) -> Path:
    """Write a DataFrame or a list of dicts to ``path`` in the format its suffix names (.csv, .jsonl, .parquet).

    Raises ``ValueError`` for any other suffix. Returns the path written.
    """
    target = Path(path)
    suffix = target.suffix.lower()
    writers = {".csv": write_csv, ".jsonl": write_jsonl, ".parquet": write_parquet}
    if suffix not in writers:
        raise ValueError(f"{target}: unknown export format {suffix!r}; use one of {', '.join(SUFFIXES)}")
    return writers[suffix](_as_frame(data), target)


def read_table(path: Path | str) -> pd.DataFrame:
    """Read back a file written by :func:`write_table` (CSV text cells keep their protective apostrophe)."""
    source = Path(path)
    suffix = source.suffix.lower()
    if suffix == ".csv":
        return pd.read_csv(source, encoding=CSV_ENCODING, keep_default_na=False, na_values=[""])
    if suffix == ".jsonl":
        return pd.read_json(source, lines=True, dtype=False, encoding="utf-8")
    if suffix == ".parquet":
        return pd.read_parquet(source, engine="pyarrow")
    raise ValueError(f"{source}: unknown export format {suffix!r}; use one of {', '.join(SUFFIXES)}")
