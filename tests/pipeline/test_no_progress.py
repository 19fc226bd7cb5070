"""``--no-progress`` (issue 17 item 5): long commands draw their tqdm bars on stderr unless told not to.

Each case runs the real command twice (``h2h ingest``: tests/studio/services/test_ingest_progress.py): without the
option a bar is on stderr (so the check below can see one), with it stderr holds no bar.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from pipeline.commands.generate import generate
from pipeline.commands.judge import judge
from pipeline.jsonl import write_records
from tests.pipeline.conftest import make_scenarios, prepared_run
from tests.pipeline.fake_openai import FakeOpenAI

#: What every tqdm bar draws: the percentage and the bar's left edge.
BAR = "%|"


def _generate_stderr(tmp_path: Path, fake: FakeOpenAI, extra: list[str]) -> str:
    scenarios = tmp_path / "scenarios.jsonl"
    write_records(scenarios, make_scenarios(3))
    run = tmp_path / f"run{len(extra)}"
    args = ["--scenarios", str(scenarios), "--model", "m", "--backend", "openai", "--variant", "with_sap",
            "--run", str(run), "--base-url", fake.base_url, "--api-key", "x", *extra]  # fmt: skip
    result = CliRunner().invoke(generate, args)
    assert result.exit_code == 0, result.output
    return result.stderr


def _judge_stderr(tmp_path: Path, fake: FakeOpenAI, extra: list[str]) -> str:
    # three itinerary I-III responses to judge
    run = prepared_run(tmp_path / f"run{len(extra)}", make_scenarios(4))
    fake.answer = lambda body: '{"score": 4, "reasons": "ok"}'
    args = ["--run", str(run.root), "--judge-model", "j", "--base-url", fake.base_url, "--api-key", "x", *extra]
    result = CliRunner().invoke(judge, args)
    assert result.exit_code == 0, result.output
    return result.stderr


RUNNERS: dict[str, Callable[[Path, FakeOpenAI, list[str]], str]] = {
    "generate": _generate_stderr,
    "judge": _judge_stderr,
}


@pytest.mark.parametrize("command", sorted(RUNNERS))
def test_no_progress_hides_the_bar(command: str, tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    shown = RUNNERS[command](tmp_path, fake_openai, [])
    assert BAR in shown, shown  # the check sees a bar when there is one
    hidden = RUNNERS[command](tmp_path, fake_openai, ["--no-progress"])
    assert BAR not in hidden, hidden
