"""Downloads the page offers: a table or a published version written as CSV, JSONL or Parquet, handed to the page as
a download button (:func:`download_button`, :func:`ready`).

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
from pathlib import Path
from typing import Any

import pandas as pd

from studio.errors import InvalidInput

DOWNLOAD_FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet")
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


def _check_format(fmt: str) -> None:
    if fmt not in DOWNLOAD_FORMATS:
        raise InvalidInput(f"format: {fmt!r} is not one of {', '.join(DOWNLOAD_FORMATS)}")


def version_file(records: list[dict[str, Any]], version: str, fmt: str, directory: Path) -> Path:
    """A published version's scenarios as ``h2h-scenarios-<version>.<fmt>`` in ``directory``.

    JSONL keeps nested fields (history, tags) as JSON; CSV (formula-safe) and Parquet carry them as JSON text.
    """
    from studio.results.export_formats import write_table

    _check_format(fmt)
    target = directory / f"h2h-scenarios-{safe_filename(version)}.{fmt}"
    if fmt == "jsonl":
        from pipeline.jsonl import write_records

        write_records(target, records)
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
    from studio.results.export_formats import write_table

    _check_format(fmt)
    return write_table(frame, directory / f"h2h-{safe_filename(name)}.{fmt}")
