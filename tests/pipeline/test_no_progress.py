"""``--no-progress`` (issue 17 item 5): long commands draw their tqdm bars on stderr unless told not to.

Each case runs the real command (or, for ``h2h ingest``, the library call its command makes) twice: without the
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
from pipeline.records import Response, Score, ScoreSignature
from pipeline.rundir import RunDir
from tests.pipeline.conftest import make_scenarios
from tests.pipeline.fake_openai import FakeOpenAI

SIGNATURE = ScoreSignature(sacrebleu="2.5", rouge_score="0.1.2", tokenizer="13a+cjk", embedder="none")
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
    scenarios = make_scenarios(4)  # three itinerary I-III responses to judge
    run = RunDir(tmp_path / f"run{len(extra)}").ensure()
    write_records(run.scenarios, scenarios)
    write_records(
        run.responses,
        [Response(scenario_id=s.id, model="m", variant="with_sap", text="好", backend="t", prompt_version="v")
         for s in scenarios],
    )  # fmt: skip
    metrics = dict.fromkeys(("bleu1", "bleu2", "bleu3", "bleu4", "rouge1", "rougeL", "ss", "S"), 0.5)
    write_records(
        run.scores,
        [Score(scenario_id=s.id, model="m", variant="with_sap", subtask=s.subtask, signature=SIGNATURE, **metrics)
         for s in scenarios],
    )  # fmt: skip
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


def test_ingest_without_progress_writes_no_bar(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from studio.db import create_db_engine, upgrade_db
    from studio.ingest import ingest_run
    from tests.studio.helpers import write_run

    stderr = {}
    for progress in (True, False):
        url = f"sqlite:///{tmp_path / f'store-{progress}.sqlite'}"
        upgrade_db(url)
        engine = create_db_engine(url)
        capfd.readouterr()
        report = ingest_run(engine, write_run(tmp_path / f"run-{progress}"), progress=progress)
        stderr[progress] = capfd.readouterr().err
        engine.dispose()
        assert report.scenarios_added > 0 and report.scores_added > 0
    assert BAR in stderr[True] and "scenarios" in stderr[True]
    assert BAR not in stderr[False], stderr[False]


def test_ingest_scenarios_without_progress_writes_no_bar(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    from studio.db import create_db_engine, upgrade_db, write_session
    from studio.ingest import ingest_scenarios

    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    upgrade_db(url)
    engine = create_db_engine(url)
    stderr = {}
    for progress, scenarios in ((True, make_scenarios(3)), (False, make_scenarios(6)[3:])):
        capfd.readouterr()
        with write_session(engine) as session:
            report = ingest_scenarios(session, scenarios, actor="test", progress=progress)
        stderr[progress] = capfd.readouterr().err
        assert report.scenarios_added == 3
    engine.dispose()
    assert BAR in stderr[True] and BAR not in stderr[False], stderr
