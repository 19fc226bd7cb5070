"""The column-wise votes reader (``studio.results.votes_table``) gives exactly what the row reader gives on a clean
file, and gives way to it (``None``) on every file whose problems must be named line by line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from studio.commands.agreement import _load, _load_rows, agreement_command
from studio.results.votes_table import read_string_table, votes_and_pairs

CLEAN = (
    "\ufeffquestion,item,annotator,value,note\n"
    'q, 场景-1 ,甲,保留,"a, quoted\nnewline"\n'
    "q,场景-1, 乙 ,'-2,\n"
    "q,场景-2,甲,  删除 ,x\n"
    "r,场景-3,丙,7,\n"
    "q,场景-2,乙,,\r\n"
    "q, ,丁,1,\n"
)


@pytest.mark.parametrize(("question", "level"), [("q", "nominal"), ("r", "interval")])
def test_a_clean_file_reads_as_the_row_reader_reads_it(tmp_path: Path, question: str, level: str) -> None:
    path = tmp_path / "votes.csv"
    path.write_text(CLEAN.replace("q, ,丁,1,\n", "") if level == "nominal" else CLEAN, encoding="utf-8")
    table = read_string_table(path)
    assert table is not None
    fast = votes_and_pairs(table, question=question, level=level)
    assert fast is not None
    rows, pairs = _load_rows(path, question, level)
    assert fast[0].equals(rows) and fast[1].equals(pairs)
    assert fast[0].to_dict("list") == rows.to_dict("list")
    if question == "q":
        assert fast[0]["value"].tolist() == ["保留", "-2", "删除", ""]  # stripped, the formula guard undone
        assert fast[0]["item"].tolist() == ["场景-1", "场景-1", "场景-2", "场景-2"]
        assert pairs.values.tolist() == [
            ["场景-1", "乙"],
            ["场景-1", "甲"],
            ["场景-2", "乙"],
            ["场景-2", "甲"],
            ["场景-3", "丙"],
        ]


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("item,annotator,value\na,x,1\n,y,2\n", "nominal"),  # an empty item
        ("item,annotator,value\na,x,1\na, x ,2\n", "nominal"),  # a repeated (item, annotator) once stripped
        ("item,annotator,value\na,x,many\n", "interval"),  # not a number
        ("item,annotator,value\na,x,inf\n", "ratio"),  # not finite
        ("item,rater,value\na,x,1\n", "nominal"),  # a missing column
    ],
)
def test_a_file_with_a_problem_goes_to_the_row_reader(tmp_path: Path, text: str, level: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text, encoding="utf-8")
    table = read_string_table(path)
    assert table is not None and votes_and_pairs(table, question=None, level=level) is None


@pytest.mark.parametrize("data", [b"item,annotator,value\na,x,1\nb,y\n", b"item,annotator,value\na,x,\xff\n"])
def test_what_pyarrow_cannot_read_is_left_to_the_row_reader(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "odd.csv"
    path.write_bytes(data)
    assert read_string_table(path) is None


def test_the_command_reports_the_same_lines_and_figures_either_way(tmp_path: Path) -> None:
    path = tmp_path / "votes.csv"
    path.write_text(CLEAN, encoding="utf-8")
    done = CliRunner().invoke(agreement_command, ["--votes", str(path), "--level", "nominal", "--question", "q"])
    assert done.exit_code == 1 and done.stderr.splitlines() == [f"{path}:8: item: must not be empty"]
    path.write_text(CLEAN.replace("q, ,丁,1,\n", ""), encoding="utf-8")
    done = CliRunner().invoke(agreement_command, ["--votes", str(path), "--level", "nominal", "--question", "q"])
    assert done.exit_code == 0 and json.loads(done.stdout)["n_items"] == 2
    frame, _ = _load(path, "q", "nominal")
    assert frame.equals(_load_rows(path, "q", "nominal")[0])
