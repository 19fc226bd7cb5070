"""The one registry of export formats, and their writers: every export (result tables, ``h2h export votes``, the
pages' downloads, the CLI's ``-o FILE`` help and checks) looks its format up here, by the output's suffix or name.

A format is declared once, as an :class:`ExportFormat` in :data:`FORMATS` (or :func:`register` for one added at run
time): its name (the suffix without the dot, the page's choice), label, media type, whether it streams rows, and its
writers — one for a table (a DataFrame), one for a stream of rows with declared columns (the votes export) — and its
reader. Adding a format is one entry here; see ARCHITECTURE.md, "Where does a change go".

CSV starts with a UTF-8 byte-order mark (``pipeline.csvsafe.CSV_ENCODING``): Excel needs it to read UTF-8 — without
it, Chinese text opens garbled; other tools (pandas, Python's ``csv`` with ``utf-8-sig``, LibreOffice) read it too.
JSONL and Parquet carry no mark.

CSV exports are opened in spreadsheets, where a cell starting with ``=``, ``+``, ``-`` or ``@`` (or a tab or
carriage return, which some spreadsheets skip before one of those) is run as a formula — and model output and
dataset text are untrusted. Such text cells get a leading apostrophe (the OWASP "CSV injection" advice), which
spreadsheets display but do not evaluate. Numbers stay numbers: ``-1.5`` in a numeric column is not text.
Every writer replaces the target atomically (temporary sibling + rename), so a crash never leaves half a file.
numpy, pandas and ``pipeline.jsonl`` (pydantic) are imported inside the writers and readers: naming the formats
(``h2h COMMAND --help``) loads none of them.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from pipeline.csvsafe import CSV_ENCODING, neutralise_cell

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FORMATS",
    "ExportFormat",
    "cell_text",
    "describe_formats",
    "format_for",
    "format_named",
    "format_names",
    "ColumnKind",
    "neutralise_cell",
    "read_table",
    "register",
    "suffixes",
    "unregister",
    "write_rows",
    "write_table",
]

#: How a stream's column is typed where a format types columns (Parquet): ``text`` holds the value as it is (a string
#: or null), ``json`` the value as text (:func:`cell_text`: numbers and lists as JSON), ``int`` / ``float`` numbers.
ColumnKind = Literal["text", "json", "int", "float"]
TableLike: TypeAlias = "pd.DataFrame | Sequence[Mapping[str, Any]]"
TableWriter: TypeAlias = Callable[["pd.DataFrame", Path], Path]
#: ``(rows, path, columns=..., kinds=...) -> rows written``; see :func:`write_rows`.
RowWriter = Callable[..., int]
TableReader: TypeAlias = Callable[[Path], "pd.DataFrame"]


@dataclass(frozen=True)
class ExportFormat:
    """One export format, declared once.

    ``name`` is the suffix without its dot (``csv``) and the pages' choice; ``note`` is what the CLI's help says
    after the suffix. ``streams``: rows go to the file one by one (memory stays flat however many rows).
    ``text_cells``: a cell holds text only, so lists and dicts go in as JSON text (``h2h export dataset``).
    ``as_records``: rows are written as given, nested values and all (a published version's JSONL download).
    """

    name: str
    label: str
    media_type: str
    write_table: TableWriter = field(repr=False)
    write_rows: RowWriter = field(repr=False)
    read_table: TableReader = field(repr=False)
    streams: bool = False
    text_cells: bool = False
    as_records: bool = False
    note: str = ""

    @property
    def suffix(self) -> str:
        """The file suffix this format is chosen by (``.csv``)."""
        return f".{self.name}"


_REGISTRY: dict[str, ExportFormat] = {}


def register(export_format: ExportFormat) -> ExportFormat:
    """Add ``export_format`` to the registry (every export accepts it from then on); return it.

    Raises ``ValueError`` when a format of that name is registered already.
    """
    if export_format.name in _REGISTRY:
        raise ValueError(f"export format {export_format.name!r} is registered already")
    _REGISTRY[export_format.name] = export_format
    return export_format


def unregister(name: str) -> None:
    """Remove the format ``name`` from the registry (a no-op when it is not there)."""
    _REGISTRY.pop(name, None)


def suffixes() -> tuple[str, ...]:
    """The registered suffixes, in registration order (``.csv``, ``.jsonl``, ``.parquet``, …)."""
    return tuple(fmt.suffix for fmt in _REGISTRY.values())


def describe_formats() -> str:
    """The formats as the CLI's help names them: ``.csv (UTF-8 with BOM, formula-safe), .jsonl or .parquet``."""
    parts = [f"{fmt.suffix} ({fmt.note})" if fmt.note else fmt.suffix for fmt in _REGISTRY.values()]
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} or {parts[-1]}"


