"""CSV / JSONL / Parquet exports: round trips, formula neutralisation, CJK, and CSV's UTF-8 byte-order mark."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from studio.results.export_formats import neutralise_cell, read_table, write_table


def sample() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "scenario_id": ["dialogue_base:1", "dialogue_base:2", "itinerary_basic:3"],
            "text": ["今天心情不好，陪我聊聊吧", "Hello / world", "行程：上午九点出发"],
            "score": [0.5, -1.25, 3.0],
            "count": [1, 2, 3],
            "flag": [True, False, True],
        }
    )


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_round_trip(tmp_path: Path, suffix: str) -> None:
    path = write_table(sample(), tmp_path / "out" / f"table{suffix}")
    assert path.exists() and not list(path.parent.glob("*.tmp"))
    pd.testing.assert_frame_equal(read_table(path), sample(), check_dtype=False)


def test_list_of_dicts_with_missing_values(tmp_path: Path) -> None:
    rows = [{"item": "a", "J_final": 3.2, "key": ("s1", "m", "with_sap")}, {"item": "b", "J_final": float("nan")}]
    path = write_table(rows, tmp_path / "rows.jsonl")
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {"item": "a", "J_final": 3.2, "key": ["s1", "m", "with_sap"]}
    assert json.loads(lines[1]) == {"item": "b", "J_final": None, "key": None}


def test_jsonl_keeps_cjk_unescaped(tmp_path: Path) -> None:
    text = write_table(sample(), tmp_path / "t.jsonl").read_text(encoding="utf-8")
    assert "今天心情不好" in text and "\\u" not in text and "Hello / world" in text


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ('=HYPERLINK("http://evil")', '\'=HYPERLINK("http://evil")'),
        ("+1", "'+1"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("=你好", "'=你好"),
        ("你好=", "你好="),
        ("", ""),
        (-1.5, -1.5),
    ],
)
def test_neutralise_cell(cell: object, expected: object) -> None:
    assert neutralise_cell(cell) == expected


def test_csv_neutralises_text_cells_and_headers_but_not_numbers(tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "text": ["=cmd|' /C calc'!A0", "+86 电话", "-负面", "@提及", "正常的回答"],
            "score": [-1.0, 2.0, -3.5, 0.0, 1.0],
            "=header": ["a", "b", "c", "d", "e"],
        }
    )
    path = write_table(frame, tmp_path / "unsafe.csv")
    with open(path, encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["text", "score", "'=header"]
    assert [row[0] for row in rows[1:]] == ["'=cmd|' /C calc'!A0", "'+86 电话", "'-负面", "'@提及", "正常的回答"]
    assert [row[1] for row in rows[1:]] == ["-1.0", "2.0", "-3.5", "0.0", "1.0"]


def test_csv_keeps_newlines_and_commas_inside_cells(tmp_path: Path) -> None:
    frame = pd.DataFrame({"text": ["第一行\n第二行", 'a, b, "c"']})
    path = write_table(frame, tmp_path / "multi.csv")
    assert read_table(path)["text"].tolist() == ["第一行\n第二行", 'a, b, "c"']


def test_unknown_suffix_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown export format '.xlsx'"):
        write_table(sample(), tmp_path / "t.xlsx")
    assert not (tmp_path / "t.xlsx").exists()


def test_csv_starts_with_a_bom_and_opens_as_utf8_sig_with_chinese_intact(tmp_path: Path) -> None:
    """Excel decodes a CSV without a byte-order mark in the local code page: Chinese turns into mojibake. With the
    mark it reads UTF-8; the mark is not part of the first header when read as utf-8-sig."""
    path = write_table(sample(), tmp_path / "cjk.csv")
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbfscenario_id,") and raw.count(b"\xef\xbb\xbf") == 1
    with open(path, encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == list(sample().columns)
    assert [row["text"] for row in rows] == sample()["text"].tolist()  # 今天心情不好… intact
    with pytest.raises(UnicodeDecodeError):
        raw.decode("ascii")  # the Chinese is really there as UTF-8 bytes, not escaped
    assert "今天心情不好，陪我聊聊吧".encode() in raw


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_jsonl_and_parquet_carry_no_bom(tmp_path: Path, suffix: str) -> None:
    raw = write_table(sample(), tmp_path / f"t{suffix}").read_bytes()
    assert not raw.startswith(b"\xef\xbb\xbf")
