"""h2h ingest treats the run directory as the user's input: it reads strictly, never modifies a file, lists every bad
line as ``file:line: field: problem`` and stores nothing; repeated keys are refused (different content) or reported
(identical lines). These failed on the code before: a torn last line was cut from the file in place and ingest stored
the rest with exit 0; duplicate keys were resolved silently (scenarios: last wins; responses: first wins); an escaped
NUL or lone surrogate passed validation and then crashed ingest with a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, func, select

from pipeline.rundir import RunDir
from studio.cli import build_cli
from studio.db import read_session
from studio.models import ResponseRow, ScenarioRow, ScoreRow
from studio.services.ingest import IngestError, ingest_run
from tests.studio.conftest import write_run


def counts(engine: Engine) -> tuple[int, int, int]:
    with read_session(engine) as session:
        return tuple(  # type: ignore[return-value]
            session.execute(select(func.count()).select_from(table)).scalar_one()
            for table in (ScenarioRow, ResponseRow, ScoreRow)
        )


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def append_line(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


def test_a_torn_last_line_is_an_error_naming_file_and_line_and_the_file_is_untouched(
    engine: Engine, run_dir: RunDir
) -> None:
    number = len(lines_of(run_dir.responses)) + 1
    append_line(run_dir.responses, '{"scenario_id": "dlg-1", "model": "m-a", "varia')
    before = run_dir.responses.read_bytes()
    with pytest.raises(IngestError) as caught:
        ingest_run(engine, run_dir)
    assert [(problem.path, problem.line) for problem in caught.value.problems] == [(str(run_dir.responses), number)]
    assert f"{run_dir.responses}:{number}: (line): incomplete last line" in str(caught.value)
    assert run_dir.responses.read_bytes() == before
    assert counts(engine) == (0, 0, 0)


def test_a_complete_last_line_without_a_newline_is_accepted(engine: Engine, run_dir: RunDir) -> None:
    run_dir.scores.write_text(run_dir.scores.read_text(encoding="utf-8").rstrip("\n"), encoding="utf-8")
    report = ingest_run(engine, run_dir)
    assert report.scores_added == 24


def test_every_bad_line_of_every_file_is_listed_and_nothing_is_stored(engine: Engine, run_dir: RunDir) -> None:
    scenario_lines = lines_of(run_dir.scenarios)
    broken = json.loads(scenario_lines[1])
    broken["subtask"] = "dialogue_nonsense"
    scenario_lines[1] = json.dumps(broken, ensure_ascii=False)
    run_dir.scenarios.write_text("\n".join(scenario_lines) + "\n", encoding="utf-8")
    append_line(run_dir.scores, "not json\n")
    with pytest.raises(IngestError) as caught:
        ingest_run(engine, run_dir)
    found = {(Path(problem.path).name, problem.line, problem.field) for problem in caught.value.problems}
    assert found == {("scenarios.jsonl", 2, "subtask"), ("scores.jsonl", 25, "(line)")}
    assert counts(engine) == (0, 0, 0)


def test_a_scenario_id_repeated_with_another_reference_is_refused(engine: Engine, run_dir: RunDir) -> None:
    first = json.loads(lines_of(run_dir.scenarios)[0])
    append_line(run_dir.scenarios, json.dumps({**first, "reference": "另一个参考"}, ensure_ascii=False) + "\n")
    with pytest.raises(IngestError) as caught:
        ingest_run(engine, run_dir)
    (problem,) = caught.value.problems
    assert (problem.line, problem.field) == (7, "key")
    assert "'dlg-1' repeats line 1 with different content" in problem.problem
    assert counts(engine) == (0, 0, 0)


def test_a_response_key_repeated_with_another_text_is_refused(engine: Engine, run_dir: RunDir) -> None:
    first = json.loads(lines_of(run_dir.responses)[0])
    append_line(run_dir.responses, json.dumps({**first, "text": "a second, different answer"}) + "\n")
    with pytest.raises(IngestError, match=r"responses\.jsonl:25: key: .*repeats line 1 with different content"):
        ingest_run(engine, run_dir)
    assert counts(engine) == (0, 0, 0)


def test_an_identical_repeated_line_is_ingested_once_and_reported(engine: Engine, run_dir: RunDir) -> None:
    append_line(run_dir.responses, lines_of(run_dir.responses)[3] + "\n")
    report = ingest_run(engine, run_dir)
    assert report.responses_added == 24
    assert report.repeated_lines == [
        f"{run_dir.responses}:25: key: {('dlg-1', 'model-beta', 'without_sap')!r} repeats line 4 with the same content "
        "(ignored)"
    ]


@pytest.mark.parametrize(("escape", "shown"), [("\\u0000", "NUL character"), ("\\ud800", "lone surrogate")])
def test_unstorable_text_is_refused_by_validate_and_ingest_alike(
    engine: Engine, run_dir: RunDir, escape: str, shown: str
) -> None:
    lines = lines_of(run_dir.responses)
    lines[2] = lines[2].replace('"text": "', f'"text": "bad{escape}', 1)
    run_dir.responses.write_text("\n".join(lines) + "\n", encoding="utf-8")
    validate = CliRunner().invoke(build_cli(), ["validate", str(run_dir.responses)])
    assert validate.exit_code == 1
    assert f"{run_dir.responses}:3: text: contains a {shown}" in validate.output
    with pytest.raises(IngestError) as caught:
        ingest_run(engine, run_dir)
    assert [(problem.line, problem.field) for problem in caught.value.problems] == [(3, "text")]
    assert counts(engine) == (0, 0, 0)


def test_the_ingest_command_lists_the_problems_exits_1_and_leaves_the_input_alone(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run")
    append_line(run.responses, '{"scenario_id": "dlg-1", "mod')
    before = {path.name: path.read_bytes() for path in run.root.iterdir()}
    database = f"sqlite:///{tmp_path / 'studio.sqlite'}"
    result = CliRunner().invoke(build_cli(), ["ingest", "--run", str(run.root), "--db", database])
    assert result.exit_code == 1
    assert f"{run.responses}:25: (line): incomplete last line" in result.output
    assert "1 problem(s) in" in result.output and "nothing was stored" in result.output
    assert {path.name: path.read_bytes() for path in run.root.iterdir()} == before
