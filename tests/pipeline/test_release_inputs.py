"""The public release holds references only (issue 17 item 1): generate and judge refuse scenarios without user
input before any request; import-upstream says so, names the likely subtask of a file whose line count is another
subtask's Table 1 count, and imports it as that subtask with ``--as FILE=SUBTASK``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner, Result

from pipeline.commands.generate import generate
from pipeline.commands.judge import judge
from pipeline.jsonl import read_records, write_records
from pipeline.records import TABLE1_COUNTS, Scenario
from pipeline.rundir import RunDir
from studio.cli import build_cli
from tests.pipeline.conftest import make_scenarios, prepared_run
from tests.pipeline.fake_openai import FakeOpenAI

FIXTURE = Path(__file__).parent / "fixtures" / "upstream" / "release"


def h2h(*args: str) -> Result:
    return CliRunner().invoke(build_cli(), list(args))


def imported_release(tmp_path: Path) -> Path:
    """The fixture release imported by the real command: scenarios with a reference and nothing else."""
    output = tmp_path / "release.jsonl"
    result = h2h("import-upstream", str(FIXTURE), "-o", str(output))
    assert result.exit_code == 0, result.output
    return output


def generate_args(scenarios: Path, run: Path, fake: FakeOpenAI, *extra: str) -> list[str]:
    return [
        "--scenarios", str(scenarios), "--model", "m", "--backend", "openai", "--variant", "with_sap",
        "--run", str(run), "--base-url", fake.base_url, "--api-key", "x", "--no-progress", *extra,
    ]  # fmt: skip


def test_generate_refuses_the_release_before_any_request(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    scenarios = imported_release(tmp_path)
    total = len(read_records(scenarios, Scenario))
    run = tmp_path / "run"
    result = CliRunner().invoke(generate, generate_args(scenarios, run, fake_openai))
    assert result.exit_code == 1, result.output
    message = " ".join(result.output.split())  # click wraps nothing, but keep the check independent of layout
    assert f"{scenarios}: {total} of {total} selected scenarios have no user input" in message
    assert "dialogue_emotion-000001 (upstream:dialogue_emotion.jsonl:1)" in message
    assert "bring your own inputs (a scenario JSONL with user_input; `h2h validate` checks it)" in message
    assert "or score references only" in message
    assert fake_openai.chat_requests() == []
    assert not RunDir(run).responses.exists() and not RunDir(run).scenarios.exists()  # nothing written


def test_generate_refuses_a_mix_naming_the_count_and_runs_a_selection_with_inputs(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    scenarios = make_scenarios(5)  # s001-s003 itinerary I-III, s000 and s004 dialogue
    for index in (1, 3):
        scenarios[index] = scenarios[index].model_copy(update={"user_input": " \n"})
    path = tmp_path / "scenarios.jsonl"
    write_records(path, scenarios)
    refused = CliRunner().invoke(generate, generate_args(path, tmp_path / "run", fake_openai))
    assert refused.exit_code == 1
    assert f"{path}: 2 of 5 selected scenarios have no user input (empty user_input: s001, s003)" in refused.output
    assert fake_openai.chat_requests() == []
    chosen = ["--subtask", "dialogue_base", "--subtask", "dialogue_emotion"]  # only scenarios with input
    done = CliRunner().invoke(generate, generate_args(path, tmp_path / "run", fake_openai, *chosen))
    assert done.exit_code == 0, done.output
    assert "2 selected" in done.output and len(fake_openai.chat_requests()) == 2


def test_judge_refuses_a_response_to_a_scenario_without_input_before_any_call(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    scenarios = make_scenarios(4)
    scenarios[2] = scenarios[2].model_copy(update={"user_input": ""})  # itinerary_middle
    run = prepared_run(tmp_path / "run", scenarios)
    args = ["--run", str(run.root), "--judge-model", "j", "--base-url", fake_openai.base_url, "--no-progress"]
    refused = CliRunner().invoke(judge, args)
    assert refused.exit_code == 1
    message = refused.output
    assert f"{run.scenarios}: 1 of 3 scenarios of the itinerary I-III responses to judge have no user input" in message
    assert "s002" in message and "bring your own inputs" in message and "--no-judge" in message
    assert fake_openai.chat_requests() == [] and not run.judgments.exists() and not run.results.exists()
    assert not (run.root / "judge_cache").exists()
    scores_only = CliRunner().invoke(judge, ["--run", str(run.root), "--no-judge"])  # the way out it names
    assert scores_only.exit_code == 0, scores_only.output


def release_dir(tmp_path: Path, files: dict[str, int]) -> Path:
    """A release folder with ``files`` (name -> line count) of ``{"response": ...}`` lines."""
    directory = tmp_path / "release"
    directory.mkdir()
    for name, count in files.items():
        lines = (json.dumps({"response": f"{name} 第{n}条：周六上午九点见"}, ensure_ascii=False) for n in range(count))
        (directory / name).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return directory


def test_import_names_the_likely_subtask_and_says_the_release_is_references_only(tmp_path: Path) -> None:
    schedule = TABLE1_COUNTS["dialogue_schedule"]
    directory = release_dir(tmp_path, {"itinerary_initialize.jsonl": schedule, "dialogue_emotion.jsonl": 7})
    result = h2h("import-upstream", str(directory), "-o", str(tmp_path / "out.jsonl"))
    assert result.exit_code == 0, result.output
    hint = (
        f"warning: {directory / 'itinerary_initialize.jsonl'}: {schedule} lines, Table 1 gives itinerary_initialization"
        f" {TABLE1_COUNTS['itinerary_initialization']} and dialogue_schedule {schedule} — likely dialogue_schedule; "
        "import it as that with --as itinerary_initialize.jsonl=dialogue_schedule"
    )
    assert hint in result.stderr
    no_other = f"warning: {directory / 'dialogue_emotion.jsonl'}: 7 lines, paper Table 1 has 99"  # no likely one
    assert no_other in result.stderr.splitlines()
    assert "the public release holds references only (no persona, no user input)" in result.stdout
    assert "h2h generate and h2h judge refuse them" in result.stdout


def test_as_imports_a_file_as_another_subtask_with_ids_that_never_collide(tmp_path: Path) -> None:
    schedule = TABLE1_COUNTS["dialogue_schedule"]
    directory = release_dir(tmp_path, {"itinerary_initialize.jsonl": schedule, "dialogue_schedule.jsonl": 3})
    output = tmp_path / "out.jsonl"
    result = h2h(
        "import-upstream", str(directory), "-o", str(output), "--as", "itinerary_initialize.jsonl=dialogue_schedule"
    )
    assert result.exit_code == 0, result.output
    scenarios = read_records(output, Scenario)
    assert {s.subtask for s in scenarios} == {"dialogue_schedule"} and len(scenarios) == schedule + 3
    ids = [s.id for s in scenarios]
    assert len(set(ids)) == len(ids)
    assert ids[:3] == ["dialogue_schedule-000001", "dialogue_schedule-000002", "dialogue_schedule-000003"]
    assert ids[3] == "dialogue_schedule-itinerary_initialize-000001"
    assert scenarios[3].source == "upstream:itinerary_initialize.jsonl:1"
    [row] = [line for line in result.stdout.splitlines() if line.startswith("dialogue_schedule ")]
    assert row.split() == ["dialogue_schedule", str(schedule + 3), "0", str(schedule), "dialogue_schedule.jsonl", "+",
                           "itinerary_initialize.jsonl"]  # fmt: skip
    assert "likely" not in result.stderr  # imported as the subtask its count says
    again = tmp_path / "again.jsonl"
    assert (
        h2h(
            "import-upstream", str(directory), "-o", str(again), "--as", "itinerary_initialize.jsonl=dialogue_schedule"
        ).exit_code
        == 0
    )
    assert again.read_bytes() == output.read_bytes()  # stable on re-import


def test_as_takes_an_unknown_file_name_and_a_release_subtask_name(tmp_path: Path) -> None:
    directory = tmp_path / "release"
    shutil.copytree(FIXTURE, directory)
    (directory / "notes.jsonl").write_text('{"response": "Let us move it to 10:00."}\n', encoding="utf-8")
    output = tmp_path / "out.jsonl"
    plain = h2h("import-upstream", str(directory), "-o", str(output))
    assert "notes.jsonl: unknown file name: not an H2HTalk subtask, skipped (--as notes.jsonl=SUBTASK" in plain.stderr
    result = h2h("import-upstream", str(directory), "-o", str(output), "--as", "notes.jsonl=itinerary_feedback")
    assert result.exit_code == 0, result.output
    [note] = [s for s in read_records(output, Scenario) if s.source == "upstream:notes.jsonl:1"]
    assert (note.id, note.subtask) == ("itinerary_response-notes-000001", "itinerary_response")


def test_a_bad_as_value_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    output = tmp_path / "out.jsonl"
    cases = {
        "missing.jsonl=dialogue_base": "missing.jsonl=dialogue_base: ",
        "itinerary_basic.jsonl=chitchat": "unknown subtask 'chitchat'",
        "itinerary_basic.jsonl": "'itinerary_basic.jsonl': expected FILE=SUBTASK",
    }
    for value, needle in cases.items():
        result = h2h("import-upstream", str(FIXTURE), "-o", str(output), "--as", value)
        assert result.exit_code == 2, (value, result.output)
        assert "--as" in result.output and needle in result.output, result.output
    missing = h2h("import-upstream", str(FIXTURE), "-o", str(output), "--as", "missing.jsonl=dialogue_base")
    assert f"{FIXTURE} has no file missing.jsonl (its .jsonl files: dialogue_emotion.jsonl" in missing.output
    twice = ["--as", "notes.jsonl=dialogue_base", "--as", "notes.jsonl=dialogue_emotion"]
    assert (
        "notes.jsonl is already imported as dialogue_base"
        in h2h("import-upstream", str(FIXTURE), "-o", str(output), *twice).output
    )
    assert not output.exists()