class _Names(Sequence[str]):
    """The registered format names, read at each use (a format registered later is in it)."""

    def __getitem__(self, index: Any) -> Any:
        return tuple(_REGISTRY)[index]

    def __len__(self) -> int:
        return len(_REGISTRY)

    def __iter__(self) -> Iterator[str]:
        return iter(tuple(_REGISTRY))

    def __repr__(self) -> str:
        return repr(tuple(_REGISTRY))


def format_names() -> Sequence[str]:
    """A live view of the registered names (``csv``, ``jsonl``, ``parquet``, …): what a page offers to choose."""
    return _Names()


def format_for(path: Path | str) -> ExportFormat:
    """The format ``path``'s suffix names (case-insensitive).

    Raises ``ValueError`` ("``path``: unknown export format '.x'; use one of .csv, .jsonl, .parquet") otherwise.
    """
    target = Path(path)
    suffix = target.suffix.lower()
    found = _REGISTRY.get(suffix[1:]) if suffix else None
    if found is None:
        raise ValueError(f"{target}: unknown export format {suffix!r}; use one of {', '.join(suffixes())}")
    return found


def format_named(name: str) -> ExportFormat | None:
    """The format registered as ``name`` (``csv``), or ``None``."""
    return _REGISTRY.get(name)


def write_table(data: TableLike, path: Path | str) -> Path:
    """Write a DataFrame or a list of dicts to ``path`` in the format its suffix names (:func:`format_for`).

    Raises ``ValueError`` for a suffix no format is registered for. Returns the path written.
    """
    import pandas as pd

    target = Path(path)
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame.from_records(list(data))
    return format_for(target).write_table(frame, target)


def write_rows(
    rows: Iterable[Mapping[str, Any]],
    path: Path | str,
    *,
    columns: Sequence[str],
    kinds: Mapping[str, ColumnKind] | None = None,
) -> int:
    """Write a stream of rows to ``path`` in the format its suffix names; return how many were written.

    ``columns`` orders the columns (JSONL writes each row as given); ``kinds`` types them where a format needs it
    (:data:`ColumnKind`; ``text`` by default). Raises ``ValueError`` for a suffix no
    format is registered for, before reading any row.
    """
    target = Path(path)
    return format_for(target).write_rows(rows, target, columns=columns, kinds=kinds or {})


def read_table(path: Path | str) -> pd.DataFrame:
    """Read back a file written by :func:`write_table` (CSV text cells keep their protective apostrophe)."""
    source = Path(path)
    return format_for(source).read_table(source)


def cell_text(value: Any) -> str:
    """A value as one text cell: strings as they are, ``None`` empty, numbers and lists as JSON (``5``, ``["a"]``)."""
    return "" if value is None else value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _json_safe(value: Any) -> Any:
    """Plain JSON values: NaN → null, numpy scalars → Python, tuples/arrays → lists, dates → ISO 8601."""
    import numpy as np
    import pandas as pd

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
    import pandas as pd

    from pipeline.jsonl import atomic_target

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
    from pipeline.jsonl import write_records

    records = [{str(key): _json_safe(value) for key, value in row.items()} for row in frame.to_dict("records")]
    write_records(path, records)
    return path


