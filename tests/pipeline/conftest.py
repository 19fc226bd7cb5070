"""Fixtures of the pipeline tests: a real OpenAI-compatible stand-in server on 127.0.0.1, small scenarios."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.jsonl import write_records
from pipeline.records import Response, Scenario, ScenarioContext, Score, ScoreSignature, Turn
from pipeline.rundir import RunDir
from tests.pipeline.fake_openai import FakeOpenAI

SIGNATURE = ScoreSignature(sacrebleu="2.5", rouge_score="0.1.2", tokenizer="13a+cjk", embedder="none")


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started :class:`FakeOpenAI`; stopped (and every hang released) after the test."""
    server = FakeOpenAI().start()
    try:
        yield server
    finally:
        server.stop()


def make_scenarios(count: int = 6) -> list[Scenario]:
    """``count`` small scenarios cycling through dialogue and the three judged itinerary levels; CJK text."""
    subtasks = ["dialogue_base", "itinerary_basic", "itinerary_middle", "itinerary_advanced", "dialogue_emotion"]
    scenarios = []
    for index in range(count):
        subtask = subtasks[index % len(subtasks)]
        scenarios.append(
            Scenario(
                id=f"s{index:03d}",
                subtask=subtask,  # type: ignore[arg-type]
                persona="你是小暖，一个温柔体贴的陪伴者。",
                history=[Turn(role="user", content="今天好累"), Turn(role="assistant", content="辛苦了，想聊聊吗？")],
                user_input=f"第{index}个问题：周六帮我安排一下去西湖的行程好吗？",
                reference=f"参考回答{index}：上午九点出发，先去断桥，中午在楼外楼吃饭。",
                context=ScenarioContext(schedule=["周六 15:00 牙医"], memories=["喜欢拍照"], date="2025-05-10"),
            )
        )
    return scenarios


def score_of(scenario: Scenario, s: float | None, model: str = "m") -> Score:
    """A score of ``scenario``'s with_sap response by ``model`` with S = ``s`` (lexical metrics 0.1, SS 0.5)."""
    return Score(
        scenario_id=scenario.id, model=model, variant="with_sap", subtask=scenario.subtask, bleu1=0.1, bleu2=0.1,
        bleu3=0.1, bleu4=0.1, rouge1=0.1, rougeL=0.1, ss=0.5, S=s, signature=SIGNATURE,
    )  # fmt: skip


def prepared_run(root: Path, scenarios: list[Scenario], texts: dict[str, str] | None = None) -> RunDir:
    """A run holding scenarios, one response per scenario (model ``m``; text from ``texts`` or ``回答 <id>``) and
    their scores (S = 0.8)."""
    run = RunDir(root).ensure()
    write_records(run.scenarios, scenarios)
    texts = texts or {}
    responses = [
        Response(scenario_id=s.id, model="m", variant="with_sap", text=texts.get(s.id, f"回答 {s.id}"), backend="t",
                 prompt_version="v")
        for s in scenarios
    ]  # fmt: skip
    write_records(run.responses, responses)
    write_records(run.scores, [score_of(s, 0.8) for s in scenarios])
    return run
