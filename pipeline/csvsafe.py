"""Spreadsheet-safe CSV for people: text a spreadsheet would run as a formula gets a leading apostrophe, and files are
written as UTF-8 with a byte-order mark (:data:`CSV_ENCODING`), without which Excel reads UTF-8 as the local code page
and garbles Chinese. Readers use the same codec, which also reads files without the mark."""

from __future__ import annotations

from typing import Any

#: The encoding of every CSV file written for people (UTF-8 with a byte-order mark; ``utf-8-sig`` reads both).
CSV_ENCODING = "utf-8-sig"
#: Leading characters that make Excel, LibreOffice or Google Sheets treat a cell as a formula.
FORMULA_PREFIXES: tuple[str, ...] = ("=", "+", "-", "@", "\t", "\r")


def neutralise_cell(value: Any) -> Any:
    """Return ``value`` with a leading ``'`` when it is text starting like a formula; other values as they are."""
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value
