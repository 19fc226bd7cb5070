"""JSONL reading of files as people really save them: with a UTF-8 byte-order mark, or not in UTF-8 at all."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.dataset import import_upstream, load_scenarios, validate_file
from pipeline.jsonl import RecordError, iter_lines, validate_lines
from pipeline.records import Scenario
from studio.cli import build_cli

SCENARIO = {"id": "s1", "subtask": "dialogue_base", "persona": "小雨", "user_input": "你好", "reference": "你好呀"}


def gbk_line(record: dict[str, str]) -> bytes:
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("gbk")


def test_a_byte_order_mark_is_dropped_and_line_numbers_stay_physical(tmp_path: Path) -> None:
    path = tmp_path / "scenarios.jsonl"
    text = json.dumps(SCENARIO, ensure_ascii=False) + "\r\n\n" + json.dumps({**SCENARIO, "id": "s2"}) + "\n"
    path.write_bytes(codecs.BOM_UTF8 + text.encode("utf-8"))
    assert [number for number, _ in iter_lines(path)] == [1, 3]
    assert [scenario.id for scenario in load_scenarios(path)] == ["s1", "s2"]
    assert validate_file(path).problems == [] and validate_file(path).kind == "scenarios"


def test_a_line_that_is_not_utf8_is_named_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "scenarios.jsonl"
    good = (json.dumps(SCENARIO, ensure_ascii=False) + "\n").encode("utf-8")
    path.write_bytes(good + gbk_line({**SCENARIO, "id": "s2"}))
    with pytest.raises(RecordError) as raised:
        list(iter_lines(path))
    assert str(raised.value).startswith(f"{path}:2: (line): not UTF-8 text (invalid")
    records, problems = validate_lines(path, Scenario)
    assert [number for number, _ in records] == [1] and [problem.line for problem in problems] == [2]
    result = CliRunner().invoke(build_cli(), ["validate", str(path)])
    assert result.exit_code == 1 and f"{path}:2: (line): not UTF-8 text" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_validate_and_import_upstream_report_a_gbk_file(tmp_path: Path) -> None:
    only_gbk = tmp_path / "gbk.jsonl"
    only_gbk.write_bytes(gbk_line(SCENARIO))
    check = validate_file(only_gbk)
    with pytest.raises(UnicodeDecodeError) as decoding:
        gbk_line(SCENARIO).decode("utf-8")
    position = decoding.value.start + 1  # 1-based, as a person counts
    assert [str(problem) for problem in check.problems] == [
        f"{only_gbk}:1: (line): not UTF-8 text ({decoding.value.reason} at byte {position}); save the file as UTF-8"
    ]
    release = tmp_path / "release"
    release.mkdir()
    (release / "dialogue_emotion.jsonl").write_bytes(gbk_line({"response": "我理解你"}))
    (release / "itinerary_basic.jsonl").write_bytes(codecs.BOM_UTF8 + b'{"response": "08:00 breakfast"}\n')
    imported = import_upstream(release)
    assert [scenario.id for scenario in imported.scenarios] == ["itinerary_basic-000001"]
    assert [(Path(problem.path).name, problem.line) for problem in imported.problems] == [("dialogue_emotion.jsonl", 1)]
    output = tmp_path / "out.jsonl"
    result = CliRunner().invoke(build_cli(), ["import-upstream", str(release), "-o", str(output)])
    assert result.exit_code == 1 and "dialogue_emotion.jsonl:1: (line): not UTF-8 text" in result.output
    assert not output.exists()


def test_a_stage_reading_its_run_file_skips_a_torn_tail_without_changing_the_file(tmp_path: Path) -> None:
    from pipeline.jsonl import read_records
    from pipeline.records import ScorePair

    path = tmp_path / "pairs.jsonl"
    path.write_text('{"id": 1, "hypothesis": "a", "reference": "b"}\n{"id": 2, "hypo', encoding="utf-8")
    before = path.read_bytes()
    assert [pair.id for pair in read_records(path, ScorePair, torn_tail="skip")] == [1]
    assert path.read_bytes() == before
    with pytest.raises(RecordError, match=r"pairs\.jsonl:2: \(line\): incomplete last line"):
        read_records(path, ScorePair)
