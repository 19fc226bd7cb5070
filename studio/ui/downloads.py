"""Downloads the page offers: a table or a published version written in one of the registered export formats (CSV,
JSONL, Parquet, …: ``studio.results.export_formats``), handed to the page as a download button
(:func:`download_button`, :func:`ready`).

Each download goes to a fresh private directory (never a path from the client) under a name built here. Gradio
copies a returned file into its own cache at once, so directories older than an hour are removed on the next call.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from studio.errors import InvalidInput
from studio.results.export_formats import ExportFormat, format_named, format_names, write_table

#: The formats a page offers (the registry's names, read at each use: a format registered later is offered too).
DOWNLOAD_FORMATS: Sequence[str] = format_names()
DOWNLOAD_PREFIX = "h2h-download-"
DOWNLOAD_KEEP_SECONDS = 3600.0


def safe_filename(text: str) -> str:
    """``text`` reduced to letters, digits, ``.``, ``_`` and ``-`` (others become ``_``) for a file name."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", text).strip("._")
    return cleaned[:80] or "download"


def new_download_dir(*, keep_seconds: float = DOWNLOAD_KEEP_SECONDS) -> Path:
    """A fresh private directory for one request's download; older ones (past ``keep_seconds``) are removed."""
    root = Path(tempfile.gettempdir())
    cutoff = time.time() - keep_seconds
    for old in root.glob(DOWNLOAD_PREFIX + "*"):
        with contextlib.suppress(OSError):
            if old.is_dir() and old.stat().st_mtime < cutoff:
                shutil.rmtree(old, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=DOWNLOAD_PREFIX))


def download_button(elem_id: str) -> Any:
    """Where a prepared download appears: a button, hidden until a file is ready (:func:`ready`) — no empty drop
    area the size of an upload box around a link, as ``gr.File`` draws."""
    import gradio as gr

    return gr.DownloadButton("Download", visible=False, size="sm", elem_id=elem_id)


def ready(path: Path) -> Any:
    """The download button's value once ``path`` is written: shown, named after the file; a click downloads it."""
    import gradio as gr

    return gr.DownloadButton(value=str(path), label=f"Download {path.name}", visible=True)


def _check_format(fmt: str) -> ExportFormat:
    """The registered format named ``fmt``; ``InvalidInput`` naming the registry's formats otherwise."""
    found = format_named(fmt)
    if found is None:
        raise InvalidInput(f"format: {fmt!r} is not one of {', '.join(DOWNLOAD_FORMATS)}")
    return found


def version_file(records: list[dict[str, Any]], version: str, fmt: str, directory: Path) -> Path:
    """A published version's scenarios as ``h2h-scenarios-<version>.<fmt>`` in ``directory``.

    A format that writes records as given (``as_records``: JSONL) keeps nested fields (history, tags) as JSON; the
    others (CSV, formula-safe; Parquet) carry them as JSON text.
    """
    export_format = _check_format(fmt)
    target = directory / f"h2h-scenarios-{safe_filename(version)}.{fmt}"
    if export_format.as_records:
        export_format.write_rows(records, target, columns=list(records[0]) if records else [], kinds={})
        return target
    flat = [
        {
            key: json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else value
            for key, value in record.items()
        }
        for record in records
    ]
    return write_table(flat, target)


def table_file(frame: pd.DataFrame, name: str, fmt: str, directory: Path) -> Path:
    """A results table as ``h2h-<name>.<fmt>`` in ``directory`` (CSV formula-safe)."""
    _check_format(fmt)
    return write_table(frame, directory / f"h2h-{safe_filename(name)}.{fmt}")
