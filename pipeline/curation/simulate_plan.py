"""What ``h2h simulate`` asks the models: the diversity axes, each conversation's draw, and its prompts.

Conversation ``index`` draws its axes from ``random.Random(f"{seed}:{index}")``, so the plan is the same on every
run and every resume, whatever ran before. The user-LLM sees the conversation from the user's side (the
companion's turns as ``user`` messages, its own as ``assistant``); the companion answers through the subtask's
generation prompt (:func:`pipeline.prompts.build_messages`, without SAP), as ``h2h generate`` would.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pipeline.curation.records import SimulationAxes
from pipeline.generation.base import Message, SamplingParams
from pipeline.llm import Prompt
from pipeline.paths import data_dir
from pipeline.prompts import build_messages
from pipeline.records import Scenario, Turn

AXES_FILE = "simulation_axes.yaml"
USER_PROMPT = "simulate_user"
AXIS_LISTS = ("companions", "user_personas", "emotions", "complexity", "interaction_types")
OPENERS = {
    "English": "Start the conversation: write your first message.",
    "中文": "开始吧：写下你发给对方的第一条消息。",
}


class AxesError(ValueError):
    """The axes file is missing a list or an entry is malformed."""


@dataclass(frozen=True)
class Companion:
    name: str
    persona: str
    language: str


@dataclass(frozen=True)
class Axes:
    """The lists every draw picks from, and each subtask's goal sentence for the user-LLM."""

    companions: list[Companion]
    user_personas: list[str]
    emotions: list[str]
    complexity: list[str]
    interaction_types: list[str]
    subtask_goals: dict[str, str]


def axes_path() -> Path:
    return data_dir() / "curation" / AXES_FILE


def load_axes(path: Path | None = None) -> Axes:
    """Read and check an axes YAML file (default: the bundled one)."""
    source = path or axes_path()
    data: Any = yaml.safe_load(source.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise AxesError(f"{source}: expected a mapping with {', '.join(AXIS_LISTS)}")
    for name in AXIS_LISTS:
        if not isinstance(data.get(name), list) or not data[name]:
            raise AxesError(f"{source}: {name}: needs a non-empty list")
    try:
        companions = [
            Companion(str(c["name"]), str(c["persona"]), str(c.get("language", "中文"))) for c in data["companions"]
        ]
    except (KeyError, TypeError) as error:
        raise AxesError(f"{source}: companions: every entry needs name and persona ({error})") from error
    goals = data.get("subtask_goals") or {}
    return Axes(
        companions=companions,
        user_personas=[str(item) for item in data["user_personas"]],
        emotions=[str(item) for item in data["emotions"]],
        complexity=[str(item) for item in data["complexity"]],
        interaction_types=[str(item) for item in data["interaction_types"]],
        subtask_goals={str(key): str(value) for key, value in goals.items()},
    )


@dataclass(frozen=True)
class Draw:
    """One planned conversation: its index, id, axes, companion and sampling seed."""

    index: int
    id: str
    axes: SimulationAxes
    companion: Companion
    seed: int


def draw(axes: Axes, *, subtask: str, seed: int, index: int) -> Draw:
    """Conversation ``index``'s axes, the same on every run."""
    rng = random.Random(f"{seed}:{index}")
    companion = rng.choice(axes.companions)
    picked = SimulationAxes(
        companion=companion.name,
        user_persona=rng.choice(axes.user_personas),
        emotion=rng.choice(axes.emotions),
        complexity=rng.choice(axes.complexity),
        interaction_type=rng.choice(axes.interaction_types),
    )
    return Draw(index, f"sim-{subtask}-{seed}-{index:05d}", picked, companion, rng.randrange(2**31))


def user_messages(draw_: Draw, prompt: Prompt, subtask: str, goals: dict[str, str], turns: list[Turn]) -> list[Message]:
    """The user-LLM's messages: its role, then the conversation seen from the user's side."""
    goal = goals.get(subtask, subtask.replace("_", " "))
    values = {**draw_.axes.model_dump(), "subtask_goal": goal, "language": draw_.companion.language}
    system = string.Template(prompt.text).safe_substitute(values)
    opener = OPENERS.get(draw_.companion.language, OPENERS["English"])
    messages: list[Message] = [{"role": "system", "content": system}, {"role": "user", "content": opener}]
    for turn in turns:
        messages.append({"role": "assistant" if turn.role == "user" else "user", "content": turn.content})
    return messages


def companion_messages(draw_: Draw, subtask: str, turns: list[Turn], user_input: str) -> list[Message]:
    """The companion's messages: the subtask's generation prompt with its persona, the turns, the new message."""
    partial = Scenario(
        id=draw_.id,
        subtask=subtask,
        persona=draw_.companion.persona,
        history=turns,
        user_input=user_input,
        reference="-",
    )
    return build_messages(partial, "without_sap")


def user_sampling(draw_: Draw, turn: int, temperature: float) -> SamplingParams:
    return SamplingParams(temperature=temperature, top_p=1.0, max_tokens=300, seed=draw_.seed + turn)


def companion_sampling(draw_: Draw, turn: int, temperature: float) -> SamplingParams:
    return SamplingParams(temperature=temperature, top_p=1.0, max_tokens=600, seed=draw_.seed + 1000 + turn)
