"""Fixtures of the pipeline tests: a real OpenAI-compatible stand-in server on 127.0.0.1, small scenarios."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pipeline.records import Scenario, ScenarioContext, Turn
from tests.pipeline.fake_openai import FakeOpenAI


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
