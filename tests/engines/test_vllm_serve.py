"""The real OpenAI-compatible server, ``vllm serve``, on 127.0.0.1 with the tiny Qwen2: ``h2h generate --backend
openai`` writes through it, and ``h2h judge`` grades through it — a random model's answers are unparsable, so every
itinerary I-III response goes to human adjudication, as designed."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.records import JUDGED_SUBTASKS, Judgment, Response, Result
from pipeline.rundir import RunDir
from tests.engines.conftest import SERVED_NAME
from tests.engines.processes import h2h_command, run

pytestmark = pytest.mark.timeout(900)


def test_generate_and_judge_through_vllm_serve(vllm_server: str, demo_scenarios: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    generate = h2h_command(
        "generate", "--scenarios", str(demo_scenarios), "--model", SERVED_NAME, "--backend", "openai",
        "--base-url", vllm_server, "--api-key", "unused", "--variant", "without_sap", "--run", str(run_dir),
        "--max-tokens", "64", "--no-progress",
    )  # fmt: skip
    code, output = run(generate, log=tmp_path / "generate.log", timeout=600)
    assert code == 0, output[-3000:]
    assert "generate: 67 selected, 0 already done, 67 written, 0 failed" in output
    files = RunDir(run_dir)
    responses = files.load(files.responses, Response)
    assert len(responses) == 67 and all(r.backend == "openai" and r.text for r in responses.values())
    assert all(0 < r.usage["completion_tokens"] <= 64 for r in responses.values())  # the server's own counts
    assert len({r.text for r in responses.values()}) > 60

    code, output = run_h2h(tmp_path, "score", "--run", str(run_dir), "--embedder", "none")
    assert code == 0, output[-3000:]
    judge = ("judge", "--run", str(run_dir), "--judge-model", SERVED_NAME, "--base-url", vllm_server, "--no-progress")
    code, output = run_h2h(tmp_path, *judge, "--api-key", "unused")
    assert code == 0, output[-3000:]
    scenarios = files.load_scenarios()
    judged = {key for key, response in responses.items() if scenarios[response.scenario_id].subtask in JUDGED_SUBTASKS}
    judgments = files.load(files.judgments, Judgment)
    assert set(judgments) == judged and len(judged) > 0
    for judgment in judgments.values():
        assert judgment.judge_model == SERVED_NAME and judgment.usage["completion_tokens"] > 0
        # the server answered (the raw answer is kept), but noise is no grade: no J_judge, and the reason why
        assert judgment.raw and judgment.J_judge is None and judgment.error == "no score found in the judge's answer"
    results = files.load(files.results, Result)
    assert len(results) == 67
    assert {key for key, result in results.items() if result.needs_adjudication} == judged
    assert f"{len(judged)} flagged for human adjudication" in output


def run_h2h(tmp_path: Path, *arguments: str) -> tuple[int, str]:
    return run(h2h_command(*arguments), log=tmp_path / f"{arguments[0]}.log", timeout=600)