def write_parquet(frame: pd.DataFrame, path: Path) -> Path:
    """Write ``frame`` as Parquet through pyarrow, without the index. Returns ``path``."""
    from pipeline.jsonl import atomic_target

    with atomic_target(path) as temporary:
        frame.reset_index(drop=True).to_parquet(temporary, engine="pyarrow", index=False)
    return path


def write_csv_rows(rows: Iterable[Mapping[str, Any]], path: Path, *, columns: Sequence[str], **_: Any) -> int:
    """Stream rows as CSV (UTF-8 with a byte-order mark): a header of ``columns``, then every cell as text
    (:func:`cell_text`) through :func:`neutralise_cell`. Returns the number of rows."""
    from pipeline.jsonl import atomic_target

    count = 0
    with atomic_target(path) as temporary, temporary.open("w", encoding=CSV_ENCODING, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([str(neutralise_cell(cell_text(row[column]))) for column in columns])
            count += 1
    return count


def write_jsonl_rows(rows: Iterable[Mapping[str, Any]], path: Path, **_: Any) -> int:
    """Stream rows as JSONL, each as given (numbers, lists and nested values kept). Returns the number of rows."""
    from pipeline.jsonl import write_records

    return write_records(path, (dict(row) for row in rows))


def write_parquet_rows(
    rows: Iterable[Mapping[str, Any]], path: Path, *, columns: Sequence[str], kinds: Mapping[str, ColumnKind]
) -> int:
    """Collect rows into one Parquet table typed by ``kinds`` (:data:`ColumnKind`; ``text`` by default) and write
    it. Returns the number of rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.jsonl import atomic_target

    types = {"text": pa.string(), "json": pa.string(), "int": pa.int64(), "float": pa.float64()}
    values: dict[str, list[Any]] = {column: [] for column in columns}
    for row in rows:
        for column in columns:
            values[column].append(cell_text(row[column]) if kinds.get(column) == "json" else row[column])
    table = pa.table(
        {column: pa.array(cells, type=types[kinds.get(column, "text")]) for column, cells in values.items()}
    )
    with atomic_target(path) as temporary:
        pq.write_table(table, temporary)
    return int(table.num_rows)


def read_csv(path: Path) -> pd.DataFrame:
    """Read a CSV export back (text cells keep their protective apostrophe; empty cells are missing)."""
    import pandas as pd

    return pd.read_csv(path, encoding=CSV_ENCODING, keep_default_na=False, na_values=[""])


def read_jsonl(path: Path) -> pd.DataFrame:
    """Read a JSONL export back, values as JSON typed them."""
    import pandas as pd

    return pd.read_json(path, lines=True, dtype=False, encoding="utf-8")


def read_parquet(path: Path) -> pd.DataFrame:
    """Read a Parquet export back."""
    import pandas as pd

    return pd.read_parquet(path, engine="pyarrow")


#: The built-in formats, in the order the CLI's help and the pages list them.
FORMATS: tuple[ExportFormat, ...] = (
    ExportFormat(
        name="csv",
        label="CSV",
        media_type="text/csv",
        write_table=write_csv,
        write_rows=write_csv_rows,
        read_table=read_csv,
        streams=True,
        text_cells=True,
        note="UTF-8 with BOM, formula-safe",
    ),
    ExportFormat(
        name="jsonl",
        label="JSONL",
        media_type="application/x-ndjson",
        write_table=write_jsonl,
        write_rows=write_jsonl_rows,
        read_table=read_jsonl,
        streams=True,
        as_records=True,
    ),
    ExportFormat(
        name="parquet",
        label="Parquet",
        media_type="application/vnd.apache.parquet",
        write_table=write_parquet,
        write_rows=write_parquet_rows,
        read_table=read_parquet,
    ),
)
for _format in FORMATS:
    register(_format)
