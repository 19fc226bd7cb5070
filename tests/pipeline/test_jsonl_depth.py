"""Deeply nested JSON lines (issue 18 item 7, the file part): the one JSONL reader (``pipeline.jsonl``) reports a line
nested deeper than ``MAX_JSON_DEPTH`` as ``file:line: (line): JSON nested too deeply`` at every door that reads files
— the parser itself, ``h2h validate``, ``h2h ingest`` and the pipeline's run-file reads (the REST import:
tests/studio/web/test_api_resends_slashed_ids_and_deep_imports.py). Before, a 3,000-deep line raised an uncaught
``RecursionError`` (a traceback)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.jsonl import MAX_JSON_DEPTH, RecordError, nesting_depth, parse_json_line, read_records
from pipeline.records import Scenario
from studio.cli import build_cli
from tests.studio.helpers import write_run

SCENARIO = {"id": "s1", "subtask": "dialogue_base", "persona": "小雨", "user_input": "你好", "reference": "你好呀"}


def nested(depth: int) -> str:
    """A scenario line whose ``history`` nests ``depth`` lists (the line itself one object more)."""
    return json.dumps(SCENARIO)[:-1] + ', "history": ' + "[" * depth + "]" * depth + "}\n"


@pytest.mark.parametrize("depth", [3_000, 30_000, MAX_JSON_DEPTH])
def test_a_line_nested_too_deeply_is_a_record_error_never_a_recursion_error(depth: int) -> None:
    with pytest.raises(RecordError) as caught:
        parse_json_line("in.jsonl", 7, nested(depth))
    assert str(caught.value).startswith("in.jsonl:7: (line): JSON nested too deeply")


def test_records_as_deep_as_the_limit_still_parse() -> None:
    line = '{"a": ' + "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1) + "}\n"
    assert nesting_depth(json.loads(line)) == MAX_JSON_DEPTH
    assert parse_json_line("in.jsonl", 1, line)["a"]
    assert nesting_depth(1) == 0 and nesting_depth([]) == 1 and nesting_depth({"a": [{"b": []}]}) == 4
    assert nesting_depth(json.loads(nested(3))) == 4


def test_h2h_validate_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "scenarios.jsonl"
    path.write_text(json.dumps(SCENARIO) + "\n" + nested(3_000), encoding="utf-8")
    result = CliRunner().invoke(build_cli(), ["validate", str(path)])
    assert result.exit_code == 1 and not isinstance(result.exception, RecursionError), result.output
    assert f"{path}:2: (line): JSON nested too deeply" in result.output
    assert "Traceback" not in result.output and "RecursionError" not in result.output


def test_h2h_ingest_names_the_line_and_stores_nothing(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    with run.responses.open("a", encoding="utf-8") as handle:
        handle.write('{"scenario_id": "dlg-1", "text": ' + "[" * 3_000 + "]" * 3_000 + "}\n")
    database = f"sqlite:///{tmp_path / 'studio.sqlite'}"
    result = CliRunner().invoke(build_cli(), ["ingest", "--run", str(run.root), "--db", database])
    assert result.exit_code == 1, result.output
    assert f"{run.responses}:25: (line): JSON nested too deeply" in result.output
    assert "nothing was stored" in result.output and not isinstance(result.exception, RecursionError)


def test_a_run_file_read_reports_the_line(tmp_path: Path) -> None:
    path = tmp_path / "scenarios.jsonl"
    path.write_text(json.dumps(SCENARIO) + "\n" + nested(5_000), encoding="utf-8")
    with pytest.raises(RecordError, match=r":2: \(line\): JSON nested too deeply"):
        read_records(path, Scenario)
