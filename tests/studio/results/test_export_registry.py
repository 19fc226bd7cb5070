"""The one registry of export formats: a format registered once reaches every door — the table writer, the votes
export, the pages' downloads, and the CLI's ``-o FILE`` checks and help — and the built-in formats are declared there
with their suffix, label, media type and writers."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

import studio.services.votes_export as votes_export
from pipeline.jsonl import atomic_target
from studio.commands.agreement import agreement_command
from studio.commands.export import export
from studio.errors import InvalidInput
from studio.results.export_formats import (
    FORMATS,
    ExportFormat,
    describe_formats,
    format_for,
    read_table,
    register,
    suffixes,
    unregister,
    write_table,
)
from studio.ui import downloads


def _write_tsv(frame: pd.DataFrame, path: Path) -> Path:
    with atomic_target(path) as temporary:
        frame.to_csv(temporary, sep="\t", index=False, lineterminator="\n")
    return path


def _write_tsv_rows(rows: Any, path: Path, *, columns: Any, **_: Any) -> int:
    count = 0
    with atomic_target(path) as temporary, temporary.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow([row.get(column) for column in columns])
            count += 1
    return count


def _read_tsv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, sep="\t")


TSV = ExportFormat(
    name="tsvtest",
    label="TSV (test)",
    media_type="text/tab-separated-values",
    write_table=_write_tsv,
    write_rows=_write_tsv_rows,
    read_table=_read_tsv,
    streams=True,
    text_cells=True,
    note="tab-separated, test only",
)


@pytest.fixture
def tsv() -> Iterator[ExportFormat]:
    yield register(TSV)
    unregister(TSV.name)


def test_the_builtin_formats_are_declared_once_with_suffix_label_and_media_type() -> None:
    assert [fmt.suffix for fmt in FORMATS] == [".csv", ".jsonl", ".parquet"] == list(suffixes())
    assert {fmt.name: fmt.media_type for fmt in FORMATS} == {
        "csv": "text/csv",
        "jsonl": "application/x-ndjson",
        "parquet": "application/vnd.apache.parquet",
    }
    assert [fmt.label for fmt in FORMATS] == ["CSV", "JSONL", "Parquet"]
    assert [fmt.streams for fmt in FORMATS] == [True, True, False]
    assert describe_formats() == ".csv (UTF-8 with BOM, formula-safe), .jsonl or .parquet"
    assert list(downloads.DOWNLOAD_FORMATS) == ["csv", "jsonl", "parquet"]
    with pytest.raises(ValueError, match="registered already"):
        register(FORMATS[0])


def test_a_registered_format_reaches_the_table_writer_and_reader(tsv: ExportFormat, tmp_path: Path) -> None:
    frame = pd.DataFrame({"model": ["a", "b"], "J": [1.5, 2.0]})
    path = write_table(frame, tmp_path / "table.TSVTEST")
    assert path.read_text(encoding="utf-8") == "model\tJ\na\t1.5\nb\t2.0\n"
    pd.testing.assert_frame_equal(read_table(path), frame)
    assert format_for(path) is tsv


def test_a_registered_format_reaches_the_votes_export(
    tsv: ExportFormat, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = dict.fromkeys(votes_export.COLUMNS, "") | {"campaign": "c", "item": 1, "value": "yes"}
    monkeypatch.setattr(votes_export, "campaign_questions", lambda engine, campaign: ["q"])
    monkeypatch.setattr(votes_export, "vote_rows", lambda engine, campaign, question=None: iter([row]))
    assert votes_export.export_votes(None, "c", tmp_path / "votes.tsvtest") == 1  # type: ignore[arg-type]
    header, line = (tmp_path / "votes.tsvtest").read_text(encoding="utf-8").splitlines()
    assert header.split("\t") == list(votes_export.COLUMNS) and line.startswith("c\t1\t")


def test_a_registered_format_reaches_the_page_downloads(tsv: ExportFormat, tmp_path: Path) -> None:
    assert "tsvtest" in downloads.DOWNLOAD_FORMATS  # the pages' format choices
    table = downloads.table_file(pd.DataFrame({"x": [1]}), "board", "tsvtest", tmp_path)
    assert table.name == "h2h-board.tsvtest" and table.read_text(encoding="utf-8") == "x\n1\n"
    version = downloads.version_file([{"id": "s1", "tags": ["a"]}], "v1", "tsvtest", tmp_path)
    assert version.read_text(encoding="utf-8") == 'id\ttags\ns1\t"[""a""]"\n'  # nested values as JSON text
    unregister(tsv.name)
    with pytest.raises(InvalidInput, match="is not one of csv, jsonl, parquet"):
        downloads.table_file(pd.DataFrame({"x": [1]}), "board", "tsvtest", tmp_path)


def test_a_registered_format_reaches_the_cli_help_and_output(tsv: ExportFormat, tmp_path: Path) -> None:
    for command in (["votes"], ["leaderboard"], ["dataset"]):
        shown = CliRunner().invoke(export, [*command, "--help"], terminal_width=200).output
        assert ".parquet or .tsvtest (tab-separated, test only)" in shown
    votes = tmp_path / "votes.tsvtest"
    votes.write_text("item\tannotator\tvalue\n1\ta\tx\n1\tb\tx\n2\ta\ty\n2\tb\ty\n", encoding="utf-8")
    annotators = tmp_path / "annotators.tsvtest"
    result = CliRunner().invoke(
        agreement_command, ["--votes", str(votes), "--level", "nominal", "--annotators", str(annotators)]
    )
    assert result.exit_code == 0, result.output
    assert list(read_table(annotators).columns)[0] == "annotator"


def test_an_unknown_suffix_names_the_registered_formats(tsv: ExportFormat, tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match=r"unknown export format '\.xlsx'; use one of \.csv, \.jsonl, \.parquet, \.tsvtest"
    ):
        write_table(pd.DataFrame({"x": [1]}), tmp_path / "t.xlsx")
    assert not list(tmp_path.iterdir())
